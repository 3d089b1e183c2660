"""Activation traces: which tensors a training step saves, their sizes, sparsity and FLOPs.

A :class:`Trace` lists the tensors a step swaps, in forward order. Tensor
``i`` is the output of op ``i`` (and the input of op ``i + 1``); each record
carries the forward FLOPs and memory traffic of the op that produced it, so
the simulator can price the compute a swap overlaps. A trace may hold
several iterations, each with its own per-tensor sparsity.

Built-in traces for VGG-16 and ResNet-50 are computed from the architectures;
:mod:`pcr_explore.swap.tensors` builds traces from real activations.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import SwapError

__all__ = [
    "TensorRecord",
    "Trace",
    "SparsitySpec",
    "sparsity_profile",
    "vgg16_trace",
    "resnet50_trace",
    "builtin_trace",
    "BUILTIN_MODELS",
    "TRACE_FORMAT_VERSION",
]

TRACE_FORMAT_VERSION = 1

#: Kinds whose sparsity a :data:`SparsitySpec` sets; others (the input image) keep theirs.
_SPARSE_KINDS = ("relu", "pool")
_KINDS = ("input", "relu", "pool", "activation")


@dataclass(frozen=True)
class TensorRecord:
    """One saved tensor of a training step.

    Attributes
    ----------
    name : str
        Layer-style name (``"conv1_1"``, ``"layer2.0.relu2"``).
    shape : tuple of int
    dtype : str
        numpy dtype name; float32 by default.
    fwd_flops : float
        FLOPs of the op that produces this tensor (a multiply-add counts 2).
    fwd_mem_bytes : float
        Bytes that op reads and writes (prices memory-bound ops such as pooling).
    bwd_factor : float
        Backward cost of that op relative to its forward (2 by default:
        gradients for input and for weights).
    kind : str
        ``"input"``, ``"relu"``, ``"pool"`` or ``"activation"``.
    binarizable : bool
        A ReLU output read only by a max-pool's backward, so 1 bit per element
        suffices (Gist's Binarize).
    measured_bytes : dict, optional
        Encoded sizes measured on the real tensor, by codec name, for the
        first iteration; the simulator prefers them over analytic sizes.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    fwd_flops: float = 0.0
    fwd_mem_bytes: float = 0.0
    bwd_factor: float = 2.0
    kind: str = "activation"
    binarizable: bool = False
    measured_bytes: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise SwapError(f"tensor {self.name!r}: negative dimension in shape {shape}")
        object.__setattr__(self, "shape", shape)
        try:
            dt = np.dtype(self.dtype)
        except TypeError:
            raise SwapError(f"tensor {self.name!r}: unknown dtype {self.dtype!r}") from None
        if dt.kind not in "fiu":
            raise SwapError(f"tensor {self.name!r}: dtype {dt} is not numeric")
        object.__setattr__(self, "dtype", dt.name)
        for attr in ("fwd_flops", "fwd_mem_bytes", "bwd_factor"):
            value = getattr(self, attr)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise SwapError(f"tensor {self.name!r}: {attr} must be >= 0, got {value!r}")
        if self.kind not in _KINDS:
            raise SwapError(
                f"tensor {self.name!r}: kind must be one of {_KINDS}, got {self.kind!r}"
            )

    @property
    def n(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes."""
        return self.n * self.itemsize

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        out: dict[str, Any] = {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "fwd_flops": self.fwd_flops,
            "fwd_mem_bytes": self.fwd_mem_bytes,
            "bwd_factor": self.bwd_factor,
            "kind": self.kind,
            "binarizable": self.binarizable,
        }
        if self.measured_bytes is not None:
            out["measured_bytes"] = {k: int(v) for k, v in self.measured_bytes.items()}
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TensorRecord:
        """Inverse of :meth:`to_json`."""
        try:
            return cls(
                name=str(obj["name"]),
                shape=tuple(obj["shape"]),
                dtype=str(obj.get("dtype", "float32")),
                fwd_flops=float(obj.get("fwd_flops", 0.0)),
                fwd_mem_bytes=float(obj.get("fwd_mem_bytes", 0.0)),
                bwd_factor=float(obj.get("bwd_factor", 2.0)),
                kind=str(obj.get("kind", "activation")),
                binarizable=bool(obj.get("binarizable", False)),
                measured_bytes=obj.get("measured_bytes"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SwapError(f"bad tensor record {obj!r}: {exc}") from exc


@dataclass(frozen=True, eq=False)
class Trace:
    """The tensors one training step swaps, over one or more iterations.

    Attributes
    ----------
    name : str
    tensors : tuple of TensorRecord
        In forward order.
    sparsity : ndarray, shape (iterations, tensors)
        Fraction of all-zero elements of each tensor at each iteration.
    tail_fwd_flops, tail_fwd_mem_bytes : float
        Compute after the last swapped tensor (classifier, loss).
    meta : dict
        Free-form provenance (model, batch, resolution, sparsity spec).
    """

    name: str
    tensors: tuple[TensorRecord, ...]
    sparsity: np.ndarray
    tail_fwd_flops: float = 0.0
    tail_fwd_mem_bytes: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tensors = tuple(self.tensors)
        if not tensors:
            raise SwapError(f"trace {self.name!r} has no tensors")
        s = np.array(self.sparsity, dtype=float)
        if s.ndim == 1:
            s = s[None, :]
        if s.ndim != 2 or s.shape[1] != len(tensors) or s.shape[0] < 1:
            raise SwapError(
                f"trace {self.name!r}: sparsity must have shape (iterations, {len(tensors)}), "
                f"got {np.shape(self.sparsity)}"
            )
        if not np.all(np.isfinite(s)) or np.any(s < 0) or np.any(s > 1):
            raise SwapError(f"trace {self.name!r}: sparsities must lie in [0, 1]")
        s.setflags(write=False)
        object.__setattr__(self, "tensors", tensors)
        object.__setattr__(self, "sparsity", s)
        for attr in ("tail_fwd_flops", "tail_fwd_mem_bytes"):
            v = getattr(self, attr)
            if not math.isfinite(v) or v < 0:
                raise SwapError(f"trace {self.name!r}: {attr} must be >= 0, got {v!r}")

    @property
    def iterations(self) -> int:
        """Number of iterations."""
        return int(self.sparsity.shape[0])

    def __len__(self) -> int:
        return len(self.tensors)

    @property
    def total_bytes(self) -> int:
        """Uncompressed bytes of all tensors of one iteration."""
        return sum(t.nbytes for t in self.tensors)

    @property
    def mean_sparsity(self) -> float:
        """Byte-weighted mean sparsity over tensors and iterations."""
        w = np.array([t.nbytes for t in self.tensors], dtype=float)
        return float((self.sparsity @ w).mean() / w.sum()) if w.sum() else 0.0

    def with_sparsity(self, spec: SparsitySpec) -> Trace:
        """Same tensors with a new sparsity profile on ReLU and pool outputs (one iteration).

        Parameters
        ----------
        spec : float, (float, float), sequence of float, or Trace
            See :func:`sparsity_profile`.
        """
        sparse = np.array([t.kind in _SPARSE_KINDS for t in self.tensors])
        values = self.sparsity[0].copy()
        values[sparse] = sparsity_profile(spec, int(sparse.sum()))
        meta = dict(self.meta, sparsity=_spec_meta(spec))
        return replace(self, sparsity=values[None, :], meta=meta)

    def with_drift(
        self, iterations: int, *, change: float = 0.1, jitter: float = 0.01, seed: int = 0
    ) -> Trace:
        """Extend to ``iterations`` iterations whose sparsity drifts.

        ReLU and pool outputs move linearly by ``change`` (absolute) from the
        first to the last iteration, plus Gaussian ``jitter``; values are
        clipped to [0, 0.999].

        Raises
        ------
        SwapError
            If ``iterations`` < 1.
        """
        if iterations < 1:
            raise SwapError(f"iterations must be >= 1, got {iterations}")
        rng = np.random.default_rng(seed)
        base = self.sparsity[0]
        sparse = np.array([t.kind in _SPARSE_KINDS for t in self.tensors])
        ramp = np.linspace(0.0, change, iterations)[:, None]
        noise = rng.normal(0.0, jitter, size=(iterations, len(self.tensors)))
        noise[0] = 0.0
        s = np.where(sparse, np.clip(base + ramp + noise, 0.0, 0.999), base)
        meta = dict(self.meta, drift={"iterations": iterations, "change": change, "jitter": jitter})
        return replace(self, sparsity=s, meta=meta)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (see :meth:`save`)."""
        return {
            "format": "pcr_explore.swap.trace",
            "version": TRACE_FORMAT_VERSION,
            "name": self.name,
            "tail_fwd_flops": self.tail_fwd_flops,
            "tail_fwd_mem_bytes": self.tail_fwd_mem_bytes,
            "meta": self.meta,
            "tensors": [t.to_json() for t in self.tensors],
            "sparsity": self.sparsity.tolist(),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], *, source: str = "<json>") -> Trace:
        """Inverse of :meth:`to_json`.

        Raises
        ------
        SwapError
            If the object is not a trace of a known version.
        """
        if not isinstance(obj, Mapping) or obj.get("format") != "pcr_explore.swap.trace":
            raise SwapError(f"{source}: not a pcr_explore swap trace (missing 'format' field)")
        if obj.get("version") != TRACE_FORMAT_VERSION:
            raise SwapError(
                f"{source}: trace version {obj.get('version')!r}, expected {TRACE_FORMAT_VERSION}"
            )
        try:
            tensors = tuple(TensorRecord.from_json(t) for t in obj["tensors"])
            return cls(
                name=str(obj["name"]),
                tensors=tensors,
                sparsity=np.asarray(obj["sparsity"], dtype=float),
                tail_fwd_flops=float(obj.get("tail_fwd_flops", 0.0)),
                tail_fwd_mem_bytes=float(obj.get("tail_fwd_mem_bytes", 0.0)),
                meta=dict(obj.get("meta", {})),
            )
        except SwapError as exc:
            raise SwapError(f"{source}: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise SwapError(f"{source}: malformed trace ({exc!r})") from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the trace as JSON."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, indent=1)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a trace written by :meth:`save`.

        Raises
        ------
        SwapError
            If the file is missing, not JSON, or not a trace.
        """
        try:
            with open(path, encoding="utf-8") as fh:
                obj = json.load(fh)
        except OSError as exc:
            raise SwapError(f"{path}: cannot read trace ({exc.strerror})") from exc
        except json.JSONDecodeError as exc:
            raise SwapError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
        return cls.from_json(obj, source=str(path))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{t.name}</td><td>{'x'.join(map(str, t.shape))}</td>"
            f"<td>{t.nbytes / 2**20:.1f}</td><td>{self.sparsity[0, i]:.2f}</td>"
            f"<td>{t.fwd_flops / 1e9:.1f}</td></tr>"
            for i, t in enumerate(self.tensors)
        )
        return (
            f"<b>{self.name}</b>: {len(self)} tensors, {self.total_bytes / 2**30:.2f} GiB, "
            f"{self.iterations} iteration(s)<table><tr><th>tensor</th><th>shape</th>"
            f"<th>MiB</th><th>sparsity</th><th>GFLOP</th></tr>{rows}</table>"
        )


SparsitySpec = float | tuple[float, float] | Sequence[float] | Trace


def _spec_meta(spec: SparsitySpec) -> Any:
    if isinstance(spec, Trace):
        return {"from_trace": spec.name}
    if isinstance(spec, int | float):
        return float(spec)
    return [float(v) for v in spec]


def sparsity_profile(spec: SparsitySpec, layers: int) -> np.ndarray:
    """Per-layer sparsity for ``layers`` sparse tensors, shallow to deep.

    Parameters
    ----------
    spec : float, (float, float), sequence of float, or Trace
        A constant; a ``(first, last)`` pair ramped linearly with depth; a
        sequence of any length (resampled by relative depth); or a captured
        :class:`Trace` whose ReLU/pool sparsities (first iteration) are
        resampled by relative depth.
    layers : int

    Returns
    -------
    ndarray of float, shape (layers,)

    Raises
    ------
    SwapError
        If a value is outside [0, 1] or the spec is empty.

    Examples
    --------
    >>> sparsity_profile((0.4, 0.8), 5).round(2).tolist()
    [0.4, 0.5, 0.6, 0.7, 0.8]
    """
    if isinstance(spec, Trace):
        sparse = [i for i, t in enumerate(spec.tensors) if t.kind in _SPARSE_KINDS]
        values = spec.sparsity[0, sparse] if sparse else spec.sparsity[0]
    elif isinstance(spec, int | float | np.floating):
        values = np.array([float(spec)])
    else:
        values = np.asarray(spec, dtype=float).ravel()
        if values.size == 0:
            raise SwapError("sparsity profile is empty")
        if isinstance(spec, tuple) and len(spec) == 2:
            values = np.linspace(values[0], values[1], max(layers, 1))
    if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values > 1):
        raise SwapError(f"sparsity values must lie in [0, 1], got {values.tolist()}")
    if values.size == 1:
        return np.full(layers, values[0])
    src = np.linspace(0.0, 1.0, values.size)
    return np.interp(np.linspace(0.0, 1.0, layers), src, values)


# --- built-in architectures -------------------------------------------------

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
    resolution : int
        Square input side; must be >= 32 (five 2x poolings).
    sparsity : SparsitySpec
        Sparsity of ReLU and pool outputs (see :func:`sparsity_profile`).

    Returns
    -------
    Trace

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
    resolution : int
        Square input side; must be >= 32.
    sparsity : SparsitySpec
        Sparsity of ReLU and pool outputs (see :func:`sparsity_profile`).

    Returns
    -------
    Trace

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


BUILTIN_MODELS = {"vgg16": vgg16_trace, "resnet50": resnet50_trace}


def builtin_trace(
    model: str, batch: int = 64, resolution: int = 224, sparsity: SparsitySpec = 0.65
) -> Trace:
    """A built-in trace by model name (``"vgg16"`` or ``"resnet50"``).

    Raises
    ------
    SwapError
        For an unknown model name.
    """
    try:
        factory = BUILTIN_MODELS[model.lower()]
    except (KeyError, AttributeError):
        raise SwapError(f"unknown model {model!r}; built-in: {', '.join(BUILTIN_MODELS)}") from None
    return factory(batch=batch, resolution=resolution, sparsity=sparsity)
