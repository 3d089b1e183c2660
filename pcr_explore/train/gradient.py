"""Choose the scan level by gradient similarity, the PCR paper's task-aware criterion.

At the model's current weights, for a few batches of training images, the
loss gradient computed on level-*k* images is compared with the gradient on
the same images at full quality (cosine similarity of the flattened
gradients). The lowest *k* whose mean similarity reaches the threshold is
chosen. Unlike the MS-SSIM tuner, this sees the model, the labels and the
training resolution.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._public import public
from ..errors import DatasetError
from ..jpeg import EOI, decode
from ..read.sources import LevelSource, open_source
from ._torch import require_torch
from .loop import stack_images, to_input

__all__ = ["GradientTuneResult", "mean_interval", "tune_by_gradient"]


@public("pcr_explore.train")
@dataclass(frozen=True)
class GradientTuneResult:
    """The scan level whose gradients agree with full quality's.

    Attributes
    ----------
    scan : int
        The lowest level in ``scans`` whose mean similarity reaches
        ``threshold``; the full level when none does (see ``met``).
    threshold : float
    scans : tuple of int
        Levels compared.
    similarity : dict of int to float
        Mean cosine similarity over the batches, per scan.
    similarity_std : dict of int to float
        Standard deviation over the batches, per scan.
    per_batch : dict of int to tuple of float
        Every batch's similarity, per scan.
    bytes_at : dict of int to int
        Bytes a full pass over the dataset reads at each scan (estimated from
        the sample where the source is not a PCR dataset).
    bytes_fraction : dict of int to float
        ``bytes_at`` as a fraction of the full level's.
    met : bool
        False when no compared level reached the threshold.
    num_scans : int
        Levels the dataset has.
    batches, batch_size, size : int
        The measurement: batches of images at *size* x *size* pixels.
    seconds : float
        Wall time of the whole measurement (reading, decoding, gradients).
    bytes_read : int
        Bytes the measurement read from storage (0 when not counted).
    similarity_ci : dict of int to (float, float)
        Student-t interval of the mean similarity, per scan.
    decided : bool
        True when every level's interval lies wholly above or below the
        threshold; False when the batch budget ran out first ("undecided").
    max_batches : int
        The batch budget (``batches`` is how many were used).
    confidence : float
        Level of the intervals.
    """

    scan: int
    threshold: float
    scans: tuple[int, ...]
    similarity: dict[int, float]
    similarity_std: dict[int, float]
    per_batch: dict[int, tuple[float, ...]]
    bytes_at: dict[int, int]
    bytes_fraction: dict[int, float]
    met: bool
    num_scans: int
    batches: int
    batch_size: int
    size: int
    seconds: float
    bytes_read: int
    similarity_ci: dict[int, tuple[float, float]] = field(default_factory=dict)
    decided: bool = True
    max_batches: int = 0
    confidence: float = 0.95

    def summary(self) -> str:
        """One line for a terminal."""
        sims = ", ".join(f"{k}: {self.similarity[k]:.3f}" for k in self.scans)
        verdict = "" if self.met else " (no level reached the threshold: full quality)"
        if not self.decided:
            verdict += " (undecided: an interval still straddles the threshold)"
        return (
            f"scan {self.scan} of {self.num_scans}{verdict}: gradient similarity {sims} "
            f"(threshold {self.threshold:g}, {self.batches} of at most "
            f"{self.max_batches or self.batches} batches of {self.batch_size} at "
            f"{self.size}px, {self.seconds:.1f} s); reads {self.bytes_fraction[self.scan]:.1%} "
            "of the bytes"
        )

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``scan``, ``similarity`` by scan, ``threshold``, ..."""
        return {
            "scan": self.scan,
            "similarity": {str(k): v for k, v in self.similarity.items()},
            "threshold": self.threshold,
            "similarity_std": {str(k): v for k, v in self.similarity_std.items()},
            "bytes_at": {str(k): v for k, v in self.bytes_at.items()},
            "bytes_fraction": {str(k): v for k, v in self.bytes_fraction.items()},
            "met": self.met,
            "batches": self.batches,
            "batch_size": self.batch_size,
            "size": self.size,
            "seconds": self.seconds,
            "bytes_read": self.bytes_read,
            "similarity_ci": {
                str(k): [float(x) if np.isfinite(x) else None for x in v]
                for k, v in self.similarity_ci.items()
            },
            "decided": self.decided,
            "max_batches": self.max_batches,
            "confidence": self.confidence,
        }

    def _repr_html_(self) -> str:
        bold = " style='font-weight:bold'"
        rows = "".join(
            f"<tr{bold if k == self.scan else ''}><td>{k}</td>"
            f"<td>{self.similarity[k]:.3f}</td><td>{_ci_text(self.similarity_ci.get(k))}</td>"
            f"<td>{self.bytes_fraction.get(k, float('nan')):.1%}</td></tr>"
            for k in self.scans
        )
        cap = html.escape(
            f"chosen: scan {self.scan}{'' if self.decided else ', undecided'} "
            f"(threshold {self.threshold:g}; {self.batches} batches "
            f"of {self.batch_size} at {self.size} px; {self.seconds:.1f} s)"
        )
        return (
            f"<table><caption>{cap}</caption><tr><th>scan</th><th>cosine similarity</th>"
            f"<th>{self.confidence:.0%} interval</th><th>of full bytes</th></tr>{rows}</table>"
        )


