"""Device profiles and codec kernel costs."""

from __future__ import annotations

import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import get_profile, profile_names
from pcr_explore.swap.model.costs import CodecCost, KernelCost, gpu_codec_costs
from pcr_explore.swap.model.profiles import PROFILES


def test_builtin_profiles_link_anchors():
    assert profile_names() == ["v100-pcie3", "a100-pcie4", "h100-pcie5"]
    assert [PROFILES[p].link_gbps for p in profile_names()] == [15.75, 31.5, 63.0]
    p = get_profile("V100-PCIE3")
    assert p.transfer_time(0) == 0
    assert p.transfer_time(1e9) == pytest.approx(10e-6 + 1 / (15.75 * 0.8))
    assert p.compute_time(15.7e12 * 0.6) == pytest.approx(1.0)
    assert p.compute_time(0, 900e9 * 0.7) == pytest.approx(1.0)
    assert list(p.codecs) == ["zvc", "bitmap", "csr", "delta8", "rle", "zfp", "binarize"]
    assert get_profile(p) is p


def test_default_gpu_costs_follow_memory_traffic():
    costs = gpu_codec_costs(900.0)
    zvc = costs["zvc"].compress
    # 4.125 bytes per element and 4 per non-zero at 25% of 900 GB/s, two 5 us launches
    assert (zvc.alpha, zvc.beta, zvc.gamma) == pytest.approx(
        (10e-6, 4.125 / (0.25 * 900e9), 4.0 / (0.25 * 900e9))
    )
    assert costs["zvc"].decompress == zvc
    assert costs["bitmap"].compress.beta == pytest.approx(zvc.beta / 2)  # coalesced: 2x faster
    assert costs["binarize"].compress.gamma == 0 and costs["zfp"].compress.gamma == 0
    assert get_profile("h100-pcie5").codecs == gpu_codec_costs(2000.0)


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
    with pytest.raises(SwapError, match="latency"):
        get_profile("v100-pcie3").replace(link_latency_s=-1e-6)
    with pytest.raises(SwapError, match="CodecCost"):
        get_profile("v100-pcie3").with_codec("lz4", KernelCost(0, 0, 0))  # type: ignore[arg-type]
    with pytest.raises(SwapError, match="finite"):
        KernelCost(float("nan"), 0, 0)


def test_kernel_time_never_negative():
    assert KernelCost(-1.0, 0.0, 0.0).time(10, 5) == 0.0
    assert KernelCost(1e-5, 1e-9, 2e-9).time(1000, 400) == pytest.approx(1.18e-5)
