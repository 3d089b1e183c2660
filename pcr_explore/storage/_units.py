"""Byte counts and rates as people write them: ``"2GB"``, ``"512MiB"``, ``"20MB/s"``."""

from __future__ import annotations

import re

__all__ = ["format_rate", "parse_bytes"]

_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_UNITS |= {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
_NUMBER = r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]i?)?b?"
_SIZE = re.compile(_NUMBER + r"\s*$", re.I)
_RATE = re.compile(_NUMBER + r"(?:/s)?\s*$", re.I)


def parse_bytes(text: str | float | int, *, rate: bool = False) -> float:
    """Bytes (or, with *rate*, bytes per second) from a number or a string.

    Decimal (``k``, ``M``, ``G``, ``T``) and binary (``Ki``, ``Mi``, ``Gi``,
    ``Ti``) prefixes, an optional ``B``, and with *rate* an optional ``/s``.

    Raises
    ------
    ValueError
        If *text* is not a positive quantity, with examples.

    Examples
    --------
    >>> parse_bytes("2GB"), parse_bytes("1KiB"), parse_bytes("20MB/s", rate=True)
    (2000000000.0, 1024.0, 20000000.0)
    """
    what, examples = ("a bandwidth", "50MB/s, 2e7, 1GiB/s") if rate else ("a size", "2GB, 512MiB")
    if isinstance(text, bool):
        raise ValueError(f"not {what}: {text!r} (examples: {examples})")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = (_RATE if rate else _SIZE).match(text)
        if m is None:
            raise ValueError(f"not {what}: {text!r} (examples: {examples})")
        value = float(m.group(1)) * _UNITS[(m.group(2) or "").lower()]
    if not value > 0:
        noun = "bandwidth" if rate else "size"
        raise ValueError(f"{noun} must be positive, got {text!r}")
    return value


def format_rate(bps: float) -> str:
    """Bytes per second in three figures, in the decimal unit that reads best.

    One figure, one way: a storage speed reads the same in a picker, a
    caption and a readout.

    Examples
    --------
    >>> format_rate(731073), format_rate(20e6), format_rate(1.23456e6), format_rate(800)
    ('731 kB/s', '20 MB/s', '1.23 MB/s', '800 B/s')
    >>> format_rate(1.5e9), format_rate(999_999)
    ('1.5 GB/s', '1 MB/s')
    """
    value = float(f"{bps:.3g}")  # 999,999 B/s reads "1 MB/s", not "1e+03 kB/s"
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} B/s"
