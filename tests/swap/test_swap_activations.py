"""Synthetic activations and bit-level sparsity."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import bit_sparsity, synthetic_activations


@pytest.mark.parametrize("s", [0.0, 0.3, 0.65, 0.9, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_synthetic_sparsity_is_exact_and_relu_like(s, dtype):
    x = synthetic_activations((2, 3, 20, 24), sparsity=s, seed=4, dtype=dtype)
    assert x.shape == (2, 3, 20, 24) and x.dtype == np.dtype(dtype)
    assert np.count_nonzero(x == 0) == round(s * x.size)
    assert bit_sparsity(x) == pytest.approx(s, abs=1 / x.size)
    assert np.all(x >= 0) and not np.any(np.signbit(x))


def test_bit_sparsity_counts_only_positive_zero():
    x = np.array([0.0, -0.0, 1.0, np.nan, 0.0, 5e-45], dtype=np.float32)
    assert bit_sparsity(x) == pytest.approx(2 / 6)
    assert bit_sparsity(np.zeros((0, 3), dtype=np.float32)) == 0.0
    assert bit_sparsity(np.array([0, 3, 0, 0], dtype=np.int32)) == 0.75


def _zero_runs(x):
    z = (x.reshape(-1, x.shape[-1]) == 0).astype(np.int8)
    return int((np.diff(z, axis=1) == 1).sum())


def test_correlation_makes_blobs():
    blobs = synthetic_activations((2, 4, 32, 32), sparsity=0.7, correlation=3.0)
    iid = synthetic_activations((2, 4, 32, 32), sparsity=0.7, correlation=0.0)
    assert _zero_runs(blobs) < _zero_runs(iid) / 3


def test_same_seed_same_tensor():
    a = synthetic_activations((2, 3, 8, 8), sparsity=0.5, seed=7)
    np.testing.assert_array_equal(a, synthetic_activations((2, 3, 8, 8), sparsity=0.5, seed=7))
    assert not np.array_equal(a, synthetic_activations((2, 3, 8, 8), sparsity=0.5, seed=8))


def test_synthetic_bad_input():
    with pytest.raises(SwapError, match="sparsity"):
        synthetic_activations((2, 2), sparsity=1.5)
    with pytest.raises(SwapError, match="dtype"):
        synthetic_activations((2, 2), sparsity=0.5, dtype="int32")
    with pytest.raises(SwapError, match="non-negative"):
        synthetic_activations((2, -2), sparsity=0.5)
    assert synthetic_activations((0, 3), sparsity=0.5).shape == (0, 3)
