"""Exact and near duplicates: identical bytes, and perceptual hashes a few bits apart.

Exact duplicates are files with the same SHA-256. Near duplicates are files
with different bytes whose 64-bit perceptual hashes (``imagehash.phash`` of
the audit's reduced decode) differ in at most a few bits: a resized,
re-compressed, brightened or slightly blurred copy. Byte-identical copies
are one image here (they are already exact duplicates). Images within the
distance are joined into sets (connected components, so a set can chain
A-B-C where A and C are further apart).

Every distinct hash is compared with every other, in blocks of rows, so the
nearest distance of every image is exact (it is the near-duplicate score);
the work grows with the square of the number of distinct hashes (about a
second for 20,000).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["HASH_BITS", "NearDuplicates", "exact_groups", "hamming", "near_duplicates"]

HASH_BITS = 64

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
        different bytes (NaN where there is none, or no hash).
    max_distance : ndarray of int
        Per set: the largest distance between two members that are joined.
    """

    sets: list[list[int]]
    nearest: np.ndarray
    max_distance: list[int]


def near_duplicates(
    hashes: Sequence[int | None], groups: list[list[int]], max_bits: int, *, block: int = 256
) -> NearDuplicates:
    """Group images whose perceptual hashes differ in at most *max_bits* bits.

    Parameters
    ----------
    hashes : sequence of int or None
        64-bit hash per image (None: not measured).
    groups : list of list of int
        Exact-duplicate groups: each counts once, as its first member.
    max_bits : int
        Largest Hamming distance that makes two images near duplicates.
    block : int
        Rows compared at a time (bounds memory at ``block x distinct hashes``).

    Returns
    -------
    NearDuplicates

    Examples
    --------
    >>> r = near_duplicates([0b0, 0b11, 0xFFFF, None], [], 2)
    >>> r.sets, r.nearest.tolist(), r.max_distance
    ([[0, 1]], [2.0, 2.0, 14.0, nan], [2])
    """
    n = len(hashes)
    nearest = np.full(n, np.nan)
    copies = {i for g in groups for i in g[1:]}  # counted as their group's first member
    reps = [i for i, h in enumerate(hashes) if h is not None and i not in copies]
    if len(reps) < 2:
        return NearDuplicates([], nearest, [])
    values = np.array([hashes[i] for i in reps], np.uint64)
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
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
    # two different files with the same hash are at distance 0
    best[counts > 1] = 0
    nearest[reps] = np.where(best[inverse] <= HASH_BITS, best[inverse], np.nan).astype(np.float64)
    for g in groups:  # an exact copy is as near to others as its first member
        nearest[g[1:]] = nearest[g[0]]
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r_all)), (r_all, c_all)), shape=(m, m))
    _, comp = connected_components(graph, directed=False)
    rep_comp = comp[inverse]
    span = np.zeros(comp.max() + 1, np.int64)
    np.maximum.at(span, comp[r_all], np.concatenate(dists))
    by: dict[int, list[int]] = {}
    for j in np.flatnonzero(np.bincount(rep_comp)[rep_comp] >= 2):
        by.setdefault(int(rep_comp[j]), []).append(reps[j])
    sets = [sorted(members) for members in by.values()]
    spans = [int(span[c]) for c in by]
    order = sorted(range(len(sets)), key=lambda k: sets[k][0])
    return NearDuplicates([sets[k] for k in order], nearest, [spans[k] for k in order])
