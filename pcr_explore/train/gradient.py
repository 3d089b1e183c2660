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
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from .._checks import check_count, check_scan, check_scans
from .._json import json_safe
from .._public import public
from ..errors import DatasetError
from ..jpeg import EOI
from ..jpeg._decoders import carried
from ..jpeg._orient import decode_upright
from ..read.sources import LevelSource, open_source, orientation_of, source_name
from ._torch import require_torch
from .loop import stack_images, to_input

__all__ = ["GradientTuneResult", "StepTuner", "mean_interval", "tune_by_gradient"]


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
    passes : int
        Gradient computations (forward and backward passes) the measurement
        used, the ones taken from training steps included.
    passes_reused : int
        Of those, the gradients a training step had already computed at the
        level it trains (:class:`StepTuner`): passes the tuner did not run.
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
    passes: int = 0
    passes_reused: int = 0

    def summary(self) -> str:
        """One line for a terminal."""
        sims = ", ".join(f"{k}: {self.similarity[k]:.3f}" for k in self.scans)
        verdict = "" if self.met else " (no level reached the threshold: full quality)"
        if not self.decided:
            verdict += " (undecided: an interval still straddles the threshold)"
        reused = (
            f"; {self.passes_reused} of {self.passes} gradients taken from training steps"
            if self.passes_reused
            else ""
        )
        return (
            f"scan {self.scan} of {self.num_scans}{verdict}: gradient similarity {sims} "
            f"(threshold {self.threshold:g}, {self.batches} of at most "
            f"{self.max_batches or self.batches} batches of {self.batch_size} at "
            f"{self.size}px, {self.seconds:.1f} s); reads {self.bytes_fraction[self.scan]:.1%} "
            f"of the bytes{reused}"
        )

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``scan``, ``similarity`` by scan, ``threshold``, ...

        Keys are strings; a non-finite number (the interval of one batch) is None.
        """
        return json_safe({f.name: getattr(self, f.name) for f in fields(self)})

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
    torch: Any, model: Any, params: list[Any], x: Any, y: Any, loss_fn: Any, rng: int | Any
) -> Any:
    # The same random state for every level (a seed, or the state a training step
    # started from): dropout and the like draw the same masks.
    with torch.random.fork_rng(devices=[]):
        if isinstance(rng, int):
            torch.manual_seed(rng)
        else:
            torch.set_rng_state(rng)
        loss = loss_fn(model(x), y)
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return _flatten(torch, grads, params)


def _flatten(torch: Any, grads: Sequence[Any], params: list[Any]) -> Any:
    """One float64 vector of every parameter's gradient (zeros where there is none)."""
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
    intervals = (mean_interval(v, confidence) for v in sims.values())
    return not any(lo < threshold <= hi for lo, hi in intervals)


def _check_batches(batches: int, min_batches: int, batch_size: int, confidence: float) -> None:
    check_count(batches, "batches")
    check_count(min_batches, "min_batches")
    check_count(batch_size, "batch_size")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _bytes_read(src: LevelSource) -> int:
    """Bytes the source has read from storage so far (0 where it does not count them)."""
    return int(getattr(getattr(src, "stats", None), "bytes_read", 0))


