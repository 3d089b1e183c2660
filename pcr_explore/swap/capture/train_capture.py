"""Capture the activations a real training run saves, step by step (needs ``[torch]``).

:func:`capture_training` runs ordinary training steps (forward, loss,
backward, optimizer step) and, every ``every`` steps, records each tensor
autograd saves for backward: its shape, dtype, bytes, bit-zero sparsity, the
op that produced it (conv, bn, relu, maxpool, ...) and the ops that save it.
The result holds a :class:`~pcr_explore.swap.traces.Trace` the simulator
takes (one iteration per captured step, FLOPs of the producing modules
counted) and the per-layer sparsity against the step
(:class:`~pcr_explore.swap.capture.sparsity_table.SparsityTable`): sparsity drifts as
the network trains, which CSWAP builds on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..codecs import get_codec
from ..codecs._registry import applies
from ..traces import TensorRecord, Trace
from ._torch_ops import (
    MASK_SAVERS,
    host_copy,
    is_weight,
    kind_of,
    numpy_dtype,
    op_label,
    require_torch,
    track_modules,
    weight_pointers,
    zero_count,
)
from .sparsity_table import SparsityTable

__all__ = ["TrainingCapture", "capture_training", "cycle_batches"]


@dataclass
class _Saved:
    """One distinct tensor saved during a captured step."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    sparsity: float
    op: str
    savers: set[str]
    flops: float
    mem: float
    array: np.ndarray | None = None


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class TrainingCapture:
    """What :func:`capture_training` recorded.

    Attributes
    ----------
    trace : Trace
        One record per saved activation (forward order), one iteration per
        captured step; ``meta["steps"]`` lists the steps (1-based).
    losses : tuple of float
        Training loss of every step run, captured or not.
    savers : tuple of tuple of str
        Per tensor, the ops whose backward read it (``("relu", "maxpool")``
        for a ReLU output feeding a max-pool).
    tensors : dict of int to list of ndarray
        Per captured step, numpy copies of the tensors (``keep_tensors``).
    """

    trace: Trace
    losses: tuple[float, ...]
    savers: tuple[tuple[str, ...], ...]
    tensors: dict[int, list[np.ndarray]] = field(default_factory=dict)

    @property
    def steps(self) -> tuple[int, ...]:
        """The captured steps, 1-based."""
        return tuple(self.trace.meta["steps"])

    def sparsity_table(self) -> SparsityTable:
        """Per-layer sparsity against the captured step.

        Returns
        -------
        SparsityTable
            Built from :attr:`trace` (:meth:`SparsityTable.from_trace`).
        """
        return SparsityTable.from_trace(self.trace)

    def __repr__(self) -> str:
        return (
            f"<TrainingCapture {self.trace.name}: {len(self.trace)} tensors x "
            f"{self.trace.iterations} captured steps of {len(self.losses)}>"
        )

    def _repr_html_(self) -> str:
        return self.sparsity_table()._repr_html_()


def cycle_batches(loader: Iterable[Any]) -> Callable[[], Any]:
    """Return a function giving the next batch of *loader*, starting it again when it ends.

    Parameters
    ----------
    loader : iterable
        Yields ``(inputs, targets)`` pairs (a ``DataLoader``, a list, ...).

    Returns
    -------
    callable
        ``next_batch()``.

    Raises
    ------
    SwapError
        When called on a loader that yields nothing.

    Examples
    --------
    >>> nxt = cycle_batches([1, 2])
    >>> [nxt() for _ in range(5)]
    [1, 2, 1, 2, 1]
    """
    state: dict[str, Any] = {"it": iter(loader)}

    def next_batch() -> Any:
        try:
            return next(state["it"])
        except StopIteration:
            state["it"] = iter(loader)
            try:
                return next(state["it"])
            except StopIteration:
                raise SwapError("the loader yielded no batch") from None

    return next_batch


