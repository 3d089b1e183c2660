"""Pick the scan level for a quality target, from a sample, with an honest confidence.

The recommended level is the smallest whose statistic (the mean, or the 5th
percentile, of the per-image metric over the sample) reaches the target. A
percentile bootstrap over images gives a confidence interval of the statistic
at that level and at the level below; the decision is *clear* when the
interval at the chosen level lies at or above the target and the one below
lies under it. Otherwise more images are needed to tell the two levels apart,
and ``sample="auto"`` keeps doubling the sample until the decision is clear
or the budget is spent.

The quality a level must reach is the model-free proxy of the Progressive
Compressed Records paper (Kuchnik et al., PVLDB 14(11) 2021), which records
MS-SSIM per scan; a callable metric plugs in a task-aware score instead.
"""

from __future__ import annotations

import os
import time
from typing import Literal

import numpy as np

from .errors import DatasetError
from .metrics import (
    DEFAULT_TARGETS,
    MetricFn,
    capped,
    check_target,
    metric_name,
)
from .quality import QualityCurve, Sampler
from .sources import LevelSource
from .tune_result import TuneResult

__all__ = ["STATISTICS", "TuneResult", "tune", "recommend"]

STATISTICS: tuple[str, ...] = ("mean", "p5")
Statistic = Literal["mean", "p5"]


def _stat(values: np.ndarray, statistic: str, axis: int = 0) -> np.ndarray:
    v = capped(values)
    if statistic == "mean":
        return v.mean(axis=axis)  # type: ignore[no-any-return]
    return np.percentile(v, 5, axis=axis)  # type: ignore[no-any-return]


