"""What a simulation returns: per-tensor decisions, totals per iteration, the step's timeline.

A :class:`SimResult` is one policy simulated on one trace and profile. Its
:meth:`~SimResult.timeline` lays the step out on the compute and copy
streams under the timing model of :mod:`pcr_explore.swap.simulator.simulate`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._json import json_safe
from ..._public import public
from ..model.profiles import DeviceProfile
from ..traces import Trace

__all__ = ["Decision", "SimResult", "explain"]


@public("pcr_explore.swap")
@dataclass(frozen=True)
class Decision:
    """What a policy did with one tensor in one iteration.

    Times are seconds; ``predicted_*`` are what the policy believed when it
    chose (the profile's noise-free model for policies that do not predict).

    Parameters
    ----------
    tensor : int
        Index of the tensor in the trace.
    name : str
        Its name.
    codec : str
        ``"raw"`` or the codec chosen.
    raw_bytes : int
        Uncompressed bytes.
    bytes : float
        Bytes sent over the link each way.
    sparsity : float
        The tensor's sparsity at that iteration.
    predicted_compress, predicted_decompress : float
        Kernel times the policy predicted.
    actual_compress, actual_decompress : float
        Kernel times the step spent.
    transfer_out, transfer_in : float
        Copy times to and from the host.
    predicted_stall, actual_stall : float
        Time the swap adds to the step, predicted and true.
    reason : str
        Why the policy chose this codec, in words.
    """

    tensor: int
    name: str
    codec: str
    raw_bytes: int
    bytes: float
    sparsity: float
    predicted_compress: float
    predicted_decompress: float
    actual_compress: float
    actual_decompress: float
    transfer_out: float
    transfer_in: float
    predicted_stall: float
    actual_stall: float
    reason: str

    @property
    def ratio(self) -> float:
        """Compression ratio ``raw_bytes / bytes`` (infinite for an empty encoding)."""
        return self.raw_bytes / self.bytes if self.bytes else math.inf


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class SimResult:
    """One policy simulated on one trace and profile.

    Built by :func:`~pcr_explore.swap.simulator.simulate.simulate`. ``swap_seconds``,
    ``stall_seconds`` and ``link_bytes`` are means per iteration over the
    trace's iterations (cswap's warm-up iterations are reported apart, in
    ``warmup_stall_seconds``).

    Attributes
    ----------
    policy : str
        Canonical policy spec.
    trace : Trace
        The trace simulated.
    profile : DeviceProfile
        The device it was priced on.
    swap_seconds : float
        Codec kernel time plus copy time, both directions, summed over
        tensors (the "swap latency", overlapped or not).
    stall_seconds : float
        Time the swaps add to the step (compute-stream codec time plus copy
        time not hidden under compute).
    link_bytes : float
        Bytes over the link, both directions.
    compute_seconds : float
        Forward plus backward compute of the step without any swapping.
    warmup_stall_seconds : float
        Stall of cswap's exploration iterations (0 for other policies).
    refits : int
        Times cswap refitted its predictors after the warm-up.
    choice : ndarray of int, shape (iterations, tensors)
        Index into ``options`` per tensor and iteration.
    options : tuple of str
        ``"raw"`` then the profile's codecs.
    per_iteration : dict of str to ndarray
        ``swap_seconds``, ``stall_seconds`` and ``link_bytes`` per iteration.

    Examples
    --------
    >>> from pcr_explore.swap import builtin_trace, simulate
    >>> r = simulate(builtin_trace("vgg16", batch=8), profile="v100-pcie3", policy="vdnn")
    >>> r.link_bytes == 2 * r.trace.total_bytes, r.summary()["codec_counts"]
    (True, {'raw': 21})
    """

    policy: str
    trace: Trace
    profile: DeviceProfile
    options: tuple[str, ...]
    choice: np.ndarray
    swap_seconds: float
    stall_seconds: float
    link_bytes: float
    compute_seconds: float
    warmup_stall_seconds: float
    refits: int
    per_iteration: dict[str, np.ndarray] = field(repr=False)
    # per iteration and tensor, the Decision fields that come from the simulation
    _arrays: dict[str, np.ndarray] = field(repr=False)
    _explain: Callable[[], np.ndarray] = field(repr=False)
    _cf: np.ndarray = field(repr=False)
    _cb: np.ndarray = field(repr=False)

    @functools.cached_property
    def _reasons(self) -> np.ndarray:
        # built on first read: most simulations never show them
        return self._explain()

    def __repr__(self) -> str:
        # One line: a list of results must stay readable (details: summary(), to_dict()).
        return (
            f"<SimResult {self.policy} on {self.trace.name} / {self.profile.name}: "
            f"stall {self.stall_seconds * 1e3:.3f} ms, swap {self.swap_seconds * 1e3:.3f} ms "
            "(simulated)>"
        )

    @property
    def step_seconds(self) -> float:
        """Compute plus stall of one iteration, seconds."""
        return self.compute_seconds + self.stall_seconds

    def summary(self) -> dict[str, Any]:
        """Return the totals as plain JSON.

        Returns
        -------
        dict
            ``swap_seconds``, ``stall_seconds``, ``link_bytes``,
            ``compute_seconds``, ``step_seconds``, ``warmup_stall_seconds``,
            ``refits`` and ``codec_counts`` (tensors per codec in the last
            iteration).
        """
        codecs, counts = np.unique(np.asarray(self.options)[self.choice[-1]], return_counts=True)
        return {
            "swap_seconds": self.swap_seconds,
            "stall_seconds": self.stall_seconds,
            "link_bytes": self.link_bytes,
            "compute_seconds": self.compute_seconds,
            "step_seconds": self.step_seconds,
            "warmup_stall_seconds": self.warmup_stall_seconds,
            "refits": self.refits,
            "codec_counts": {str(c): int(k) for c, k in zip(codecs, counts, strict=True)},
        }

    def to_dict(self, *, decisions: bool = True) -> dict[str, Any]:
        """Return the result as JSON-ready data (non-finite numbers become ``None``).

        Parameters
        ----------
        decisions : bool
            Include the last iteration's per-tensor decisions.

        Returns
        -------
        dict
            ``kind`` (``"simulated"``), ``assumptions`` (the profile),
            ``policy``, ``trace``, ``profile``, ``options``, the
            :meth:`summary` fields, ``per_iteration`` lists and, if asked,
            ``decisions`` (one dict per tensor, with its ``ratio``).

        Examples
        --------
        >>> import json
        >>> from pcr_explore.swap import builtin_trace, simulate
        >>> r = simulate(builtin_trace("vgg16", batch=1), profile="a100-pcie4", policy="always:zvc")
        >>> d = r.to_dict()
        >>> d["policy"], len(d["decisions"]), d["decisions"][0]["codec"]
        ('always:zvc', 21, 'zvc')
        >>> json.loads(json.dumps(d)) == d
        True
        """
        out: dict[str, Any] = {
            "kind": "simulated",
            "assumptions": self.profile.name,
            "policy": self.policy,
            "trace": self.trace.name,
            "profile": self.profile.name,
            "options": list(self.options),
            **self.summary(),
            "per_iteration": self.per_iteration,
        }
        if decisions:
            out["decisions"] = [
                {**dataclasses.asdict(d), "ratio": d.ratio} for d in self.decisions()
            ]
        return json_safe(out)

    def _at(self, iteration: int) -> tuple[int, dict[str, np.ndarray]]:
        """The index of *iteration* (negative from the end) and its rows of the arrays."""
        k = range(self.choice.shape[0])[iteration]
        return k, {key: v[k] for key, v in self._arrays.items()}

    def decisions(self, iteration: int = -1) -> list[Decision]:
        """Return the per-tensor decisions of one iteration.

        Parameters
        ----------
        iteration : int
            Index into the trace's iterations; the last by default.

        Returns
        -------
        list of Decision
            One per tensor, in forward order.
        """
        k, a = self._at(iteration)
        return [
            Decision(
                tensor=t,
                name=rec.name,
                codec=self.options[self.choice[k, t]],
                raw_bytes=rec.nbytes,
                sparsity=float(self.trace.sparsity[k, t]),
                reason=str(self._reasons[k, t]),
                **{key: float(v[t]) for key, v in a.items()},
            )
            for t, rec in enumerate(self.trace.tensors)
        ]

    def timeline(self, iteration: int = -1) -> dict[str, list]:
        """Lay one iteration out as events on the compute and copy streams.

        Forward: compress on the compute stream, copy while the next op
        computes; backward: prefetch while op ``i + 2`` runs, decompress
        before op ``i + 1``. The compute-stream events tile the step.

        Parameters
        ----------
        iteration : int
            Index into the trace's iterations; the last by default.

        Returns
        -------
        dict of str to list
            Columns for a Bokeh ``ColumnDataSource``: ``tensor`` (-1 for the
            tail), ``name``, ``phase`` (forward/backward), ``stream``
            (compute/copy), ``kind`` (compute, compress, copy, stall,
            decompress), ``codec``, ``start``, ``end`` (seconds from the
            start of the step). Zero-length events are dropped.
        """
        k, a = self._at(iteration)
        s, cb = self._cf, self._cb
        T = len(self.trace.tensors)
        tc, td, x = a["actual_compress"], a["actual_decompress"], a["transfer_out"]
        ov_out, ov_in = s[1 : T + 1], cb[2 : T + 2]
        names = [r.name for r in self.trace.tensors]
        codecs = np.asarray(self.options)[self.choice[k]]
        cols: dict[str, list] = {
            c: [] for c in ("tensor", "name", "phase", "stream", "kind", "codec", "start", "end")
        }

        def add(tensor, phase, stream, kind, start, end) -> None:
            tensor, start, end = np.broadcast_arrays(tensor, start, end)
            keep = end > start
            tensor = tensor[keep]
            cols["tensor"] += tensor.tolist()
            cols["name"] += [names[i] if 0 <= i < T else "tail" for i in tensor]
            cols["phase"] += [phase] * int(keep.sum())
            cols["stream"] += [stream] * int(keep.sum())
            cols["kind"] += [kind] * int(keep.sum())
            cols["codec"] += [str(codecs[i]) if 0 <= i < T else "" for i in tensor]
            cols["start"] += start[keep].tolist()
            cols["end"] += end[keep].tolist()

        idx = np.arange(T)
        # forward: a[i] = end of compress i, when copy i starts
        block = np.maximum(ov_out, x)
        steps = np.concatenate(([tc[0]], block[:-1] + tc[1:]))
        a_i = s[0] + np.cumsum(steps)
        add([0], "forward", "compute", "compute", 0.0, s[0])
        add([0], "forward", "compute", "compress", s[0], s[0] + tc[0])
        nxt = np.where(idx + 1 < T, idx + 1, -1)
        add(nxt, "forward", "compute", "compute", a_i, a_i + ov_out)
        add(idx, "forward", "compute", "stall", a_i + ov_out, a_i + block)
        compressed = (a_i + block)[:-1]
        add(idx[1:], "forward", "compute", "compress", compressed, compressed + tc[1:])
        add(idx, "forward", "copy", "copy", a_i, a_i + x)
        fwd_end = a_i[-1] + block[-1]
        # backward, tensors in descending order; b[i] = start of tensor i's prefetch
        bblock = np.maximum(ov_in, x) + td
        rev = bblock[::-1]
        b_i = (fwd_end + np.concatenate(([0.0], np.cumsum(rev)[:-1])))[::-1]
        op2 = np.where(idx + 2 < T, idx + 2, -1)
        has_op = idx + 2 <= T
        add(op2[has_op], "backward", "compute", "compute", b_i[has_op], (b_i + ov_in)[has_op])
        add(idx, "backward", "compute", "stall", b_i + ov_in, b_i + np.maximum(ov_in, x))
        wait_end = b_i + np.maximum(ov_in, x)
        add(idx, "backward", "compute", "decompress", wait_end, wait_end + td)
        add(idx, "backward", "copy", "copy", b_i, b_i + x)
        end = b_i[0] + bblock[0]
        add([1 if T > 1 else -1], "backward", "compute", "compute", end, end + cb[1])
        add([0], "backward", "compute", "compute", end + cb[1], end + cb[1] + cb[0])
        return cols

    def _repr_html_(self) -> str:
        sm = self.summary()
        return (
            f"<b>{self.policy}</b> on {self.trace.name} / {self.profile.name} (simulated, "
            f"assumptions profile {self.profile.name}): swap {sm['swap_seconds'] * 1e3:.2f} ms, "
            f"stall {sm['stall_seconds'] * 1e3:.2f} ms, "
            f"link {sm['link_bytes'] / 2**30:.3f} GiB, codecs {sm['codec_counts']}"
        )


def explain(
    kind: str,
    codec: str | None,
    options: Sequence[str],
    choice: np.ndarray,
    stall: np.ndarray,
    allowed: np.ndarray,
    raw_bytes: np.ndarray,
    predicted_bytes: np.ndarray,
) -> Callable[[], np.ndarray]:
    """A function that explains each choice of a policy of ``kind`` (vdnn, always, cswap, oracle).

    ``stall`` (options, iterations, tensors) is what the policy compared:
    predicted stall for cswap, true stall for the oracle; ``allowed``
    (options, tensors) masks the options it could pick.
    """
    basis = "predicted" if kind == "cswap" else "true"

    def one(k: int, t: int) -> str:
        o = int(choice[k, t])
        name = options[o]
        if kind == "vdnn":
            return "vdnn swaps every tensor raw"
        if kind == "always":
            return f"always {name}" if o else f"{codec} not applicable to this tensor; sent raw"
        st = np.where(allowed[:, t], stall[:, k, t], np.inf)
        raw = st[0]
        if o:
            return (
                f"{name}: {basis} stall {st[o] * 1e3:.3f} ms vs raw {raw * 1e3:.3f} ms, "
                f"ratio {raw_bytes[t] / predicted_bytes[o, k, t]:.2f}x"
            )
        alt = np.argsort(st)[1] if np.isfinite(st).sum() > 1 else 0
        if raw == 0:
            return "copy hidden under compute; a codec would only add kernel time"
        if alt:
            return (
                f"raw: {basis} stall {raw * 1e3:.3f} ms beats {options[alt]} {st[alt] * 1e3:.3f} ms"
            )
        return "no codec applicable"

    def build() -> np.ndarray:
        n_iter, n_tensors = choice.shape
        return np.array([[one(k, t) for t in range(n_tensors)] for k in range(n_iter)], object)

    return build
