"""swap.report: several policies on one trace and device, as a table and JSON."""

from __future__ import annotations

import errno
import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import report, simulate_many
from pcr_explore.swap.traces.architectures import resnet50_trace, vgg16_trace


def test_report_equals_simulating_the_same_trace():
    rep = report(
        "resnet50", profile="a100-pcie4", policies=["vdnn", "cswap"], batch=4, resolution=128
    )
    trace = resnet50_trace(batch=4, resolution=128, sparsity=0.65)
    assert rep.trace.name == trace.name and rep.trace.tensors == trace.tensors
    np.testing.assert_array_equal(rep.trace.sparsity, trace.sparsity)
    want = simulate_many(trace, profile="a100-pcie4", policies=["vdnn", "cswap"])
    assert list(rep.results) == ["vdnn", "cswap"]
    for name, r in want.items():
        assert rep.results[name].stall_seconds == r.stall_seconds
        assert rep.results[name].swap_seconds == r.swap_seconds
        np.testing.assert_array_equal(rep.results[name].choice, r.choice)


def test_report_dict_per_tensor_and_per_policy():
    rep = report(
        "resnet50",
        profile="a100-pcie4",
        policies=["vdnn", "cswap", "oracle:zvc"],
        batch=4,
        resolution=128,
        sparsity=(0.3, 0.8),
    )
    d = rep.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert (d["trace"], d["profile"]) == ("resnet50-b4-r128", "a100-pcie4")
    assert d["total_bytes"] == rep.trace.total_bytes
    assert d["mean_sparsity"] == pytest.approx(rep.trace.mean_sparsity)
    assert len(d["tensors"]) == 51
    t = d["tensors"][1]
    assert t["name"] == "stem.relu" and t["bytes"] == 4 * 64 * 64 * 64 * 4
    assert t["sparsity"] == pytest.approx(0.3)
    assert t["decisions"]["vdnn"] == {
        "codec": "raw",
        "bytes": t["bytes"],
        "stall_seconds": rep.results["vdnn"].decisions()[1].actual_stall,
        "reason": "vdnn swaps every tensor raw",
    }
    for name, r in rep.results.items():
        assert d["policies"][name]["stall_seconds"] == r.stall_seconds
        assert d["policies"][name]["link_bytes"] == r.link_bytes
        total = sum(x["decisions"][name]["stall_seconds"] for x in d["tensors"])
        assert total == pytest.approx(r.stall_seconds, rel=1e-12)


def test_report_text_table():
    rep = report(
        "vgg16", profile="v100-pcie3", policies=["vdnn", "always:zvc"], batch=8, sparsity=0.7
    )
    lines = rep.to_text().splitlines()
    assert lines[0] == "vgg16-b8-r224 on v100-pcie3: 21 tensors, 0.45 GiB, mean sparsity 0.69"
    # every simulated figure says so and names the profile whose assumptions priced it
    assert lines[1] == "simulated, assumptions profile v100-pcie3 (docs/SWAP.md), not measured"
    assert lines[3].split() == ["vdnn", "77.81", "40.70", "0.908", "126.54", "+0.0%", "raw:21"]
    z = rep.results["always:zvc"]
    rel = (z.swap_seconds / rep.results["vdnn"].swap_seconds - 1) * 100
    assert lines[4].split()[0] == "always:zvc" and lines[4].split()[5] == f"{rel:+.1f}%"
    assert lines[4].endswith("zvc:21")
    no_base = report("vgg16", profile="v100-pcie3", policies=["always:zvc"], batch=1).to_text()
    assert no_base.splitlines()[3].split()[5] == "zvc:21"  # no "vs vdnn" column value
    d = rep.to_dict()
    assert (d["kind"], d["assumptions"]) == ("simulated", "v100-pcie3")
    assert rep.results["vdnn"].to_dict()["kind"] == "simulated"


def test_report_on_a_shipped_measured_trace():
    rep = report(trace="measured:small-cnn-flowers5", profile="a100-pcie4", policies=["vdnn"])
    assert rep.trace.name == "small-cnn-flowers5" and rep.trace.iterations > 1
    assert rep.results["vdnn"].stall_seconds > 0


def test_report_from_a_trace_file_with_drift(tmp_path):
    path = tmp_path / "t.json"
    vgg16_trace(batch=2, resolution=64, sparsity=0.5).save(path)
    rep = report(trace=path, policies=["vdnn", "cswap"], iterations=4, drift=0.3, seed=1)
    assert rep.trace.name == "vgg16-b2-r64" and rep.trace.iterations == 4
    np.testing.assert_allclose(
        rep.trace.sparsity[-1, 1:] - rep.trace.sparsity[0, 1:], 0.3, atol=0.05
    )
    assert rep.results["cswap"].per_iteration["stall_seconds"].shape == (4,)
    same = report(trace=rep.trace, policies=["vdnn"], sparsity=0.9)
    assert same.trace.sparsity[0, 1] == pytest.approx(0.9)


def test_report_save_writes_strict_json(tmp_path):
    rep = report("vgg16", profile="h100-pcie5", policies=["vdnn"], batch=1)
    out = tmp_path / "r.json"
    rep.save(out)
    assert json.loads(out.read_text()) == rep.to_dict()
    with pytest.raises(SwapError, match="cannot write"):
        rep.save(tmp_path / "missing" / "r.json")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"profile": "k80"}, "unknown profile"),
        ({"policies": ["random"]}, "unknown policy"),
        ({"sparsity": 1.5}, r"\[0, 1\]"),
        ({"batch": 0}, "batch"),
        ({"iterations": 0}, "iterations"),
        ({"model": "alexnet"}, "unknown model"),
        ({"trace": "/nonexistent/t.json"}, "cannot read"),
        ({"policies": ["always:zstd"]}, "no kernel cost"),
    ],
)
def test_report_bad_input(kwargs, match):
    with pytest.raises(SwapError, match=match):
        report(**{"batch": 1, **kwargs})


def test_save_keeps_the_old_file_until_the_new_one_is_whole(tmp_path, monkeypatch):
    module = importlib.import_module("pcr_explore.swap.simulator.report")
    rep = report("vgg16", profile="h100-pcie5", policies=["vdnn"], batch=1)
    out = tmp_path / "r.json"
    out.write_text("the previous report")
    with monkeypatch.context() as m:  # the serialisation fails midway
        m.setattr(module, "to_json", lambda obj: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            rep.save(out)
    assert out.read_text() == "the previous report"
    replace = os.replace

    def full_disk(a, b):  # the rename onto r.json fails, as a full disk fails a write
        if Path(b).name == "r.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(a, b)

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(SwapError, match=r"r\.json: cannot write: No space left on device"):
        rep.save(out)
    assert out.read_text() == "the previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left