def _bootstrap(
    column: np.ndarray, statistic: str, n_boot: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile-bootstrap interval of *statistic* over the images of one level."""
    n = len(column)
    if n < 2:
        v = float(_stat(column, statistic)) if n else float("nan")
        return v, v
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot)
    chunk = max(1, 2_000_000 // n)  # bound the resample matrix to ~16 MB
    for start in range(0, n_boot, chunk):
        m = min(chunk, n_boot - start)
        idx = rng.integers(0, n, size=(m, n))
        stats[start : start + m] = _stat(column[idx], statistic, axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def recommend(
    curve: QualityCurve,
    target: float | None = None,
    statistic: Statistic = "mean",
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    bytes_fraction: np.ndarray | None = None,
) -> TuneResult:
    """Recommend the level for *target* from measurements already made.

    Cheap (no decoding): a notebook slider on the target can call it freely.
    The level is the smallest whose statistic reaches the target, the
    decision rule of the Progressive Compressed Records paper [1]_ applied
    to a quality proxy, with a percentile bootstrap over images saying
    whether the sample separates it from the level below.

    Parameters
    ----------
    curve : QualityCurve
        Per-image measurements (from :func:`~pcr_explore.quality.quality_curve`).
    target : float, optional
        Quality the statistic must reach; default the metric's
        (:data:`~pcr_explore.metrics.DEFAULT_TARGETS`: 0.95 MS-SSIM and SSIM,
        35 dB PSNR). A custom metric needs one.
    statistic : {"mean", "p5"}
        Mean over images, or the 5th percentile (nearly every image good enough).
    confidence : float
        Level of the bootstrap intervals.
    n_boot : int
        Bootstrap resamples.
    seed : int
        Bootstrap seed.
    bytes_fraction : array, optional
        Bytes per level as a fraction of the full bytes over the *whole*
        dataset, when known (default: the sample's).

    Returns
    -------
    TuneResult

    Raises
    ------
    DatasetError
        If the curve holds no measured image.
    ValueError
        If *statistic*, *confidence* or *target* is out of range.

    References
    ----------
    .. [1] M. Kuchnik, G. Amvrosiadis and V. Smith, "Progressive Compressed
       Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11),
       2627-2641, 2021.

    Examples
    --------
    >>> from pcr_explore.quality import QualityCurve
    >>> rng = np.random.default_rng(0)
    >>> means = np.array([0.7, 0.9, 0.96, 0.99, 1.0])
    >>> values = np.clip(means + rng.normal(0, 0.01, (200, 5)), 0, 1)
    >>> nbytes = np.tile([10, 30, 50, 80, 100], (200, 1))
    >>> curve = QualityCurve.from_values(values, nbytes, population=10_000)
    >>> r = recommend(curve, target=0.95)
    >>> r.scan, r.bytes_fraction, r.decided
    (3, 0.5, True)
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    target = _target(curve.metric, target)
    values = curve.per_image.values
    n = len(values)
    if n == 0:
        raise DatasetError(
            f"no image could be measured ({len(curve.failed)} failed"
            + (f", first: {curve.failed[0][0]}: {curve.failed[0][1]}" if curve.failed else "")
            + ")"
        )
    stats = _stat(values, statistic)
    meets = np.flatnonzero(stats >= target)
    met = bool(len(meets))
    k = int(meets[0]) if met else len(stats) - 1
    ci = _bootstrap(values[:, k], statistic, n_boot, confidence, seed)
    ci_below = _bootstrap(values[:, k - 1], statistic, n_boot, confidence, seed) if k else None
    exact = n >= curve.population
    clear = ci[0] >= target and (ci_below is None or ci_below[1] < target)
    frac = np.asarray(curve.bytes_fraction if bytes_fraction is None else bytes_fraction)
    return TuneResult(
        scan=k + 1,
        target=float(target),
        metric=curve.metric,
        statistic=statistic,
        value=float(stats[k]),
        bytes_fraction=float(frac[k]),
        bandwidth_saving=float(1.0 - frac[k]),
        ci=ci,
        ci_below=ci_below,
        value_below=float(stats[k - 1]) if k else None,
        decided=bool(met and (exact or clear)),
        met=met,
        sample_size=n,
        population=curve.population,
        confidence=confidence,
        curve=curve,
    )


def _target(metric: str, target: float | None) -> float:
    """The target for a built-in metric (its default when None); a custom one's as given."""
    if metric in DEFAULT_TARGETS:
        return check_target(metric, target)
    if target is None:
        raise ValueError(f"give a target for the custom metric {metric!r}")
    return float(target)


def tune(
    source: LevelSource | str | os.PathLike[str],
    target: float | None = None,
    metric: str | MetricFn = "mssim",
    statistic: Statistic = "mean",
    sample: int | Literal["auto"] | None = 64,
    seed: int = 0,
    *,
    workers: int | None = None,
    progress: bool = True,
    luminance: bool = False,
    confidence: float = 0.95,
    n_boot: int = 2000,
    start: int = 32,
    budget: int = 512,
    max_seconds: float | None = None,
) -> TuneResult:
    """Measure a sample of *source* and recommend the level for *target*.

    Parameters
    ----------
    source : LevelSource or path
        A PCR dataset, a folder of images or an image file.
    target : float, optional
        Quality the statistic must reach; default the metric's (0.95 MS-SSIM
        and SSIM, 35 dB PSNR). A custom metric needs one.
    metric : {"mssim", "ssim", "psnr"} or callable
        A callable ``(full_images, level_images) -> float`` plugs in a
        task-aware score (e.g. the cosine similarity of a model's gradients on
        the two, which the PCR paper thresholds at 0.8); it is called per
        image and level with one-element lists of decoded arrays.
    statistic : {"mean", "p5"}
        Mean over images or their 5th percentile.
    sample : int, "auto" or None
        Images to measure; None: all. ``"auto"`` starts with *start* images
        and doubles the sample until the decision is clear, *budget* images
        are measured or *max_seconds* have passed.
    seed : int
        Seed of the sample and of the bootstrap.
    workers, progress, luminance
        As for :func:`~pcr_explore.quality.quality_curve`.
    confidence, n_boot
        As for :func:`recommend`.
    start, budget, max_seconds
        The ``"auto"`` schedule.

    Returns
    -------
    TuneResult

    Raises
    ------
    DatasetError
        If no image could be measured.
    ValueError
        If an argument is out of range.

    References
    ----------
    .. [1] M. Kuchnik, G. Amvrosiadis and V. Smith, "Progressive Compressed
       Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11),
       2627-2641, 2021.

    Examples
    --------
    >>> r = tune("data/sample/pcr", target=0.95, sample="auto")  # doctest: +SKIP
    >>> r.scan, r.decided  # doctest: +SKIP
    (5, True)
    """
    target = _target(metric_name(metric), target)  # bad arguments fail before any image opens
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    sampler = Sampler(
        source, seed=seed, metric=metric, luminance=luminance, workers=workers, progress=progress
    )
    pop = sampler.population

    def decide() -> TuneResult:
        return recommend(
            sampler.curve(),
            target,
            statistic,
            confidence=confidence,
            n_boot=n_boot,
            seed=seed,
        )

    if sample != "auto":
        if sample is not None and (isinstance(sample, str) or int(sample) < 1):
            raise ValueError(f"sample must be a positive int, 'auto' or None, got {sample!r}")
        sampler.grow(pop if sample is None else int(sample))
        return decide()
    if start < 2 or budget < start:
        raise ValueError(f"need 2 <= start <= budget, got start={start}, budget={budget}")
    t0 = time.perf_counter()
    n = min(start, pop)
    while True:
        sampler.grow(n)
        result = decide()
        out_of_time = max_seconds is not None and time.perf_counter() - t0 >= max_seconds
        if result.decided or n >= budget or sampler.exhausted or out_of_time:
            return result
        n = min(2 * n, budget)
