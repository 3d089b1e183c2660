"""The trace data model: which tensors a training step swaps, their sizes, sparsity and FLOPs.

A :class:`Trace` lists the tensors a step swaps, in forward order. Tensor
``i`` is the output of op ``i`` (and the input of op ``i + 1``); each
:class:`TensorRecord` carries the forward FLOPs and memory traffic of the op
that produced it, so the simulator can price the compute a swap overlaps. A
trace may hold several iterations, each with its own per-tensor sparsity,
and saves to and loads from versioned JSON. Traces come from
:mod:`.architectures`, :mod:`.cnn` and :mod:`.capture`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..._json import to_json as _dumps
from ..._public import public
from ...errors import SwapError
from ...storage._atomic import atomic_write
from .sparsity import SPARSE_KINDS, SparsitySource, SparsitySpec, sparsity_profile, spec_to_json
from .tensor_record import TensorRecord

__all__ = ["TensorRecord", "Trace", "TRACE_FORMAT_VERSION", "MAX_TRACE_BYTES", "MAX_ITERATIONS"]

TRACE_FORMAT_VERSION = 1

#: The most bytes :meth:`Trace.load` reads: a trace of 1,000 iterations of 1,000
#: tensors fits; an endless file (``/dev/zero``) is refused after that many.
MAX_TRACE_BYTES = 16 << 20

#: The most iterations :meth:`Trace.with_drift` makes (the simulator holds a
#: few arrays of iterations x tensors x codecs).
MAX_ITERATIONS = 1000


def check_iterations(iterations: object) -> None:
    """Refuse an iteration count that is not an integer in [1, :data:`MAX_ITERATIONS`]."""
    if not isinstance(iterations, int) or not 1 <= iterations <= MAX_ITERATIONS:
        raise SwapError(
            f"iterations must be an integer in [1, {MAX_ITERATIONS}], got {iterations!r}"
        )


def _by_kind(spec: SparsitySpec, tensors: tuple[TensorRecord, ...]) -> dict[str, list] | None:
    """Per kind, the source's sparsities of that kind, when both sides have ReLUs and pools."""
    if not isinstance(spec, SparsitySource):
        return None
    kinds = [t.kind for t in spec.tensors]
    out = {}
    for kind in SPARSE_KINDS:
        cols = [i for i, k in enumerate(kinds) if k == kind]
        if not cols or not any(t.kind == kind for t in tensors):
            return None
        out[kind] = [float(spec.sparsity[0, i]) for i in cols]
    return out


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class Trace:
    """The tensors one training step swaps, over one or more iterations.

    Parameters
    ----------
    name : str
        Name shown in tables and reports.
    tensors : tuple of TensorRecord
        In forward order.
    sparsity : array_like, shape (iterations, tensors) or (tensors,)
        Fraction of all-zero elements of each tensor at each iteration
        (stored read-only, always 2-D).
    tail_fwd_flops, tail_fwd_mem_bytes : float
        Compute after the last swapped tensor (classifier, loss).
    meta : dict
        Free-form provenance (model, batch, resolution, sparsity spec).

    Raises
    ------
    SwapError
        For no tensors, a sparsity of the wrong shape or outside [0, 1], or
        a negative tail.

    Examples
    --------
    >>> t = Trace("toy", (TensorRecord("a", (4, 8)), TensorRecord("b", (4, 8), kind="relu")),
    ...           [0.0, 0.5])
    >>> t.iterations, len(t), t.total_bytes, t.mean_sparsity
    (1, 2, 256, 0.25)
    """

    name: str
    tensors: tuple[TensorRecord, ...]
    sparsity: np.ndarray
    tail_fwd_flops: float = 0.0
    tail_fwd_mem_bytes: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"<Trace {self.name}: {len(self.tensors)} tensors, {self.iterations} iteration(s), "
            f"{self.total_bytes / 2**20:.1f} MiB, mean sparsity {self.mean_sparsity:.2f}>"
        )

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
        """Return the same tensors with a new sparsity profile on ReLU and pool outputs.

        Parameters
        ----------
        spec : float, (float, float), sequence of float, or Trace
            See :func:`~pcr_explore.swap.traces.sparsity.sparsity_profile`.

        Returns
        -------
        Trace
            One iteration; other tensor kinds (the input) keep their first
            iteration's sparsity. A captured trace with both ReLU and pool
            outputs gives ReLU outputs its ReLU sparsities and pool outputs
            its pool sparsities (each resampled by depth); a number, ramp or
            list gives both kinds the same values.

        Raises
        ------
        SwapError
            For a value outside [0, 1] or an empty spec.

        Examples
        --------
        >>> t = Trace("toy", (TensorRecord("x", (4,), kind="input"),
        ...                   TensorRecord("r", (4,), kind="relu")), [0.0, 0.0])
        >>> t.with_sparsity(0.7).sparsity.tolist()
        [[0.0, 0.7]]
        >>> src = Trace("cap", (TensorRecord("r", (4,), kind="relu"),
        ...                     TensorRecord("p", (4,), kind="pool")), [0.5, 0.25])
        >>> dst = Trace("net", tuple(TensorRecord(k, (4,), kind=k) for k in
        ...                          ("relu", "relu", "pool")), [0.0, 0.0, 0.0])
        >>> dst.with_sparsity(src).sparsity.tolist()
        [[0.5, 0.5, 0.25]]
        """
        sparse = np.array([t.kind in SPARSE_KINDS for t in self.tensors])
        values = self.sparsity[0].copy()
        by_kind = _by_kind(spec, self.tensors)
        if by_kind is not None:
            for kind, source in by_kind.items():
                mask = np.array([t.kind == kind for t in self.tensors])
                values[mask] = sparsity_profile(source, int(mask.sum()))
        else:
            values[sparse] = sparsity_profile(spec, int(sparse.sum()))
        meta = dict(self.meta, sparsity=spec_to_json(spec))
        return replace(self, sparsity=values[None, :], meta=meta)

    def with_drift(
        self, iterations: int, *, change: float = 0.1, jitter: float = 0.01, seed: int = 0
    ) -> Trace:
        """Extend to ``iterations`` iterations whose sparsity drifts.

        ReLU and pool outputs move linearly by ``change`` (absolute) from the
        first to the last iteration, plus Gaussian ``jitter``; values are
        clipped to [0, 0.999]. CSWAP observed sparsity drifting over training.

        Parameters
        ----------
        iterations : int
            Number of iterations of the new trace.
        change : float
            Sparsity added between the first and the last iteration.
        jitter : float
            Sigma of the Gaussian noise added to every later iteration.
        seed : int
            Seed of that noise.

        Returns
        -------
        Trace
            The drifting trace; its first iteration equals this one's.

        Raises
        ------
        SwapError
            If ``iterations`` is not in [1, :data:`MAX_ITERATIONS`].

        Examples
        --------
        >>> t = Trace("toy", (TensorRecord("r", (4,), kind="relu"),), [0.5])
        >>> t.with_drift(3, change=0.2, jitter=0.0).sparsity.ravel().round(2).tolist()
        [0.5, 0.6, 0.7]
        """
        check_iterations(iterations)
        rng = np.random.default_rng(seed)
        base = self.sparsity[0]
        sparse = np.array([t.kind in SPARSE_KINDS for t in self.tensors])
        ramp = np.linspace(0.0, change, iterations)[:, None]
        noise = rng.normal(0.0, jitter, size=(iterations, len(self.tensors)))
        noise[0] = 0.0
        s = np.where(sparse, np.clip(base + ramp + noise, 0.0, 0.999), base)
        meta = dict(self.meta, drift={"iterations": iterations, "change": change, "jitter": jitter})
        return replace(self, sparsity=s, meta=meta)

    def to_json(self) -> dict[str, Any]:
        """Return the trace as a plain-JSON dict (what :meth:`save` writes).

        Returns
        -------
        dict
            Format tag and version, name, tail, meta, records, sparsity.
        """
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
        """Build a trace from the dict :meth:`to_json` wrote.

        Parameters
        ----------
        obj : mapping
            The JSON object.
        source : str
            Where it came from, for error messages.

        Returns
        -------
        Trace
            The trace.

        Raises
        ------
        SwapError
            If the object is not a trace of a known version, or malformed.
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
        except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise SwapError(f"{source}: malformed trace ({exc!r:.200})") from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the trace as JSON (non-finite numbers in ``meta`` become ``null``).

        Parameters
        ----------
        path : str or path-like
            File to write (atomically: a reader, or a run stopped midway, sees
            the old file or the whole new one).

        Raises
        ------
        OSError
            If the file cannot be written (naming *path*).
        """
        atomic_write(path, _dumps(self.to_json()))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a trace written by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
            Trace JSON file.

        Returns
        -------
        Trace
            The trace.

        Raises
        ------
        SwapError
            If the file is missing, larger than :data:`MAX_TRACE_BYTES`, not
            JSON, or not a trace.
        """
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_TRACE_BYTES + 1)
        except OSError as exc:
            raise SwapError(f"{path}: cannot read trace ({exc.strerror})") from exc
        if len(data) > MAX_TRACE_BYTES:
            raise SwapError(
                f"{path}: larger than {MAX_TRACE_BYTES >> 20} MiB, the most a trace file may "
                "hold; read no further"
            )
        try:
            obj = json.loads(data.decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise SwapError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
        except (RecursionError, UnicodeDecodeError) as exc:
            raise SwapError(f"{path}: not a trace file ({type(exc).__name__})") from exc
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
