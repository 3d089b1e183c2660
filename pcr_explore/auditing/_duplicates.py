"""Exact and near duplicates: identical bytes, and perceptual hashes a few bits apart.

Exact duplicates are files with the same SHA-256. Near duplicates are files
with different bytes whose 64-bit perceptual hashes (``imagehash.phash`` of
the audit's reduced decode) differ in at most a few bits: a resized,
re-compressed, brightened or slightly blurred copy. Byte-identical copies
are one image here (they are already exact duplicates). Images within the
distance are joined into sets (connected components, so a set can chain
A-B-C where A and C are further apart).

Pairs of hashes within the distance are found by a multi-index over bands
of the hash bits (:mod:`._hash_index`), not by comparing every hash with
every other: 1.28 million hashes take about 25 s on one core, not hours
(``bench/bench_duplicates.py``). The search reaches a little further than
the distance, to :data:`NEAREST_BITS` (or the distance, if larger), for each
image's distance to its nearest other image (the near-duplicate score): exact
up to that reach, infinite where no other image is that close. Scores up to
the reach can be re-thresholded without a new search (twice the default
threshold); a wider reach costs more search, growing fast with the bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._hash_index import close_pairs, hamming

__all__ = [
    "HASH_BITS",
    "NEAREST_BITS",
    "NearDuplicates",
    "exact_groups",
    "hamming",
    "near_duplicates",
]

HASH_BITS = 64

#: How far the nearest distance is searched by default (twice the default threshold).
NEAREST_BITS = 8

# Joining links kept before they are folded into one per image (bounds memory).
_LINKS_KEPT = 1 << 22


def exact_groups(digests: Sequence[str]) -> list[list[int]]:
    """Return the indices of files with identical content digests, each group sorted.

    Empty digests (unreadable files) are never grouped.

    Examples
    --------
    >>> exact_groups(["a", "b", "a", "", ""])
    [[0, 2]]
    """
    by: dict[str, list[int]] = {}
    for i, d in enumerate(digests):
        if d:
            by.setdefault(d, []).append(i)
    return sorted(g for g in by.values() if len(g) > 1)


@dataclass(frozen=True)
class NearDuplicates:
    """Near-duplicate sets and every image's distance to its nearest other image.

    Attributes
    ----------
    sets : list of list of int
        Image indices of each set (two or more images with different bytes),
        each sorted, sets in order of their first member.
    nearest : ndarray of float
        Per image: Hamming distance in bits to the nearest image with
        different bytes, where it is at most ``reach`` bits; ``inf`` where no
        such image is that close; NaN where the image has no hash or no
        other image has one.
    max_distance : list of int
        Per set: the largest distance between two members that are joined.
    reach : int
        Bits up to which ``nearest`` was searched.
    """

    sets: list[list[int]]
    nearest: np.ndarray
    max_distance: list[int]
    reach: int = HASH_BITS


def near_duplicates(
    hashes: Sequence[int | None],
    groups: list[list[int]],
    max_bits: int,
    *,
    block: int = 256,
    reach: int | None = None,
    bands: int | None = None,
) -> NearDuplicates:
    """Group images whose perceptual hashes differ in at most *max_bits* bits.

    Parameters
    ----------
    hashes : sequence of int or None
        64-bit hash per image (None: not measured).
    groups : list of list of int
        Exact-duplicate groups: each counts once, as its first member.
    max_bits : int
        Largest Hamming distance that makes two images near duplicates, 0 to 64.
    block : int
        Rows compared at a time where hashes are compared in blocks.
    reach : int, optional
        Bits up to which each image's nearest distance is found (at least
        *max_bits*; default the larger of *max_bits* and :data:`NEAREST_BITS`).
        A wider reach costs more search.
    bands : int, optional
        Bands of the search's index, or 0 to compare every pair of hashes
        (:func:`~._hash_index.close_pairs`; default: the cheapest for the
        number of hashes). Any choice gives the same result.

    Returns
    -------
    NearDuplicates
        The same sets, distances and nearest distances (up to *reach*) as
        comparing every pair of hashes.

    Raises
    ------
    ValueError
        If *max_bits* is not a whole number from 0 to 64, or *reach* is
        below it or above 64.

    Examples
    --------
    >>> r = near_duplicates([0b0, 0b11, 0xFFFF, None], [], 2)
    >>> r.sets, r.nearest.tolist(), r.max_distance
    ([[0, 1]], [2.0, 2.0, inf, nan], [2])
    >>> near_duplicates([0b0, 0b11, 0xFFFF, None], [], 2, reach=16).nearest.tolist()
    [2.0, 2.0, 14.0, nan]
    """
    reach = _check_bits(max_bits, reach)
    return _per_distinct_hash(
        hashes, groups, reach, lambda uniq: _search(uniq, max_bits, reach, block=block, bands=bands)
    )


def _per_distinct_hash(
    hashes: Sequence[int | None],
    groups: list[list[int]],
    reach: int,
    search: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> NearDuplicates:
    """Search the distinct hashes of the images with one (an exact group as its first member).

    *search* takes the sorted distinct hashes and returns each one's nearest
    distance, its component label and each component's span.
    """
    nearest = np.full(len(hashes), np.nan)
    copies = {i for g in groups for i in g[1:]}  # counted as their group's first member
    reps = [i for i, h in enumerate(hashes) if h is not None and i not in copies]
    if len(reps) < 2:
        return NearDuplicates([], nearest, [], reach)
    values = np.array([hashes[i] for i in reps], np.uint64)
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    best, comp, span = search(uniq)
    best[counts > 1] = 0  # two different files with the same hash are at distance 0
    nearest[reps] = best[inverse]
    for g in groups:  # an exact copy is as near to others as its first member
        nearest[g[1:]] = nearest[g[0]]
    sets, spans = _sets(reps, comp[inverse], span)
    return NearDuplicates(sets, nearest, spans, reach)


def _check_bits(max_bits: int, reach: int | None) -> int:
    """Check *max_bits* and *reach*; return the reach to search."""
    for name, v in (("max_bits", max_bits), ("reach", reach)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise ValueError(f"near duplicates: {name} must be a whole number of bits, not {v!r}")
    if not 0 <= max_bits <= HASH_BITS:
        raise ValueError(f"near duplicates: max_bits must be 0 to {HASH_BITS}, not {max_bits}")
    if reach is None:
        return int(max(max_bits, NEAREST_BITS))
    if not max_bits <= reach <= HASH_BITS:
        raise ValueError(
            f"near duplicates: reach must be max_bits ({max_bits}) to {HASH_BITS}, not {reach}"
        )
    return int(reach)


def _search(
    uniq: np.ndarray, max_bits: int, reach: int, *, block: int, bands: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest distance per distinct hash, connected components, each component's span.

    The pairs within *reach* come in chunks; each chunk updates the nearest
    distances and the largest joining distance at each hash, and its joining
    links are kept. When many are kept they are folded into one link per
    hash (to the first hash of its component so far), so memory stays
    proportional to the number of hashes however many pairs there are.
    """
    m = len(uniq)
    best = np.full(m, np.inf)
    widest = np.zeros(m, np.int64)  # largest joining distance at each hash
    heads: list[np.ndarray] = []
    tails: list[np.ndarray] = []
    kept = 0
    for i, j, d in close_pairs(uniq, reach, block=block, bands=bands):
        np.minimum.at(best, i, d)
        np.minimum.at(best, j, d)
        join = d <= max_bits
        if join.any():
            np.maximum.at(widest, i[join], d[join])
            heads.append(i[join])
            tails.append(j[join])
            kept += int(join.sum())
            if kept > _LINKS_KEPT:
                heads, tails = _folded(m, heads, tails)
                kept = m
    comp = _components(m, heads, tails)
    span = np.zeros(int(comp.max()) + 1, np.int64)
    np.maximum.at(span, comp, widest)
    return best, comp, span


