"""Step simulator: per-tensor swap decisions under a policy, their stall and swap time.

Timing model (vDNN style, consistent with the released CSWAP code; the papers
are cited in :mod:`pcr_explore.swap`):

* Forward: tensor ``i`` (output of op ``i``, input of op ``i + 1``) is
  compressed on the compute stream (critical path), then copied to the host
  on a copy stream while op ``i + 1`` computes; op ``i + 2`` may not start
  before that copy ends. ``stall_out = t_compress + max(0, t_copy - t_op(i+1))``.
* Backward: tensor ``i`` is prefetched while op ``i + 2`` runs its backward
  and decompressed on the compute stream before op ``i + 1``'s backward
  needs it. ``stall_in = t_decompress + max(0, t_copy - t_bwd(i+2))``; the
  last tensor, needed first, overlaps nothing.

Policies are described in :mod:`pcr_explore.swap.simulator.policies`. "True" codec
times are the profile's kernel model times a seeded lognormal factor
(``noise``), standing in for run-to-run variation that no predictor sees;
cswap's predictor (:mod:`pcr_explore.swap.model.predictor`) never reads the
profile's coefficients.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, cast

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..codecs import get_codec
from ..model.predictor import KernelTimePredictor
from ..model.profiles import DeviceProfile, get_profile
from ..traces import Trace
from .applicability import applies
from .policies import Policy, default_policies, loses_values, parse_policy
from .results import SimResult, explain

__all__ = ["simulate", "simulate_many"]

RAW = "raw"

#: The most iterations x tensors a simulation takes: its arrays hold a few
#: float64 values per pair, codec and policy (about 2 KiB a pair).
MAX_CELLS = 1 << 17


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
        if T * K > MAX_CELLS:
            raise SwapError(
                f"trace {trace.name!r}: {K} iterations x {T} tensors; the simulator takes "
                f"at most {MAX_CELLS} of them"
            )
        self.T, self.K = T, K
        self.n = np.array([r.n for r in recs], dtype=np.int64)
        self.itemsize = np.array([r.itemsize for r in recs], dtype=np.int64)
        self.raw = self.n * self.itemsize
        self.S = trace.sparsity
        self.nnz = np.rint(self.n * (1.0 - self.S)).astype(np.int64)
        self.options = [RAW, *profile.codecs]
        n_opt = len(self.options)
        self.lossy = np.array([o != RAW and loses_values(o) for o in self.options])

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
            for t, r in enumerate(recs):
                dims = r.shape if codec.shape_dependent else None
                self.bytes_pred[o, :, t] = codec._size(self.n[t], self.nnz[:, t], r.itemsize, dims)
                # sizes measured on the real tensor (first iteration) scale the analytic ones
                measured, first = (r.measured_bytes or {}).get(name), self.bytes_pred[o, 0, t]
                corr = measured / first if measured is not None and first > 0 else 1.0
                self.bytes_act[o, :, t] = self.bytes_pred[o, :, t] * corr
            cost = profile.codecs[name]
            self.tc_nom[o] = cost.compress.time(self.n * w, self.nnz * w)
            self.td_nom[o] = cost.decompress.time(self.n * w, self.nnz * w)
            self.applicable[o] = [applies(name, r) for r in recs]
        rng = np.random.default_rng(seed)
        jc = np.exp(rng.normal(0.0, noise, size=shape)) if noise else 1.0
        jd = np.exp(rng.normal(0.0, noise, size=shape)) if noise else 1.0
        self.tc_act = self.tc_nom * jc
        self.td_act = self.td_nom * jd
        self.x_act = np.asarray(profile.transfer_time(self.bytes_act), dtype=float)
        self.x_pred = np.asarray(profile.transfer_time(self.bytes_pred), dtype=float)
        self.stall_act = self.stall(self.tc_act, self.td_act, self.x_act)
        self.stall_nom = self.stall(self.tc_nom, self.td_nom, self.x_pred)
        self.stall_act[~np.broadcast_to(self.applicable[:, None, :], shape)] = np.inf

    def stall(self, tc: np.ndarray, td: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Stall per option, iteration and tensor for these kernel and copy times."""
        return tc + np.maximum(0.0, x - self.ov_out) + td + np.maximum(0.0, x - self.ov_in)

    def candidates(self, policy: Policy) -> np.ndarray:
        """The options *policy* may pick; a codec it names must have a kernel cost."""
        searches = policy.kind in ("cswap", "oracle")
        named = [policy.codec] if policy.codec else []  # always:<codec>'s
        chosen = policy.choices(self.profile) if searches else named
        missing = [c for c in chosen if c not in self.options]
        if missing:
            raise SwapError(
                f"profile {self.profile.name!r} has no kernel cost for {', '.join(missing)}; "
                f"it has: {', '.join(self.options[1:])}"
            )
        if not searches:
            return ~self.lossy | policy.lossy
        return np.array([o == RAW or o in chosen for o in self.options])


