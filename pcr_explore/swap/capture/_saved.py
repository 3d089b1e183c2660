"""Capture the tensors a PyTorch model saves for backward (needs the ``[torch]`` extra)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..traces import TensorRecord, Trace
from ._torch_ops import host_copy, is_weight, numpy_dtype, require_torch, zero_count

__all__ = ["SavedTensorCapture", "capture_saved_tensors"]


@public("pcr_explore.swap.capture")
@dataclass
class SavedTensorCapture:
    """What :func:`capture_saved_tensors` recorded.

    Attributes
    ----------
    records : list of dict
        ``name``, ``shape``, ``dtype``, ``bytes``, ``sparsity``, ``kind``
        and ``op`` (the autograd node that produced the tensor) per saved
        tensor, in save order, each distinct tensor once.
    tensors : list
        The tensors themselves (detached CPU numpy copies) when
        ``keep_tensors`` was set.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    tensors: list[np.ndarray] = field(default_factory=list)

    def trace(self, name: str = "torch-capture") -> Trace:
        """Return the capture as a :class:`~pcr_explore.swap.traces.Trace`.

        FLOPs are not captured and are recorded as 0; put the captured
        sparsities on a built-in trace with
        ``vgg16_trace(sparsity=captured_trace)`` to price compute.

        Parameters
        ----------
        name : str
            Name of the trace.

        Returns
        -------
        Trace
            One record per captured tensor, one iteration.

        Raises
        ------
        SwapError
            If nothing was captured.
        """
        if not self.records:
            raise SwapError("the capture recorded no saved tensors (was backward-able work run?)")
        recs = tuple(
            TensorRecord(r["name"], tuple(r["shape"]), r["dtype"], kind=r["kind"])
            for r in self.records
        )
        sp = np.array([[r["sparsity"] for r in self.records]])
        return Trace(name, recs, sp, meta={"source": "torch.saved_tensors_hooks"})


@public("pcr_explore.swap")
@contextlib.contextmanager
def capture_saved_tensors(
    *, keep_tensors: bool = False, include_parameters: bool = False
) -> Iterator[SavedTensorCapture]:
    """Record every tensor autograd saves for backward inside the ``with`` block.

    Built on ``torch.autograd.graph.saved_tensors_hooks``; the tensors are
    returned unchanged, so training proceeds as usual. Parameters (weights)
    are skipped unless asked for, as swapping systems keep them resident.

    Parameters
    ----------
    keep_tensors : bool
        Also keep a numpy copy of each tensor (for measuring codecs).
    include_parameters : bool
        Record saved parameters too.

    Yields
    ------
    SavedTensorCapture

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).

    Examples
    --------
    >>> import torch
    >>> from pcr_explore.swap import build_net
    >>> model, x = build_net("vgg-small", num_classes=3), torch.rand(2, 3, 48, 48)
    >>> with capture_saved_tensors() as cap:
    ...     loss = model(x).sum()
    >>> trace = cap.trace("my-model")
    >>> trace
    <Trace my-model: 15 tensors, 1 iteration(s), 1.4 MiB, mean sparsity ...>
    """
    torch = require_torch("capture_saved_tensors")
    cap = SavedTensorCapture()
    seen: set[tuple[Any, ...]] = set()

    def pack(t):
        if not include_parameters and is_weight(torch, t, set()):
            return t  # the transposed weight a Linear saves is a view of a parameter
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype))
        if key in seen:
            return t
        seen.add(key)
        n = t.numel()
        op = type(t.grad_fn).__name__ if t.grad_fn is not None else "leaf"
        low = op.lower()
        kind = "relu" if "relu" in low else "pool" if "pool" in low else "activation"
        if op == "leaf" and t.is_floating_point():
            kind = "input"
        cap.records.append(
            {
                "name": f"{len(cap.records):03d}.{op.removesuffix('Backward0').lower()}",
                "shape": list(t.shape),
                "dtype": numpy_dtype(t),
                "bytes": n * t.element_size(),
                "sparsity": zero_count(torch, t) / n if n else 0.0,
                "kind": kind,
                "op": op,
            }
        )
        if keep_tensors:
            cap.tensors.append(host_copy(torch, t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield cap
