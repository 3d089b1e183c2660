"""Grade codec-time predictors on measured times, against the oracle of measured times.

The simulator's cswap fits its predictor to times the same cost model made,
so it cannot miss by much. Here the times are measured: every real tensor
(captured from training) is encoded and decoded with each codec on this
machine (:func:`measure_times`). :func:`evaluate_predictors` fits each
predictor family on the tensors of half of the layers and, on the other
half, decides per tensor between raw and the codecs by predicted stall; the
oracle decides by measured stall. The gap between the measured stall of the
two sets of decisions is the predictor's cost.

The decision model is CSWAP's with the codec on the critical path and no
compute to hide the copy behind: ``stall = t_encode + t_decode + 2 *
(latency + bytes / link)``; sizes are exact (from the non-zero count), only
the times are predicted. The codecs run on this machine's CPU, so the link
speeds that make the decision interesting are those of host-side offload
(NVMe, network), not PCIe to a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._json import json_safe
from ...errors import SwapError
from ..codecs import get_codec, measure
from .calibration import _counts, fit_kernel_cost

__all__ = [
    "FAMILIES",
    "MeasuredTimes",
    "PredictorEvaluation",
    "measure_times",
    "evaluate_predictors",
]

#: Predictor families: CSWAP's linear form fitted by non-negative least
#: squares, a power law in log space, and k nearest neighbours.
FAMILIES: tuple[str, ...] = ("linear-nnls", "power-law", "knn")


@dataclass(frozen=True, eq=False)
class MeasuredTimes:
    """Encode/decode times and encoded sizes of real tensors, per codec.

    Attributes
    ----------
    codecs : tuple of str
    groups : tuple of str
        Per tensor, the layer it came from (held out together).
    n, nnz : ndarray
        Elements and non-zeros, in float32 equivalents.
    raw_bytes : ndarray
    bytes, encode_s, decode_s : ndarray, shape (codecs, tensors)
    """

    codecs: tuple[str, ...]
    groups: tuple[str, ...]
    n: np.ndarray
    nnz: np.ndarray
    raw_bytes: np.ndarray
    bytes: np.ndarray
    encode_s: np.ndarray
    decode_s: np.ndarray


def measure_times(
    tensors: Sequence[np.ndarray],
    groups: Sequence[str],
    codecs: Sequence[str] = ("zvc",),
    *,
    repeats: int = 3,
) -> MeasuredTimes:
    """Encode and decode each tensor with each codec on this machine (best of *repeats*).

    Parameters
    ----------
    tensors : sequence of ndarray
        Real activations (e.g. ``capture_training(..., keep_tensors=True).tensors``).
    groups : sequence of str
        The layer of each tensor; a layer's tensors are fitted or held out together.
    codecs : sequence of str
    repeats : int

    Returns
    -------
    MeasuredTimes

    Raises
    ------
    SwapError
        If the lengths differ, nothing is given, or a codec is unknown.

    Examples
    --------
    >>> x = np.maximum(np.random.default_rng(0).normal(size=(4, 8, 16, 16)), 0).astype("float32")
    >>> m = measure_times([x, x[:2]], ["a", "b"], ["zvc"], repeats=1)
    >>> m.bytes.shape, bool(np.all(m.encode_s > 0))
    ((1, 2), True)
    """
    if not tensors or len(tensors) != len(groups):
        raise SwapError("measure_times needs one group label per tensor, and some tensors")
    cs = [get_codec(c) for c in codecs]
    counts = np.array([_counts(np.asarray(t)) for t in tensors])
    shape = (len(cs), len(tensors))
    nbytes, enc, dec = np.empty(shape), np.empty(shape), np.empty(shape)
    for i, c in enumerate(cs):
        for j, t in enumerate(tensors):
            m = measure(c, t, repeats=repeats)
            nbytes[i, j], enc[i, j], dec[i, j] = m.encoded_bytes, m.encode_seconds, m.decode_seconds
    raw = np.array([np.asarray(t).nbytes for t in tensors], dtype=float)
    n, nnz = counts.T
    names = tuple(c.name for c in cs)
    return MeasuredTimes(names, tuple(map(str, groups)), n, nnz, raw, nbytes, enc, dec)


Predictor = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _power_law(n: np.ndarray, nnz: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(n), np.log(n + 1), np.log(nnz + 1)])


def _knn_features(n: np.ndarray, nnz: np.ndarray) -> np.ndarray:
    return np.column_stack([np.log(n + 1), nnz / np.maximum(n, 1)])


def _fit(family: str, n: np.ndarray, nnz: np.ndarray, y: np.ndarray) -> Predictor:
    """Seconds for new ``(n, nnz)``, as *family* fitted to seconds *y* at *n*, *nnz* predicts."""
    if family == "linear-nnls":
        cost = fit_kernel_cost(n, nnz, y)
        return lambda n2, nnz2: np.asarray(cost.time(n2, nnz2), dtype=float)
    logy = np.log(np.maximum(y, 1e-9))
    if family == "power-law":
        coef, *_ = np.linalg.lstsq(_power_law(n, nnz), logy, rcond=None)
        return lambda n2, nnz2: np.exp(_power_law(n2, nnz2) @ coef)
    if family != "knn":
        raise SwapError(f"unknown predictor family {family!r}; choose from {', '.join(FAMILIES)}")
    x = _knn_features(n, nnz)
    scale = x.std(axis=0) + 1e-12

    def knn(n2: np.ndarray, nnz2: np.ndarray) -> np.ndarray:
        d = np.linalg.norm((_knn_features(n2, nnz2) / scale)[:, None] - (x / scale)[None], axis=2)
        return np.exp(logy[np.argsort(d, axis=1)[:, : min(3, len(x))]].mean(axis=1))

    return knn


@dataclass(frozen=True, eq=False)
class PredictorEvaluation:
    """How far each predictor family's decisions land from the measured-time oracle.

    Attributes
    ----------
    rows : list of dict
        Per family, codec set and link speed: ``gap`` (measured stall of the
        predicted decisions over the oracle's, minus 1), ``agreement``
        (share of tensors decided as the oracle did), the three stalls
        (predicted decisions, oracle, all raw) in seconds, and the tensor
        counts.
    errors : dict
        Per family and codec, the median relative error of the predicted
        encode and decode times on the held-out tensors.
    fit_groups, heldout_groups : tuple of str
    """

    rows: list[dict[str, Any]]
    errors: dict[str, dict[str, dict[str, float]]]
    fit_groups: tuple[str, ...]
    heldout_groups: tuple[str, ...]

    def gap(self, family: str) -> float:
        """Measured stall of *family*'s decisions over the oracle's, over all rows, minus 1."""
        rows = [r for r in self.rows if r["family"] == family]
        o = sum(r["oracle_stall_s"] for r in rows)
        return sum(r["predicted_stall_s"] for r in rows) / o - 1 if o else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return everything as JSON-ready data, marked as measured on this machine.

        Returns
        -------
        dict
        """
        fams = sorted({r["family"] for r in self.rows})
        return json_safe(
            {
                "measured": "codec times measured on this machine's CPU",
                "decision_model": "stall = t_encode + t_decode + 2 * (latency + bytes / link)",
                "fit_groups": list(self.fit_groups),
                "heldout_groups": list(self.heldout_groups),
                "gap": {f: self.gap(f) for f in fams},
                "errors": self.errors,
                "rows": self.rows,
            }
        )

    def to_text(self) -> str:
        """Format one line per family, codec set and link (measured times).

        Returns
        -------
        str
        """
        lines = [
            f"predictors vs oracle on measured CPU codec times: fitted on "
            f"{len(self.fit_groups)} layers, decided on {len(self.heldout_groups)} held-out layers",
            f"{'family':<13}{'codecs':<10}{'link GB/s':>10}{'gap':>8}{'agree':>7}"
            f"{'pred ms':>9}{'oracle ms':>10}{'raw ms':>9}",
        ]
        for r in self.rows:
            lines.append(
                f"{r['family']:<13}{'+'.join(r['codecs']):<10}{r['link_gbps']:>10g}"
                f"{r['gap']:>8.1%}{r['agreement']:>7.0%}{r['predicted_stall_s'] * 1e3:>9.2f}"
                f"{r['oracle_stall_s'] * 1e3:>10.2f}{r['raw_stall_s'] * 1e3:>9.2f}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(self.to_text())}</pre>"


def _split(groups: Sequence[str], holdout: float, seed: int) -> tuple[list[str], list[str]]:
    names = sorted(set(groups))
    if len(names) < 2:
        raise SwapError("need tensors from at least two layers to hold some out")
    perm = np.random.default_rng(seed).permutation(len(names))
    k = min(len(names) - 1, max(1, int(round(holdout * len(names)))))
    held = sorted(names[i] for i in perm[:k])
    return [g for g in names if g not in held], held


def evaluate_predictors(
    times: MeasuredTimes,
    *,
    codec_sets: Sequence[Sequence[str]] | None = None,
    families: Sequence[str] = FAMILIES,
    link_gbps: Sequence[float] = (0.5, 1.0, 2.0, 4.0, 8.0),
    latency_s: float = 10e-6,
    holdout: float = 0.5,
    seed: int = 0,
) -> PredictorEvaluation:
    """Fit each family on some layers' measured times; grade its decisions on the others.

    Parameters
    ----------
    times : MeasuredTimes
        From :func:`measure_times`.
    codec_sets : sequence of sequence of str, optional
        Codecs each decision chooses among besides raw; default each codec
        alone and, when there are several, all of them (``("zvc",)`` is
        CSWAP's set, ``("zvc", "zfp")`` CSwap+'s).
    families : sequence of str
        Of :data:`FAMILIES`.
    link_gbps : sequence of float
        Link speeds (GB/s, one direction) to decide for.
    latency_s : float
        Fixed cost per copy.
    holdout : float
        Share of the layers held out.
    seed : int
        Seed of the layer split.

    Returns
    -------
    PredictorEvaluation

    Raises
    ------
    SwapError
        For fewer than two layers, an unknown family, or a codec not timed.

    Examples
    --------
    >>> n = np.array([1e4, 1e5, 1e6, 2e4, 2e5, 2e6])
    >>> nnz = n / 2
    >>> t = MeasuredTimes(("zvc",), ("a", "a", "a", "b", "b", "b"), n, nnz, 4 * n,
    ...                   (2 * n + 4096)[None], (1e-6 + 1e-9 * n)[None], (1e-6 + 1e-9 * n)[None])
    >>> ev = evaluate_predictors(t, families=["linear-nnls"], link_gbps=[1.0])
    >>> round(ev.gap("linear-nnls"), 9), ev.rows[0]["agreement"]
    (0.0, 1.0)
    """
    names = list(times.codecs)
    sets: list[tuple[str, ...]] = (
        [tuple(s) for s in codec_sets] if codec_sets is not None else [(c,) for c in names]
    )
    if codec_sets is None and len(names) > 1:
        sets.append(tuple(names))
    missing = sorted({c for s in sets for c in s} - set(names))
    if missing:
        raise SwapError(f"codecs {missing} were not timed; timed: {names}")
    fit_g, held_g = _split(times.groups, holdout, seed)
    groups = np.array(times.groups)
    fit, held = np.isin(groups, fit_g), np.isin(groups, held_g)
    n, nnz = times.n, times.nnz
    rows: list[dict[str, Any]] = []
    errors: dict[str, dict[str, dict[str, float]]] = {}
    for fam in families:
        kernels = np.zeros((len(names), int(held.sum())))  # predicted encode + decode seconds
        errors[fam] = {c: {} for c in names}
        for i, c in enumerate(names):
            for side, seconds in (("encode", times.encode_s[i]), ("decode", times.decode_s[i])):
                p = _fit(fam, n[fit], nnz[fit], seconds[fit])(n[held], nnz[held])
                kernels[i] += p
                errors[fam][c][side] = float(np.median(np.abs(p / seconds[held] - 1)))
        for s in sets:
            idx = [names.index(c) for c in s]
            copied = np.vstack([times.raw_bytes[held], times.bytes[idx][:, held]])
            measured = (times.encode_s + times.decode_s)[idx][:, held]
            for gbps in link_gbps:
                copy = 2 * (latency_s + copied / (gbps * 1e9))
                meas = copy + np.vstack([np.zeros(copy.shape[1]), measured])
                pred = copy + np.vstack([np.zeros(copy.shape[1]), kernels[idx]])
                choice, best = np.argmin(pred, axis=0), np.argmin(meas, axis=0)
                cols = np.arange(meas.shape[1])
                got, opt = meas[choice, cols].sum(), meas[best, cols].sum()
                rows.append(
                    {
                        "family": fam,
                        "codecs": list(s),
                        "link_gbps": float(gbps),
                        "gap": float(got / opt - 1) if opt else 0.0,
                        "agreement": float(np.mean(choice == best)),
                        "predicted_stall_s": float(got),
                        "oracle_stall_s": float(opt),
                        "raw_stall_s": float(copy[0].sum()),
                        "compressed_by_oracle": int(np.sum(best > 0)),
                        "tensors_fit": int(fit.sum()),
                        "tensors_heldout": int(held.sum()),
                    }
                )
    return PredictorEvaluation(rows, errors, tuple(fit_g), tuple(held_g))
