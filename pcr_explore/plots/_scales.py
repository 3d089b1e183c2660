"""How values are drawn: left-out points, the dB view of similarity, level labels, font sizes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from bokeh.models.annotations import LabelSet, Legend, Title

from .._public import public
from ..quality.metrics import PSNR_CAP
from ..quality.metrics._names import metric_label

__all__ = [
    "SCALES",
    "drawable",
    "to_db",
    "axis_label",
    "level_labels",
    "FONT_SIZES",
    "set_font_size",
]

SCALES: tuple[str, ...] = ("value", "db")
"""How a quality axis is drawn: the metric itself, or its loss in decibels."""


@public("pcr_explore.plots")
def to_db(values: Any) -> np.ndarray:
    """Return similarity values as decibels of their loss: ``-10 log10(1 - v)``.

    SSIM and MS-SSIM crowd near 1.0 at the upper scan levels (0.990, 0.995,
    0.999 look the same on a linear axis). In decibels each tenfold drop in
    ``1 - v`` is 10 dB, so those levels spread out evenly, as PSNR does for
    pixel errors. ``v = 1`` (identical) becomes ``inf``.

    Parameters
    ----------
    values : array_like
        Similarities at most 1.

    Returns
    -------
    ndarray of float64

    Examples
    --------
    >>> to_db([0.9, 0.99, 0.999]).round(6).tolist()
    [10.0, 20.0, 30.0]
    >>> to_db([1.0]).tolist()
    [inf]
    """
    v = np.asarray(values, np.float64)
    with np.errstate(divide="ignore"):
        return -10.0 * np.log10(np.maximum(1.0 - v, 0.0))


def drawable(values: Any, metric: str, scale: str = "value") -> np.ndarray:
    """Return metric values as a figure draws them: identical images left out.

    A level identical to the full image has infinite PSNR (counted at
    :data:`~pcr_explore.quality.metrics.PSNR_CAP` in statistics) and, in decibels,
    an infinite SSIM. Drawn, either would squash the rest of the curve, so
    such values become NaN, which Bokeh and the static charts leave out.

    Parameters
    ----------
    values : array_like
        Per-level values, raw (``inf``) or capped.
    metric : str
        The metric's name.
    scale : {"value", "db"}
        ``"db"`` draws SSIM and MS-SSIM as :func:`to_db`; PSNR is in dB already.

    Returns
    -------
    ndarray of float64

    Raises
    ------
    ValueError
        For an unknown *scale*.

    Examples
    --------
    >>> drawable([31.5, 100.0, np.inf], "psnr")
    array([31.5,  nan,  nan])
    >>> drawable([0.9, 1.0], "mssim")
    array([0.9, 1. ])
    >>> drawable([0.9, 1.0], "mssim", "db")
    array([10., nan])
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    v = np.asarray(values, np.float64)
    if metric == "psnr":
        return np.where(v >= PSNR_CAP, np.nan, v)
    if scale == "db":
        v = to_db(v)
        return np.where(np.isfinite(v), v, np.nan)
    return v


def axis_label(metric: str, scale: str = "value") -> str:
    """Return the axis label of *metric* drawn on *scale*.

    Examples
    --------
    >>> axis_label("mssim"), axis_label("mssim", "db"), axis_label("psnr", "db")
    ('MS-SSIM', 'MS-SSIM in dB: -10 log10(1 - MS-SSIM)', 'PSNR (dB)')
    """
    label = metric_label(metric)
    if scale == "db" and metric != "psnr":
        return f"{label} in dB: -10 log10(1 - {label})"
    return label


def level_labels(x: Sequence[float] | np.ndarray, min_gap: float = 0.07) -> list[str]:
    """Label each level's point, merging neighbours closer than *min_gap* on x.

    Levels that add few bytes (the colour scans of a mostly grey image, a
    refinement scan) sit almost on top of each other; writing "2", "3" and
    "4" there makes an unreadable smudge. A run of such levels gets one
    label, "2-4", on its first point; the others get "".

    Parameters
    ----------
    x : sequence of float
        The points' x positions (bytes fractions), level 1 first.
    min_gap : float
        Smallest x distance between two labels, in x units.

    Returns
    -------
    list of str
        One label per level.

    Examples
    --------
    >>> level_labels([0.07, 0.20, 0.21, 0.23, 0.39, 1.0])
    ['1', '2-4', '', '', '5', '6']
    >>> level_labels([0.5, 0.5, 1.0])
    ['1-2', '', '3']
    """
    xs = np.asarray(x, np.float64)
    labels = [""] * len(xs)
    start = 0
    for k in range(1, len(xs) + 1):
        if k == len(xs) or not abs(xs[k] - xs[start]) < min_gap:
            labels[start] = str(start + 1) if k - 1 == start else f"{start + 1}-{k}"
            start = k
    return labels


# Bokeh's own defaults, and the sizes for a projector.
FONT_SIZES: dict[str, dict[str, str]] = {
    "normal": {"title": "13px", "axis": "13px", "ticks": "11px", "legend": "13px", "label": "9pt"},
    "large": {"title": "18px", "axis": "17px", "ticks": "15px", "legend": "15px", "label": "12pt"},
}


@public("pcr_explore.plots")
def set_font_size(figure: Any, size: str = "normal", *, legend: str | None = None) -> None:
    """Set every text of a Bokeh figure to the "normal" or the "large" (projector) sizes.

    Titles, axis labels, tick labels, legends and label sets change; the
    figure keeps its data, so a widget can switch sizes while it is shown.

    Parameters
    ----------
    figure : bokeh.plotting.figure
    size : {"normal", "large"}
    legend : str, optional
        Legend font size in normal mode, when the figure uses a smaller one.

    Raises
    ------
    ValueError
        For an unknown *size*.

    Examples
    --------
    >>> from bokeh.plotting import figure
    >>> f = figure(title="t")
    >>> set_font_size(f, "large")
    >>> f.title.text_font_size, f.xaxis[0].major_label_text_font_size
    ('18px', '15px')
    """
    if size not in FONT_SIZES:
        raise ValueError(f"size must be one of {sorted(FONT_SIZES)}, got {size!r}")
    s = FONT_SIZES[size]
    for item in [*figure.above, *figure.below, *figure.left, *figure.right, *figure.center]:
        if isinstance(item, Title):
            item.text_font_size = s["title"]
        elif isinstance(item, Legend):
            item.label_text_font_size = legend if legend and size == "normal" else s["legend"]
        elif isinstance(item, LabelSet):
            item.text_font_size = s["label"]
    if figure.title is not None and isinstance(figure.title, Title):
        figure.title.text_font_size = s["title"]
    for axis in [*figure.xaxis, *figure.yaxis]:
        axis.axis_label_text_font_size = s["axis"]
        axis.major_label_text_font_size = s["ticks"]
