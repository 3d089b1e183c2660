"""Device profiles, kernel cost fitting and calibration."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.swap import (
    PROFILES,
    CodecCost,
    KernelCost,
    SwapError,
    calibrate,
    fit_kernel_cost,
    get_profile,
    profile_names,
)


def test_builtin_profiles_link_anchors():
    assert profile_names() == ["v100-pcie3", "a100-pcie4", "h100-pcie5"]
    assert [PROFILES[p].link_gbps for p in profile_names()] == [15.75, 31.5, 63.0]
    p = get_profile("V100-PCIE3")
    assert p.transfer_time(0) == 0
    assert p.transfer_time(1e9) == pytest.approx(10e-6 + 1 / (15.75 * 0.8))
    assert p.compute_time(15.7e12 * 0.6) == pytest.approx(1.0)
    assert "zvc" in p.codecs and "lz4" not in p.codecs


def test_profiles_are_frozen_but_editable():
    p = get_profile("a100-pcie4")
    with pytest.raises(AttributeError):
        p.link_gbps = 1.0  # type: ignore[misc]
    q = p.replace(link_gbps=float("inf"))
    assert q.transfer_time(1e12) == pytest.approx(q.link_latency_s) and p.link_gbps == 31.5
    cost = CodecCost(KernelCost(1e-3, 0, 0), KernelCost(1e-3, 0, 0))
    r = p.with_codec("lz4", cost)
    assert r.codecs["lz4"] == cost and "lz4" not in p.codecs
    assert "zvc" not in r.with_codec("zvc", None).codecs
    with pytest.raises(TypeError):
        r.codecs["x"] = cost  # type: ignore[index]


def test_bad_profiles():
    with pytest.raises(SwapError, match="unknown profile"):
        get_profile("tpu-v4")
    with pytest.raises(SwapError, match="link_gbps"):
        get_profile("v100-pcie3").replace(link_gbps=-1.0)
    with pytest.raises(SwapError, match="efficiency"):
        get_profile("v100-pcie3").replace(link_efficiency=1.5)
    with pytest.raises(SwapError, match="finite"):
        KernelCost(float("nan"), 0, 0)


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


def test_kernel_time_never_negative():
    assert KernelCost(-1.0, 0.0, 0.0).time(10, 5) == 0.0


def test_calibrate_fits_this_machine():
    cal = calibrate(
        "bitmap", sizes=(1 << 12, 1 << 15, 1 << 18), sparsities=(0.0, 0.5, 0.9), repeats=2
    )
    assert cal.codec == "bitmap" and cal.n.size == 9
    assert cal.cost.compress.beta > 0 or cal.cost.compress.gamma > 0
    assert cal.r2[0] > 0.8 and cal.r2[1] > 0.8
    big = cal.cost.compress.time(1 << 18, 1 << 17)
    small = cal.cost.compress.time(1 << 12, 1 << 11)
    assert big > small
    with pytest.raises(SwapError):
        calibrate("zvc", sizes=())
    with pytest.raises(SwapError):
        calibrate("zvc", sizes=(100,), sparsities=(2.0,))
