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
    """Tensor records of an architecture walk: each op reads the tensor recorded before it."""

    def __init__(self, model: str, batch: int, resolution: int) -> None:
        if not isinstance(batch, int | np.integer) or batch < 1:
            raise SwapError(f"batch must be a positive integer, got {batch!r}")
        if not isinstance(resolution, int | np.integer) or resolution < 32:
            raise SwapError(f"resolution must be an integer >= 32, got {resolution!r}")
        self.model, self.n, self.resolution = model, batch, resolution
        self.records: list[TensorRecord] = []
        self.add("input", 3, resolution, resolution, flops=0, kind="input")

    def add(self, name, *dims, flops, kind="relu", bn=False, binarizable=False) -> None:
        """Record the output (batch, *dims) of an op of *flops* FLOPs."""
        shape = (self.n, *dims)
        in_elems = self.records[-1].n if self.records else 0
        # conv reads input, writes output; ReLU (and BN when present) re-read and rewrite it.
        mem = _F32 * (in_elems + math.prod(shape) * (3 if bn else 2))
        self.records.append(
            TensorRecord(
                name=name,
                shape=shape,
                fwd_flops=float(flops),
                fwd_mem_bytes=float(mem),
                kind=kind,
                binarizable=binarizable,
            )
        )

    def finish(self, tail_flops: float, tail_elems: int, spec: SparsitySpec) -> Trace:
        """The trace, with a tail of *tail_flops* reading and writing *tail_elems* floats."""
        name = f"{self.model}-b{self.n}-r{self.resolution}"
        meta = {"model": self.model, "batch": self.n, "resolution": self.resolution}
        s0 = np.zeros(len(self.records))
        trace = Trace(name, tuple(self.records), s0, tail_flops, _F32 * tail_elems, meta)
        return trace.with_sparsity(spec)


#: VGG-16's convolution widths (configuration D), block by block; a max-pool ends each block.
_VGG16 = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))


def vgg16_trace(batch: int = 64, resolution: int = 224, sparsity: SparsitySpec = 0.65) -> Trace:
    """VGG-16 (configuration D) with shapes and FLOPs for a batch and resolution.

    Swapped tensors: the input image (dense), every conv ReLU output, every
    max-pool output, and the fc6/fc7 ReLU outputs; fc8 and the loss form the
    tail. ReLU outputs that feed a max-pool are marked binarizable.

    Parameters
    ----------
    batch, resolution, sparsity
        As for :func:`builtin_trace`; the resolution must be >= 32 (five 2x
        poolings).

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
    b = _Builder("vgg16", batch, resolution)
    n, c, h = batch, 3, resolution
    for block, widths in enumerate(_VGG16, start=1):
        for idx, v in enumerate(widths, start=1):
            flops = _conv(n, c, v, h, h, 3) + n * v * h * h
            b.add(f"conv{block}_{idx}", v, h, h, flops=flops, binarizable=idx == len(widths))
            c = v
        h //= 2
        b.add(f"pool{block}", c, h, h, flops=n * c * h * h * 3, kind="pool")
    b.add("fc6", 4096, flops=2.0 * n * c * h * h * 4096)
    b.add("fc7", 4096, flops=2.0 * n * 4096 * 4096)
    return b.finish(2.0 * n * 4096 * 1000 + 5.0 * n * 1000, n * 5096, sparsity)


def resnet50_trace(batch: int = 64, resolution: int = 224, sparsity: SparsitySpec = 0.5) -> Trace:
    """ResNet-50 (v1.5: stride on the 3x3 conv) with shapes and FLOPs.

    Swapped tensors: the input (dense), the stem ReLU, the stem max-pool,
    and the three ReLU outputs of each of the 16 bottlenecks (51 tensors).
    BatchNorm outputs are assumed fused into the ReLU (as in-place
    activated BN does); their FLOPs and memory traffic are counted.

    Parameters
    ----------
    batch, resolution, sparsity
        As for :func:`builtin_trace`; the resolution must be >= 32.

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
    b = _Builder("resnet50", batch, resolution)
    n = batch
    h1 = (resolution + 2 * 3 - 7) // 2 + 1
    b.add("stem.relu", 64, h1, h1, flops=_conv(n, 3, 64, h1, h1, 7), bn=True)
    h = (h1 + 2 - 3) // 2 + 1
    b.add("stem.pool", 64, h, h, flops=n * 64 * h * h * 9, kind="pool")
    c = 64
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3), strict=True)):
        for blk in range(blocks):
            stride = 2 if (blk == 0 and stage > 0) else 1
            ho = (h + 2 - 3) // stride + 1
            out = width * 4
            pre = f"layer{stage + 1}.{blk}"
            b.add(f"{pre}.relu1", width, h, h, flops=_conv(n, c, width, h, h, 1), bn=True)
            b.add(f"{pre}.relu2", width, ho, ho, flops=_conv(n, width, width, ho, ho, 3), bn=True)
            flops = _conv(n, width, out, ho, ho, 1) + n * out * ho * ho
            if blk == 0:
                flops += _conv(n, c, out, ho, ho, 1)  # projection shortcut
            b.add(f"{pre}.relu3", out, ho, ho, flops=flops, bn=True)
            c, h = out, ho
    tail = n * c * h * h + 2.0 * n * c * 1000 + 5.0 * n * 1000
    return b.finish(tail, n * (c * h * h + c), sparsity)


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
        Batch size, >= 1.
    resolution : int
        Square input side in pixels, >= 32.
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
