"""The argument rules every package applies: scan levels and counts.

A scan level *k* says how many scans (scan groups, in a record) of an image
are read. Every public function that takes one checks it here, so the rule
and the message are the same everywhere: an ``int`` or a numpy integer;
``bool`` is refused (``True`` is not level 1), and so is every float, even a
whole one (``2.7`` would otherwise read level 2 without a word); the value
must lie in ``1..num_scans``. ``None`` means the full image where an API
documents it (``full=True``).

A count (workers, images in a sample, repeats) is a whole number of at least
a minimum, checked by :func:`check_count` with the same refusals.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeGuard

import numpy as np

__all__ = ["check_count", "check_scan", "check_scans"]


def _is_level(value: object) -> TypeGuard[int | np.integer[Any]]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def check_scan(scan: object, num_scans: int, *, where: str = "", full: bool = False) -> int:
    """*scan* as an ``int``, checked to be a scan level in ``1..num_scans``.

    Parameters
    ----------
    scan : int
        The level asked for (an ``int`` or a numpy integer).
    num_scans : int
        The highest level there is.
    where : str
        What the level is for (a dataset, a file, a schedule): the message
        starts with it.
    full : bool
        ``None`` is the full image (*num_scans*), as the API taking *scan*
        documents; otherwise ``None`` is refused like any other non-level.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If *scan* is not a whole number (a bool, a float, a string, None) or
        lies outside ``1..num_scans``; the message names the value, the range
        and *where*.

    Examples
    --------
    >>> check_scan(np.int64(3), 10)
    3
    >>> check_scan(11, 10, where="data/sample/pcr")
    Traceback (most recent call last):
    ...
    ValueError: data/sample/pcr: scan level 11 is outside 1..10
    >>> check_scan(2.7, 10)
    Traceback (most recent call last):
    ...
    ValueError: scan level must be an int in 1..10, got 2.7 (float)
    >>> check_scan(None, 10, full=True)
    10
    """
    if scan is None and full:
        return num_scans
    if not _is_level(scan):
        raise ValueError(
            f"{_at(where)}scan level must be an int in 1..{num_scans}, "
            f"got {scan!r} ({type(scan).__name__})"
        )
    k = int(scan)
    if not 1 <= k <= num_scans:
        raise ValueError(f"{_at(where)}scan level {k} is outside 1..{num_scans}")
    return k


def check_scans(
    scans: Iterable[object], num_scans: int, *, where: str = "", distinct: bool = False
) -> tuple[int, ...]:
    """Every level of *scans* checked as :func:`check_scan` does, in the order given.

    One message names every bad level at once. With *distinct*, the levels
    come back sorted, each once, and at least one is required (a list of
    levels to compare).

    Raises
    ------
    ValueError
        If *scans* is not a collection of levels (a string, a single number),
        or a level is not a whole number or lies outside ``1..num_scans``.

    Examples
    --------
    >>> check_scans([1, np.int64(5), 10], 10)
    (1, 5, 10)
    >>> check_scans([5, 1, 5], 10, distinct=True)
    (1, 5)
    >>> check_scans([1, 11, 12], 10, where="ds")
    Traceback (most recent call last):
    ...
    ValueError: ds: scan levels [11, 12] are outside 1..10
    """
    if isinstance(scans, (str, bytes)) or not isinstance(scans, Iterable):
        raise ValueError(
            f"{_at(where)}scan levels must be a sequence of ints in 1..{num_scans}, got {scans!r}"
        )
    levels = list(scans)
    wrong = [k for k in levels if not _is_level(k)]
    if wrong:
        raise ValueError(
            f"{_at(where)}scan levels must be ints in 1..{num_scans}, got "
            + ", ".join(f"{k!r} ({type(k).__name__})" for k in wrong)
        )
    out = tuple(int(k) for k in levels if _is_level(k))
    bad = [k for k in out if not 1 <= k <= num_scans]
    if bad:
        raise ValueError(f"{_at(where)}scan levels {bad} are outside 1..{num_scans}")
    if not distinct:
        return out
    if not out:
        raise ValueError(f"{_at(where)}scans is empty: give levels in 1..{num_scans}")
    return tuple(sorted(set(out)))


def check_count(value: object, name: str, *, minimum: int = 1, where: str = "") -> int:
    """*value* as an ``int``, checked to be a whole number of at least *minimum*.

    Parameters
    ----------
    value : int
        The count given (an ``int`` or a numpy integer; bools and floats are
        refused).
    name : str
        The argument's name, for the message.
    minimum : int
        The smallest count allowed (default 1).
    where : str
        What the count is for: the message starts with it.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If *value* is not a whole number or is below *minimum*.

    Examples
    --------
    >>> check_count(np.int32(2), "workers")
    2
    >>> check_count(0, "workers")
    Traceback (most recent call last):
    ...
    ValueError: workers must be at least 1, got 0
    """
    if not _is_level(value):
        raise ValueError(
            f"{_at(where)}{name} must be a whole number >= {minimum}, "
            f"got {value!r} ({type(value).__name__})"
        )
    if int(value) < minimum:
        raise ValueError(f"{_at(where)}{name} must be at least {minimum}, got {value!r}")
    return int(value)
