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
    "level_label_offsets",
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


def level_label_offsets(
    x: Sequence[float] | np.ndarray,
    *,
    x_range: tuple[float, float] | None = None,
    width: float = 260.0,
    gap: float = 14.0,
) -> np.ndarray:
    """Shift each level's label sideways, in pixels, so that no two labels touch.

    Levels that add few bytes (the colour scans of a mostly grey image, a
    refinement scan) sit almost on top of each other, and their numbers
    would merge into one smudge. Every level keeps its own label: the labels
    are spread along the axis as little as keeps centres *gap* pixels apart,
    within the plot. The shifts are worked out for a plot *width* pixels wide
    over *x_range*; a wider plot puts the points further apart and the
    labels with them, so they still do not touch.

    Parameters
    ----------
    x : sequence of float
        The points' x positions (bytes fractions), in increasing order.
    x_range : (float, float), optional
        The x axis's start and end (default: the points' own span).
    width : float
        The plot's inner width in pixels to plan for (its smallest).
    gap : float
        Distance between two labels' centres, in pixels (two digits at 9 pt).

    Returns
    -------
    ndarray of float64
        One shift per level, for a ``LabelSet``'s ``x_offset``.

    Examples
    --------
    >>> x = [0.07, 0.20, 0.21, 0.23, 0.39, 1.0]  # levels 2, 3 and 4 within 3% of the bytes
    >>> level_label_offsets(x, x_range=(-0.03, 1.07), width=300).round(1).tolist()
    [0.0, -10.4, 0.9, 9.5, 0.0, 0.0]
    >>> level_label_offsets([0.5, 0.5], x_range=(0, 1), gap=10).tolist()
    [-5.0, 5.0]
    """
    xs = np.asarray(x, np.float64)
    n = len(xs)
    if n == 0:
        return np.zeros(0)
    lo, hi = x_range if x_range is not None else (float(xs.min()), float(xs.max()))
    scale = width / (hi - lo) if hi > lo else 0.0
    p = (xs - lo) * scale
    # Closest positions to p that keep the gaps: with r_i = q_i - i*gap the gaps say that
    # r does not decrease, so r is the isotonic fit of p_i - i*gap (pool adjacent violators).
    target = p - gap * np.arange(n)
    blocks: list[list[float]] = []  # [mean, count]
    for v in target:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, c2), (m1, c1) = blocks[-2], blocks.pop()
            blocks[-1] = [(m2 * c2 + m1 * c1) / (c2 + c1), c2 + c1]
    r = np.concatenate([np.full(int(c), m) for m, c in blocks])
    q = r + gap * np.arange(n)
    # keep the labels inside the plot: pushed in from the right end, then from the left
    q = np.minimum(q, width - gap / 2 - gap * np.arange(n)[::-1])
    q = np.maximum(q, gap / 2 + gap * np.arange(n)) if n * gap <= width else q
    return np.asarray(q - p, np.float64)


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