def _record_step(
    torch: Any, model: Any, loss_fn: Callable[[Any, Any], Any], batch: Any, keep: bool
) -> tuple[list[_Saved], tuple[float, float], Any]:
    """Run forward and backward on *batch* (inputs, targets) under a recording pack hook.

    Returns the distinct saved tensors in save order, the FLOPs and bytes
    after the last one (the trace's tail), and the loss.
    """
    skip = weight_pointers(model)
    saved: dict[tuple[Any, ...], _Saved] = {}
    names: set[str] = set()

    with track_modules(torch, model) as tr:

        def pack(t: Any) -> Any:
            if t.dim() < 2 or not t.is_floating_point() or is_weight(torch, t, skip):
                # weights stay resident; 0/1-D tensors are statistics; integers are indices
                return t
            key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype), t._version)
            if key in saved:
                saved[key].savers.add(tr.saver)
                return t
            op = op_label(t)
            producer = tr.stack[-1][0] if tr.stack and tr.saver == op else tr.last
            name = f"{producer}:{op}" if producer else "input"
            base, k = name, 2
            while name in names:
                name, k = f"{base}#{k}", k + 1
            names.add(name)
            flops, mem = tr.take()
            saved[key] = _Saved(
                name=name,
                shape=tuple(int(d) for d in t.shape),
                dtype=numpy_dtype(t),
                sparsity=zero_count(torch, t) / max(1, t.numel()),
                op=op,
                savers={tr.saver},
                flops=flops,
                mem=mem,
                array=host_copy(torch, t) if keep else None,
            )
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = loss_fn(model(batch[0]), batch[1])
        tail = tr.take()
    loss.backward()
    return list(saved.values()), tail, loss


@public("pcr_explore.swap")
def capture_training(
    model: Any,
    *,
    loader: Iterable[Any],
    steps: int,
    every: int = 1,
    optimizer: Any = None,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    name: str | None = None,
    keep_tensors: bool = False,
    measure_codecs: Sequence[str] = (),
    meta: dict[str, Any] | None = None,
) -> TrainingCapture:
    """Train *model* for *steps* steps and record its saved activations every *every* steps.

    Each step is ordinary training: forward, loss, backward, optimizer step.
    On steps ``1, 1 + every, 1 + 2 * every, ...`` (and the last one) a
    ``torch.autograd.graph.saved_tensors_hooks`` pack hook records every
    distinct tensor autograd saves, leaving it unchanged, so a captured step
    trains exactly as any other. Parameters, buffers, tensors of fewer than
    two dimensions (batch-norm statistics, targets) and integer tensors
    (max-pool indices) are not recorded.

    Parameters
    ----------
    model : torch.nn.Module
        Trained in place (``model.train()`` is called).
    loader : iterable
        Yields ``(inputs, targets)`` batches; started again when it ends.
        Every captured step must save tensors of the same shapes (drop a
        smaller last batch).
    steps : int
        Training steps to run, >= 1.
    every : int
        Capture every *every*-th step, >= 1.
    optimizer : torch.optim.Optimizer, optional
        Default SGD, learning rate 0.05, momentum 0.9.
    loss_fn : callable, optional
        ``loss_fn(outputs, targets)``; default cross-entropy.
    name : str, optional
        Name of the trace (default: the model's class name).
    keep_tensors : bool
        Keep numpy copies of every captured tensor (for timing codecs on
        them); memory grows with the captured steps.
    measure_codecs : sequence of str
        Codecs whose encoded size is measured on the first captured step's
        tensors and stored as ``measured_bytes``.
    meta : dict, optional
        Extra provenance for the trace's metadata.

    Returns
    -------
    TrainingCapture
        The trace, the losses and the per-layer sparsity table.

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).
    SwapError
        For ``steps`` or ``every`` below 1, an empty loader, or a captured
        step whose saved tensors differ from the first's.

    Examples
    --------
    >>> import torch
    >>> from pcr_explore.swap import build_net
    >>> x, y = torch.rand(8, 3, 48, 48), torch.randint(0, 3, (8,))
    >>> batches = [(x[:4], y[:4]), (x[4:], y[4:])]  # any iterable of (inputs, targets)
    >>> cap = capture_training(build_net("resnet-small", num_classes=3), loader=batches,
    ...                        steps=7, every=3)
    >>> cap.trace.iterations, cap.steps
    (3, (1, 4, 7))
    >>> print(cap.sparsity_table().to_text())
    tensor                     op          shape          step 1   step 4   step 7
    input                      input       4x3x48x48        0.00     0.00     0.00
    stem_conv:conv             conv        4x16x24x24       0.00     0.00     0.00
    stem_relu:relu             relu        4x16x24x24       ...
    """
    torch = require_torch("capture_training")
    if not isinstance(steps, int) or steps < 1:
        raise SwapError(f"steps must be an integer >= 1, got {steps!r}")
    if not isinstance(every, int) or every < 1:
        raise SwapError(f"every must be an integer >= 1, got {every!r}")
    codecs = [get_codec(c) for c in measure_codecs]
    opt = optimizer or torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lf = loss_fn or torch.nn.functional.cross_entropy
    next_batch = cycle_batches(loader)
    model.train()
    losses: list[float] = []
    captured: list[tuple[int, list[_Saved]]] = []
    tail = (0.0, 0.0)
    for step in range(1, steps + 1):
        x, y = next_batch()
        opt.zero_grad(set_to_none=True)
        if (step - 1) % every == 0 or step == steps:
            keep = keep_tensors or (bool(codecs) and not captured)
            rec, step_tail, loss = _record_step(torch, model, lf, (x, y), keep)
            if not rec:
                raise SwapError(f"step {step} saved no activations (does the model train?)")
            if captured:
                _check_same(captured[0], (step, rec))
            else:
                tail = step_tail
            captured.append((step, rec))
        else:
            loss = lf(model(x), y)
            loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return _build(model, name, captured, tail, losses, codecs, keep_tensors, meta or {})


