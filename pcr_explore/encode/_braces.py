"""Brace patterns of shard names (``s-{0000..0099}.tar``), bounded before they are expanded.

``braceexpand`` turns every range of a pattern into a tuple before it yields
the first name (``itertools.product`` does), so a typo such as
``{0000000000..9999999999}`` would fill memory. :func:`expand` refuses, before
expanding, any integer range of more than ``MAX_SHARDS`` names and integer
ranges holding more than ``MAX_SHARDS`` names together (letter ranges hold
52 at most), then stops the expansion at ``MAX_SHARDS + 1`` names, so a
product of smaller ranges is refused too.
"""

from __future__ import annotations

import itertools
import re

from ..errors import DatasetError

__all__ = ["MAX_SHARDS", "expand"]

# More shards than any dataset has; a pattern beyond it is a typo.
MAX_SHARDS = 1_000_000

# braceexpand's integer range ({1..10}, {0..100..5}) between its braces; an
# escaped brace matches too, which only refuses a typo's range a little early
_INT_RANGE = re.compile(r"\{(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?\}")


def _too_many(pattern: str, n: int | None) -> DatasetError:
    """The refusal of *pattern*: its range of *n* names (None: its names) is too many."""
    many = (
        f"{n:,} shards or more, more than the {MAX_SHARDS:,}"
        if n
        else f"more than the {MAX_SHARDS:,} shards"
    )
    return DatasetError(f"{pattern}: the brace pattern stands for {many} allowed; check its ranges")


def expand(pattern: str) -> list[str]:
    """The names a brace pattern stands for, at most ``MAX_SHARDS`` of them.

    Raises
    ------
    DatasetError
        If the pattern is malformed or stands for more than ``MAX_SHARDS`` names.

    Examples
    --------
    >>> expand("s-{0..2}.tar")
    ['s-0.tar', 's-1.tar', 's-2.tar']
    """
    from braceexpand import braceexpand

    sizes = []
    for first, last, step in _INT_RANGE.findall(pattern):
        # len(range(...)) by arithmetic: the bounds may pass sys.maxsize
        sizes.append(abs(int(last) - int(first)) // (int(step or 1) or 1) + 1)
        if sizes[-1] > MAX_SHARDS:
            raise _too_many(pattern, sizes[-1])
    if sum(sizes) > MAX_SHARDS:  # braceexpand would hold every range's names at once
        raise DatasetError(
            f"{pattern}: the brace pattern's ranges hold {sum(sizes):,} names together, "
            f"more than the {MAX_SHARDS:,} shards allowed; check its ranges"
        )
    try:
        names = list(itertools.islice(braceexpand(pattern), MAX_SHARDS + 1))
    except (ValueError, RecursionError) as exc:  # UnbalancedBracesError is a ValueError
        raise DatasetError(f"{pattern}: not a usable brace pattern ({exc})") from None
    if len(names) > MAX_SHARDS:
        raise _too_many(pattern, None)
    return names
