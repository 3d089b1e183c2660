"""Simulator invariants, policies, timelines and drift."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pcr_explore.swap import (
    SwapError,
    default_policies,
    get_profile,
    parse_policy,
    profile_names,
    resnet50_trace,
    simulate,
    simulate_many,
    vgg16_trace,
)

SPARSE_CODECS = {"zvc", "bitmap", "csr", "delta8", "rle"}
TRACES = {
    "vgg16": lambda: vgg16_trace(batch=64, sparsity=0.65),
    "resnet50": lambda: resnet50_trace(batch=64, sparsity=(0.4, 0.8)),
}
ALL = [*default_policies("v100-pcie3"), "cswap+lossy", "oracle+lossy", "cswap:zvc", "oracle:zvc"]


@pytest.fixture(scope="module")
def runs():
    return {
        (t, p): simulate_many(make(), p, ALL) for t, make in TRACES.items() for p in profile_names()
    }


def test_oracle_is_a_lower_bound(runs):
    for key, res in runs.items():
        best = res["oracle+lossy"].stall_seconds
        for name, r in res.items():
            assert best <= r.stall_seconds + 1e-12, (key, name)
        assert res["oracle"].stall_seconds <= res["cswap"].stall_seconds + 1e-12
        assert res["oracle:zvc"].stall_seconds <= res["cswap:zvc"].stall_seconds + 1e-12


def test_stall_never_negative_and_bounded_by_swap_time(runs):
    for res in runs.values():
        for r in res.values():
            stall = r._arrays["stall"]
            assert np.all(stall >= 0)
            assert r.stall_seconds <= r.swap_seconds + 1e-12


def test_cswap_beats_fixed_policies_and_nears_oracle(runs):
    for key, res in runs.items():
        fixed = [
            r.stall_seconds
            for n, r in res.items()
            if n == "vdnn" or (n.startswith("always:") and n != "always:zfp")
        ]
        assert res["cswap"].stall_seconds <= min(fixed) + 1e-12, key
        assert res["cswap"].stall_seconds <= 1.05 * res["oracle"].stall_seconds, key
        assert res["cswap+lossy"].stall_seconds <= 1.05 * res["oracle+lossy"].stall_seconds, key


def test_noise_free_cswap_equals_oracle():
    t = vgg16_trace(batch=32, sparsity=0.6)
    res = simulate_many(t, "a100-pcie4", ["cswap", "oracle"], noise=0.0)
    np.testing.assert_array_equal(res["cswap"].choice, res["oracle"].choice)


def test_zero_sparsity_never_compressed_on_fast_link():
    t = vgg16_trace(batch=64, sparsity=0.0)
    for name in profile_names():
        r = simulate(t, name, "cswap")
        used = {d.codec for d in r.decisions()}
        assert not used & SPARSE_CODECS, name  # only binarize (sparsity-free) may pay
    fast = get_profile("h100-pcie5").replace(link_gbps=630.0)
    assert {d.codec for d in simulate(t, fast, "cswap").decisions()} == {"raw"}


def test_infinite_bandwidth_compresses_nothing():
    t = resnet50_trace(batch=32, sparsity=0.9)
    for name in profile_names():
        p = get_profile(name).replace(link_gbps=float("inf"))
        res = simulate_many(t, p, ["cswap", "cswap+lossy", "oracle", "oracle+lossy"])
        for r in res.values():
            assert set(np.asarray(r.options)[r.choice.ravel()]) == {"raw"}


def test_vdnn_and_always_totals_by_hand():
    t = vgg16_trace(batch=8, sparsity=0.5)
    p = get_profile("v100-pcie3")
    r = simulate(t, p, "vdnn", noise=0.0)
    raw = sum(rec.nbytes for rec in t.tensors)
    assert r.link_bytes == 2 * raw
    x = np.asarray(p.transfer_time([rec.nbytes for rec in t.tensors]))
    assert r.swap_seconds == pytest.approx(2 * x.sum())
    z = simulate(t, p, "always:zvc", noise=0.0)
    assert all(d.codec == "zvc" for d in z.decisions())
    n = t.tensors[3].n
    words = math.ceil(math.ceil(n / 16384) / 32)
    assert z.decisions()[3].bytes == 4 * round(n * 0.5) + 4 * 16384 * words + 4 * 16384


def test_timeline_adds_up_to_the_step():
    t = resnet50_trace(batch=16, sparsity=0.7)
    for pol in ("vdnn", "cswap", "always:zvc"):
        r = simulate(t, "v100-pcie3", pol)
        tl = r.timeline()
        assert max(tl["end"]) == pytest.approx(r.step_seconds)
        compute = [
            (s, e)
            for s, e, st in zip(tl["start"], tl["end"], tl["stream"], strict=True)
            if st == "compute"
        ]
        busy = sum(e - s for s, e in compute)
        assert busy == pytest.approx(r.step_seconds)  # compute stream never double-booked
        stall = sum(
            e - s
            for s, e, k in zip(tl["start"], tl["end"], tl["kind"], strict=True)
            if k in ("stall", "compress", "decompress")
        )
        assert stall == pytest.approx(r.stall_seconds)
        assert set(tl) == {"tensor", "name", "phase", "stream", "kind", "codec", "start", "end"}


def test_decisions_explain_themselves():
    r = simulate(vgg16_trace(batch=64, sparsity=0.65), "v100-pcie3", "cswap:zvc")
    ds = r.decisions()
    assert len(ds) == 21 and all(d.reason for d in ds)
    big = next(d for d in ds if d.name == "conv1_1")
    assert big.codec == "zvc" and "zvc" in big.reason and big.ratio == pytest.approx(2.62, 0.01)
    assert big.predicted_stall == pytest.approx(big.actual_stall, rel=0.15)
    fc7 = next(d for d in ds if d.name == "fc7")
    assert fc7.raw_bytes == 64 * 4096 * 4


def test_drifting_sparsity_triggers_refits():
    t = vgg16_trace(batch=64, sparsity=0.4).with_drift(8, change=0.4, jitter=0.01)
    res = simulate_many(t, "v100-pcie3", ["vdnn", "cswap", "oracle"])
    c = res["cswap"]
    assert c.refits >= 1 and c.per_iteration["stall_seconds"].shape == (8,)
    assert np.all(c.per_iteration["stall_seconds"] <= res["vdnn"].per_iteration["stall_seconds"])
    assert c.stall_seconds <= 1.05 * res["oracle"].stall_seconds
    assert c.warmup_stall_seconds > 0 and res["vdnn"].warmup_stall_seconds == 0
    # later iterations are sparser, so they stall less
    assert c.per_iteration["stall_seconds"][-1] < c.per_iteration["stall_seconds"][0]


def test_policy_parsing_and_errors():
    assert parse_policy("CSWAP+lossy").name == "cswap+lossy"
    assert parse_policy("oracle:zvc,zfp").codecs == ("zvc", "zfp")
    for bad in ("random", "cswap+fast", "always:nothing", "cswap:"):
        with pytest.raises(SwapError):
            parse_policy(bad)
    t = vgg16_trace(batch=1)
    with pytest.raises(SwapError, match="no kernel cost"):
        simulate(t, "v100-pcie3", "always:lz4")
    with pytest.raises(SwapError, match="unknown profile"):
        simulate(t, "k80", "vdnn")
    with pytest.raises(SwapError, match="Trace"):
        simulate("vgg16", "v100-pcie3", "vdnn")  # type: ignore[arg-type]
    with pytest.raises(SwapError, match="warmup"):
        simulate(t, "v100-pcie3", "cswap", warmup=0)
