"""Pairs of 64-bit hashes a few bits apart, found without comparing every pair.

The 64 bits are split into *m* bands. Two hashes that differ in at most *r*
bits differ in at most *r* bands, so they agree exactly on at least
``s = m - r`` of them (the pigeonhole principle). For every choice of *s*
bands, the hashes are sorted by the bits of those bands together: hashes
that agree on all *s* lie next to each other (a run), and only pairs inside
a run are compared, by their full Hamming distance. A pair that agrees on
more than *s* bands sits in a run of several choices; it is kept only under
the first *s* bands it agrees on, so every pair within *r* bits comes out
exactly once.

More bands mean more choices to sort (``C(m, s)``) but wider sort keys
(about ``64 s / m`` bits) and so fewer pairs compared in vain; the plan
picks the *m* with the least estimated work for the number of hashes, or
compares every pair in blocks of rows where that is cheaper (a few
thousand hashes, or a radius so wide that no band choice pays). A run
longer than :data:`LONG_RUN` (many hashes that share the same bands, such
as a dense cluster of near copies) is compared in blocks too, so memory
stays bounded by the block whatever the data.

Band *k* takes the bits ``k, k + m, k + 2m, ...`` rather than a stretch of
neighbouring bits: the bits of a pHash that most images share (the lowest
frequencies) are then spread across the bands instead of making one band
nearly constant.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

__all__ = ["LONG_RUN", "STEP_PAIRS", "close_pairs", "hamming", "plan_bands"]

#: Runs (hashes agreeing on the chosen bands) longer than this are compared in blocks.
LONG_RUN = 64
#: Most pairs compared in one step of a blocked comparison (8 bytes each, briefly).
STEP_PAIRS = 1 << 22

# Rough costs on one core, in nanoseconds, of the three kinds of work; only
# their ratios steer the plan (bench/bench_duplicates.py times the result).
_SORT_NS = 60.0  # one hash under one band choice: its key, the sort, the runs
_CANDIDATE_NS = 20.0  # one pair of a run compared
_PAIR_NS = 4.0  # one pair compared in the blocked all-pairs comparison
_CHOICE_NS = 100_000.0  # one band choice's fixed steps (Python, small arrays)
_MAX_CHOICES = 20_000  # band choices beyond this are never cheaper in practice

Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]

_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bits that differ between uint64 hashes, broadcast like ``a ^ b``.

    Examples
    --------
    >>> hamming(np.array([0b1011], np.uint64), np.array([0b0001, 0b1011], np.uint64))
    array([2, 0], dtype=uint8)
    """
    x = np.bitwise_xor(a, b)
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x).astype(np.uint8)  # type: ignore[no-any-return]
    return _BYTE_BITS[x.view(np.uint8).reshape(*x.shape, 8)].sum(axis=-1, dtype=np.uint8)


def plan_bands(n: int, radius: int) -> int:
    """Return the number of bands to index *n* hashes with, or 0 to compare every pair.

    Examples
    --------
    >>> plan_bands(100, 4), plan_bands(1_280_000, 4), plan_bands(1_280_000, 40)
    (0, 6, 0)
    """
    best, best_cost = 0, n * (n - 1) / 2 * _PAIR_NS
    key_room = 64 - _index_bits(n)
    for m in range(radius + 1, 65):
        s = m - radius
        choices = math.comb(m, s)
        if choices > _MAX_CHOICES:
            continue
        width = min(64 * s / m, key_room)
        candidates = choices * n * (n - 1) / 2 / 2.0**width
        cost = choices * (n * _SORT_NS + _CHOICE_NS) + candidates * _CANDIDATE_NS
        if cost < best_cost:
            best, best_cost = m, cost
    return best


def close_pairs(
    values: np.ndarray, radius: int, *, block: int = 256, bands: int | None = None
) -> Iterator[Pairs]:
    """Yield every pair of *values* at most *radius* bits apart, each pair once.

    Parameters
    ----------
    values : ndarray of uint64
        Distinct hashes.
    radius : int
        Largest Hamming distance of a pair, 0 to 64.
    block : int
        Rows compared at a time where pairs are compared in blocks (fewer
        where rows are long: at most :data:`STEP_PAIRS` pairs a step).
    bands : int, optional
        Bands to index with (more than *radius*, at most 64), or 0 to compare
        every pair; default :func:`plan_bands`'s choice. Any choice gives the
        same pairs.

    Yields
    ------
    i, j, d : ndarray
        Indices into *values* with ``i < j``, and their distance (``int64``);
        over all chunks, every pair within *radius* comes once.

    Examples
    --------
    >>> v = np.array([0b0, 0b11, 0b111, 0xFF], np.uint64)
    >>> sorted((int(a), int(b), int(c)) for p in close_pairs(v, 2) for a, b, c in zip(*p))
    [(0, 1, 2), (1, 2, 1)]
    """
    n = len(values)
    if n < 2:
        return
    m = plan_bands(n, radius) if bands is None else bands
    if m and not radius < m <= 64:
        raise ValueError(f"close pairs: {m} bands cannot index a radius of {radius} bits")
    if m == 0:
        yield from _blocked(values, np.arange(n), (0, n), radius, block, gap=1)
        return
    table = _bands(values, m)
    index = np.arange(n, dtype=np.uint64)
    for chosen in itertools.combinations(range(m), m - radius):
        packed = _sorted_by(table, chosen, index)
        for i, j, d in _run_pairs(values, packed, radius, block):
            keep = _first_agreeing(table, chosen, i, j)
            if keep.any():
                yield np.minimum(i, j)[keep], np.maximum(i, j)[keep], d[keep]


