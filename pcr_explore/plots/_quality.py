"""Quality against bytes read, one point per scan level, over a sample of images."""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import numpy as np
from bokeh.core.enums import SizingModeType
from bokeh.models import ColumnDataSource, DataRange1d, HoverTool, NumeralTickFormatter
from bokeh.models.annotations import LabelSet, Span
from bokeh.plotting import figure

from .._public import public
from ..quality import QualityCurve
from ..quality.tune import DEFAULT_STATISTIC
from ._scales import axis_label, drawable, level_label_offsets

__all__ = [
    "CurveFigure",
    "quality_figure",
    "curve_data",
    "images_data",
    "recommended_data",
    "target_location",
]

_STATISTICS = ("mean", "p5", "p50", "p95")
_CURVE_COLUMNS = ("scan", "label", "label_dx", "bytes_fraction", *_STATISTICS)
_PADDING = 0.06  # of the x axis's span, split between its ends: the last marker is not cut
_STATISTIC_NAMES = {"mean": "mean", "p5": "5th percentile"}


def curve_data(curve: QualityCurve | None, scale: str = "value") -> dict[str, Any]:
    """Return the per-level columns of a :class:`CurveFigure`'s ``source``.

    Columns: ``scan``, ``label`` (the level's number) and ``label_dx`` (its
    sideways shift in pixels where levels crowd, see
    :func:`~pcr_explore.plots._scales.level_label_offsets`),
    ``bytes_fraction``, ``mean``, ``p5``, ``p50``, ``p95`` (empty when
    *curve* is None); identical-image values are left out
    (:func:`~pcr_explore.plots._scales.drawable`).

    Parameters
    ----------
    curve : QualityCurve or None
    scale : {"value", "db"}
        How the values are drawn.

    Returns
    -------
    dict of str to array or list

    Examples
    --------
    >>> from pcr_explore.quality import QualityCurve
    >>> c = QualityCurve.from_values(np.array([[0.8, 1.0]]), np.array([[40, 100]]))
    >>> d = curve_data(c)
    >>> d["label"], d["label_dx"].tolist(), d["bytes_fraction"].tolist(), d["mean"].tolist()
    (['1', '2'], [0.0, 0.0], [0.4, 1.0], [0.8, 1.0])
    >>> curve_data(c, "db")["mean"].round(3).tolist()
    [6.99, nan]
    """
    if curve is None:
        return {c: (np.zeros(0) if c != "label" else []) for c in _CURVE_COLUMNS}
    m = curve.metric
    x = np.asarray(curve.bytes_fraction, np.float64)
    pad = _PADDING / 2 * (x.max() - x.min()) if len(x) else 0.0
    span = (float(x.min()) - pad, float(x.max()) + pad) if len(x) else None
    return {
        "scan": np.asarray(curve.scans, np.int64),
        "label": [str(int(k)) for k in curve.scans],
        "label_dx": level_label_offsets(x, x_range=span),
        "bytes_fraction": x,
        **{s: drawable(curve.statistic(s), m, scale) for s in _STATISTICS},
    }


def images_data(
    curve: QualityCurve | None, max_images: int = 64, scale: str = "value"
) -> dict[str, Any]:
    """Return columns ``xs``, ``ys``, ``name`` of the faint per-image lines.

    Parameters
    ----------
    curve : QualityCurve or None
    max_images : int
        Lines for at most this many images (the first in sample order).
    scale : {"value", "db"}
        How the values are drawn.

    Returns
    -------
    dict of str to list
        One entry per image: its bytes fractions, its drawn values and its name.
    """
    if curve is None or len(curve.per_image) == 0 or max_images <= 0:
        return {"xs": [], "ys": [], "name": []}
    pi = curve.per_image
    n = min(len(pi), max_images)
    b = pi.bytes[:n].astype(np.float64)
    frac = b / b[:, -1:]
    vals = drawable(pi.values[:n], curve.metric, scale)
    return {
        "xs": [frac[i] for i in range(n)],
        "ys": [vals[i] for i in range(n)],
        "name": list(pi.names[:n]),
    }


def recommended_data(
    curve: QualityCurve | None,
    scan: int | None,
    statistic: str = DEFAULT_STATISTIC,
    scale: str = "value",
) -> dict[str, Any]:
    """Return the columns of the recommended-level marker, on the *statistic*'s curve.

    Parameters
    ----------
    curve : QualityCurve or None
    scan : int or None
        The recommended level.
    statistic : {"p5", "mean"}
        The statistic the recommendation was made on: the star sits on its line.
    scale : {"value", "db"}
        How the values are drawn.

    Returns
    -------
    dict of str to list
        ``scan``, ``bytes_fraction``, ``value``, ``label``: one row, or none
        when *scan* is None or outside the curve.

    Examples
    --------
    >>> from pcr_explore.quality import QualityCurve
    >>> c = QualityCurve.from_values(np.array([[0.8, 1.0], [0.6, 1.0]]), np.array([[40, 100]] * 2))
    >>> [round(recommended_data(c, 1, s)["value"][0], 4) for s in ("mean", "p5")]
    [0.7, 0.61]
    """
    if curve is None or scan is None or not 1 <= scan <= curve.num_scans:
        return {"scan": [], "bytes_fraction": [], "value": [], "label": []}
    k = scan - 1
    values = drawable(curve.statistic(statistic), curve.metric, scale)
    return {
        "scan": [int(scan)],
        "bytes_fraction": [float(curve.bytes_fraction[k])],
        "value": [float(values[k])],
        "label": [f"scan {scan}"],
    }


