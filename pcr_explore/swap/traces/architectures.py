"""Built-in architecture traces: VGG-16 and ResNet-50 for any batch and resolution.

Shapes and FLOPs are computed from the architectures (a multiply-add is 2
FLOPs). Swapped tensors are the input (dense), every ReLU output and every
pool output (and VGG's fc6/fc7); the classifier head and the loss form the
trace's tail. Memory traffic per op is input + 2x output (3x with BN).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._trace import TensorRecord, Trace
from .sparsity import SparsitySpec

__all__ = ["vgg16_trace", "resnet50_trace", "builtin_trace", "BUILTIN_MODELS"]

_F32 = 4


def _conv(n: int, cin: int, cout: int, h_out: int, w_out: int, k: int) -> float:
    return 2.0 * n * cout * h_out * w_out * cin * k * k


class _Builder:
    """Accumulates tensor records for an architecture walk."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.records: list[TensorRecord] = []

    def add(self, name, shape, *, flops, in_elems, kind, bn=False, binarizable=False) -> None:
        out_elems = math.prod(shape)
        # conv reads input, writes output; ReLU (and BN when present) re-read and rewrite it.
        mem = _F32 * (in_elems + out_elems * (3 if bn else 2))
        self.records.append(
            TensorRecord(
                name=name,
                shape=tuple(shape),
                fwd_flops=float(flops),
                fwd_mem_bytes=float(mem),
                kind=kind,
                binarizable=binarizable,
            )
        )


def _check_model_args(batch: int, resolution: int, minimum: int) -> None:
    if not isinstance(batch, int | np.integer) or batch < 1:
        raise SwapError(f"batch must be a positive integer, got {batch!r}")
    if not isinstance(resolution, int | np.integer) or resolution < minimum:
        raise SwapError(f"resolution must be an integer >= {minimum}, got {resolution!r}")


def _finish(b: _Builder, name: str, tail_flops: float, tail_mem: float, spec, meta) -> Trace:
    s0 = np.zeros(len(b.records))
    trace = Trace(name, tuple(b.records), s0, tail_flops, tail_mem, meta)
    return trace.with_sparsity(spec)


def vgg16_trace(batch: int = 64, resolution: int = 224, sparsity: SparsitySpec = 0.65) -> Trace:
    """VGG-16 (configuration D) with shapes and FLOPs for a batch and resolution.

    Swapped tensors: the input image (dense), every conv ReLU output, every
    max-pool output, and the fc6/fc7 ReLU outputs; fc8 and the loss form the
    tail. ReLU outputs that feed a max-pool are marked binarizable.

    Parameters
    ----------
    batch : int
        Batch size, >= 1.
    resolution : int
        Square input side; must be >= 32 (five 2x poolings).
    sparsity : SparsitySpec
        Sparsity of ReLU and pool outputs (see
        :func:`~pcr_explore.swap.traces.sparsity.sparsity_profile`).

    Returns
    -------
    Trace
        21 tensors, one iteration.

    Raises
    ------
    SwapError
        For a batch below 1 or a resolution below 32.

    Examples
    --------
    >>> t = vgg16_trace(batch=1)
    >>> len(t), round(sum(r.fwd_flops for r in t.tensors) / 1e9, 1)
    (21, 31.0)
    """
    _check_model_args(batch, resolution, 32)
    cfg: list[int | str] = [
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        "M",
    ]
    b = _Builder(batch)
    n = batch
    c, h = 3, resolution
    b.add("input", (n, 3, h, h), flops=0, in_elems=0, kind="input")
    block, idx = 1, 1
    for i, v in enumerate(cfg):
        if not isinstance(v, int):
            h2 = h // 2
            b.add(
                f"pool{block}",
                (n, c, h2, h2),
                flops=n * c * h2 * h2 * 3,
                in_elems=n * c * h * h,
                kind="pool",
            )
            h, block, idx = h2, block + 1, 1
            continue
        feeds_pool = i + 1 < len(cfg) and cfg[i + 1] == "M"
        b.add(
            f"conv{block}_{idx}",
            (n, v, h, h),
            flops=_conv(n, c, v, h, h, 3) + n * v * h * h,
            in_elems=n * c * h * h,
            kind="relu",
            binarizable=feeds_pool,
        )
        c, idx = int(v), idx + 1
    flat = c * h * h
    b.add("fc6", (n, 4096), flops=2.0 * n * flat * 4096, in_elems=n * flat, kind="relu")
    b.add("fc7", (n, 4096), flops=2.0 * n * 4096 * 4096, in_elems=n * 4096, kind="relu")
    tail = 2.0 * n * 4096 * 1000 + 5.0 * n * 1000
    meta = {"model": "vgg16", "batch": batch, "resolution": resolution}
    return _finish(b, f"vgg16-b{batch}-r{resolution}", tail, _F32 * n * 5096, sparsity, meta)