def _index_bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def _bands(values: np.ndarray, m: int) -> np.ndarray:
    """Each band's bits gathered into a number: shape (m, n), the smallest dtype that fits."""
    n = len(values)
    bits = np.unpackbits(
        values.astype("<u8").view(np.uint8).reshape(n, 8), axis=1, bitorder="little"
    )
    width = len(range(0, 64, m))  # band 0 is the widest
    nbytes = next(b for b in (1, 2, 4, 8) if 8 * b >= width)
    out = np.empty((m, n), f"<u{nbytes}")
    for k in range(m):
        mine = np.zeros((n, 8 * nbytes), np.uint8)
        mine[:, : len(range(k, 64, m))] = bits[:, k::m]
        out[k] = np.packbits(mine, axis=1, bitorder="little").view(f"<u{nbytes}")[:, 0]
    return out


def _sorted_by(bands: np.ndarray, chosen: tuple[int, ...], index: np.ndarray) -> np.ndarray:
    """Each hash's key (the chosen bands' bits) and index packed in a uint64, sorted.

    Sorting key and index together is several times faster than an argsort.
    A key too wide for the room the index leaves loses its top bits: that
    only merges runs, whose pairs are all compared by full distance anyway.
    """
    m, n = bands.shape
    ib = _index_bits(n)
    key = np.zeros(n, np.uint64)
    shift = 0
    for k in chosen:
        key |= bands[k].astype(np.uint64) << np.uint64(shift)
        shift += len(range(k, 64, m))
    if shift > 64 - ib:
        key &= np.uint64((1 << (64 - ib)) - 1)
    key <<= np.uint64(ib)
    key |= index
    key.sort()
    return key


def _run_pairs(values: np.ndarray, packed: np.ndarray, radius: int, block: int) -> Iterator[Pairs]:
    """Pairs within *radius* inside the runs of equal keys of *packed* (sorted key|index).

    Pairs ``(p, p + gap)`` of sorted positions are taken gap by gap, one
    vectorised step each; past :data:`LONG_RUN` only long runs are left, and
    their further pairs are compared in blocks.
    """
    n = len(packed)
    ib = _index_bits(n)
    keys = packed >> np.uint64(ib)
    same = np.zeros(n, bool)  # same[p]: sorted positions p and p + 1 share the key
    np.equal(keys[1:], keys[:-1], out=same[:-1])
    at = np.flatnonzero(same)  # at each gap: the p whose p + gap is in the same run
    if not at.size:
        return
    order = (packed & np.uint64((1 << ib) - 1)).view(np.intp)
    ordered = values[order]
    gap = 1
    while at.size and gap <= LONG_RUN:
        d = hamming(ordered[at], ordered[at + gap])
        near = d <= radius
        if near.any():
            yield order[at[near]], order[at[near] + gap], d[near].astype(np.int64)
        at = at[same[at + gap]]
        gap += 1
    if at.size:
        for run in _runs(same, at):
            yield from _blocked(ordered, order, run, radius, block, gap=gap)


def _runs(same: np.ndarray, inside: np.ndarray) -> list[tuple[int, int]]:
    """The runs (start, end) of equal keys that hold the sorted positions *inside*."""
    edges = np.diff(same.astype(np.int8), prepend=0)
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) + 1  # same[end - 1] is the run's last True
    k = np.unique(np.searchsorted(starts, inside, side="right") - 1)
    return [(int(a), int(b)) for a, b in zip(starts[k], ends[k])]


def _blocked(
    ordered: np.ndarray,
    order: np.ndarray,
    run: tuple[int, int],
    radius: int,
    block: int,
    *,
    gap: int,
) -> Iterator[Pairs]:
    """Compare positions ``p < q`` of *run* (start, end) with ``q - p >= gap``, in blocks.

    *block* rows at a time, fewer where rows are long: one step compares at
    most :data:`STEP_PAIRS` pairs.
    """
    a, b = run
    rows_at_once = max(1, min(block, STEP_PAIRS // max(1, b - a)))
    for r0 in range(a, b - gap, rows_at_once):
        r1 = min(r0 + rows_at_once, b - gap)
        d = hamming(ordered[r0:r1, None], ordered[None, r0 + gap : b])
        rows, cols = np.nonzero(d <= radius)
        ahead = cols >= rows  # column c is position r0 + gap + c, row k is r0 + k
        rows, cols = rows[ahead], cols[ahead]
        if rows.size:
            i, j = order[r0 + rows], order[r0 + gap + cols]
            yield np.minimum(i, j), np.maximum(i, j), d[rows, cols].astype(np.int64)


def _first_agreeing(
    bands: np.ndarray, chosen: tuple[int, ...], i: np.ndarray, j: np.ndarray
) -> np.ndarray:
    """Whether *chosen* are the first ``len(chosen)`` bands on which each pair agrees.

    The pair is then kept under this choice and under no other. A pair can
    reach a run without agreeing on every chosen band when its key was cut
    short; it is rejected here and found under its own first bands.
    """
    last = chosen[-1]
    agree = bands[: last + 1, i] == bands[: last + 1, j]
    return agree[list(chosen)].all(axis=0) & (agree.sum(axis=0) == len(chosen))