def target_location(target: float | None, metric: str, scale: str = "value") -> float | None:
    """Return where the target rule is drawn (None: hidden).

    Examples
    --------
    >>> round(target_location(0.99, "mssim", "db"), 6)
    20.0
    >>> target_location(None, "mssim") is None
    True
    """
    if target is None:
        return None
    v = float(drawable([target], metric, scale)[0])
    return v if np.isfinite(v) else None


@public("pcr_explore.plots")
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
        statistic: str = DEFAULT_STATISTIC,
        scale: str = "value",
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
        statistic : {"p5", "mean"}
            The statistic the recommendation follows.
        scale : {"value", "db"}
            How the values are drawn.
        max_images : int
            Per-image lines drawn.
        """
        self.source.data = curve_data(curve, scale)
        self.images.data = images_data(curve, max_images, scale)
        self.recommended.data = recommended_data(curve, recommended, statistic, scale)
        metric = curve.metric if curve is not None else "mssim"
        loc = target_location(target, metric, scale)
        self.target.location = loc
        self.target.visible = loc is not None
        if curve is not None:
            self.figure.yaxis.axis_label = axis_label(curve.metric, scale)


def _draw_levels(fig: Any, src: ColumnDataSource, imgs: ColumnDataSource) -> Any:
    """The per-image lines, the p5-p95 band, the median, p5 and mean lines and the level markers.

    Returns the level markers' renderer (for the hover tool).
    """
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
    fig.line(
        x="bytes_fraction",
        y="p5",
        source=src,
        line_dash="dotted",
        line_color="#08306b",
        line_width=2,
        legend_label=_STATISTIC_NAMES["p5"],
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
            text_align="center",
            x_offset="label_dx",
            y_offset=-20,
            text_font_size="9pt",
            text_color="#444444",
        )
    )
    return markers


@public("pcr_explore.plots")
def quality_figure(
    curve: QualityCurve | None = None,
    *,
    target: float | None = None,
    recommended: int | None = None,
    statistic: str = DEFAULT_STATISTIC,
    scale: str = "value",
    title: str | None = None,
    width: int = 640,
    height: int = 400,
    sizing_mode: SizingModeType | None = None,
    max_images: int = 64,
) -> CurveFigure:
    """Quality against bytes read, one point per scan level.

    Draws the metric's mean (line and level markers labelled with the scan
    number), its median (dashed), its 5th percentile (dotted), the p5-p95
    band over the sample, faint per-image lines, the target (a horizontal
    rule) and the recommended level (a star on the line of the statistic it
    was chosen by).

    Parameters
    ----------
    curve : QualityCurve, optional
        What to show; None builds an empty figure for a widget to fill.
    target : float, optional
        The quality target.
    recommended : int, optional
        The recommended scan level.
    statistic : {"p5", "mean"}
        The statistic behind the recommendation.
    scale : {"value", "db"}
        ``"db"`` draws SSIM and MS-SSIM as decibels of their loss
        (:func:`~pcr_explore.plots.to_db`), which spreads the upper levels out.
    title : str, optional
        Figure title.
    width, height : int
        Size in pixels (*width* is the minimum under ``stretch_width``).
    sizing_mode : str, optional
        Bokeh's sizing mode, e.g. ``"stretch_width"`` to fill a notebook cell.
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
        sizing_mode=sizing_mode,
        title=title or "Quality per scan level",
        x_axis_label="bytes read (% of the full images)",
        y_axis_label=axis_label(metric, scale),
        tools="pan,wheel_zoom,box_zoom,reset,save",
        toolbar_location="above",
    )
    if sizing_mode is not None:
        fig.min_width = min(width, 320)
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    cast(DataRange1d, fig.x_range).range_padding = _PADDING
    src = ColumnDataSource(curve_data(curve, scale), name="levels")
    imgs = ColumnDataSource(images_data(curve, max_images, scale), name="images")
    rec = ColumnDataSource(
        recommended_data(curve, recommended, statistic, scale), name="recommended"
    )

    markers = _draw_levels(fig, src, imgs)
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
    loc = target_location(target, metric, scale)
    span = Span(
        location=loc,
        dimension="width",
        line_dash="dotted",
        line_color="#d62728",
        line_width=2,
        visible=loc is not None,
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
