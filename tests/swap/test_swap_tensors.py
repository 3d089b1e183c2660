"""Synthetic activations, the numpy CNN on photos, and the optional torch capture."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.swap import (
    MissingExtraError,
    SwapError,
    bit_sparsity,
    capture_saved_tensors,
    cnn_activations,
    cnn_trace,
    simulate_many,
    synthetic_activations,
)


@pytest.mark.parametrize("s", [0.0, 0.3, 0.65, 0.9, 1.0])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_synthetic_sparsity_is_exact_and_relu_like(s, dtype):
    x = synthetic_activations((2, 3, 20, 24), s, seed=4, dtype=dtype)
    assert x.shape == (2, 3, 20, 24) and x.dtype == np.dtype(dtype)
    assert np.count_nonzero(x == 0) == round(s * x.size)
    assert bit_sparsity(x) == pytest.approx(s, abs=1 / x.size)
    assert np.all(x >= 0) and not np.any(np.signbit(x))


def _zero_runs(x):
    z = (x.reshape(-1, x.shape[-1]) == 0).astype(np.int8)
    return int((np.diff(z, axis=1) == 1).sum())


def test_correlation_makes_blobs():
    blobs = synthetic_activations((2, 4, 32, 32), 0.7, correlation=3.0)
    iid = synthetic_activations((2, 4, 32, 32), 0.7, correlation=0.0)
    assert _zero_runs(blobs) < _zero_runs(iid) / 3


def test_synthetic_bad_input():
    with pytest.raises(SwapError, match="sparsity"):
        synthetic_activations((2, 2), 1.5)
    with pytest.raises(SwapError, match="dtype"):
        synthetic_activations((2, 2), 0.5, dtype="int32")
    with pytest.raises(SwapError, match="non-negative"):
        synthetic_activations((2, -2), 0.5)
    assert synthetic_activations((0, 3), 0.5).shape == (0, 3)


def test_cnn_on_photos_records_sparse_relu_outputs():
    acts = cnn_activations(size=32)
    names = [a[0] for a in acts]
    assert names == [
        "conv1_1",
        "conv1_2",
        "pool1",
        "conv2_1",
        "conv2_2",
        "pool2",
        "conv3_1",
        "conv3_2",
        "pool3",
    ]
    assert acts[0][1].shape == (4, 16, 32, 32) and acts[-1][1].shape == (4, 64, 4, 4)
    sp = [bit_sparsity(a) for _, a, _ in acts if _ is not None]
    assert all(0.2 < s < 0.98 for s in sp)
    relu = [bit_sparsity(a) for n, a, _ in acts if n.startswith("conv")]
    assert relu[-1] > relu[0]  # deeper is sparser
    assert all(not np.any(np.signbit(a)) for _, a, _ in acts)


def test_cnn_trace_carries_measured_sizes_used_by_simulator():
    t = cnn_trace(size=32, codecs=("zvc", "rle"))
    assert t.tensors[0].kind == "input" and t.tensors[1].measured_bytes["zvc"] > 0
    assert t.tensors[2].binarizable  # conv1_2 feeds pool1
    res = simulate_many(t, "v100-pcie3", ["vdnn", "always:rle", "oracle"])
    link = res["always:rle"].link_bytes / 2
    assert link == pytest.approx(sum(r.measured_bytes["rle"] for r in t.tensors))


def test_cnn_rejects_bad_images():
    with pytest.raises(SwapError, match="images"):
        cnn_activations(np.zeros((2, 1, 16, 16)))


def test_torch_capture_records_saved_activations():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 8 * 8, 10),
    )
    x = torch.randn(4, 3, 16, 16)
    with capture_saved_tensors(keep_tensors=True) as cap:
        loss = model(x).sum()
    loss.backward()
    kinds = [r["kind"] for r in cap.records]
    assert "relu" in kinds and kinds[0] == "input"
    relu = next(i for i, r in enumerate(cap.records) if r["kind"] == "relu")
    assert cap.records[relu]["shape"] == [4, 8, 16, 16]
    assert cap.records[relu]["sparsity"] == pytest.approx(bit_sparsity(cap.tensors[relu]))
    assert all(
        r["shape"] != [10, 8 * 8 * 8] and r["shape"] != [8 * 8 * 8, 10] for r in cap.records
    )  # weights skipped
    trace = cap.trace("tiny")
    assert len(trace) == len(cap.records)


def test_torch_capture_names_the_extra_when_missing():
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
            with capture_saved_tensors():
                pass
    else:
        pytest.skip("torch is installed")
