"""Built-in architecture traces, sparsity profiles, drift and JSON round trips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pcr_explore.swap import (
    SwapError,
    TensorRecord,
    Trace,
    builtin_trace,
    resnet50_trace,
    sparsity_profile,
    vgg16_trace,
)


def test_vgg16_shapes_and_flops():
    t = vgg16_trace(batch=2, resolution=224, sparsity=0.6)
    names = [r.name for r in t.tensors]
    assert names[:4] == ["input", "conv1_1", "conv1_2", "pool1"]
    assert len(t) == 21  # input + 13 conv + 5 pool + fc6 + fc7
    rec = {r.name: r for r in t.tensors}
    assert rec["conv5_3"].shape == (2, 512, 14, 14)
    assert rec["pool5"].shape == (2, 512, 7, 7)
    assert rec["conv1_2"].binarizable and not rec["conv1_1"].binarizable
    # 15.47 G multiply-adds per 224x224 image in the convs and fcs
    macs = sum(r.fwd_flops for r in t.tensors if r.kind == "relu") / 2 / 2
    assert macs == pytest.approx(15.47e9, rel=0.01)
    s = dict(zip(names, t.sparsity[0], strict=True))
    assert s["input"] == 0.0 and s["conv3_1"] == pytest.approx(0.6)


def test_resnet50_shapes_and_flops():
    t = resnet50_trace(batch=1)
    assert len(t) == 51
    rec = {r.name: r for r in t.tensors}
    assert rec["stem.relu"].shape == (1, 64, 112, 112)
    assert rec["stem.pool"].shape == (1, 64, 56, 56)
    assert rec["layer2.0.relu2"].shape == (1, 128, 28, 28)
    assert rec["layer4.2.relu3"].shape == (1, 2048, 7, 7)
    total = sum(r.fwd_flops for r in t.tensors) + t.tail_fwd_flops
    assert total / 2 == pytest.approx(4.1e9, rel=0.03)  # ~4.1 G multiply-adds


def test_batch_and_resolution_scale_bytes():
    small = vgg16_trace(batch=1, resolution=64)
    big = vgg16_trace(batch=4, resolution=128)
    assert big.tensors[1].nbytes == 16 * small.tensors[1].nbytes
    with pytest.raises(SwapError, match="batch"):
        vgg16_trace(batch=0)
    with pytest.raises(SwapError, match="resolution"):
        resnet50_trace(resolution=16)
    with pytest.raises(SwapError, match="unknown model"):
        builtin_trace("alexnet")


def test_sparsity_profiles():
    np.testing.assert_allclose(sparsity_profile(0.3, 4), [0.3] * 4)
    np.testing.assert_allclose(sparsity_profile((0.2, 0.8), 4), [0.2, 0.4, 0.6, 0.8])
    np.testing.assert_allclose(sparsity_profile([0.1, 0.9], 3), [0.1, 0.5, 0.9])
    captured = vgg16_trace(batch=1, sparsity=(0.3, 0.9))
    onto = resnet50_trace(batch=1, sparsity=captured)
    sparse = [i for i, r in enumerate(onto.tensors) if r.kind != "input"]
    s = onto.sparsity[0, sparse]
    assert s[0] == pytest.approx(0.3) and s[-1] == pytest.approx(0.9)
    assert np.all(np.diff(s) >= -1e-12)
    for bad in (1.2, (0.1, -0.5), []):
        with pytest.raises(SwapError):
            sparsity_profile(bad, 3)


def test_drift_changes_sparse_tensors_only():
    t = vgg16_trace(batch=1, sparsity=0.5).with_drift(6, change=0.2, jitter=0.0)
    assert t.iterations == 6
    assert t.sparsity[:, 0].tolist() == [0.0] * 6  # input stays dense
    np.testing.assert_allclose(t.sparsity[-1, 1:] - t.sparsity[0, 1:], 0.2)
    with pytest.raises(SwapError, match="iterations"):
        t.with_drift(0)


def test_json_round_trip(tmp_path):
    t = resnet50_trace(batch=3, resolution=96, sparsity=(0.4, 0.7)).with_drift(3, seed=2)
    recs = list(t.tensors)
    recs[1] = TensorRecord(**{**recs[1].__dict__, "measured_bytes": {"zvc": 1234}})
    t = Trace(t.name, tuple(recs), t.sparsity, t.tail_fwd_flops, t.tail_fwd_mem_bytes, t.meta)
    path = tmp_path / "t.json"
    t.save(path)
    back = Trace.load(path)
    assert back.name == t.name and back.tensors == t.tensors
    np.testing.assert_array_equal(back.sparsity, t.sparsity)
    assert back.tail_fwd_flops == t.tail_fwd_flops and back.meta == json.loads(json.dumps(t.meta))
    assert back.tensors[1].measured_bytes == {"zvc": 1234}


def test_bad_trace_files(tmp_path):
    with pytest.raises(SwapError, match="cannot read"):
        Trace.load(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(SwapError, match="not JSON"):
        Trace.load(tmp_path / "x.json")
    (tmp_path / "y.json").write_text('{"hello": 1}')
    with pytest.raises(SwapError, match="not a pcr_explore swap trace"):
        Trace.load(tmp_path / "y.json")
    obj = vgg16_trace(batch=1).to_json()
    obj["tensors"][2]["shape"] = [1, -3]
    (tmp_path / "z.json").write_text(json.dumps(obj))
    with pytest.raises(SwapError, match="negative"):
        Trace.load(tmp_path / "z.json")
    obj = vgg16_trace(batch=1).to_json()
    obj["sparsity"] = [[0.5] * 3]
    with pytest.raises(SwapError, match="shape"):
        Trace.from_json(obj)


def test_record_validation():
    with pytest.raises(SwapError, match="not numeric"):
        TensorRecord("x", (2,), dtype="U3")
    with pytest.raises(SwapError, match="fwd_flops"):
        TensorRecord("x", (2,), fwd_flops=-1.0)
    with pytest.raises(SwapError, match="kind"):
        TensorRecord("x", (2,), kind="weights")
    with pytest.raises(SwapError, match=r"\[0, 1\]"):
        Trace("t", (TensorRecord("x", (2,)),), np.array([[1.5]]))