class _Choices(NamedTuple):
    """What a policy chose per iteration and tensor, and the costs it chose by."""

    choice: np.ndarray  # (K, T) option index
    pred_tc: np.ndarray  # (options, K, T) the kernel and stall times it predicted
    pred_td: np.ndarray
    pred_stall: np.ndarray
    warm_stall: float = 0.0  # stall of the exploration iterations before the first fit
    refits: int = 0


def _run(setup: _Setup, policy: Policy, warmup: int, drift_threshold: float) -> SimResult:
    cand = setup.candidates(policy)
    allowed = setup.applicable & cand[:, None]
    if policy.kind in ("vdnn", "always", "oracle"):
        made = _Choices(
            _fixed_choice(setup, policy, allowed), setup.tc_nom, setup.td_nom, setup.stall_nom
        )
    else:
        made = _cswap_choices(setup, cand, allowed, warmup, drift_threshold)
    return _result(setup, policy, allowed, made)


def _fixed_choice(s: _Setup, policy: Policy, allowed: np.ndarray) -> np.ndarray:
    """The choices of vDNN (always raw), of one codec where it applies, or of the oracle."""
    choice = np.zeros((s.K, s.T), dtype=np.int64)
    if policy.kind == "always":
        o = s.options.index(cast(str, policy.codec))  # candidates() found it there
        choice[:] = np.where(s.applicable[o], o, 0)
    elif policy.kind == "oracle":
        # argmin over the options: ties go to the lowest index, raw
        choice[:] = np.argmin(np.where(allowed[:, None, :], s.stall_act, np.inf), axis=0)
    return choice


def _cswap_choices(
    s: _Setup, cand: np.ndarray, allowed: np.ndarray, warmup: int, drift_threshold: float
) -> _Choices:
    """CSWAP: explore for *warmup* iterations, then pick by predicted stall, refitting on drift."""
    n_opt, K, T = len(s.options), s.K, s.T
    w = s.itemsize / 4.0
    pred = KernelTimePredictor(n_opt, s.n * w, s.nnz * w)
    codecs = [o for o in range(1, n_opt) if cand[o]]
    warm_stall = 0.0
    for it in range(warmup):
        # exploration: each tensor tries one applicable codec, round-robin
        explore = np.zeros(T, dtype=np.int64)
        for t in range(T):
            usable = [o for o in codecs if s.applicable[o, t]]
            if usable:
                explore[t] = usable[(t + it) % len(usable)]
        warm_stall += float(np.take_along_axis(s.stall_act[:, 0], explore[None], 0).sum())
        pred.observe(0, explore, s.tc_act[:, 0], s.td_act[:, 0])
    pred.refit()
    fitted_at = s.S[0]
    refits = 0
    choice = np.zeros((K, T), dtype=np.int64)
    pred_tc, pred_td, pred_stall = (np.empty((n_opt, K, T)) for _ in range(3))
    for k in range(K):
        if k and float(np.mean(np.abs(s.S[k] - fitted_at))) > drift_threshold:
            pred.refit()
            fitted_at = s.S[k]
            refits += 1
        tc, td = pred.predict(k)
        stall = np.where(allowed, s.stall(tc, td, s.x_pred[:, k]), np.inf)
        choice[k] = np.argmin(stall, axis=0)  # ties go to raw, as the oracle's
        pred_tc[:, k], pred_td[:, k], pred_stall[:, k] = tc, td, stall
        pred.observe(k, choice[k], s.tc_act[:, k], s.td_act[:, k])
    return _Choices(choice, pred_tc, pred_td, pred_stall, warm_stall, refits)


