"""The audit's options, checked before any file is opened; each metric's default target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..metrics import DEFAULT_TARGETS, METRICS, check_target
from ..transcode import check_backend_and_quality
from ..tuner import STATISTICS
from ._checks import check_thresholds

__all__ = ["DEFAULT_TARGETS", "MAX_QUALITY_PIXELS", "Options", "check_options", "check_target"]

# A sampled image larger than this is measured at a reduced size (DCT
# scaling, then a box reduction): all-level MS-SSIM costs about 250 bytes of
# memory per pixel, so this keeps a worker near 1 GB at most.
MAX_QUALITY_PIXELS = 1 << 22


@dataclass(frozen=True)
class Options:
    """The audit's settings, validated, with the target and thresholds resolved."""

    sample: int | None
    target: float
    metric: str
    statistic: str
    workers: int | None
    seed: int
    luminance: bool
    worst: int
    backend: str
    quality: int
    thresholds: dict[str, float]
    max_pixels: int
    bytes_sample: int | None = None


def _count(name: str, value: object, low: int, *, none: bool = False) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def check_options(
    *,
    sample: int | None,
    target: float | None,
    metric: str,
    statistic: str,
    workers: int | None,
    seed: int,
    luminance: bool,
    worst: int,
    backend: str,
    quality: int,
    thresholds: Mapping[str, float] | None,
    max_pixels: int,
    bytes_sample: int | None = None,
) -> Options:
    """Validate every audit option at once, before any work; see :func:`~pcr_explore.audit.audit`.

    Returns
    -------
    Options

    Raises
    ------
    ValueError
        Naming the first option out of range.

    Examples
    --------
    >>> o = check_options(
    ...     sample=64, target=None, metric="psnr", statistic="mean", workers=None, seed=0,
    ...     luminance=False, worst=6, backend="auto", quality=90, thresholds={"blurry": 0.1},
    ...     max_pixels=1 << 22,
    ... )
    >>> o.target, o.thresholds["blurry"]
    (35.0, 0.1)
    """
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
    _count("worst", worst, 0)
    _count("max_pixels", max_pixels, 1)
    _count("bytes_sample", bytes_sample, 1, none=True)
    if not isinstance(luminance, bool):
        raise ValueError(f"luminance must be True or False, got {luminance!r}")
    check_backend_and_quality(backend, quality)
    return Options(
        sample=sample,
        target=resolved,
        metric=metric,
        statistic=statistic,
        workers=workers,
        seed=seed,
        luminance=luminance,
        worst=worst,
        backend=backend,
        quality=quality,
        thresholds=check_thresholds(thresholds),
        max_pixels=max_pixels,
        bytes_sample=bytes_sample,
    )
