"""Pick the scan level for a quality target, from a sample, with an honest confidence.

The recommended level is the smallest whose statistic (the 5th percentile, or
the mean, of the per-image metric over the sample) reaches the target. The
5th percentile is the default: "nearly every image is at least this good" is
what a target usually means, and the mean lets a level with a few badly
damaged images pass (the byte budget and the audit use the same default). A
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

import html
import os
import time
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np

from .._checks import check_count
from .._json import json_safe
from .._public import public
from ..errors import DatasetError
from ..read.sources import LevelSource
from ._curve import QualityCurve
from ._sampler import Sampler
from .metrics import DEFAULT_TARGETS, MetricFn, metric_name
from .metrics._names import capped, format_value, metric_label
from .metrics._targets import check_target

__all__ = ["STATISTICS", "TuneOptions", "TuneResult", "level_intervals", "tune", "recommend"]

STATISTICS: tuple[str, ...] = ("mean", "p5")
Statistic = Literal["mean", "p5"]
DEFAULT_STATISTIC: Statistic = "p5"
"""What the tuner, the audit and the budget threshold unless told otherwise."""


@public("pcr_explore")
@dataclass(frozen=True, kw_only=True)
class TuneOptions:
    """How sure the tuner must be, and how far ``sample="auto"`` may grow.

    Parameters
    ----------
    confidence : float
        Level of the bootstrap intervals, in (0, 1).
    n_boot : int
        Bootstrap resamples.
    start : int
        Images ``sample="auto"`` measures first (at least 2).
    budget : int
        Images ``sample="auto"`` measures at most.
    max_seconds : float, optional
        Time after which ``sample="auto"`` stops doubling.
    """

    confidence: float = 0.95
    n_boot: int = 2000
    start: int = 32
    budget: int = 512
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        check_count(self.n_boot, "n_boot")
        if self.start < 2 or self.budget < self.start:
            raise ValueError(
                f"need 2 <= start <= budget, got start={self.start}, budget={self.budget}"
            )


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


@public("pcr_explore.quality")
def level_intervals(
    curve: QualityCurve,
    *,
    statistic: Statistic = DEFAULT_STATISTIC,
    seed: int = 0,
    options: TuneOptions | None = None,
) -> np.ndarray:
    """The bootstrap interval of *statistic* at every level, an (S, 2) array.

    Where every image of the source was measured the statistic is exact and
    each interval is that one value.

    Examples
    --------
    >>> from pcr_explore.quality import QualityCurve
    >>> values = np.tile([0.6, 0.9, 1.0], (4, 1))
    >>> c = QualityCurve.from_values(values, np.tile([10, 50, 100], (4, 1)))
    >>> level_intervals(c).tolist()
    [[0.6, 0.6], [0.9, 0.9], [1.0, 1.0]]
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    o = options or TuneOptions()
    values = curve.per_image.values
    if len(values) >= curve.population:
        v = _stat(values, statistic)
        return np.stack([v, v], axis=1)
    return np.array(
        [
            _bootstrap(values[:, k], statistic, o.n_boot, o.confidence, seed)
            for k in range(values.shape[1])
        ]
    )