def _ci_text(ci: tuple[float, float] | None) -> str:
    if ci is None or not all(np.isfinite(ci)):
        return "-"
    return f"{ci[0]:.3f}..{ci[1]:.3f}"


def _flat_grad(
    torch: Any, model: Any, params: list[Any], x: Any, y: Any, loss_fn: Any, seed: int
) -> Any:
    # The same seed for every level: dropout and the like draw the same masks.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        loss = loss_fn(model(x), y)
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return torch.cat(
        [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]
    ).double()


def _cosine(a: Any, b: Any) -> float:
    na, nb = float(a.norm()), float(b.norm())
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return float(np.clip(float(a @ b) / (na * nb), -1.0, 1.0))


def _level_jpeg(full: bytes, level_bytes: np.ndarray, scan: int) -> bytes:
    """Level *scan* of an image cut from its full JPEG (pieces 1..scan, then EOI)."""
    return full[: int(level_bytes[scan - 1]) - len(EOI)] + EOI


@public("pcr_explore.train")
def default_levels(num_scans: int) -> tuple[int, ...]:
    """The levels compared when none are given.

    The paper's 1, 2, 5 and 10 for the standard script's 10 levels; for
    another script, 1, 2, the middle level and the full one.

    Examples
    --------
    >>> default_levels(10), default_levels(5), default_levels(9)
    ((1, 2, 5, 10), (1, 2, 3, 5), (1, 2, 5, 9))
    """
    if num_scans == 10:
        return (1, 2, 5, 10)
    return tuple(sorted({1, min(2, num_scans), (num_scans + 1) // 2, num_scans}))


def _check_scans(scans: Sequence[int], num_scans: int) -> tuple[int, ...]:
    out = tuple(sorted({int(k) for k in scans}))
    if not out or any(not 1 <= k <= num_scans for k in out):
        raise ValueError(f"scans must be levels in 1..{num_scans}, got {list(scans)}")
    return out


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of *values* (infinite from one value).

    Examples
    --------
    >>> mean_interval([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> lo, hi = mean_interval([0.7, 0.8, 0.9])
    >>> round(lo, 3), round(hi, 3)
    (0.552, 1.048)
    """
    v = np.asarray(values, np.float64)
    if len(v) < 2:
        return -np.inf, np.inf
    from scipy.stats import t

    half = float(t.ppf(0.5 + confidence / 2, len(v) - 1)) * float(v.std(ddof=1)) / np.sqrt(len(v))
    m = float(v.mean())
    return float(m - half), float(m + half)


def _clipped(ci: tuple[float, float]) -> tuple[float, float]:
    """A cosine's interval, within -1..1 (an unknown one, from one batch, stays infinite)."""
    if not np.isfinite(ci).all():
        return ci
    return max(-1.0, ci[0]), min(1.0, ci[1])


def _settled(sims: dict[int, list[float]], threshold: float, confidence: float) -> bool:
    """Whether every level's interval lies wholly above or wholly below the threshold."""
    for v in sims.values():
        lo, hi = mean_interval(v, confidence)
        if lo < threshold <= hi:
            return False
    return True


class _Probe:
    """Gradients of one model on batches of images at several levels; the model is left as found."""

    def __init__(
        self, torch: Any, model: Any, loss_fn: Any, size: int, workers: int, full: int
    ) -> None:
        self.torch, self.model, self.loss_fn = torch, model, loss_fn
        self.size, self.full = size, full
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.level_bytes: dict[int, int] = {}
        self.full_bytes = 0
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers))

    def __enter__(self) -> _Probe:
        self._saved = [b.detach().clone() for b in self.model.buffers()]
        self._was_training = self.model.training
        self.model.train()  # the gradients training would see (batch statistics)
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown()
        with self.torch.no_grad():
            for buf, old in zip(self.model.buffers(), self._saved):
                buf.copy_(old)
        self.model.train(self._was_training)

    def _pixels(self, datas: list[bytes]) -> list[np.ndarray]:
        s = self.size
        return list(self._pool.map(lambda d: decode(d, size=(s, s), mode="RGB"), datas))

    def _grad(self, arrays: list[np.ndarray], y: Any, seed: int) -> Any:
        x = to_input(stack_images(arrays, [0] * len(arrays))[0])
        return _flat_grad(self.torch, self.model, self.params, x, y, self.loss_fn, seed)

    def batch(
        self,
        src: LevelSource,
        idx: np.ndarray,
        labels: np.ndarray,
        levels: tuple[int, ...],
        seed: int,
    ) -> dict[int, float]:
        """Each level's gradient similarity to full quality on the images *idx*."""
        fulls = [src.jpeg_bytes(int(i), None) for i in idx]
        cum = [src.level_bytes(int(i)) for i in idx]
        self.full_bytes += sum(len(f) for f in fulls)
        y = self.torch.as_tensor(labels[idx], dtype=self.torch.int64)
        ref_arrays = self._pixels(fulls)
        ref = self._grad(ref_arrays, y, seed)
        out = {}
        for k in levels:
            self.level_bytes[k] = self.level_bytes.get(k, 0) + sum(int(c[k - 1]) for c in cum)
            if k >= self.full:
                out[k] = 1.0  # the same bytes: the same gradient
                continue
            arrays = self._pixels([_level_jpeg(f, c, k) for f, c in zip(fulls, cum)])
            if all(np.array_equal(a, r) for a, r in zip(arrays, ref_arrays)):
                out[k] = 1.0
                continue
            out[k] = _cosine(ref, self._grad(arrays, y, seed))
        return out


@public("pcr_explore.train")
def tune_by_gradient(
    source: LevelSource | str | os.PathLike[str],
    *,
    model: Any,
    scans: Sequence[int] | None = None,
    batches: int = 10,
    min_batches: int = 3,
    batch_size: int = 32,
    threshold: float = 0.8,
    confidence: float = 0.95,
    size: int = 64,
    seed: int = 0,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    workers: int = 2,
) -> GradientTuneResult:
    """The lowest scan whose loss gradients point where full quality's do.

    For random batches of labelled images, the gradient of the loss with
    respect to every trainable parameter is computed on the full-quality
    images and on the same images at each level in *scans*; the cosine
    similarity of the flattened gradients is averaged over batches. The tuner
    stops as soon as every level's interval lies wholly above or below the
    threshold (after at least *min_batches*), or when *batches* are spent;
    then ``decided`` says whether it knew. The model is left as it was:
    weights untouched, batch-norm statistics and train/eval mode restored.

    Parameters
    ----------
    source : LevelSource or path
        A PCR dataset (or a labelled folder of images).
    model : torch.nn.Module
        Any classifier taking normalised NCHW float images
        (:func:`~pcr_explore.train.to_input`).
    scans : sequence of int, optional
        Levels to compare (default :func:`default_levels`: the paper's 1, 2,
        5, 10 for the standard script).
    batches : int
        Batches at most (the budget).
    min_batches : int
        Batches at least (or *batches*, if fewer) before an interval is trusted.
    batch_size : int
        Images per batch.
    threshold : float
        Mean similarity a level must reach (the paper: 0.8).
    confidence : float
        Level of the Student-t intervals of the mean similarity.
    size : int
        Side of the square images the model sees (the training size).
    seed : int
        Seed of the image sample.
    loss_fn : callable, optional
        ``loss_fn(logits, labels)``; default cross-entropy.
    workers : int
        Decoding threads.

    Returns
    -------
    GradientTuneResult

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.
    DatasetError
        If the dataset has no labelled image.
    ValueError
        If *scans*, *batches*, *min_batches*, *batch_size* or *confidence*
        is out of range.

    Examples
    --------
    >>> from pcr_explore.train import small_cnn
    >>> r = tune_by_gradient("flowers/train.pcr", model=small_cnn(5), size=64)  # doctest: +SKIP
    >>> r.scan, r.similarity, r.batches, r.decided  # doctest: +SKIP
    (2, {1: 0.71, 2: 0.86, 5: 0.97, 10: 1.0}, 4, True)
    """
    torch = require_torch("tune_by_gradient")
    if batches < 1 or batch_size < 1 or min_batches < 1:
        raise ValueError(
            "batches, min_batches and batch_size must be at least 1, got "
            f"{batches}, {min_batches}, {batch_size}"
        )
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    src = source if isinstance(source, LevelSource) else open_source(source)
    full = src.num_scans
    levels = _check_scans(default_levels(full) if scans is None else scans, full)
    labels = np.asarray(src.labels)
    labelled = np.flatnonzero(labels >= 0)
    if not len(labelled):
        raise DatasetError(f"{getattr(src, 'url', src)}: no labelled image to compute a loss on")
    t0 = time.perf_counter()
    stats = getattr(src, "stats", None)
    before = stats.bytes_read if stats is not None else 0
    pick = np.random.default_rng(seed).permutation(labelled)[: batches * batch_size]
    groups = [pick[i : i + batch_size] for i in range(0, len(pick), batch_size)]
    loss = loss_fn or torch.nn.functional.cross_entropy
    sims: dict[int, list[float]] = {k: [] for k in levels}
    with _Probe(torch, model, loss, size, workers, full) as probe:
        for b, idx in enumerate(groups):
            for k, v in probe.batch(src, idx, labels, levels, seed + b).items():
                sims[k].append(v)
            if b + 1 >= min_batches and _settled(sims, threshold, confidence):
                break
    used = len(sims[levels[0]])
    mean = {k: float(np.mean(v)) for k, v in sims.items()}
    meets = [k for k in levels if mean[k] >= threshold]
    if hasattr(src, "bytes_at"):
        bytes_at = {k: int(src.bytes_at(k)) for k in levels} | {full: int(src.bytes_at(full))}
    else:  # estimate the whole folder from the images measured
        scale = len(src) / max(1, sum(len(g) for g in groups[:used]))
        bytes_at = {k: int(v * scale) for k, v in probe.level_bytes.items()}
        bytes_at[full] = int(probe.full_bytes * scale)
    return GradientTuneResult(
        scan=meets[0] if meets else full,
        threshold=float(threshold),
        scans=levels,
        similarity=mean,
        similarity_std={k: float(np.std(v)) for k, v in sims.items()},
        per_batch={k: tuple(v) for k, v in sims.items()},
        bytes_at=bytes_at,
        bytes_fraction={k: v / bytes_at[full] for k, v in bytes_at.items()},
        met=bool(meets),
        num_scans=full,
        batches=used,
        batch_size=batch_size,
        size=size,
        seconds=time.perf_counter() - t0,
        bytes_read=(stats.bytes_read - before) if stats is not None else 0,
        similarity_ci={k: _clipped(mean_interval(v, confidence)) for k, v in sims.items()},
        decided=_settled(sims, threshold, confidence),
        max_batches=len(groups),
        confidence=float(confidence),
    )