def _result(s: _Setup, policy: Policy, allowed: np.ndarray, made: _Choices) -> SimResult:
    """The actual costs of the choices made, per iteration and on average."""
    choice, T = made.choice, s.T

    def take(arr: np.ndarray) -> np.ndarray:
        return np.take_along_axis(arr, choice[None], 0)[0]

    tc, td, x = take(s.tc_act), take(s.td_act), take(s.x_act)
    stall, nbytes = take(s.stall_act), take(s.bytes_act)
    per_it = {
        "swap_seconds": (tc + td + 2 * x).sum(axis=1),
        "stall_seconds": stall.sum(axis=1),
        "link_bytes": 2 * nbytes.sum(axis=1),
    }
    arrays = {  # keyed by the Decision fields they fill
        "bytes": nbytes,
        "predicted_compress": take(made.pred_tc),
        "predicted_decompress": take(made.pred_td),
        "actual_compress": tc,
        "actual_decompress": td,
        "transfer_out": x,
        "transfer_in": x,
        "predicted_stall": take(made.pred_stall),
        "actual_stall": stall,
    }
    basis = made.pred_stall if policy.kind == "cswap" else s.stall_act
    why = explain(policy.kind, policy.codec, s.options, choice, basis, allowed, s.raw, s.bytes_pred)
    return SimResult(
        policy=policy.name,
        trace=s.trace,
        profile=s.profile,
        options=tuple(s.options),
        choice=choice,
        swap_seconds=float(per_it["swap_seconds"].mean()),
        stall_seconds=float(per_it["stall_seconds"].mean()),
        link_bytes=float(per_it["link_bytes"].mean()),
        compute_seconds=float(s.cf[: T + 1].sum() + s.cb[: T + 1].sum()),
        warmup_stall_seconds=made.warm_stall,
        refits=made.refits,
        per_iteration=per_it,
        _arrays=arrays,
        _explain=why,
        _cf=s.cf,
        _cb=s.cb,
    )


@public("pcr_explore.swap")
def simulate_many(
    trace: Trace,
    *,
    profile: DeviceProfile | str,
    policies: Iterable[str | Policy] | None = None,
    noise: float = 0.05,
    seed: int = 0,
    warmup: int = 2,
    drift_threshold: float = 0.02,
) -> dict[str, SimResult]:
    """Simulate several policies on one trace and profile, sharing the set-up work.

    Parameters
    ----------
    trace : Trace
        The tensors a step swaps.
    profile : DeviceProfile or str
        A profile or a built-in profile name.
    policies : iterable of str or Policy, optional
        Defaults to :func:`~pcr_explore.swap.simulator.policies.default_policies`.
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

    Examples
    --------
    >>> from pcr_explore.swap import builtin_trace
    >>> res = simulate_many(builtin_trace("vgg16", batch=8), profile="v100-pcie3",
    ...                     policies=["vdnn", "oracle"])
    >>> res["oracle"].stall_seconds <= res["vdnn"].stall_seconds
    True
    """
    prof = get_profile(profile)
    pols = [parse_policy(p) for p in (default_policies(prof) if policies is None else policies)]
    if not pols:
        raise SwapError("no policies to simulate")
    if not isinstance(warmup, int) or warmup < 1:
        raise SwapError(f"warmup must be an integer >= 1, got {warmup!r}")
    setup = _Setup(trace, prof, noise, seed)
    return {p.name: _run(setup, p, warmup, drift_threshold) for p in pols}


@public("pcr_explore.swap")
def simulate(
    trace: Trace,
    *,
    profile: DeviceProfile | str,
    policy: str | Policy = "cswap",
    noise: float = 0.05,
    seed: int = 0,
    warmup: int = 2,
    drift_threshold: float = 0.02,
) -> SimResult:
    """Simulate one training step (each iteration of ``trace``) under a policy.

    Parameters
    ----------
    trace : Trace
        The tensors a step swaps, with their sparsity per iteration.
    profile : DeviceProfile or str
        A profile or a built-in profile name.
    policy : str or Policy
        ``"vdnn"``, ``"always:<codec>"``, ``"cswap"`` (raw or ZVC, CSWAP's
        set), ``"cswap+lossy"`` (ZVC and ZFP, CSwap+), ``"cswap-all"``
        (every lossless codec of the profile), ``"cswap:<codecs>"``, and the
        oracle of each (``"oracle"``, ``"oracle-all"``, ...).
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
        Totals, per-tensor decisions and the timeline.

    Raises
    ------
    SwapError
        For an unknown policy, profile or codec, or a bad trace.

    Examples
    --------
    >>> from pcr_explore.swap import builtin_trace
    >>> r = simulate(builtin_trace("vgg16", batch=8), profile="v100-pcie3", policy="always:zvc",
    ...              noise=0.0)
    >>> r.summary()["codec_counts"], round(r.link_bytes / (2 * r.trace.total_bytes), 3)
    ({'zvc': 21}, 0.392)
    """
    (result,) = simulate_many(
        trace,
        profile=profile,
        policies=[policy],
        noise=noise,
        seed=seed,
        warmup=warmup,
        drift_threshold=drift_threshold,
    ).values()
    return result
