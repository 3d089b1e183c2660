"""Non-negative least-squares fits of kernel costs, and calibration on this machine."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import Calibration, calibrate
from pcr_explore.swap.model.calibration import fit_kernel_cost


def test_fit_recovers_exact_linear_model():
    rng = np.random.default_rng(0)
    n = rng.integers(1 << 10, 1 << 24, 40).astype(float)
    nnz = n * rng.random(40)
    t = 3e-5 + 2e-11 * n + 5e-11 * nnz
    k = fit_kernel_cost(n, nnz, t)
    assert (k.alpha, k.beta, k.gamma) == pytest.approx((3e-5, 2e-11, 5e-11), rel=1e-6)
    # one sparsity only: n and nnz collinear, predictions along that line still exact
    k1 = fit_kernel_cost(n, 0.3 * n, 3e-5 + 2e-11 * n + 5e-11 * 0.3 * n)
    assert k1.time(1e7, 3e6) == pytest.approx(3e-5 + 2e-4 + 1.5e-4, rel=1e-6)
    with pytest.raises(SwapError):
        fit_kernel_cost([], [], [])
    with pytest.raises(SwapError, match="equally long"):
        fit_kernel_cost([1.0, 2.0], [1.0], [1.0, 2.0])
    with pytest.raises(SwapError, match="finite"):
        fit_kernel_cost([1.0], [1.0], [np.nan])


def test_fit_recovers_coefficients_from_noisy_times():
    rng = np.random.default_rng(1)
    n = np.repeat([1 << 14, 1 << 16, 1 << 18, 1 << 20], 4).astype(float)
    nnz = np.rint(n * (1 - np.tile([0.0, 0.3, 0.6, 0.9], 4)))
    true = 1e-5 + 3e-10 * n + 2e-10 * nnz
    k = fit_kernel_cost(n, nnz, true * np.exp(rng.normal(0, 0.01, n.size)))
    assert k.alpha == pytest.approx(1e-5, rel=0.1)
    assert k.beta == pytest.approx(3e-10, rel=0.03)
    assert k.gamma == pytest.approx(2e-10, rel=0.05)


def test_constraint_clamps_a_coefficient_plain_least_squares_makes_negative():
    # times independent of nnz, measured at two sparsities with noise that tilts the fit
    n = np.array([1e6, 1e6, 4e6, 4e6])
    nnz = np.array([1e5, 9e5, 4e5, 3.6e6])
    t = 2e-5 + 1e-9 * n + np.array([4e-6, -4e-6, 4e-6, -4e-6])
    free = fit_kernel_cost(n, nnz, t, nonnegative=False)
    assert free.gamma < 0
    k = fit_kernel_cost(n, nnz, t)
    assert k.gamma == 0.0 and k.alpha >= 0
    assert k.beta == pytest.approx(1e-9, rel=0.01)
    assert k.alpha == pytest.approx(2e-5, rel=0.2)


def test_calibration_from_synthetic_times_recovers_the_cost():
    n = np.repeat([1e4, 1e5, 1e6], 3)
    nnz = n * np.tile([1.0, 0.5, 0.1], 3)
    comp = 5e-6 + 1e-10 * n + 4e-10 * nnz
    dec = 8e-6 + 2e-10 * n
    cal = Calibration.from_times("ZVC", n, nnz, comp, dec)
    assert cal.codec == "zvc"
    c, d = cal.cost.compress, cal.cost.decompress
    assert (c.alpha, c.beta, c.gamma) == pytest.approx((5e-6, 1e-10, 4e-10), rel=1e-6)
    assert (d.alpha, d.beta) == pytest.approx((8e-6, 2e-10), rel=1e-6)
    assert d.gamma == pytest.approx(0.0, abs=1e-18)
    assert cal.r2 == pytest.approx((1.0, 1.0), abs=1e-9)


def test_calibrate_measures_the_grid_it_is_given():
    cal = calibrate("bitmap", sizes=(1 << 12, 1 << 15), sparsities=(0.0, 0.5, 0.9), repeats=1)
    assert cal.codec == "bitmap"
    assert cal.n.tolist() == [4096.0] * 3 + [32768.0] * 3
    assert cal.nnz.tolist() == [4096.0, 2048.0, 410.0, 32768.0, 16384.0, 3277.0]
    assert cal.compress_s.shape == cal.decompress_s.shape == (6,)
    # the stored cost is the fit of the stored times (no claim about how fast they were)
    refit = fit_kernel_cost(cal.n, cal.nnz, cal.compress_s)
    assert cal.cost.compress == refit
    with pytest.raises(SwapError):
        calibrate("zvc", sizes=())
    with pytest.raises(SwapError, match=r"\[0, 1\]"):
        calibrate("zvc", sizes=(100,), sparsities=(2.0,))
    with pytest.raises(SwapError, match="unknown codec"):
        calibrate("zip")
