"""The trace data model: validation, drift and JSON round trips."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pcr_explore.errors import SwapError
from pcr_explore.swap import TensorRecord, Trace
from pcr_explore.swap.traces.architectures import resnet50_trace, vgg16_trace


def test_drift_changes_sparse_tensors_only():
    t = vgg16_trace(batch=1, sparsity=0.5).with_drift(6, change=0.2, jitter=0.0)
    assert t.iterations == 6
    assert t.sparsity[:, 0].tolist() == [0.0] * 6  # input stays dense
    np.testing.assert_allclose(t.sparsity[-1, 1:] - t.sparsity[0, 1:], 0.2)
    np.testing.assert_allclose(np.diff(t.sparsity[:, 1]), 0.04)  # linear
    assert t.meta["drift"] == {"iterations": 6, "change": 0.2, "jitter": 0.0}
    capped = vgg16_trace(batch=1, sparsity=0.95).with_drift(3, change=0.2, jitter=0.0)
    assert capped.sparsity[-1, 1] == 0.999
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


finite = st.floats(0, 1e15, allow_nan=False, allow_infinity=False)


@st.composite
def traces(draw):
    """Small traces with any names, shapes, dtypes, kinds, measured sizes and iterations."""
    count = draw(st.integers(1, 5))
    records = []
    for _ in range(count):
        measured = draw(
            st.none()
            | st.dictionaries(st.sampled_from(["zvc", "rle", "lz4"]), st.integers(0, 2**40))
        )
        records.append(
            TensorRecord(
                name=draw(st.text(max_size=12)),
                shape=draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=64)),
                dtype=draw(st.sampled_from(["float32", "float16", "float64", "int8", "uint16"])),
                fwd_flops=draw(finite),
                fwd_mem_bytes=draw(finite),
                bwd_factor=draw(st.floats(0, 4)),
                kind=draw(st.sampled_from(["input", "relu", "pool", "activation"])),
                binarizable=draw(st.booleans()),
                measured_bytes=measured,
            )
        )
    iterations = draw(st.integers(1, 4))
    sparsity = draw(hnp.arrays(np.float64, (iterations, count), elements=st.floats(0, 1)))
    meta = draw(st.dictionaries(st.text(max_size=6), st.integers() | st.text(max_size=6)))
    return Trace(
        draw(st.text(max_size=12)), tuple(records), sparsity, draw(finite), draw(finite), meta
    )


@settings(max_examples=60, deadline=None)
@given(traces())
def test_json_round_trip_property(t):
    back = Trace.from_json(json.loads(json.dumps(t.to_json())))
    assert back.name == t.name and back.tensors == t.tensors and back.meta == t.meta
    np.testing.assert_array_equal(back.sparsity, t.sparsity)
    assert (back.tail_fwd_flops, back.tail_fwd_mem_bytes) == (
        t.tail_fwd_flops,
        t.tail_fwd_mem_bytes,
    )
    assert back.total_bytes == t.total_bytes
    assert back.mean_sparsity == t.mean_sparsity


def test_saved_meta_with_non_finite_numbers_is_strict_json(tmp_path):
    t = vgg16_trace(batch=1)
    t = Trace(t.name, t.tensors, t.sparsity, meta={"loss": float("inf"), "note": "x"})
    path = tmp_path / "t.json"
    t.save(path)
    text = path.read_text()
    assert "Infinity" not in text and json.loads(text)["meta"] == {"loss": None, "note": "x"}
    assert Trace.load(path).meta == {"loss": None, "note": "x"}


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=15,
)


@given(
    field=st.sampled_from(
        [
            "name",
            "tensors",
            "sparsity",
            "tail_fwd_flops",
            "meta",
            "shape",
            "dtype",
            "fwd_flops",
            "kind",
            "measured_bytes",
        ]
    ),
    value=_json_values,
)
def test_the_trace_loader_raises_only_swap_errors(field, value):
    obj = vgg16_trace(batch=2, resolution=32).to_json()
    if field in ("shape", "dtype", "fwd_flops", "kind", "measured_bytes"):
        obj["tensors"][0][field] = value
    else:
        obj[field] = value
    try:
        Trace.from_json(obj, source="fuzz.json")
    except SwapError as exc:
        assert str(exc).startswith("fuzz.json: ")


def test_absurd_shapes_and_deep_nesting_are_named(tmp_path):
    obj = vgg16_trace(batch=2, resolution=32).to_json()
    obj["tensors"][0]["shape"] = [2**70]
    with pytest.raises(SwapError, match=r"fuzz\.json: .*more than 281,474,976,710,656 elements"):
        Trace.from_json(obj, source="fuzz.json")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SwapError, match=r"deep\.json: not a trace file \(RecursionError\)"):
        Trace.load(deep)


def _full_disk_for(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the rename onto *name* fail, as a full disk fails a write."""
    replace = os.replace

    def refuse(a: str, b: str) -> None:
        if Path(b).name == name:
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(a, b)

    monkeypatch.setattr(os, "replace", refuse)


def test_save_keeps_the_old_file_until_the_new_one_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pcr_explore.swap.traces._trace as trace_module

    path = tmp_path / "t.json"
    path.write_text("the previous trace")
    t = vgg16_trace(batch=1, resolution=32)
    with monkeypatch.context() as m:  # the serialisation fails midway
        m.setattr(trace_module, "_dumps", lambda obj: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            t.save(path)
    assert path.read_text() == "the previous trace"
    _full_disk_for("t.json", monkeypatch)
    with pytest.raises(OSError, match="t.json"):
        t.save(path)
    assert path.read_text() == "the previous trace"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary file left
