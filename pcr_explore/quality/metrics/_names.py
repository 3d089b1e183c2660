"""Metric names, their display labels, and how an infinite PSNR is counted.

The one place that says which metrics the package computes and how they are
labelled: the quality curves, the tuner, the audit, the plots, the widgets
and the CLI all read them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._public import public

__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "PSNR_CAP",
    "MetricFn",
    "capped",
    "format_value",
    "metric_label",
    "metric_name",
]

METRICS: tuple[str, ...] = ("mssim", "ssim", "psnr")
METRIC_LABELS: dict[str, str] = {"mssim": "MS-SSIM", "ssim": "SSIM", "psnr": "PSNR (dB)"}

# Identical images have infinite PSNR; statistics over a sample count them at
# this cap so a mean or a percentile stays finite (and JSON-safe).
PSNR_CAP = 100.0

MetricFn = Callable[[list[np.ndarray], list[np.ndarray]], float]
"""A task-aware quality score: ``(full_images, level_images) -> float``."""


@public("pcr_explore.quality")
def metric_name(metric: str | MetricFn) -> str:
    """Return the name a metric is reported under.

    Parameters
    ----------
    metric : str or callable
        A built-in metric name (one of :data:`METRICS`) or a callable
        ``(full_images, level_images) -> float``.

    Returns
    -------
    str
        The name itself, or the callable's ``__name__`` ("custom" without one).

    Raises
    ------
    ValueError
        If *metric* is a string that names no built-in metric.
    TypeError
        If *metric* is neither a string nor callable.

    Examples
    --------
    >>> metric_name("psnr")
    'psnr'
    >>> def neg_mae(full, level):
    ...     return 0.0
    >>> metric_name(neg_mae)
    'neg_mae'
    """
    if isinstance(metric, str):
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        return metric
    if not callable(metric):
        raise TypeError(f"metric must be a name or a callable, got {metric!r}")
    return str(getattr(metric, "__name__", "custom"))


def metric_label(metric: str) -> str:
    """Return the label a metric is shown under (its name when it has no label).

    Parameters
    ----------
    metric : str
        A metric name, built-in or custom.

    Returns
    -------
    str

    Examples
    --------
    >>> metric_label("mssim"), metric_label("neg_mae")
    ('MS-SSIM', 'neg_mae')
    """
    return METRIC_LABELS.get(metric, metric)


def format_value(value: float, metric: str) -> str:
    """Return a metric value as a readout shows it, with the precision it deserves.

    PSNR in decibels to one decimal ("identical" when infinite, i.e. at or
    above :data:`PSNR_CAP`); SSIM, MS-SSIM and custom scores to four
    decimals, where their differences between scan levels live.

    Parameters
    ----------
    value : float
    metric : str
        The metric's name.

    Returns
    -------
    str

    Examples
    --------
    >>> format_value(35.04, "psnr"), format_value(np.inf, "psnr"), format_value(0.97123, "mssim")
    ('35.0 dB', 'identical', '0.9712')
    """
    v = float(value)
    if metric == "psnr":
        return "identical" if v >= PSNR_CAP else f"{v:.1f} dB"
    return f"{v:.4f}"


def capped(values: Any) -> np.ndarray:
    """Return *values* with ``+inf`` counted as :data:`PSNR_CAP`, for statistics.

    The package's one rule for infinite quality: a level identical to the
    full image has infinite PSNR, and a mean, percentile or bootstrap over a
    sample counts it at the cap instead. NaN (a value that was not measured)
    stays NaN, so it is never counted as perfect. Plots draw neither: see
    :func:`pcr_explore.plots.drawable`.

    Parameters
    ----------
    values : array_like
        Metric values of any shape.

    Returns
    -------
    ndarray of float64
        A new array; *values* is not modified.

    Examples
    --------
    >>> capped([31.5, np.inf, np.nan])
    array([ 31.5, 100. ,   nan])
    """
    v = np.asarray(values, np.float64)
    return np.where(np.isposinf(v), PSNR_CAP, v)