def _labelled(src: LevelSource) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(src.labels)
    labelled = np.flatnonzero(labels >= 0)
    if not len(labelled):
        raise DatasetError(f"{getattr(src, 'url', src)}: no labelled image to compute a loss on")
    return labels, labelled


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
    >>> r = tune_by_gradient("train.pcr", model=small_cnn(3), size=64, batch_size=4)
    >>> r.batches, sorted(r.similarity)  # batches of 4 of its 10 images; levels compared
    (3, [1, 2, 5, 10])
    >>> r.similarity[r.scan] >= 0.8  # r.scan: the lowest level that reaches the threshold
    True
    """
    require_torch("tune_by_gradient")
    _check_batches(batches, min_batches, batch_size, confidence)
    src = source if isinstance(source, LevelSource) else open_source(source)
    _, labelled = _labelled(src)
    pick = np.random.default_rng(seed).permutation(labelled)[: batches * batch_size]
    groups = [pick[i : i + batch_size] for i in range(0, len(pick), batch_size)]
    tuner = StepTuner(
        src,
        model=model,
        trained=src.num_scans,
        scans=scans,
        batches=len(groups),
        min_batches=min_batches,
        threshold=threshold,
        confidence=confidence,
        size=size,
        loss_fn=loss_fn,
        workers=workers,
        reuse=False,
    )
    was_training = model.training
    model.train()  # the gradients training would see (batch statistics)
    try:
        with tuner:
            for b, idx in enumerate(groups):
                if tuner.done:
                    break
                tuner(idx, None, seed + b)
    finally:
        model.train(was_training)
    return replace(tuner.result(), batch_size=batch_size)


@public("pcr_explore.train")
class StepTuner:
    """The gradient tuner fed by training steps, reusing each step's own gradient.

    Passed as ``on_step`` to :func:`~pcr_explore.train.train_epoch`, it
    measures on the training batches themselves, at the weights each step
    computes its gradient at: after a step's backward pass (and before the
    optimiser moves the weights), the gradient the step left in the
    parameters is the gradient at the level being trained, so only the
    other levels (the full one and the candidates) cost a forward and
    backward pass each. The same flips and random state as the step's are
    used for every level. It stops, as :func:`tune_by_gradient` does, once
    every level's interval lies wholly above or below the threshold (after
    *min_batches*), or after *batches*.

    Parameters
    ----------
    source : LevelSource
        The dataset being trained on (the images the step's indices name).
    model : torch.nn.Module
        The model being trained.
    trained : int
        The level the training images are read at.
    scans : sequence of int, optional
        Levels to compare (default :func:`default_levels`).
    batches, min_batches : int
        The batch budget and the batches before an interval is trusted.
    start : int
        Training steps to let pass before measuring (so the tuner sees the
        latest weights of an epoch: its last *batches* steps).
    threshold, confidence, size, loss_fn, workers
        As for :func:`tune_by_gradient`; *size* and *loss_fn* must be the
        training's.
    reuse : bool
        Take the trained level's gradient from the step (True), or compute it
        again in a pass of its own (False: what it costs without the reuse).

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.
    ValueError
        If *trained* or *scans* is not a level of the dataset, or a count is
        out of range.

    Examples
    --------
    >>> import torch
    >>> from pcr_explore import open_dataset
    >>> from pcr_explore.train import read_level, small_cnn, train_epoch
    >>> train = open_dataset("train.pcr")
    >>> full = read_level(train, scan=10, size=64)
    >>> net = small_cnn(3)
    >>> opt = torch.optim.SGD(net.parameters(), lr=0.01)
    >>> g = torch.Generator().manual_seed(0)
    >>> with StepTuner(train, model=net, trained=10, size=64) as tuner:
    ...     loss = train_epoch(net, opt, full.images, full.labels, batch_size=4, generator=g,
    ...                        on_step=tuner)
    >>> tuner.result().batches, tuner.result().passes_reused  # 3 steps, each one's own gradient
    (3, 3)
    """

    def __init__(
        self,
        source: LevelSource,
        *,
        model: Any,
        trained: int,
        scans: Sequence[int] | None = None,
        batches: int = 10,
        min_batches: int = 3,
        start: int = 0,
        threshold: float = 0.8,
        confidence: float = 0.95,
        size: int = 64,
        loss_fn: Callable[[Any, Any], Any] | None = None,
        workers: int = 2,
        reuse: bool = True,
    ) -> None:
        self._torch = torch = require_torch("StepTuner")
        _check_batches(batches, min_batches, 1, confidence)
        self._full = full = source.num_scans
        where = source_name(source)
        self.trained = check_scan(trained, full, where=f"{where}: trained")
        levels = default_levels(full) if scans is None else scans
        self._scans = check_scans(levels, full, where=where, distinct=True)
        self._threshold, self._confidence = float(threshold), float(confidence)
        self._batches, self._min, self._start, self._size = batches, min_batches, start, size
        self._src, self._model, self._reuse = source, model, reuse
        self._labels, _ = _labelled(source)
        self._loss_fn = loss_fn or torch.nn.functional.cross_entropy
        self._params = [p for p in model.parameters() if p.requires_grad]
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers))
        # what the batches measured so far: each level's similarities, by batch
        self._sims: dict[int, list[float]] = {k: [] for k in self._scans}
        self._level_bytes: dict[int, int] = {}
        self._steps = self._images = self._widest = self._full_bytes = 0
        self._passes = self._reused = 0
        self.seconds = 0.0
        self.bytes_read = 0
        self.done = False

    def __enter__(self) -> StepTuner:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown()

    def __call__(self, indices: Any, flips: Any, rng_state: Any) -> None:
        """Measure on one training step's batch (the step's gradient is in ``.grad``).

        *rng_state* is a random-number state or a seed; *flips* a boolean
        mask of the images flipped left to right (None: none).
        """
        self._steps += 1
        if self.done or self._steps <= self._start:
            return
        t0 = time.perf_counter()
        before = _bytes_read(self._src)
        given = None
        if self._reuse and (self.trained in self._scans or self.trained == self._full):
            step = _flatten(self._torch, [p.grad for p in self._params], self._params)
            given = (self.trained, step)
        self._batch(np.asarray(indices, dtype=np.int64), rng_state, flips, given)
        used = len(self._sims[self._scans[0]])
        self.done = used >= self._batches or (
            used >= self._min and _settled(self._sims, self._threshold, self._confidence)
        )
        self.seconds += time.perf_counter() - t0
        self.bytes_read += _bytes_read(self._src) - before

    def _pixels(self, idx: np.ndarray, datas: list[bytes]) -> list[np.ndarray]:
        # Upright, as the reader decodes them, so a level's pixels are training's.
        s = (self._size, self._size)
        turns = [orientation_of(self._src, int(i)) for i in idx]
        # the pool's threads decode with the JPEG decoder in force in this one
        work = carried(lambda d, o: decode_upright(d, s, o, mode="RGB"))
        return list(self._pool.map(work, datas, turns))

    def _grad(self, arrays: list[np.ndarray], y: Any, rng: int | Any, flips: Any) -> Any:
        x = to_input(stack_images(arrays, [0] * len(arrays))[0])
        if flips is not None:  # the training step's augmentation, applied as it applies it
            x[flips] = x[flips].flip(-1)
        self._passes += 1
        return _flat_grad(self._torch, self._model, self._params, x, y, self._loss_fn, rng)

    def _batch(
        self, idx: np.ndarray, rng: int | Any, flips: Any, given: tuple[int, Any] | None
    ) -> None:
        """Add each level's gradient similarity to full quality on the images *idx*.

        The model is left as found: its weights untouched and its batch-norm
        statistics restored (the tuner's forward passes are not training).
        *given* is a level and its gradient, already computed on these
        images with these flips and this state.
        """
        saved = [b.detach().clone() for b in self._model.buffers()]
        try:
            for k, v in self._similarities(idx, rng, flips, given).items():
                self._sims[k].append(v)
            self._images += len(idx)
            self._widest = max(self._widest, len(idx))
        finally:
            with self._torch.no_grad():
                for buf, old in zip(self._model.buffers(), saved):
                    buf.copy_(old)

    def _similarities(
        self, idx: np.ndarray, rng: int | Any, flips: Any, given: tuple[int, Any] | None
    ) -> dict[int, float]:
        src, full = self._src, self._full
        fulls = [src.jpeg_bytes(int(i), None) for i in idx]
        cum = [src.level_bytes(int(i)) for i in idx]
        self._full_bytes += sum(len(f) for f in fulls)
        y = self._torch.as_tensor(self._labels[idx], dtype=self._torch.int64)
        grads = dict([given]) if given is not None else {}
        self._reused += len(grads)
        ref_arrays = self._pixels(idx, fulls)
        if full not in grads:
            grads[full] = self._grad(ref_arrays, y, rng, flips)
        ref = grads[full]
        out = {}
        for k in self._scans:
            self._level_bytes[k] = self._level_bytes.get(k, 0) + sum(int(c[k - 1]) for c in cum)
            if k >= full:
                out[k] = 1.0  # the same bytes: the same gradient
                continue
            if k not in grads:
                arrays = self._pixels(idx, [_level_jpeg(f, c, k) for f, c in zip(fulls, cum)])
                if all(np.array_equal(a, r) for a, r in zip(arrays, ref_arrays)):
                    out[k] = 1.0
                    continue
                grads[k] = self._grad(arrays, y, rng, flips)
            out[k] = _cosine(ref, grads[k])
        return out

    def result(self) -> GradientTuneResult:
        """What the batches measured so far say.

        Raises
        ------
        ValueError
            If no training step has been measured yet.
        """
        if not self._images:
            raise ValueError(
                f"no training step measured yet ({self._steps} seen, the first "
                f"{self._start} let pass)"
            )
        src, full, levels, sims = self._src, self._full, self._scans, self._sims
        mean = {k: float(np.mean(v)) for k, v in sims.items()}
        meets = [k for k in levels if mean[k] >= self._threshold]
        if hasattr(src, "bytes_at"):
            bytes_at = {k: int(src.bytes_at(k)) for k in levels} | {full: int(src.bytes_at(full))}
        else:  # estimate the whole folder from the images measured
            scale = len(src) / max(1, self._images)
            bytes_at = {k: int(v * scale) for k, v in self._level_bytes.items()}
            bytes_at[full] = int(self._full_bytes * scale)
        return GradientTuneResult(
            scan=meets[0] if meets else full,
            threshold=self._threshold,
            scans=levels,
            similarity=mean,
            similarity_std={k: float(np.std(v)) for k, v in sims.items()},
            per_batch={k: tuple(v) for k, v in sims.items()},
            bytes_at=bytes_at,
            bytes_fraction={k: v / bytes_at[full] for k, v in bytes_at.items()},
            met=bool(meets),
            num_scans=full,
            batches=len(sims[levels[0]]),
            batch_size=self._widest,
            size=self._size,
            seconds=self.seconds,
            bytes_read=self.bytes_read,
            similarity_ci={
                k: _clipped(mean_interval(v, self._confidence)) for k, v in sims.items()
            },
            decided=_settled(sims, self._threshold, self._confidence),
            max_batches=self._batches,
            confidence=self._confidence,
            passes=self._passes + self._reused,
            passes_reused=self._reused,
        )
