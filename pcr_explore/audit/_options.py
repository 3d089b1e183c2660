"""The audit's options, checked before any file is opened; each metric's default target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..metrics import METRIC_LABELS, METRICS, PSNR_CAP
from ..transcode import check_backend_and_quality
from ..tuner import STATISTICS
from ._checks import check_thresholds

__all__ = ["DEFAULT_TARGETS", "MAX_QUALITY_PIXELS", "Options", "check_options", "check_target"]

# The quality target each metric gets when none is given: MS-SSIM and SSIM
# are similarities in (0, 1]; PSNR is in dB.
DEFAULT_TARGETS: dict[str, float] = {"mssim": 0.95, "ssim": 0.95, "psnr": 35.0}

# A sampled image larger than this is measured at a reduced size (DCT
# scaling, then a box reduction): all-level MS-SSIM costs about 250 bytes of
# memory per pixel, so this keeps a worker near 1 GB at most.
MAX_QUALITY_PIXELS = 1 << 22

# A PSNR target under this is a similarity typed by mistake, not a dB figure.
_MIN_PSNR_TARGET = 10.0


def check_target(metric: str, target: float | None) -> float:
    """Return the target to use for *metric*: *target*, or the metric's default.

    Parameters
    ----------
    metric : {"mssim", "ssim", "psnr"}
        The metric.
    target : float or None
        The target asked for; None gives :data:`DEFAULT_TARGETS` of the metric.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the metric is unknown, or the target is outside the metric's range:
        (0, 1] for MS-SSIM and SSIM, [10, 100] dB for PSNR.

    Examples
    --------
    >>> check_target("psnr", None)
    35.0
    >>> check_target("mssim", 95)
    Traceback (most recent call last):
    ...
    ValueError: an MS-SSIM target must be in (0, 1], got 95 (did you mean 0.95?)
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    if target is None:
        return DEFAULT_TARGETS[metric]
    if isinstance(target, bool) or not isinstance(target, (int, float)):
        raise ValueError(f"target must be a number, got {target!r}")
    t = float(target)
    label = METRIC_LABELS[metric].split(" ")[0]
    if metric == "psnr":
        if not _MIN_PSNR_TARGET <= t <= PSNR_CAP:
            raise ValueError(
                f"a PSNR target is in dB and must be in [{_MIN_PSNR_TARGET:g}, {PSNR_CAP:g}], "
                f"got {target:g} (typical: 30 to 45; the default is {DEFAULT_TARGETS['psnr']:g})"
            )
        return t
    if not 0.0 < t <= 1.0:
        hint = f" (did you mean {t / 100:g}?)" if 1.0 < t <= 100.0 else ""
        raise ValueError(f"an {label} target must be in (0, 1], got {target:g}{hint}")
    return t


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
    )
