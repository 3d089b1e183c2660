"""The audit's options, checked before any file is opened; each metric's default target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Literal

from .._public import public
from ..jpeg.transcode import check_backend_and_quality
from ..quality._curve import QualityCurve
from ..quality.metrics import DEFAULT_TARGETS, METRICS
from ..quality.metrics._targets import check_target
from ..quality.tune import STATISTICS
from ._checks import check_thresholds

__all__ = [
    "DEFAULT_TARGETS",
    "BYTES_SAMPLE",
    "MAX_QUALITY_PIXELS",
    "QUALITY_PIXELS",
    "AuditOptions",
    "Options",
    "check_options",
    "check_target",
]

# A sampled image larger than this is measured at a reduced size (DCT
# scaling, then a box reduction): all-level MS-SSIM costs about 250 bytes of
# memory per pixel, so this keeps a worker near 1 GB at most.
MAX_QUALITY_PIXELS = 1 << 22

# By default a sampled image larger than this is measured at a reduced size,
# so the quality sample's CPU does not grow with the photos: an ImageNet-sized
# photo (500x375 or 600x450) is measured at half size, where each of its
# levels costs a quarter of the full-size MS-SSIM.
QUALITY_PIXELS = 1 << 17

# Folder images transcoded by default for the bytes per level: the quality
# sample's (transcoded anyway); the rest is estimated from them, with an interval.
BYTES_SAMPLE = 32


@public("pcr_explore")
@dataclass(frozen=True, kw_only=True)
class AuditOptions:
    """The audit's rarely changed settings (see :func:`~pcr_explore.audit`).

    Parameters
    ----------
    worst : int
        Worst images shown per issue type, and worst-degrading images shown.
    backend, quality
        How folder images are transcoded (see :func:`~pcr_explore.jpeg.transcode.transcode`).
    thresholds : mapping of str to float, optional
        Thresholds to use instead of the defaults of :data:`CHECKS`, by issue
        type (e.g. ``{"blurry": 0.1}``).
    max_pixels : int
        A sampled image larger than this is measured for quality at a reduced
        size, so a worker's memory stays bounded (the report says so).
    quality_pixels : int, optional
        The same, to bound the quality sample's CPU: a sampled image larger
        than this (default 131,072 pixels: a 500x375 photo is measured at
        half size) is measured at a reduced size (DCT scaling, every level
        alike), and the report says so. None: at full size, up to
        *max_pixels*.
    bytes_sample : int, optional
        Transcode only this many folder images for their bytes at each level
        (the start of the quality sample's seeded order, so they include the
        quality sample; default 32, as the sample), and estimate the
        dataset's bytes per level from them: their bytes at each level over
        their source bytes, times all readable images' source bytes, with a
        95% interval (a ratio estimate's t interval, finite population
        corrected) that the report shows beside it. The others are still read, decoded and
        checked: an L or RGB JPEG's one small decode is libjpeg-turbo's
        TurboJPEG with every warning an error, which reads every coefficient
        as the transcode would, so corrupt data that Pillow decodes anyway is
        still found (without that library, Pillow decodes and it is not).
        None: every image is transcoded and the bytes are exact (so are they
        when the folder holds no more images than the sample).
        A PCR dataset's bytes always come from its record index.
    """

    worst: int = 6
    backend: Literal["auto", "jpegtran", "pillow"] = "auto"
    quality: int = 90
    thresholds: Mapping[str, float] | None = None
    max_pixels: int = MAX_QUALITY_PIXELS
    quality_pixels: int | None = QUALITY_PIXELS
    bytes_sample: int | None = BYTES_SAMPLE


@dataclass(frozen=True, kw_only=True)
class Options(AuditOptions):
    """The audit's settings, validated: the rare ones, with the target and thresholds resolved."""

    sample: int | None
    target: float
    metric: str
    statistic: str
    workers: int | None
    seed: int
    luminance: bool
    thresholds: dict[str, float]

    @property
    def measured_pixels(self) -> int:
        """The pixels a sampled image is measured at, at most: the memory or the CPU bound."""
        return min(self.max_pixels, self.quality_pixels or self.max_pixels)


def _count(name: str, value: object, low: int, *, none: bool = False) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def check_options(
    options: AuditOptions,
    *,
    sample: int | None,
    target: float | None,
    metric: str | None,
    statistic: str,
    workers: int | None,
    seed: int,
    luminance: bool,
    curve: QualityCurve | None = None,
) -> Options:
    """Validate every audit option at once, before any work (see :func:`~pcr_explore.audit`).

    A *curve* measured before brings its own sample, metric and luminance.

    Returns
    -------
    Options

    Raises
    ------
    ValueError
        Naming the first option out of range, or a *metric* that is not the curve's.

    Examples
    --------
    >>> o = check_options(
    ...     AuditOptions(thresholds={"blurry": 0.1}),
    ...     sample=64, target=None, metric="psnr", statistic="mean", workers=None, seed=0,
    ...     luminance=False,
    ... )
    >>> o.target, o.thresholds["blurry"]
    (35.0, 0.1)
    """
    if curve is not None:
        if metric is not None and metric != curve.metric:
            raise ValueError(f"the curve was measured with {curve.metric!r}, not {metric!r}")
        metric, sample, luminance = curve.metric, curve.sample_size, curve.luminance
    metric = "mssim" if metric is None else metric
    if not isinstance(metric, str):
        raise ValueError(f"the audit's metric is one of {', '.join(METRICS)}, got {metric!r}")
    resolved = check_target(metric, target)
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int)):
        raise ValueError(f"sample must be a positive number of images or None, got {sample!r}")
    if sample is not None and sample < 1:
        raise ValueError(f"sample must be a positive number of images, got {sample}")
    _count("workers", workers, 1, none=True)
    _count("seed", seed, 0)
    _count("worst", options.worst, 0)
    _count("max_pixels", options.max_pixels, 1)
    _count("bytes_sample", options.bytes_sample, 1, none=True)
    _count("quality_pixels", options.quality_pixels, 1, none=True)
    if not isinstance(luminance, bool):
        raise ValueError(f"luminance must be True or False, got {luminance!r}")
    check_backend_and_quality(options.backend, options.quality)
    rare = {f.name: getattr(options, f.name) for f in fields(AuditOptions)}
    rare["thresholds"] = check_thresholds(options.thresholds)
    return Options(
        **rare,
        sample=sample,
        target=resolved,
        metric=metric,
        statistic=statistic,
        workers=workers,
        seed=seed,
        luminance=luminance,
    )
