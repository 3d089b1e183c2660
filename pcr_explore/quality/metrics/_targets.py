"""Quality targets: each metric's default, and the range a target must be in."""

from __future__ import annotations

from ._names import METRIC_LABELS, METRICS, PSNR_CAP

__all__ = ["DEFAULT_TARGETS", "check_target"]

# The quality target each metric gets when none is given: MS-SSIM and SSIM
# are similarities in (0, 1]; PSNR is in dB.
DEFAULT_TARGETS: dict[str, float] = {"mssim": 0.95, "ssim": 0.95, "psnr": 35.0}

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