@public("pcr_explore.quality")
def recommend(
    curve: QualityCurve,
    *,
    target: float | None = None,
    statistic: Statistic = DEFAULT_STATISTIC,
    seed: int = 0,
    options: TuneOptions | None = None,
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
        (:data:`~pcr_explore.quality.metrics.DEFAULT_TARGETS`: 0.95 MS-SSIM and SSIM,
        35 dB PSNR). A custom metric needs one.
    statistic : {"p5", "mean"}
        The 5th percentile over images (nearly every image good enough; the
        default), or their mean.
    seed : int
        Bootstrap seed.
    options : TuneOptions, optional
        The bootstrap's confidence and resamples.
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
    >>> r = recommend(curve, target=0.95)  # the 5th percentile must reach it
    >>> r.scan, r.bytes_fraction, r.decided
    (4, 0.8, True)
    >>> recommend(curve, target=0.95, statistic="mean").scan  # the mean passes a level sooner
    3
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    o = options or TuneOptions()
    confidence, n_boot = o.confidence, o.n_boot
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


@public("pcr_explore")
def tune(
    source: QualityCurve | LevelSource | str | os.PathLike[str],
    *,
    target: float | None = None,
    metric: str | MetricFn | None = None,
    statistic: Statistic = DEFAULT_STATISTIC,
    sample: int | Literal["auto"] | None = 64,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    luminance: bool = False,
    max_pixels: int | None = None,
    options: TuneOptions | None = None,
    client: Any = None,
) -> TuneResult:
    """Recommend the level for *target*: from a curve already measured, or by measuring a sample.

    Parameters
    ----------
    source : QualityCurve, LevelSource or path
        A curve from :func:`~pcr_explore.quality_curve` (nothing is measured
        again: the sample settings below do not apply), or a PCR dataset, a
        folder of images or an image file to sample.
    target : float, optional
        Quality the statistic must reach; default the metric's (0.95 MS-SSIM
        and SSIM, 35 dB PSNR). A custom metric needs one.
    metric : {"mssim", "ssim", "psnr"} or callable, optional
        Default ``"mssim"`` (a curve's own metric, when given a curve). A
        callable ``(full_images, level_images) -> float`` plugs in a
        task-aware score (e.g. the cosine similarity of a model's gradients on
        the two, which the PCR paper thresholds at 0.8); it is called per
        image and level with one-element lists of decoded arrays.
    statistic : {"p5", "mean"}
        The 5th percentile over images (the default) or their mean.
    sample : int, "auto" or None
        Images to measure; None: all. ``"auto"`` starts with
        ``options.start`` images and doubles the sample until the decision is
        clear, ``options.budget`` images are measured or
        ``options.max_seconds`` have passed.
    seed : int
        Seed of the sample and of the bootstrap.
    workers, progress, luminance
        As for :func:`~pcr_explore.quality_curve`.
    max_pixels : int, optional
        Measure every level, and the full level it is compared with, at
        the size a training decode produces: an image over this many pixels
        is decoded at 1/2, 1/4 or 1/8 scale (libjpeg's reduced inverse DCT,
        as a reader decoding to a smaller size does), box-reduced further
        past 1/8. At 1/4 of the stored size a level needs fewer scans than
        at full size. Default: full size.
    options : TuneOptions, optional
        The bootstrap and the ``"auto"`` schedule.
    client : dask.distributed.Client, optional
        Measure on this Dask cluster, as :func:`~pcr_explore.quality_curve`
        does (ignored for a curve).

    Returns
    -------
    TuneResult

    Raises
    ------
    DatasetError
        If no image could be measured.
    ValueError
        If an argument is out of range, or *metric* is not the curve's.

    References
    ----------
    .. [1] M. Kuchnik, G. Amvrosiadis and V. Smith, "Progressive Compressed
       Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11),
       2627-2641, 2021.

    Examples
    --------
    >>> r = tune("photos.pcr", target=0.95, sample="auto")
    >>> r.scan, r.decided
    (5, True)
    >>> from pcr_explore import quality_curve
    >>> curve = quality_curve("photos.pcr", sample=32)
    >>> tune(curve, target=0.97).scan  # no image is decoded again
    5
    """
    o = options or TuneOptions()
    if isinstance(source, QualityCurve):
        if metric is not None and metric_name(metric) != source.metric:
            raise ValueError(
                f"the curve was measured with {source.metric!r}, not {metric_name(metric)!r}"
            )
        return recommend(source, target=target, statistic=statistic, seed=seed, options=o)
    metric = "mssim" if metric is None else metric
    target = _target(metric_name(metric), target)  # bad arguments fail before any image opens
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    if max_pixels is not None and max_pixels < 1:
        raise ValueError(f"max_pixels must be a positive int, got {max_pixels!r}")
    sampler = Sampler(
        source,
        seed=seed,
        metric=metric,
        luminance=luminance,
        workers=workers,
        progress=progress,
        max_pixels=max_pixels,
        client=client,
    )
    pop = sampler.population

    def decide() -> TuneResult:
        return recommend(sampler.curve(), target=target, statistic=statistic, seed=seed, options=o)

    if sample != "auto":
        if sample is not None and (isinstance(sample, str) or int(sample) < 1):
            raise ValueError(f"sample must be a positive int, 'auto' or None, got {sample!r}")
        sampler.grow(pop if sample is None else int(sample))
        return decide()
    t0 = time.perf_counter()
    n = min(o.start, pop)
    while True:
        sampler.grow(n)
        result = decide()
        out_of_time = o.max_seconds is not None and time.perf_counter() - t0 >= o.max_seconds
        if result.decided or n >= o.budget or sampler.exhausted or out_of_time:
            return result
        n = min(2 * n, o.budget)


@public("pcr_explore")
@dataclass(frozen=True)
class TuneResult:
    """The recommended scan level for a quality target.

    Attributes
    ----------
    scan : int
        The smallest level whose statistic reaches the target (the last level
        when none does; see ``met``).
    target : float
        The quality target.
    metric : str
        The metric's name.
    statistic : str
        "mean" or "p5" (5th percentile over images).
    value : float
        The statistic at ``scan``.
    bytes_fraction : float
        Bytes read at ``scan`` as a fraction of the full dataset's bytes.
    bandwidth_saving : float
        ``1 - bytes_fraction``.
    ci : (float, float)
        Bootstrap confidence interval of the statistic at ``scan``.
    ci_below : (float, float) or None
        The same at ``scan - 1`` (None when ``scan`` is 1).
    value_below : float or None
        The statistic at ``scan - 1``.
    decided : bool
        True when the sample separates the two levels: ``ci`` lies at or
        above the target and ``ci_below`` under it (always True when every
        image was measured).
    met : bool
        False when no level reaches the target.
    sample_size : int
        Images measured.
    population : int
        Images in the source.
    confidence : float
        Level of the intervals.
    curve : QualityCurve
        The measurements behind the decision.

    Examples
    --------
    >>> import numpy as np
    >>> from pcr_explore.quality import QualityCurve
    >>> from pcr_explore.quality.tune import recommend
    >>> values = np.tile([0.6, 0.9, 0.97, 1.0], (8, 1))
    >>> curve = QualityCurve.from_values(values, np.tile([10, 40, 70, 100], (8, 1)))
    >>> r = recommend(curve, target=0.95)
    >>> r.scan, round(r.bandwidth_saving, 3), r.decided
    (3, 0.3, True)
    """

    scan: int
    target: float
    metric: str
    statistic: str
    value: float
    bytes_fraction: float
    bandwidth_saving: float
    ci: tuple[float, float]
    ci_below: tuple[float, float] | None
    value_below: float | None
    decided: bool
    met: bool
    sample_size: int
    population: int
    confidence: float
    curve: QualityCurve

    @property
    def explanation(self) -> str:
        """Say in one sentence how sure the recommendation is."""
        pct = f"{self.confidence:.0%}"
        if not self.met:
            return (
                f"no level reaches {self.statistic} {self.metric} >= {self.target:g}; "
                f"the full level is recommended"
            )
        if self.sample_size >= self.population:
            return "every image was measured: the statistic is exact for this dataset"
        lo, hi = self.ci
        if lo < self.target:
            return (
                f"not clear: the {pct} interval at scan {self.scan} ({lo:.4f}..{hi:.4f}) "
                f"reaches below the target; measure more images"
            )
        if self.ci_below is not None and self.ci_below[1] >= self.target:
            return (
                f"not clear: the {pct} interval at scan {self.scan - 1} "
                f"({self.ci_below[0]:.4f}..{self.ci_below[1]:.4f}) reaches the target too; "
                "measure more images"
            )
        return f"clear at {pct}: scan {self.scan} is at or above the target and " + (
            "it is the first level" if self.ci_below is None else f"scan {self.scan - 1} below"
        )

    def summary(self) -> str:
        """Return a few lines for a terminal."""
        return (
            f"scan {self.scan} of {self.curve.num_scans}: {self.statistic} {self.metric} "
            f"{self.value:.4f} (target {self.target:g}), {self.bytes_fraction:.1%} of the bytes "
            f"({self.bandwidth_saving:.1%} saved); sample {self.sample_size} of "
            f"{self.population}; {self.explanation}"
        )

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (without the per-image table), with the explanation."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "curve"}
        return json_safe({**d, "explanation": self.explanation})

    def _repr_html_(self) -> str:
        label = html.escape(metric_label(self.metric).removesuffix(" (dB)"))
        target = format_value(self.target, "psnr") if self.metric == "psnr" else f"{self.target:g}"

        def fmt(v: float) -> str:
            return format_value(v, self.metric)

        exact = self.sample_size >= self.population

        def with_ci(v: float, ci: tuple[float, float]) -> str:
            # every image measured: the value is exact, an interval would mislead
            return fmt(v) if exact else f"{fmt(v)} [{fmt(ci[0])}, {fmt(ci[1])}]"

        below = (
            with_ci(self.value_below, self.ci_below)
            if self.ci_below is not None and self.value_below is not None
            else "-"
        )
        colour = "#1a7f37" if self.decided else "#9a6700"
        stat = "mean" if self.statistic == "mean" else "5th percentile"
        rows = [
            ("recommended scan", f"<b>{self.scan}</b> of {self.curve.num_scans}"),
            ("target", f"{stat} {label} &ge; {target}"),
            ("at this scan", with_ci(self.value, self.ci)),
            ("scan below", below),
            ("bytes", f"{self.bytes_fraction:.1%} ({self.bandwidth_saving:.1%} saved)"),
            ("sample", f"{self.sample_size} of {self.population} images"),
            (
                "confidence",
                f"<span style='color:{colour}'>{html.escape(self.explanation)}</span>",
            ),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows
        )
        return f"<table>{body}</table>"
