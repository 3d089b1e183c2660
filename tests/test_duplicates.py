"""Near duplicates by the band index against comparing every pair of hashes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcr_explore.auditing import _duplicates, _hash_index
from pcr_explore.auditing._duplicates import (
    NEAREST_BITS,
    _near_duplicates_exhaustive,
    exact_groups,
    near_duplicates,
)
from pcr_explore.auditing._hash_index import LONG_RUN, close_pairs, plan_bands

MAX_RADIUS = 12  # a realistic widest threshold for 64-bit pHashes


def _flip(h: int, bits: list[int]) -> int:
    for b in bits:
        h ^= 1 << b
    return h


@st.composite
def planted(draw: st.DrawFn, max_size: int = 120) -> list[int | None]:
    """Hashes around a few centres, each 0 to 14 bits away; some random, some missing."""
    centres = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=6))
    out: list[int | None] = []
    for _ in range(draw(st.integers(2, max_size))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            out.append(None)
        elif kind == 1:
            out.append(draw(st.integers(0, 2**64 - 1)))
        elif kind == 2 and out:  # a tie: the same hash again
            out.append(draw(st.sampled_from(out)))
        else:
            c = draw(st.sampled_from(centres))
            bits = draw(st.lists(st.integers(0, 63), max_size=14, unique=True))
            out.append(_flip(c, bits))
    return out


def _every_pair(values: np.ndarray, radius: int) -> set[tuple[int, int, int]]:
    d = _hash_index.hamming(values[:, None], values[None, :]).astype(int)
    i, j = np.nonzero(np.triu(d <= radius, 1))
    return set(zip(i.tolist(), j.tolist(), d[i, j].tolist()))


def _pairs(values: np.ndarray, radius: int, **kw: int) -> list[tuple[int, int, int]]:
    return [
        (int(a), int(b), int(c))
        for i, j, d in close_pairs(values, radius, **kw)
        for a, b, c in zip(i, j, d)
    ]


def _bands_for(radius: int, extra: int) -> int:
    """0 (compare every pair) or radius + extra bands, kept to a few hundred band choices."""
    if extra == 0:
        return 0
    m = radius + extra
    while m > radius + 1 and math.comb(m, m - radius) > 300:
        m -= 1
    return min(m, 64)


@settings(max_examples=150, deadline=None)
@given(planted(), st.integers(0, MAX_RADIUS), st.integers(0, 5), st.integers(1, 40))
def test_close_pairs_are_every_pair_within_the_radius_once(
    hashes: list[int | None], radius: int, extra: int, block: int
) -> None:
    values = np.unique(np.array([h for h in hashes if h is not None], np.uint64))
    got = _pairs(values, radius, block=block, bands=_bands_for(radius, extra))
    assert len(got) == len(set(got))  # each pair once, though it agrees on many bands
    assert all(i < j for i, j, _ in got)
    assert set(got) == _every_pair(values, radius)


def _same_result(a: _duplicates.NearDuplicates, ref: _duplicates.NearDuplicates) -> None:
    assert a.sets == ref.sets
    assert a.max_distance == ref.max_distance
    want = np.where(ref.nearest > a.reach, np.inf, ref.nearest)  # NaN stays NaN
    np.testing.assert_array_equal(a.nearest, want)


@settings(max_examples=150, deadline=None)
@given(
    planted(),
    st.integers(0, MAX_RADIUS),
    st.integers(0, 6),
    st.integers(0, 5),
    st.data(),
)
def test_near_duplicates_equal_the_exhaustive_search(
    hashes: list[int | None], max_bits: int, more: int, extra: int, data: st.DataObject
) -> None:
    # exact-duplicate groups: some images with equal hashes share their bytes
    digests = [
        f"h{h}" if h is not None and data.draw(st.booleans()) else f"u{k}"
        for k, h in enumerate(hashes)
    ]
    groups = exact_groups(digests)
    reach = min(64, max_bits + more)
    got = near_duplicates(
        hashes, groups, max_bits, reach=reach, bands=_bands_for(reach, extra), block=7
    )
    _same_result(got, _near_duplicates_exhaustive(hashes, groups, max_bits))


def test_chains_ties_exact_copies_and_missing_hashes() -> None:
    a = 0x0123_4567_89AB_CDEF
    b, c = _flip(a, [0, 1, 2]), _flip(a, [0, 1, 2, 3, 4, 5])  # A-B 3, B-C 3, A-C 6 bits
    far = _flip(a, list(range(10, 20)))  # 10 bits from A: no set, nearest beyond the reach
    tie = b  # another file with B's hash: distance 0
    hashes = [a, b, c, None, far, tie, a]
    groups = [[0, 6]]  # image 6 has image 0's bytes: one image
    for extra in (0, 1, 2, 3):
        r = near_duplicates(hashes, groups, 3, bands=_bands_for(NEAREST_BITS, extra))
        assert r.sets == [[0, 1, 2, 5]]  # the chain joins A and C
        assert r.max_distance == [3]
        assert r.reach == NEAREST_BITS
        assert r.nearest.tolist()[:3] == [3.0, 0.0, 3.0]
        assert math.isnan(r.nearest[3]) and r.nearest[4] == math.inf
        assert r.nearest[5] == 0.0 and r.nearest[6] == r.nearest[0]
    wide = near_duplicates(hashes, groups, 3, reach=16)
    assert wide.nearest[4] == 10.0 and wide.sets == [[0, 1, 2, 5]]  # A is 10 bits from far


def test_a_dense_cluster_is_compared_in_blocks() -> None:
    # 300 hashes within 2 bits of one centre share most bands: runs far past LONG_RUN
    centre = 0xF0F0_1234_5678_0F0F
    values = np.unique(
        np.array(
            [_flip(centre, [i, j]) for i in range(64) for j in range(i + 1, 64)][:300],
            np.uint64,
        )
    )
    assert len(values) == 300 > LONG_RUN
    for m in (0, 5, 6, 7):
        got = _pairs(values, 4, block=5, bands=m)
        assert len(got) == len(set(got)) and set(got) == _every_pair(values, 4)
    hashes: list[int | None] = [int(v) for v in values]
    r = near_duplicates(hashes, [], 4, reach=4, bands=6)
    assert r.sets == [list(range(300))] and r.max_distance == [4]


def test_many_links_are_folded_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    centres = rng.integers(0, 2**63, 8, dtype=np.uint64)
    hashes: list[int | None] = []
    for k in range(400):
        bits = rng.choice(64, int(rng.integers(0, 5)), replace=False).tolist()
        hashes.append(_flip(int(centres[k % 8]), bits))
    ref = _near_duplicates_exhaustive(hashes, [], 4)
    monkeypatch.setattr(_duplicates, "_LINKS_KEPT", 10)  # fold after every few links
    _same_result(near_duplicates(hashes, [], 4, reach=6, bands=7), ref)
    assert len(ref.sets) == 8


def test_the_plan_compares_every_pair_only_where_that_is_cheaper() -> None:
    assert plan_bands(100, 4) == 0  # one block of rows
    assert plan_bands(1_280_000, 4) > 4  # an index
    assert plan_bands(1_280_000, 8) > 8
    assert plan_bands(1_280_000, 60) == 0  # no band choice pays


@pytest.mark.parametrize(
    ("max_bits", "reach", "message"),
    [
        (-1, None, "max_bits must be 0 to 64, not -1"),
        (65, None, "max_bits must be 0 to 64, not 65"),
        (2.5, None, "max_bits must be a whole number of bits, not 2.5"),
        (True, None, "max_bits must be a whole number of bits, not True"),
        (6, 4, r"reach must be max_bits \(6\) to 64, not 4"),
        (4, 65, r"reach must be max_bits \(4\) to 64, not 65"),
    ],
)
def test_bad_distances_are_refused(max_bits: int, reach: int | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        near_duplicates([1, 2], [], max_bits, reach=reach)


def test_too_few_bands_for_the_radius_are_refused() -> None:
    with pytest.raises(ValueError, match="4 bands cannot index a radius of 4 bits"):
        list(close_pairs(np.array([1, 2], np.uint64), 4, bands=4))


def test_the_check_says_how_far_the_score_is_searched() -> None:
    from pcr_explore.auditing._checks import CHECKS

    assert f"searched up to {NEAREST_BITS} bits" in CHECKS["near_duplicate"].score
