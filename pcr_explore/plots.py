"""Bokeh figure builders shared by the audit report and the notebook widgets.

Each builder returns the figure together with its data sources. Every column
a figure draws comes from those sources, so a widget updates a figure by
assigning ``source.data = new_data`` once per source (``CurveFigure.update``
does exactly that), which ``jupyter_bokeh`` syncs without ``push_notebook``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter, Range1d
from bokeh.models.annotations import LabelSet, Span
from bokeh.plotting import figure

from .metrics import PSNR_CAP, metric_label
from .quality import QualityCurve

__all__ = [
    "CurveFigure",
    "BytesFigure",
    "quality_figure",
    "curve_data",
    "images_data",
    "recommended_data",
    "bytes_figure",
    "bytes_data",
    "drawable",
]

_CURVE_COLUMNS = ("scan", "label", "bytes_fraction", "mean", "p5", "p50", "p95")


def drawable(values: Any, metric: str) -> np.ndarray:
    """Return metric values as a figure draws them: identical-image PSNR left out.

    A level identical to the full image has infinite PSNR, counted at
    :data:`~pcr_explore.metrics.PSNR_CAP` in statistics. Drawn, either would
    squash the rest of the curve, so such values become NaN, which Bokeh and
    the static charts leave out; other metrics pass unchanged.

    Parameters
    ----------
    values : array_like
        Per-level values, raw (``inf``) or capped.
    metric : str
        The metric's name.

    Returns
    -------
    ndarray of float64

    Examples
    --------
    >>> drawable([31.5, 100.0, np.inf], "psnr")
    array([31.5,  nan,  nan])
    >>> drawable([0.9, 1.0], "mssim")
    array([0.9, 1. ])
    """
    v = np.asarray(values, np.float64)
    if metric == "psnr":
        v = np.where(v >= PSNR_CAP, np.nan, v)
    return v


def curve_data(curve: QualityCurve | None) -> dict[str, Any]:
    """Return the per-level columns of a :class:`CurveFigure`'s ``source``.

    Columns: ``scan``, ``label``, ``bytes_fraction``, ``mean``, ``p5``,
    ``p50``, ``p95`` (empty when *curve* is None); identical-image PSNR is
    left out (:func:`drawable`).

    Parameters
    ----------
    curve : QualityCurve or None

    Returns
    -------
    dict of str to array or list

    Examples
    --------
    >>> from pcr_explore.quality import QualityCurve
    >>> c = QualityCurve.from_values(np.array([[0.8, 1.0]]), np.array([[40, 100]]))
    >>> d = curve_data(c)
    >>> d["label"], d["bytes_fraction"].tolist(), d["mean"].tolist()
    (['1', '2'], [0.4, 1.0], [0.8, 1.0])
    """
    if curve is None:
        return {c: (np.zeros(0) if c != "label" else []) for c in _CURVE_COLUMNS}
    m = curve.metric
    return {
        "scan": np.asarray(curve.scans, np.int64),
        "label": [str(int(k)) for k in curve.scans],
        "bytes_fraction": np.asarray(curve.bytes_fraction, np.float64),
        "mean": drawable(curve.mean, m),
        "p5": drawable(curve.p5, m),
        "p50": drawable(curve.p50, m),
        "p95": drawable(curve.p95, m),
    }


def images_data(curve: QualityCurve | None, max_images: int = 64) -> dict[str, Any]:
    """Return columns ``xs``, ``ys``, ``name`` of the faint per-image lines.

    Parameters
    ----------
    curve : QualityCurve or None
    max_images : int
        Lines for at most this many images (the first in sample order).

    Returns
    -------
    dict of str to list
        One entry per image: its bytes fractions, its values (:func:`drawable`)
        and its name.
    """
    if curve is None or len(curve.per_image) == 0 or max_images <= 0:
        return {"xs": [], "ys": [], "name": []}
    pi = curve.per_image
    n = min(len(pi), max_images)
    b = pi.bytes[:n].astype(np.float64)
    frac = b / b[:, -1:]
    vals = drawable(pi.values[:n], curve.metric)
    return {
        "xs": [frac[i] for i in range(n)],
        "ys": [vals[i] for i in range(n)],
        "name": list(pi.names[:n]),
    }


def recommended_data(curve: QualityCurve | None, scan: int | None) -> dict[str, Any]:
    """Return the columns of the recommended-level marker.

    Parameters
    ----------
    curve : QualityCurve or None
    scan : int or None
        The recommended level.

    Returns
    -------
    dict of str to list
        ``scan``, ``bytes_fraction``, ``value``, ``label``: one row, or none
        when *scan* is None or outside the curve.
    """
    if curve is None or scan is None or not 1 <= scan <= curve.num_scans:
        return {"scan": [], "bytes_fraction": [], "value": [], "label": []}
    k = scan - 1
    return {
        "scan": [int(scan)],
        "bytes_fraction": [float(curve.bytes_fraction[k])],
        "value": [float(drawable(curve.mean[k : k + 1], curve.metric)[0])],
        "label": [f"scan {scan}"],
    }


class CurveFigure(NamedTuple):
    """A bytes-vs-quality figure and the sources that feed it (see :func:`quality_figure`).

    ``source`` holds :func:`curve_data`, ``images`` :func:`images_data`,
    ``recommended`` :func:`recommended_data`; ``target`` is the target rule.
    """

    figure: Any
    source: ColumnDataSource
    images: ColumnDataSource
    recommended: ColumnDataSource
    target: Span

    def update(
        self,
        curve: QualityCurve | None,
        *,
        target: float | None = None,
        recommended: int | None = None,
        max_images: int = 64,
    ) -> None:
        """Show another curve: one ``.data`` assignment per source.

        Parameters
        ----------
        curve : QualityCurve or None
            The curve; None empties the figure.
        target : float, optional
            The target rule (hidden when None).
        recommended : int, optional
            The recommended level's marker.
        max_images : int
            Per-image lines drawn.
        """
        self.source.data = curve_data(curve)
        self.images.data = images_data(curve, max_images)
        self.recommended.data = recommended_data(curve, recommended)
        self.target.location = target
        self.target.visible = target is not None
        if curve is not None:
            self.figure.yaxis.axis_label = metric_label(curve.metric)


def quality_figure(
    curve: QualityCurve | None = None,
    *,
    target: float | None = None,
    recommended: int | None = None,
    title: str | None = None,
    width: int = 640,
    height: int = 400,
    max_images: int = 64,
) -> CurveFigure:
    """Quality against bytes read, one point per scan level.

    Draws the metric's mean (line and level markers labelled with the scan
    number), its median (dashed), the p5-p95 band over the sample, faint
    per-image lines, the target (a horizontal rule) and the recommended level.

    Parameters
    ----------
    curve : QualityCurve, optional
        What to show; None builds an empty figure for a widget to fill.
    target : float, optional
        The quality target.
    recommended : int, optional
        The recommended scan level.
    title : str, optional
        Figure title.
    width, height : int
        Size in pixels.
    max_images : int
        At most this many per-image lines.

    Returns
    -------
    CurveFigure
        ``(figure, source, images, recommended, target)``.

    Examples
    --------
    >>> from pcr_explore.quality import QualityCurve
    >>> c = QualityCurve.from_values(np.array([[0.8, 0.97, 1.0]]), np.array([[30, 60, 100]]))
    >>> cf = quality_figure(c, target=0.95, recommended=2)
    >>> cf.recommended.data["scan"], cf.figure.yaxis[0].axis_label
    ([2], 'MS-SSIM')
    >>> cf.update(None)
    >>> len(cf.source.data["mean"])
    0
    """
    metric = curve.metric if curve is not None else "mssim"
    fig = figure(
        width=width,
        height=height,
        title=title or "Quality per scan level",
        x_axis_label="bytes read (fraction of the full images)",
        y_axis_label=metric_label(metric),
        tools="pan,wheel_zoom,box_zoom,reset,save",
        toolbar_location="above",
    )
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    src = ColumnDataSource(curve_data(curve), name="levels")
    imgs = ColumnDataSource(images_data(curve, max_images), name="images")
    rec = ColumnDataSource(recommended_data(curve, recommended), name="recommended")

    fig.multi_line(xs="xs", ys="ys", source=imgs, line_color="#888888", line_alpha=0.15)
    fig.varea(
        x="bytes_fraction",
        y1="p5",
        y2="p95",
        source=src,
        fill_color="#1f77b4",
        fill_alpha=0.18,
        legend_label="p5 to p95 of images",
    )
    fig.line(
        x="bytes_fraction",
        y="p50",
        source=src,
        line_dash="dashed",
        line_color="#1f77b4",
        legend_label="median",
    )
    fig.line(x="bytes_fraction", y="mean", source=src, line_width=2, legend_label="mean")
    markers = fig.scatter(
        x="bytes_fraction", y="mean", source=src, size=8, fill_color="white", line_width=2
    )
    fig.add_layout(
        LabelSet(
            x="bytes_fraction",
            y="mean",
            text="label",
            source=src,
            x_offset=4,
            y_offset=-16,
            text_font_size="9pt",
            text_color="#444444",
        )
    )
    fig.scatter(
        x="bytes_fraction",
        y="value",
        source=rec,
        marker="star",
        size=20,
        fill_color="#d62728",
        line_color="#d62728",
        legend_label="recommended",
    )
    span = Span(
        location=target,
        dimension="width",
        line_dash="dotted",
        line_color="#d62728",
        line_width=2,
        visible=target is not None,
    )
    fig.add_layout(span)
    fig.add_tools(
        HoverTool(
            renderers=[markers],
            tooltips=[
                ("scan", "@scan"),
                ("bytes", "@bytes_fraction{0.0%}"),
                ("mean", "@mean{0.0000}"),
                ("p5", "@p5{0.0000}"),
                ("median", "@p50{0.0000}"),
                ("p95", "@p95{0.0000}"),
            ],
        )
    )
    fig.legend.location = "bottom_right"
    fig.legend.click_policy = "hide"
    return CurveFigure(fig, src, imgs, rec, span)


def bytes_data(level_bytes: Sequence[int] | np.ndarray) -> dict[str, Any]:
    """Return the columns of :func:`bytes_figure`: scan, bytes, bytes_fraction, label.

    Parameters
    ----------
    level_bytes : sequence of int
        Cumulative bytes at levels 1..S.

    Returns
    -------
    dict of str to array or list

    Examples
    --------
    >>> bytes_data([10, 20, 40])["label"]
    ['25%', '50%', '100%']
    """
    b = np.asarray(level_bytes, np.float64)
    frac = b / b[-1] if len(b) and b[-1] > 0 else np.zeros(len(b))
    return {
        "scan": np.arange(1, len(b) + 1),
        "bytes": b,
        "bytes_fraction": frac,
        "label": [f"{f:.0%}" for f in frac],
    }


class BytesFigure(NamedTuple):
    """A bytes-per-level bar chart and its source of :func:`bytes_data` columns."""

    figure: Any
    source: ColumnDataSource

    def update(self, level_bytes: Sequence[int] | np.ndarray) -> None:
        """Show other byte counts in one ``.data`` assignment.

        Parameters
        ----------
        level_bytes : sequence of int
            Cumulative bytes at levels 1..S.
        """
        self.source.data = bytes_data(level_bytes)


def bytes_figure(
    level_bytes: Sequence[int] | np.ndarray | None = None,
    *,
    title: str | None = None,
    width: int = 640,
    height: int = 260,
) -> BytesFigure:
    """Cumulative bytes read at each scan level, as a fraction of the full bytes.

    Parameters
    ----------
    level_bytes : sequence of int, optional
        Cumulative bytes at levels 1..S (summed over images).
    title : str, optional
        Figure title.
    width, height : int
        Size in pixels.

    Returns
    -------
    BytesFigure
        ``(figure, source)``.

    Examples
    --------
    >>> bf = bytes_figure([6, 14, 47, 100])
    >>> bf.source.data["bytes_fraction"].tolist()
    [0.06, 0.14, 0.47, 1.0]
    """
    src = ColumnDataSource(bytes_data(level_bytes if level_bytes is not None else []))
    fig = figure(
        width=width,
        height=height,
        title=title or "Bytes read per scan level",
        x_axis_label="scan level",
        y_axis_label="fraction of the full bytes",
        tools="save",
        toolbar_location="above",
        y_range=Range1d(start=0, end=1.12),
    )
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    bars = fig.vbar(x="scan", top="bytes_fraction", width=0.8, source=src, fill_alpha=0.7)
    fig.add_layout(
        LabelSet(
            x="scan",
            y="bytes_fraction",
            text="label",
            source=src,
            text_align="center",
            y_offset=3,
            text_font_size="8pt",
        )
    )
    fig.add_tools(
        HoverTool(
            renderers=[bars],
            tooltips=[("scan", "@scan"), ("bytes", "@bytes{0,0}"), ("of full", "@label")],
        )
    )
    fig.xaxis.ticker = list(range(1, 11))
    return BytesFigure(fig, src)
