"""Step simulator: per-tensor swap decisions under a policy, their stall and swap time.

Timing model (vDNN style, consistent with the released CSWAP code):

* Forward: tensor ``i`` (output of op ``i``, input of op ``i + 1``) is
  compressed on the compute stream (critical path), then copied to the host
  on a copy stream while op ``i + 1`` computes; op ``i + 2`` may not start
  before that copy ends. ``stall_out = t_compress + max(0, t_copy - t_op(i+1))``.
* Backward: tensor ``i`` is prefetched while op ``i + 2`` runs its backward
  and decompressed on the compute stream before op ``i + 1``'s backward
  needs it. ``stall_in = t_decompress + max(0, t_copy - t_bwd(i+2))``; the
  last tensor, needed first, overlaps nothing.

Policies: ``vdnn`` (raw), ``always:<codec>``, ``cswap`` (least predicted
stall per tensor; predictors fitted online from warm-up observations and
refitted when sparsity drifts), ``oracle`` (least true stall). ``cswap``
and ``oracle`` choose among the lossless codecs of the profile plus
``binarize`` (where a tensor allows it); ``cswap+lossy`` and
``oracle+lossy`` also consider ZFP.

"True" codec times are the profile's kernel model times a seeded lognormal
factor (``noise``), standing in for run-to-run variation that no predictor
sees; the predictor never reads the profile's coefficients.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SwapError
from ._lossy_codecs import ZFP
from .codecs import get_codec
from .model import DeviceProfile, KernelCost, fit_kernel_cost, get_profile
from .traces import Trace

__all__ = [
    "Policy",
    "parse_policy",
    "Decision",
    "SimResult",
    "simulate",
    "simulate_many",
    "default_policies",
]

RAW = "raw"


@dataclass(frozen=True)
class Policy:
    """A parsed policy spec.

    Attributes
    ----------
    kind : str
        ``"vdnn"``, ``"always"``, ``"cswap"`` or ``"oracle"``.
    codec : str or None
        For ``always``: the codec name.
    lossy : bool
        ``cswap`` / ``oracle`` may pick lossy ZFP.
    codecs : tuple of str or None
        For ``cswap:<c1>,<c2>`` / ``oracle:...``: the only codecs considered
        (besides raw), e.g. ``cswap:zvc,zfp`` for the papers' configuration.
    """

    kind: str
    codec: str | None = None
    lossy: bool = False
    codecs: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        """Canonical spec string."""
        if self.kind == "always":
            return f"always:{self.codec}"
        if self.codecs is not None:
            return f"{self.kind}:{','.join(self.codecs)}"
        return self.kind + ("+lossy" if self.lossy else "")


def parse_policy(spec: str | Policy) -> Policy:
    """Parse ``"vdnn"``, ``"always:zvc"``, ``"cswap"``, ``"cswap+lossy"``, ``"cswap:zvc,zfp"``,
    ``"oracle"``...

    Raises
    ------
    SwapError
        For an unknown policy or codec.

    Examples
    --------
    >>> parse_policy("always:ZVC").name
    'always:zvc'
    """
    if isinstance(spec, Policy):
        return spec
    if not isinstance(spec, str):
        raise SwapError(f"policy must be a string, got {type(spec).__name__}")
    s = spec.strip().lower()
    if s == "vdnn":
        return Policy("vdnn")
    if s.startswith("always:"):
        return Policy("always", get_codec(s.partition(":")[2]).name)
    base, colon, listed = s.partition(":")
    if base in ("cswap", "oracle") and colon:
        names = tuple(get_codec(c).name for c in listed.split(",") if c.strip())
        if not names:
            raise SwapError(f"policy {spec!r} lists no codecs")
        return Policy(base, None, any(_loses_values(c) for c in names), names)
    base, plus, extra = s.partition("+")
    if base in ("cswap", "oracle") and (not plus or extra == "lossy"):
        return Policy(base, None, bool(plus))
    raise SwapError(
        f"unknown policy {spec!r}; expected vdnn, always:<codec>, cswap, cswap+lossy, "
        "cswap:<codec>[,<codec>...], oracle, oracle+lossy or oracle:<codec>[,...]"
    )


def default_policies(profile: DeviceProfile | str) -> list[str]:
    """``vdnn``, ``always:<c>`` for each codec of the profile, ``cswap``, ``oracle``."""
    p = get_profile(profile)
    return ["vdnn", *(f"always:{c}" for c in p.codecs), "cswap", "oracle"]


def _loses_values(codec: str) -> bool:
    """ZFP changes values training reads; binarize keeps all that backward uses."""
    return isinstance(get_codec(codec), ZFP)


class _Setup:
    """Everything about a (trace, profile) pair that no policy changes, as arrays."""

    def __init__(self, trace: Trace, profile: DeviceProfile, noise: float, seed: int) -> None:
        if not isinstance(trace, Trace):
            raise SwapError(f"simulate needs a Trace, got {type(trace).__name__}")
        if not (isinstance(noise, int | float) and 0 <= noise < 5):
            raise SwapError(f"noise must lie in [0, 5), got {noise!r}")
        self.trace, self.profile = trace, profile
        recs = trace.tensors
        T, K = len(recs), trace.iterations
        self.T, self.K = T, K
        self.n = np.array([r.n for r in recs], dtype=np.int64)
        self.itemsize = np.array([r.itemsize for r in recs], dtype=np.int64)
        self.raw = self.n * self.itemsize
        self.S = trace.sparsity
        self.nnz = np.rint(self.n * (1.0 - self.S)).astype(np.int64)
        self.options = [RAW, *profile.codecs]
        n_opt = len(self.options)
        self.lossy = np.array([o != RAW and _loses_values(o) for o in self.options])

        # compute times of ops; op index T is the tail, T + 1 is "nothing"
        fl = np.array([r.fwd_flops for r in recs] + [trace.tail_fwd_flops, 0.0])
        mem = np.array([r.fwd_mem_bytes for r in recs] + [trace.tail_fwd_mem_bytes, 0.0])
        bwd = np.array([r.bwd_factor for r in recs] + [2.0, 0.0])
        self.cf = np.asarray(profile.compute_time(fl, mem), dtype=float)
        self.cb = self.cf * bwd
        self.ov_out = self.cf[1 : T + 1]
        self.ov_in = self.cb[2 : T + 2]

        # scale from float32 coefficients to each tensor's width
        w = self.itemsize / 4.0
        shape = (n_opt, K, T)
        self.bytes_pred = np.empty(shape)
        self.bytes_act = np.empty(shape)
        self.tc_nom = np.zeros(shape)
        self.td_nom = np.zeros(shape)
        self.applicable = np.ones((n_opt, T), dtype=bool)
        for o, name in enumerate(self.options):
            if name == RAW:
                self.bytes_pred[o] = self.raw
                self.bytes_act[o] = self.raw
                continue
            codec = get_codec(name)
            size = np.empty((K, T))
            for t, r in enumerate(recs):
                size[:, t] = codec._size(
                    self.n[t],
                    self.nnz[:, t],
                    r.itemsize,
                    r.shape if codec.shape_dependent else None,
                )
            self.bytes_pred[o] = size
            corr = np.ones(T)
            for t, r in enumerate(recs):
                if r.measured_bytes and name in r.measured_bytes and size[0, t] > 0:
                    corr[t] = r.measured_bytes[name] / size[0, t]
            self.bytes_act[o] = size * corr
            cost = profile.codecs[name]
            self.tc_nom[o] = cost.compress.time(self.n * w, self.nnz * w)
            self.td_nom[o] = cost.decompress.time(self.n * w, self.nnz * w)
            kinds = np.array([r.dtype for r in recs])
            if name == "binarize":
                self.applicable[o] = [r.binarizable for r in recs]
            elif isinstance(codec, ZFP):
                self.applicable[o] = np.char.startswith(kinds.astype(str), "float")
        rng = np.random.default_rng(seed)
        jc = np.exp(rng.normal(0.0, noise, size=shape)) if noise else 1.0
        jd = np.exp(rng.normal(0.0, noise, size=shape)) if noise else 1.0
        self.tc_act = self.tc_nom * jc
        self.td_act = self.td_nom * jd
        self.x_act = np.asarray(profile.transfer_time(self.bytes_act), dtype=float)
        self.x_pred = np.asarray(profile.transfer_time(self.bytes_pred), dtype=float)
        self.stall_act = self._stall(self.tc_act, self.td_act, self.x_act)
        self.stall_nom = self._stall(self.tc_nom, self.td_nom, self.x_pred)
        self.stall_act[~np.broadcast_to(self.applicable[:, None, :], shape)] = np.inf

    def _stall(self, tc, td, x):
        return tc + np.maximum(0.0, x - self.ov_out) + td + np.maximum(0.0, x - self.ov_in)

    def candidates(self, policy: Policy) -> np.ndarray:
        if policy.codecs is not None:
            missing = [c for c in policy.codecs if c not in self.options]
            if missing:
                raise SwapError(
                    f"profile {self.profile.name!r} has no kernel cost for {', '.join(missing)}; "
                    f"it has: {', '.join(self.options[1:])}"
                )
            return np.array([o == RAW or o in policy.codecs for o in self.options])
        return ~self.lossy | policy.lossy


@dataclass(frozen=True)
class Decision:
    """What a policy did with one tensor in one iteration.

    Times are seconds; ``predicted_*`` are what the policy believed when it
    chose (the profile's noise-free model for policies that do not predict).
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
        """``raw_bytes / bytes``."""
        return self.raw_bytes / self.bytes if self.bytes else math.inf


@dataclass(frozen=True, eq=False)
class SimResult:
    """One policy simulated on one trace and profile.

    ``swap_seconds``, ``stall_seconds`` and ``link_bytes`` are means per
    iteration over the trace's iterations (cswap's warm-up iterations are
    reported apart, in ``warmup_stall_seconds``).

    Attributes
    ----------
    policy : str
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
    _arrays: dict[str, np.ndarray] = field(repr=False)
    _reasons: Any = field(repr=False)
    _cf: np.ndarray = field(repr=False)
    _cb: np.ndarray = field(repr=False)

    @property
    def step_seconds(self) -> float:
        """Compute plus stall of one iteration."""
        return self.compute_seconds + self.stall_seconds

    def summary(self) -> dict[str, Any]:
        """Plain-JSON totals."""
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

    def decisions(self, iteration: int = -1) -> list[Decision]:
        """Per-tensor decisions of one iteration (the last by default)."""
        k = range(self.choice.shape[0])[iteration]
        a = {key: v[k] for key, v in self._arrays.items()}
        out = []
        for t, rec in enumerate(self.trace.tensors):
            out.append(
                Decision(
                    tensor=t,
                    name=rec.name,
                    codec=self.options[self.choice[k, t]],
                    raw_bytes=rec.nbytes,
                    bytes=float(a["bytes"][t]),
                    sparsity=float(self.trace.sparsity[k, t]),
                    predicted_compress=float(a["pred_tc"][t]),
                    predicted_decompress=float(a["pred_td"][t]),
                    actual_compress=float(a["tc"][t]),
                    actual_decompress=float(a["td"][t]),
                    transfer_out=float(a["x"][t]),
                    transfer_in=float(a["x"][t]),
                    predicted_stall=float(a["pred_stall"][t]),
                    actual_stall=float(a["stall"][t]),
                    reason=str(self._reasons[k, t]),
                )
            )
        return out

    def timeline(self, iteration: int = -1) -> dict[str, list]:
        """Events of one iteration as columns for a Bokeh ``ColumnDataSource``.

        Columns: ``tensor`` (-1 for the tail), ``name``, ``phase``
        (forward/backward), ``stream`` (compute/copy), ``kind`` (compute,
        compress, copy, stall, decompress), ``codec``, ``start``, ``end``
        (seconds from the start of the step). Zero-length events are dropped.
        """
        k = range(self.choice.shape[0])[iteration]
        a = {key: v[k] for key, v in self._arrays.items()}
        s, cb = self._cf, self._cb
        T = len(self.trace.tensors)
        tc, td, x = a["tc"], a["td"], a["x"]
        ov_out, ov_in = s[1 : T + 1], cb[2 : T + 2]
        names = [r.name for r in self.trace.tensors]
        codecs = np.asarray(self.options)[self.choice[k]]
        cols: dict[str, list] = {
            c: [] for c in ("tensor", "name", "phase", "stream", "kind", "codec", "start", "end")
        }

        def add(tensor, phase, stream, kind, start, end) -> None:
            keep = np.asarray(end) > np.asarray(start)
            tensor = np.broadcast_to(tensor, keep.shape)[keep]
            cols["tensor"] += tensor.tolist()
            cols["name"] += [names[i] if 0 <= i < T else "tail" for i in tensor]
            cols["phase"] += [phase] * int(keep.sum())
            cols["stream"] += [stream] * int(keep.sum())
            cols["kind"] += [kind] * int(keep.sum())
            cols["codec"] += [str(codecs[i]) if 0 <= i < T else "" for i in tensor]
            cols["start"] += np.asarray(start)[keep].tolist()
            cols["end"] += np.asarray(end)[keep].tolist()

        idx = np.arange(T)
        # forward: a[i] = end of compress i, when copy i starts
        block = np.maximum(ov_out, x)
        steps = np.concatenate(([tc[0]], block[:-1] + tc[1:]))
        a_i = s[0] + np.cumsum(steps)
        add(np.array([0]), "forward", "compute", "compute", np.array([0.0]), np.array([s[0]]))
        add(
            np.array([0]),
            "forward",
            "compute",
            "compress",
            np.array([s[0]]),
            np.array([s[0] + tc[0]]),
        )
        nxt = np.where(idx + 1 < T, idx + 1, -1)
        add(nxt, "forward", "compute", "compute", a_i, a_i + ov_out)
        add(idx, "forward", "compute", "stall", a_i + ov_out, a_i + block)
        add(
            idx[1:],
            "forward",
            "compute",
            "compress",
            (a_i + block)[:-1],
            (a_i + block)[:-1] + tc[1:],
        )
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
        add(
            np.array([1 if T > 1 else -1, 0]),
            "backward",
            "compute",
            "compute",
            np.array([end, end + cb[1]]),
            np.array([end + cb[1], end + cb[1] + cb[0]]),
        )
        return cols

    def _repr_html_(self) -> str:
        sm = self.summary()
        return (
            f"<b>{self.policy}</b> on {self.trace.name} / {self.profile.name}: "
            f"swap {sm['swap_seconds'] * 1e3:.2f} ms, stall {sm['stall_seconds'] * 1e3:.2f} ms, "
            f"link {sm['link_bytes'] / 2**30:.3f} GiB, codecs {sm['codec_counts']}"
        )


def _pick(cost: np.ndarray) -> np.ndarray:
    """Argmin over options (axis 0); ties go to the lowest index, i.e. raw first."""
    return np.argmin(cost, axis=0)


class _Predictor:
    """Per-codec online least-squares predictors of compress/decompress time."""

    def __init__(self, setup: _Setup) -> None:
        self.setup = setup
        self.obs: dict[int, list[np.ndarray]] = {}
        self.fits: dict[int, tuple[KernelCost, KernelCost]] = {}

    def observe(self, k: int, choice: np.ndarray) -> None:
        s = self.setup
        w = s.itemsize / 4.0
        for o in np.unique(choice):
            if o == 0:
                continue
            t = np.flatnonzero(choice == o)
            rows = np.column_stack(
                [s.n[t] * w[t], s.nnz[k, t] * w[t], s.tc_act[o, k, t], s.td_act[o, k, t]]
            )
            self.obs.setdefault(int(o), []).append(rows)

    def refit(self) -> None:
        for o, chunks in self.obs.items():
            rows = np.concatenate(chunks)
            self.fits[o] = (
                fit_kernel_cost(rows[:, 0], rows[:, 1], rows[:, 2]),
                fit_kernel_cost(rows[:, 0], rows[:, 1], rows[:, 3]),
            )

    def predict(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        s = self.setup
        n_opt, T = len(s.options), s.T
        tc = np.full((n_opt, T), np.inf)
        td = np.full((n_opt, T), np.inf)
        tc[0] = td[0] = 0.0
        w = s.itemsize / 4.0
        for o, (fc, fd) in self.fits.items():
            tc[o] = fc.time(s.n * w, s.nnz[k] * w)
            td[o] = fd.time(s.n * w, s.nnz[k] * w)
        return tc, td


def _run(setup: _Setup, policy: Policy, warmup: int, drift_threshold: float) -> SimResult:
    s = setup
    n_opt, K, T = len(s.options), s.K, s.T
    cand = s.candidates(policy)
    allowed = s.applicable & cand[:, None]
    choice = np.zeros((K, T), dtype=np.int64)
    pred_tc_all, pred_td_all = s.tc_nom, s.td_nom
    pred_stall_all = s.stall_nom
    warm_stall = 0.0
    refits = 0
    if policy.kind == "vdnn":
        pass
    elif policy.kind == "always":
        if policy.codec not in s.options:
            raise SwapError(
                f"profile {s.profile.name!r} has no kernel cost for codec {policy.codec!r}; "
                f"it has: {', '.join(s.options[1:])}"
            )
        o = s.options.index(policy.codec)
        choice[:] = np.where(s.applicable[o], o, 0)
    elif policy.kind == "oracle":
        cost = np.where(allowed[:, None, :], s.stall_act, np.inf)
        choice[:] = _pick(cost)
    else:  # cswap
        pred = _Predictor(s)
        codecs = [o for o in range(1, n_opt) if cand[o]]
        for w in range(warmup):
            # exploration: each tensor tries one applicable codec, round-robin
            explore = np.zeros(T, dtype=np.int64)
            for t in range(T):
                usable = [o for o in codecs if s.applicable[o, t]]
                if usable:
                    explore[t] = usable[(t + w) % len(usable)]
            warm_stall += float(np.take_along_axis(s.stall_act[:, 0], explore[None], 0).sum())
            pred.observe(0, explore)
        pred.refit()
        fitted_at = s.S[0]
        pred_tc_all = np.empty((n_opt, K, T))
        pred_td_all = np.empty((n_opt, K, T))
        pred_stall_all = np.empty((n_opt, K, T))
        for k in range(K):
            if k and float(np.mean(np.abs(s.S[k] - fitted_at))) > drift_threshold:
                pred.refit()
                fitted_at = s.S[k]
                refits += 1
            tc, td = pred.predict(k)
            stall = s._stall(tc, td, s.x_pred[:, k])
            stall = np.where(allowed, stall, np.inf)
            choice[k] = _pick(stall)
            pred_tc_all[:, k], pred_td_all[:, k], pred_stall_all[:, k] = tc, td, stall
            pred.observe(k, choice[k])
    sel = choice[None]
    take = lambda arr: np.take_along_axis(arr, sel, 0)[0]  # noqa: E731
    tc, td, x = take(s.tc_act), take(s.td_act), take(s.x_act)
    stall = take(s.stall_act)
    pred_tc, pred_td, pred_stall = take(pred_tc_all), take(pred_td_all), take(pred_stall_all)
    nbytes = take(s.bytes_act)
    swap = tc + td + 2 * x
    per_it = {
        "swap_seconds": swap.sum(axis=1),
        "stall_seconds": stall.sum(axis=1),
        "link_bytes": 2 * nbytes.sum(axis=1),
    }
    compute = float(s.cf[: T + 1].sum() + s.cb[: T + 1].sum())
    arrays = {
        "tc": tc,
        "td": td,
        "x": x,
        "stall": stall,
        "bytes": nbytes,
        "pred_tc": pred_tc,
        "pred_td": pred_td,
        "pred_stall": pred_stall,
    }
    reasons = _reasons(s, policy, choice, pred_stall_all, allowed)
    return SimResult(
        policy=policy.name,
        trace=s.trace,
        profile=s.profile,
        options=tuple(s.options),
        choice=choice,
        swap_seconds=float(per_it["swap_seconds"].mean()),
        stall_seconds=float(per_it["stall_seconds"].mean()),
        link_bytes=float(per_it["link_bytes"].mean()),
        compute_seconds=compute,
        warmup_stall_seconds=warm_stall,
        refits=refits,
        per_iteration=per_it,
        _arrays=arrays,
        _reasons=reasons,
        _cf=s.cf,
        _cb=s.cb,
    )


class _LazyReasons:
    """Reason strings built only when someone reads them (keeps simulate fast)."""

    def __init__(self, fn) -> None:
        self._fn = fn
        self._cache: np.ndarray | None = None

    def __getitem__(self, key):
        if self._cache is None:
            self._cache = self._fn()
        return self._cache[key]


def _reasons(s: _Setup, policy: Policy, choice, pred_stall, allowed):
    def build() -> np.ndarray:
        K, T = choice.shape
        out = np.empty((K, T), dtype=object)
        for k in range(K):
            for t in range(T):
                o = int(choice[k, t])
                name = s.options[o]
                if policy.kind == "vdnn":
                    out[k, t] = "vdnn swaps every tensor raw"
                elif policy.kind == "always":
                    out[k, t] = (
                        f"always {name}"
                        if o
                        else f"{policy.codec} not applicable to this tensor; sent raw"
                    )
                else:
                    basis = "predicted" if policy.kind == "cswap" else "true"
                    st = pred_stall[:, k, t] if policy.kind == "cswap" else s.stall_act[:, k, t]
                    st = np.where(allowed[:, t], st, np.inf)
                    raw = st[0]
                    if o == 0:
                        alt = np.argsort(st)[1] if np.isfinite(st).sum() > 1 else 0
                        if raw == 0:
                            out[k, t] = (
                                "copy hidden under compute; a codec would only add kernel time"
                            )
                        elif alt:
                            out[k, t] = (
                                f"raw: {basis} stall {raw * 1e3:.3f} ms beats "
                                f"{s.options[alt]} {st[alt] * 1e3:.3f} ms"
                            )
                        else:
                            out[k, t] = "no codec applicable"
                    else:
                        out[k, t] = (
                            f"{name}: {basis} stall {st[o] * 1e3:.3f} ms vs raw "
                            f"{raw * 1e3:.3f} ms, ratio {s.raw[t] / s.bytes_pred[o, k, t]:.2f}x"
                        )
        return out

    return _LazyReasons(build)


def simulate_many(
    trace: Trace,
    profile: DeviceProfile | str,
    policies: Iterable[str | Policy] | None = None,
    *,
    noise: float = 0.05,
    seed: int = 0,
    warmup: int = 2,
    drift_threshold: float = 0.02,
) -> dict[str, SimResult]:
    """Simulate several policies on one trace and profile, sharing the set-up work.

    Parameters
    ----------
    trace : Trace
    profile : DeviceProfile or str
    policies : iterable of str or Policy, optional
        Defaults to :func:`default_policies`.
    noise, seed, warmup, drift_threshold
        See :func:`simulate`.

    Returns
    -------
    dict of str to SimResult
        Keyed by canonical policy name, in the given order.

    Raises
    ------
    SwapError
        For an unknown policy, profile or codec, or a bad trace.
    """
    prof = get_profile(profile)
    pols = [parse_policy(p) for p in (default_policies(prof) if policies is None else policies)]
    if not pols:
        raise SwapError("no policies to simulate")
    if not isinstance(warmup, int) or warmup < 1:
        raise SwapError(f"warmup must be an integer >= 1, got {warmup!r}")
    setup = _Setup(trace, prof, noise, seed)
    return {p.name: _run(setup, p, warmup, drift_threshold) for p in pols}


def simulate(
    trace: Trace,
    profile: DeviceProfile | str,
    policy: str | Policy = "cswap",
    *,
    noise: float = 0.05,
    seed: int = 0,
    warmup: int = 2,
    drift_threshold: float = 0.02,
) -> SimResult:
    """Simulate one training step (each iteration of ``trace``) under a policy.

    Parameters
    ----------
    trace : Trace
    profile : DeviceProfile or str
        A profile or a built-in profile name.
    policy : str or Policy
        ``"vdnn"``, ``"always:<codec>"``, ``"cswap"``, ``"cswap+lossy"``,
        ``"oracle"`` or ``"oracle+lossy"``.
    noise : float
        Sigma of the lognormal factor between the profile's kernel model and
        the "true" kernel time; 0 makes them equal.
    seed : int
        Seed of that noise.
    warmup : int
        cswap's exploration iterations (replaying the first iteration) used
        to fit its predictors; their stall is reported apart.
    drift_threshold : float
        cswap refits when the mean absolute sparsity change since its last
        fit exceeds this.

    Returns
    -------
    SimResult

    Raises
    ------
    SwapError
        For an unknown policy, profile or codec, or a bad trace.

    Examples
    --------
    >>> from pcr_explore.swap import vgg16_trace
    >>> r = simulate(vgg16_trace(batch=8), "v100-pcie3", "vdnn")
    >>> r.stall_seconds >= 0
    True
    """
    return next(
        iter(
            simulate_many(
                trace,
                profile,
                [policy],
                noise=noise,
                seed=seed,
                warmup=warmup,
                drift_threshold=drift_threshold,
            ).values()
        )
    )
