"""The online kernel-time predictor cswap fits during a run."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap.model.predictor import KernelTimePredictor


def _times(n, nnz):
    """Two options besides raw: a sparse codec and a dense one."""
    sparse = 1e-5 + 1e-10 * n + 4e-10 * nnz
    dense = 2e-5 + 6e-10 * n
    return np.stack([np.zeros_like(n), sparse, dense])


def test_predictor_learns_each_option_from_what_was_chosen():
    n = np.array([1e5, 4e5, 1e6, 2e6, 5e6, 8e6])
    nnz = np.array([n * 0.5, n * 0.2])  # two iterations, sparsity drifts from 0.5 to 0.8
    p = KernelTimePredictor(3, n, nnz)
    tc, td = p.predict(0)
    assert np.all(tc[0] == 0) and np.all(np.isinf(tc[1:])) and np.all(np.isinf(td[1:]))
    p.observe(0, np.array([1, 2, 1, 2, 1, 2]), _times(n, nnz[0]), 2 * _times(n, nnz[0]))
    p.refit()
    assert sorted(p.fits) == [1, 2]
    tc, td = p.predict(0)
    np.testing.assert_allclose(tc, _times(n, nnz[0]), rtol=1e-6)
    np.testing.assert_allclose(td, 2 * _times(n, nnz[0]), rtol=1e-6)
    # the dense option's time does not depend on nnz, so it extrapolates to the drifted
    # iteration exactly; the sparse one is exact once it has seen the new sparsity too
    tc1, _ = p.predict(1)
    np.testing.assert_allclose(tc1[2], _times(n, nnz[1])[2], rtol=1e-6)
    p.observe(1, np.array([1, 1, 1, 0, 0, 0]), _times(n, nnz[1]), _times(n, nnz[1]))
    p.refit()
    tc1, _ = p.predict(1)
    np.testing.assert_allclose(tc1[1], _times(n, nnz[1])[1], rtol=1e-6)


def test_predictor_rejects_mismatched_shapes():
    with pytest.raises(SwapError, match="shape"):
        KernelTimePredictor(2, np.ones(3), np.ones((1, 4)))
