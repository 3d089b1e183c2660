"""Brace patterns of shard names (``s-{0000..0099}.tar``), counted before they are expanded.

``braceexpand`` turns every range of a pattern into a list before it yields
the first name, so a typo such as ``{0000000000..9999999999}`` would fill
memory. :func:`pattern_count` follows ``braceexpand.parse_pattern`` step by
step (escapes, literal braces, nesting) and multiplies the sizes instead;
the property tests hold the two to the same count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..errors import DatasetError

__all__ = ["MAX_SHARDS", "expand", "pattern_count"]

# More shards than any dataset has; a pattern beyond it is a typo.
MAX_SHARDS = 1_000_000

# braceexpand's range forms ({1..10}, {a..e..2}), as its parser matches them
_INT_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$")
_CHAR_RANGE = re.compile(r"^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?(\d+))?$")


def _split_sequence(expr: str) -> list[str] | None:
    """*expr*'s comma-separated parts at brace depth 0 (None: not a sequence), as braceexpand."""
    start = pos = depth = 0
    parts = []
    while pos < len(expr):
        c = expr[pos]
        if c == "\\":
            pos += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(expr[start:pos])
            start = pos + 1
        pos += 1
    if depth != 0 or not parts:
        return None
    return [*parts, expr[start:]]


def _expression_count(expr: str) -> int:
    if m := _INT_RANGE.match(expr):
        first, last, step_text = m.groups()
        step = (int(step_text) or 1) if step_text else 1
        # len(range(...)) by arithmetic: the bounds may pass sys.maxsize
        return abs(int(last) - int(first)) // step + 1
    if m := _CHAR_RANGE.match(expr):
        from braceexpand import alphabet

        first, last, step_text = m.groups()
        step = (int(step_text) or 1) if step_text else 1
        a, b = alphabet.index(first), alphabet.index(last)
        if a < b:
            return len(alphabet[a : b + 1 : step])
        return len(alphabet[a : (b or -len(alphabet)) - 1 : -step])
    parts = _split_sequence(expr)
    if parts is None:  # kept as literal braces around an expanded pattern
        return pattern_count(expr)
    return sum(pattern_count(p) for p in parts)


def pattern_count(pattern: str) -> int:
    """How many names braceexpand makes of *pattern*, without making them.

    Raises
    ------
    ValueError
        If the braces are unbalanced.

    Examples
    --------
    >>> pattern_count("s-{0000..0099}.tar"), pattern_count("{a,b}-{1..3}")
    (100, 6)
    """
    count, start, depth, pos = 1, 0, 0, 0
    while pos < len(pattern):
        c = pattern[pos]
        if c == "\\":
            pos += 2
            continue
        if c == "{":
            if depth == 0 and pos > start:
                start = pos
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                count *= _expression_count(pattern[start + 1 : pos])
                start = pos + 1
        pos += 1
    if depth != 0:
        raise ValueError("unbalanced braces")
    return count


def expand(pattern: str) -> Iterator[str]:
    """The names a brace pattern stands for, after checking how many there are.

    Raises
    ------
    DatasetError
        If the pattern is malformed or stands for more than ``MAX_SHARDS`` names.
    """
    from braceexpand import braceexpand

    try:
        n = pattern_count(pattern)
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{pattern}: not a usable brace pattern ({exc})") from None
    if n > MAX_SHARDS:
        raise DatasetError(
            f"{pattern}: the brace pattern stands for {n:,} shards, more than the "
            f"{MAX_SHARDS:,} allowed; check its ranges"
        )
    return braceexpand(pattern)