def _check_same(first: tuple[int, list[_Saved]], other: tuple[int, list[_Saved]]) -> None:
    a = [(s.name, s.shape) for s in first[1]]
    b = [(s.name, s.shape) for s in other[1]]
    if a != b:
        diff = next((i for i, (p, q) in enumerate(zip(a, b)) if p != q), min(len(a), len(b)))
        raise SwapError(
            f"step {other[0]} saved different tensors than step {first[0]} (first difference "
            f"at tensor {diff}: {b[diff] if diff < len(b) else 'none'} vs "
            f"{a[diff] if diff < len(a) else 'none'}); a smaller last batch? drop it"
        )


def _build(
    model: Any,
    name: str | None,
    captured: list[tuple[int, list[_Saved]]],
    tail: tuple[float, float],
    losses: list[float],
    codecs: list[Any],
    keep: bool,
    meta: dict[str, Any],
) -> TrainingCapture:
    first = captured[0][1]
    records = []
    for s in first:
        rec = TensorRecord(
            s.name,
            s.shape,
            s.dtype,
            fwd_flops=s.flops,
            fwd_mem_bytes=s.mem,
            kind=kind_of(s.op),
            binarizable=s.op == "relu" and s.savers <= MASK_SAVERS,
            op=s.op,
        )
        if codecs and s.array is not None:
            sizes = {c.name: int(c.encode(s.array).nbytes) for c in codecs if applies(c, rec)}
            rec = dataclasses.replace(rec, measured_bytes=sizes)
        records.append(rec)
    sparsity = np.array([[s.sparsity for s in rec] for _, rec in captured])
    steps = [step for step, _ in captured]
    info = {
        "source": "pcr_explore.swap.capture_training",
        "model": type(model).__name__,
        "steps": steps,
        "losses": [losses[k - 1] for k in steps],
        "savers": [sorted(s.savers) for s in first],
        **meta,
    }
    trace = Trace(
        name or type(model).__name__.lower(),
        tuple(records),
        sparsity,
        tail_fwd_flops=tail[0],
        tail_fwd_mem_bytes=tail[1],
        meta=info,
    )
    tensors = {
        step: [s.array for s in rec if s.array is not None] for step, rec in captured if keep
    }
    savers = tuple(tuple(sorted(s.savers)) for s in first)
    return TrainingCapture(trace, tuple(losses), savers, tensors)
