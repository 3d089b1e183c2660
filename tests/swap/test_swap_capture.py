"""The optional PyTorch capture of saved tensors."""

from __future__ import annotations

import pytest

from pcr_explore.errors import MissingExtraError, SwapError
from pcr_explore.swap import bit_sparsity, capture_saved_tensors
from pcr_explore.swap.capture import SavedTensorCapture


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
    assert cap.records[0]["shape"] == [4, 3, 16, 16] and cap.records[0]["bytes"] == 4 * 768 * 4
    relu = next(i for i, r in enumerate(cap.records) if r["kind"] == "relu")
    assert cap.records[relu]["shape"] == [4, 8, 16, 16]
    assert cap.records[relu]["sparsity"] == pytest.approx(bit_sparsity(cap.tensors[relu]))
    assert all(
        r["shape"] != [10, 8 * 8 * 8] and r["shape"] != [8 * 8 * 8, 10] for r in cap.records
    )  # weights skipped
    trace = cap.trace("tiny")
    assert len(trace) == len(cap.records) and trace.name == "tiny"
    assert [r.shape for r in trace.tensors] == [tuple(r["shape"]) for r in cap.records]


def test_empty_capture_has_no_trace():
    with pytest.raises(SwapError, match="no saved tensors"):
        SavedTensorCapture().trace()


def test_torch_capture_names_the_extra_when_missing():
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
            with capture_saved_tensors():
                pass
    else:
        pytest.skip("torch is installed")


def test_a_recorded_dtype_keeps_the_tensors_width() -> None:
    """bfloat16, bool, complex and the float8 types get a numpy name of their own width."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from pcr_explore.swap.capture._torch_ops import numpy_dtype

    names = ["float32", "bfloat16", "bool", "int16", "complex64", "complex128", "float8_e4m3fn"]
    for name in [n for n in names if hasattr(torch, n)]:
        t = torch.zeros(3, dtype=getattr(torch, name))
        assert np.dtype(numpy_dtype(t)).itemsize == t.element_size(), name
    assert numpy_dtype(torch.zeros(1, dtype=torch.bfloat16)) == "float16"
