"""Analytic and measured compression ratio curves."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import get_codec, measure_ratios, ratio_curve, synthetic_activations
from pcr_explore.swap.codecs.ratios import measured_ratio_curve


def test_ratio_curve_is_vectorised_over_sparsity():
    s = np.linspace(0, 0.95, 20)
    curves = ratio_curve(["zvc", "bitmap", "csr", "delta8", "rle", "binarize"], sparsities=s)
    assert all(v.shape == (20,) for v in curves.values())
    assert np.all(np.diff(curves["zvc"]) > 0)
    assert curves["binarize"] == pytest.approx(np.full(20, 32.0))
    n = 1 << 24
    nnz = np.rint(n * (1 - s))
    np.testing.assert_allclose(curves["bitmap"], 4 * n / (4 * nnz + n / 8), rtol=1e-12)


def test_ratio_curve_counts_itemsize_and_rejects_bad_input():
    half = ratio_curve(["bitmap"], sparsities=[0.5], n=1 << 20, itemsize=2)["bitmap"][0]
    assert half == pytest.approx(2 * (1 << 20) / (2 * (1 << 19) + (1 << 17)), rel=1e-12)
    assert ratio_curve(["bitmap"], sparsities=[0.5], n=0)["bitmap"][0] == np.inf  # nothing to send
    assert ratio_curve(["zvc"], sparsities=[0.5], n=0)["zvc"][0] == 0.0  # still 16384 offsets
    with pytest.raises(SwapError, match="n must be"):
        ratio_curve(["zvc"], sparsities=[0.5], n=-1)
    with pytest.raises(SwapError, match=r"\[0, 1\]"):
        ratio_curve(["zvc"], sparsities=[1.5])


def test_measured_ratios_equal_encoded_sizes():
    shape = (2, 4, 16, 16)
    x = synthetic_activations(shape, sparsity=0.6, seed=3)
    r = measure_ratios(["zvc", "rle", "binarize"], sparsity=0.6, shape=shape, seed=3)
    for name, ratio in r.items():
        assert ratio == x.nbytes / get_codec(name).encode(x).nbytes
    assert r["binarize"] == 32.0


def test_measured_curve_matches_single_measurements_and_exact_sizes():
    sparsities = [0.1, 0.5, 0.9]
    shape = (1, 4, 32, 32)
    curve = measured_ratio_curve(["bitmap", "rle"], sparsities, shape, seed=2)
    assert list(curve) == ["bitmap", "rle"]
    for i, s in enumerate(sparsities):
        one = measure_ratios(["bitmap", "rle"], sparsity=s, shape=shape, seed=2)
        assert curve["bitmap"][i] == one["bitmap"] and curve["rle"][i] == one["rle"]
    # bitmap's size is exact, and synthetic sparsity is exact, so the curve is the analytic one
    np.testing.assert_allclose(
        curve["bitmap"],
        ratio_curve(["bitmap"], sparsities=sparsities, n=4096)["bitmap"],
        rtol=1e-12,
    )
    assert measured_ratio_curve(["zvc"], []) == {}
