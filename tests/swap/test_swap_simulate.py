"""Simulator invariants, policies, timelines and drift."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import (
    default_policies,
    get_profile,
    profile_names,
    simulate,
    simulate_many,
)
from pcr_explore.swap.traces.architectures import resnet50_trace, vgg16_trace

SPARSE_CODECS = {"zvc", "bitmap", "csr", "delta8", "rle"}
TRACES = {
    "vgg16": lambda: vgg16_trace(batch=64, sparsity=0.65),
    "resnet50": lambda: resnet50_trace(batch=64, sparsity=(0.4, 0.8)),
}
ALL = [
    *default_policies("v100-pcie3"),
    "cswap+lossy",
    "oracle+lossy",
    "cswap-all+lossy",
    "oracle-all+lossy",
    "cswap:zvc,csr",
    "oracle:zvc,csr",
]


@pytest.fixture(scope="module")
def runs():
    return {
        (t, p): simulate_many(make(), profile=p, policies=ALL)
        for t, make in TRACES.items()
        for p in profile_names()
    }


def test_oracle_is_a_lower_bound(runs):
    for key, res in runs.items():
        best = res["oracle-all+lossy"].stall_seconds
        for name, r in res.items():
            assert best <= r.stall_seconds + 1e-12, (key, name)
        for pol in ("cswap", "cswap+lossy", "cswap-all", "cswap:zvc,csr"):
            oracle = pol.replace("cswap", "oracle")
            assert res[oracle].stall_seconds <= res[pol].stall_seconds + 1e-12, (key, pol)
        # the wider codec set can only help the oracle
        assert res["oracle-all"].stall_seconds <= res["oracle"].stall_seconds + 1e-12


def test_stall_never_negative_and_bounded_by_swap_time(runs):
    for res in runs.values():
        for r in res.values():
            ds = r.decisions()
            stall = np.array([d.actual_stall for d in ds])
            assert np.all(stall >= 0)
            swap = np.array(
                [
                    d.actual_compress + d.actual_decompress + d.transfer_out + d.transfer_in
                    for d in ds
                ]
            )
            assert np.all(stall <= swap * (1 + 1e-12))  # per tensor, not only in total
            assert r.stall_seconds == pytest.approx(stall.sum(), rel=1e-12)
            assert r.swap_seconds == pytest.approx(swap.sum(), rel=1e-12)


def test_cswap_beats_fixed_policies_and_nears_oracle(runs):
    # A check of the simulator's own consistency, not of a predictor: the "true" kernel
    # times are the profile's model times plus 5% noise, and cswap fits that same model.
    # tests/swap/test_swap_predictor_eval.py grades predictors on measured times instead.
    for key, res in runs.items():
        fixed = [
            r.stall_seconds
            for n, r in res.items()
            if n == "vdnn" or (n.startswith("always:") and n != "always:zfp")
        ]
        assert res["cswap-all"].stall_seconds <= min(fixed) + 1e-12, key
        assert res["cswap"].stall_seconds <= min(
            res["vdnn"].stall_seconds, res["always:zvc"].stall_seconds
        ), key
        assert res["cswap"].stall_seconds <= 1.05 * res["oracle"].stall_seconds, key
        assert res["cswap-all"].stall_seconds <= 1.05 * res["oracle-all"].stall_seconds, key
        assert res["cswap+lossy"].stall_seconds <= 1.05 * res["oracle+lossy"].stall_seconds, key


def test_noise_free_cswap_equals_oracle():
    t = vgg16_trace(batch=32, sparsity=0.6)
    res = simulate_many(
        t, profile="a100-pcie4", policies=["cswap", "oracle", "cswap-all", "oracle-all"], noise=0.0
    )
    np.testing.assert_array_equal(res["cswap"].choice, res["oracle"].choice)
    np.testing.assert_array_equal(res["cswap-all"].choice, res["oracle-all"].choice)
    # cswap chooses only between raw and ZVC, CSWAP's codec set
    assert {d.codec for d in res["cswap"].decisions()} <= {"raw", "zvc"}


def test_zero_sparsity_never_compressed_on_fast_link():
    t = vgg16_trace(batch=64, sparsity=0.0)
    for name in profile_names():
        r = simulate(t, profile=name, policy="cswap-all")
        used = {d.codec for d in r.decisions()}
        assert not used & SPARSE_CODECS, name  # only binarize (sparsity-free) may pay
        assert {d.codec for d in simulate(t, profile=name, policy="cswap").decisions()} == {"raw"}
    fast = get_profile("h100-pcie5").replace(link_gbps=630.0)
    assert {d.codec for d in simulate(t, profile=fast, policy="cswap").decisions()} == {"raw"}


def test_infinite_bandwidth_compresses_nothing():
    t = resnet50_trace(batch=32, sparsity=0.9)
    for name in profile_names():
        p = get_profile(name).replace(link_gbps=float("inf"))
        res = simulate_many(
            t, profile=p, policies=["cswap", "cswap+lossy", "oracle", "oracle+lossy"]
        )
        for r in res.values():
            assert set(np.asarray(r.options)[r.choice.ravel()]) == {"raw"}


def test_drifting_sparsity_triggers_refits():
    t = vgg16_trace(batch=64, sparsity=0.4).with_drift(8, change=0.4, jitter=0.01)
    res = simulate_many(t, profile="v100-pcie3", policies=["vdnn", "cswap", "oracle"])
    c = res["cswap"]
    # mean sparsity moves 0.4 / 7 = 0.057 > 0.02 per iteration: a refit at every one after the first
    assert c.refits == 7 and c.per_iteration["stall_seconds"].shape == (8,)
    assert np.all(c.per_iteration["stall_seconds"] <= res["vdnn"].per_iteration["stall_seconds"])
    assert c.stall_seconds <= 1.05 * res["oracle"].stall_seconds
    # exploration picks among the same codecs as the oracle, so it stalls at least as much
    oracle_first = res["oracle"].per_iteration["stall_seconds"][0]
    assert c.warmup_stall_seconds >= 2 * oracle_first
    assert res["vdnn"].warmup_stall_seconds == 0 and res["oracle"].warmup_stall_seconds == 0
    # later iterations are sparser, so they stall less
    assert c.per_iteration["stall_seconds"][-1] < c.per_iteration["stall_seconds"][0]


def test_simulate_errors():
    t = vgg16_trace(batch=1)
    with pytest.raises(SwapError, match="no kernel cost"):
        simulate(t, profile="v100-pcie3", policy="always:lz4")
    with pytest.raises(SwapError, match="no kernel cost for lz4"):
        simulate(t, profile="v100-pcie3", policy="cswap:zvc,lz4")
    with pytest.raises(SwapError, match="unknown profile"):
        simulate(t, profile="k80", policy="vdnn")
    with pytest.raises(SwapError, match="Trace"):
        simulate("vgg16", profile="v100-pcie3", policy="vdnn")  # type: ignore[arg-type]
    with pytest.raises(SwapError, match="warmup"):
        simulate(t, profile="v100-pcie3", policy="cswap", warmup=0)
    with pytest.raises(SwapError, match="noise"):
        simulate(t, profile="v100-pcie3", policy="cswap", noise=-1.0)
    with pytest.raises(SwapError, match="no policies"):
        simulate_many(t, profile="v100-pcie3", policies=[])