def _components(m: int, heads: list[np.ndarray], tails: list[np.ndarray]) -> np.ndarray:
    """Component label of each of *m* hashes joined by the links *heads*-*tails*.

    Labels count from 0 in the order of each component's first hash. Each
    round hooks the root of every link's larger end under the smaller one,
    then points every hash at its root (pointer jumping), until every link's
    ends share a root: numpy throughout, without SciPy's sparse graphs,
    whose import alone cost the audit's main process half a CPU-second.
    """
    i = np.concatenate(heads) if heads else np.zeros(0, np.intp)
    j = np.concatenate(tails) if tails else np.zeros(0, np.intp)
    root = np.arange(m)  # every hash's root is itself or an earlier hash
    while True:
        low = np.minimum(root[i], root[j])
        np.minimum.at(root, root[i], low)
        np.minimum.at(root, root[j], low)
        while not np.array_equal(jumped := root[root], root):
            root = jumped
        if np.array_equal(root[i], root[j]):
            return np.unique(root, return_inverse=True)[1].reshape(m)


def _folded(
    m: int, heads: list[np.ndarray], tails: list[np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The same components as one link from each hash to its component's first hash."""
    comp = _components(m, heads, tails)
    first = np.full(int(comp.max()) + 1, m)
    np.minimum.at(first, comp, np.arange(m))
    return [np.arange(m)], [first[comp]]


def _sets(
    reps: list[int], rep_comp: np.ndarray, span: np.ndarray
) -> tuple[list[list[int]], list[int]]:
    """Image sets of the components with two or more images, by first member; their spans."""
    by: dict[int, list[int]] = {}
    for j in np.flatnonzero(np.bincount(rep_comp)[rep_comp] >= 2):
        by.setdefault(int(rep_comp[j]), []).append(reps[j])
    sets = [sorted(members) for members in by.values()]
    spans = [int(span[c]) for c in by]
    order = sorted(range(len(sets)), key=lambda k: sets[k][0])
    return [sets[k] for k in order], [spans[k] for k in order]


def _near_duplicates_exhaustive(
    hashes: Sequence[int | None], groups: list[list[int]], max_bits: int, *, block: int = 256
) -> NearDuplicates:
    """The reference: every distinct hash compared with every other, in blocks of rows.

    Its work grows with the square of the number of distinct hashes (about a
    second for 20,000); tests check :func:`near_duplicates` against it. Its
    ``nearest`` is exact at any distance.
    """
    return _per_distinct_hash(
        hashes, groups, HASH_BITS, lambda uniq: _all_pairs(uniq, max_bits, block)
    )


def _all_pairs(
    uniq: np.ndarray, max_bits: int, block: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_search`'s results from every pair of *uniq* compared, in blocks of rows."""
    m = len(uniq)
    best = np.full(m, HASH_BITS + 1, np.int64)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    dists: list[np.ndarray] = []
    for start in range(0, m, block):
        d = hamming(uniq[start : start + block, None], uniq[None, :]).astype(np.int64)
        idx = np.arange(start, min(start + block, m))
        d[np.arange(len(idx)), idx] = HASH_BITS + 1  # not its own neighbour
        best[idx] = d.min(axis=1)
        r, c = np.nonzero(d <= max_bits)
        rows.append(idx[r])
        cols.append(c)
        dists.append(d[r, c])
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    comp = _components(m, [r_all], [c_all])
    span = np.zeros(comp.max() + 1, np.int64)
    np.maximum.at(span, comp[r_all], np.concatenate(dists))
    return best, comp, span
