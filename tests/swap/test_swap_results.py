"""What a simulation returns: decisions, JSON form and the timeline."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pcr_explore.swap import get_profile, simulate
from pcr_explore.swap.traces.architectures import resnet50_trace, vgg16_trace


def test_vdnn_and_always_totals_by_hand():
    t = vgg16_trace(batch=8, sparsity=0.5)
    p = get_profile("v100-pcie3")
    r = simulate(t, profile=p, policy="vdnn", noise=0.0)
    raw = sum(rec.nbytes for rec in t.tensors)
    assert r.link_bytes == 2 * raw
    x = np.asarray(p.transfer_time([rec.nbytes for rec in t.tensors]))
    assert r.swap_seconds == pytest.approx(2 * x.sum())
    z = simulate(t, profile=p, policy="always:zvc", noise=0.0)
    assert all(d.codec == "zvc" for d in z.decisions())
    n = t.tensors[3].n
    words = math.ceil(math.ceil(n / 16384) / 32)
    assert z.decisions()[3].bytes == 4 * round(n * 0.5) + 4 * 16384 * words + 4 * 16384


def test_timeline_adds_up_to_the_step():
    t = resnet50_trace(batch=16, sparsity=0.7)
    for pol in ("vdnn", "cswap", "always:zvc"):
        r = simulate(t, profile="v100-pcie3", policy=pol)
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
    r = simulate(vgg16_trace(batch=64, sparsity=0.65), profile="v100-pcie3", policy="cswap:zvc")
    ds = r.decisions()
    assert len(ds) == 21 and all(d.reason for d in ds)
    big = next(d for d in ds if d.name == "conv1_1")
    assert big.codec == "zvc" and big.reason.startswith("zvc: predicted stall")
    assert big.ratio == pytest.approx(2.62, 0.01)
    assert big.predicted_stall == pytest.approx(big.actual_stall, rel=0.15)
    fc7 = next(d for d in ds if d.name == "fc7")
    assert fc7.raw_bytes == 64 * 4096 * 4
    vdnn = simulate(vgg16_trace(batch=1), profile="v100-pcie3", policy="vdnn").decisions()
    assert {d.reason for d in vdnn} == {"vdnn swaps every tensor raw"}


def test_to_dict_is_strict_json_and_matches_the_result():
    r = simulate(
        vgg16_trace(batch=4, sparsity=0.6).with_drift(3), profile="a100-pcie4", policy="cswap"
    )
    d = r.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert (d["policy"], d["trace"], d["profile"]) == ("cswap", r.trace.name, "a100-pcie4")
    assert d["options"] == list(r.options) and d["refits"] == r.refits
    assert d["stall_seconds"] == r.stall_seconds and d["step_seconds"] == r.step_seconds
    assert d["per_iteration"]["stall_seconds"] == r.per_iteration["stall_seconds"].tolist()
    assert len(d["per_iteration"]["link_bytes"]) == 3
    last = r.decisions()
    assert [x["codec"] for x in d["decisions"]] == [x.codec for x in last]
    assert d["decisions"][5]["ratio"] == last[5].ratio
    assert "decisions" not in r.to_dict(decisions=False)


def test_to_dict_writes_infinite_ratios_as_null():
    from pcr_explore.swap import TensorRecord, Trace

    t = Trace("empty-tensor", (TensorRecord("x", (0, 4), kind="relu"),), [0.5])
    d = simulate(t, profile="v100-pcie3", policy="always:bitmap").to_dict()
    assert d["decisions"][0]["bytes"] == 0 and d["decisions"][0]["ratio"] is None
    json.dumps(d, allow_nan=False)


def test_a_list_of_results_prints_short():
    t = vgg16_trace(batch=8, sparsity=0.5)
    results = [
        simulate(t, profile="v100-pcie3", policy=pol, noise=0.0) for pol in ("vdnn", "always:zvc")
    ]
    text = repr(results)
    assert len(text) < 400 and text.count("<SimResult") == 2 and "(simulated)" in text
    assert repr(t).startswith(f"<Trace {t.name}: {len(t.tensors)} tensors, 1 iteration(s)")
