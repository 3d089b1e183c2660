"""The trace catalog: analytic, shipped measured traces, a user's files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import (
    SparsityTable,
    list_traces,
    load_trace,
    measured_trace,
    measured_trace_names,
    simulate_many,
)
from pcr_explore.swap.traces.architectures import vgg16_trace

NAMES = ["resnet-small-flowers5", "small-cnn-flowers5", "vgg-small-flowers5"]


def test_shipped_measured_traces_say_how_they_were_made():
    assert measured_trace_names() == NAMES
    for name in NAMES:
        t = measured_trace(name)
        m = t.meta
        assert m["dataset"] == "flowers5" and m["made_by"] == "bench/make_swap_traces.py"
        assert m["source"] == "pcr_explore.swap.capture_training"
        assert m["steps"][0] == 1 and m["steps"] == sorted(m["steps"]) and len(m["steps"]) >= 5
        assert t.iterations == len(m["steps"]) == len(m["losses"])
        assert t.tensors[0].op == "input" and {"relu", "conv"} & {r.op for r in t.tensors}
        assert all(r.fwd_flops >= 0 for r in t.tensors) and sum(r.fwd_flops for r in t.tensors) > 0
        assert all(r.measured_bytes for r in t.tensors)
        # ReLU outputs of a BN network start near half zeros
        relu = [i for i, r in enumerate(t.tensors) if r.op == "relu"]
        assert 0.3 < float(np.mean(t.sparsity[0, relu])) < 0.7
        tab = SparsityTable.from_trace(t)
        assert tab.steps == tuple(m["steps"])


def test_list_and_load_every_kind(tmp_path):
    mine = tmp_path / "mine.json"
    vgg16_trace(batch=2, resolution=64, sparsity=0.4).save(mine)
    opts = list_traces([mine])
    assert [o.kind for o in opts] == [
        "analytic",
        "analytic",
        "measured",
        "measured",
        "measured",
        "file",
    ]
    assert all(o.description for o in opts)
    assert "assumed" in opts[0].description and "measured" in opts[2].description
    loaded = [o.load() for o in opts]
    assert loaded[0].name == "vgg16-b64-r224" and loaded[-1].name == "vgg16-b2-r64"
    assert load_trace("small-cnn-flowers5").name == load_trace("measured:small-cnn-flowers5").name
    assert load_trace(loaded[1]) is loaded[1]
    with pytest.raises(SwapError, match="shipped"):
        load_trace("measured:alexnet")
    with pytest.raises(SwapError):
        load_trace(tmp_path / "missing.json")


def test_measured_traces_simulate_over_their_steps():
    t = measured_trace("vgg-small-flowers5")
    res = simulate_many(t, profile="v100-pcie3", policies=["vdnn", "cswap", "oracle"])
    assert res["cswap"].per_iteration["stall_seconds"].shape == (t.iterations,)
    assert res["oracle"].stall_seconds <= res["vdnn"].stall_seconds


def test_files_are_small_json():
    from importlib import resources

    root = resources.files("pcr_explore.swap.traces") / "measured_traces"
    for name in NAMES:
        text = (root / f"{name}.json").read_text("utf-8")
        assert len(text) < 20_000
        assert json.loads(text)["format"] == "pcr_explore.swap.trace"