def resnet50_trace(batch: int = 64, resolution: int = 224, sparsity: SparsitySpec = 0.5) -> Trace:
    """ResNet-50 (v1.5: stride on the 3x3 conv) with shapes and FLOPs.

    Swapped tensors: the input (dense), the stem ReLU, the stem max-pool,
    and the three ReLU outputs of each of the 16 bottlenecks (51 tensors).
    BatchNorm outputs are assumed fused into the ReLU (as in-place
    activated BN does); their FLOPs and memory traffic are counted.

    Parameters
    ----------
    batch : int
        Batch size, >= 1.
    resolution : int
        Square input side; must be >= 32.
    sparsity : SparsitySpec
        Sparsity of ReLU and pool outputs (see
        :func:`~pcr_explore.swap.traces.sparsity.sparsity_profile`).

    Returns
    -------
    Trace
        51 tensors, one iteration.

    Raises
    ------
    SwapError
        For a batch below 1 or a resolution below 32.

    Examples
    --------
    >>> t = resnet50_trace(batch=1)
    >>> len(t), round((sum(r.fwd_flops for r in t.tensors) + t.tail_fwd_flops) / 1e9, 1)
    (51, 8.2)
    """
    _check_model_args(batch, resolution, 32)
    b = _Builder(batch)
    n = batch
    h = resolution
    b.add("input", (n, 3, h, h), flops=0, in_elems=0, kind="input")
    h1 = (h + 2 * 3 - 7) // 2 + 1
    b.add(
        "stem.relu",
        (n, 64, h1, h1),
        flops=_conv(n, 3, 64, h1, h1, 7),
        in_elems=n * 3 * h * h,
        kind="relu",
        bn=True,
    )
    h2 = (h1 + 2 - 3) // 2 + 1
    b.add(
        "stem.pool",
        (n, 64, h2, h2),
        flops=n * 64 * h2 * h2 * 9,
        in_elems=n * 64 * h1 * h1,
        kind="pool",
    )
    c, h = 64, h2
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3), strict=True)):
        for blk in range(blocks):
            stride = 2 if (blk == 0 and stage > 0) else 1
            ho = (h + 2 - 3) // stride + 1
            out = width * 4
            pre = f"layer{stage + 1}.{blk}"
            b.add(
                f"{pre}.relu1",
                (n, width, h, h),
                flops=_conv(n, c, width, h, h, 1),
                in_elems=n * c * h * h,
                kind="relu",
                bn=True,
            )
            b.add(
                f"{pre}.relu2",
                (n, width, ho, ho),
                flops=_conv(n, width, width, ho, ho, 3),
                in_elems=n * width * h * h,
                kind="relu",
                bn=True,
            )
            flops = _conv(n, width, out, ho, ho, 1) + n * out * ho * ho
            if blk == 0:
                flops += _conv(n, c, out, ho, ho, 1)  # projection shortcut
            b.add(
                f"{pre}.relu3",
                (n, out, ho, ho),
                flops=flops,
                in_elems=n * width * ho * ho,
                kind="relu",
                bn=True,
            )
            c, h = out, ho
    tail = n * c * h * h + 2.0 * n * c * 1000 + 5.0 * n * 1000
    meta = {"model": "resnet50", "batch": batch, "resolution": resolution}
    return _finish(
        b, f"resnet50-b{batch}-r{resolution}", tail, _F32 * n * (c * h * h + c), sparsity, meta
    )


#: Built-in model names and the functions that build their traces.
BUILTIN_MODELS: dict[str, Callable[..., Trace]] = {
    "vgg16": vgg16_trace,
    "resnet50": resnet50_trace,
}


@public("pcr_explore.swap")
def builtin_trace(
    model: str, *, batch: int = 64, resolution: int = 224, sparsity: SparsitySpec = 0.65
) -> Trace:
    """Build a built-in trace by model name (``"vgg16"`` or ``"resnet50"``).

    Parameters
    ----------
    model : str
        A key of :data:`BUILTIN_MODELS` (case-insensitive).
    batch : int
        Batch size.
    resolution : int
        Square input side in pixels.
    sparsity : SparsitySpec
        Sparsity of ReLU and pool outputs (see
        :func:`~pcr_explore.swap.traces.sparsity.sparsity_profile`).

    Returns
    -------
    Trace
        One iteration.

    Raises
    ------
    SwapError
        For an unknown model name, a batch below 1 or a too small resolution.

    Examples
    --------
    >>> t = builtin_trace("vgg16", batch=2, sparsity=0.5)
    >>> t.name, len(t), float(t.sparsity[0, 1])
    ('vgg16-b2-r224', 21, 0.5)
    """
    try:
        factory = BUILTIN_MODELS[model.lower()]
    except (KeyError, AttributeError):
        raise SwapError(f"unknown model {model!r}; built-in: {', '.join(BUILTIN_MODELS)}") from None
    return factory(batch=batch, resolution=resolution, sparsity=sparsity)
