"""Bokeh figures the widgets need beyond :mod:`pcr_explore.plots`.

Each builder returns the figure and the named ``ColumnDataSource`` objects a
widget updates, always by replacing ``source.data`` in one assignment, so a
change crosses the comm as a single patch.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, DataRange1d, FactorRange, HoverTool, Range1d
from bokeh.models.annotations import Span
from bokeh.plotting import figure

from ._static import PALETTE

__all__ = [
    "scan_curve_figure",
    "ratio_figure",
    "policy_bars_figure",
    "timeline_figure",
    "TIMELINE_COLORS",
]

_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def scan_curve_figure(
    metric_label: str, *, width: int = 460, height: int = 320
) -> tuple[figure, dict[str, ColumnDataSource]]:
    """Bytes fraction vs quality for one image, the dataset's band, the current level.

    Sources (all columns start empty):

    ``image``
        ``x`` bytes fraction, ``y`` metric, ``scan``, ``bytes`` per level.
    ``current``
        the same columns, one row: the level shown.
    ``dataset``
        ``x``, ``mean``, ``lo``, ``hi``: the dataset's mean and quantile band.
    """
    src = {
        "image": ColumnDataSource({"x": [], "y": [], "scan": [], "bytes": []}),
        "current": ColumnDataSource({"x": [], "y": [], "scan": [], "bytes": []}),
        "dataset": ColumnDataSource({"x": [], "mean": [], "lo": [], "hi": []}),
    }
    fig = figure(
        width=width,
        height=height,
        tools=_TOOLS,
        x_range=Range1d(start=0, end=1.02),
        title=f"Bytes vs {metric_label}",
        x_axis_label="fraction of the full image's bytes",
        y_axis_label=metric_label,
    )
    fig.varea(
        "x",
        "lo",
        "hi",
        source=src["dataset"],
        fill_color="#9ecae1",
        fill_alpha=0.35,
        legend_label="dataset p5-p95",
    )
    fig.line(
        "x",
        "mean",
        source=src["dataset"],
        line_dash="dashed",
        line_color="#3182bd",
        line_width=2,
        legend_label="dataset mean",
    )
    fig.line(
        "x",
        "y",
        source=src["image"],
        line_color=PALETTE[1],
        line_width=2,
        legend_label="this image",
    )
    pts = fig.scatter("x", "y", source=src["image"], size=7, color=PALETTE[1])
    fig.scatter(
        "x",
        "y",
        source=src["current"],
        size=16,
        marker="circle",
        fill_alpha=0,
        line_color="#d62728",
        line_width=3,
        legend_label="level shown",
    )
    fig.add_tools(
        HoverTool(
            renderers=[pts],
            tooltips=[
                ("scan", "@scan"),
                ("bytes", "@bytes{0,0}"),
                ("fraction", "@x{0.000}"),
                (metric_label, "@y{0.0000}"),
            ],
        )
    )
    fig.legend.location = "bottom_right"
    fig.legend.click_policy = "hide"
    fig.toolbar.logo = None
    return fig, src


def ratio_figure(
    *, width: int = 520, height: int = 340
) -> tuple[figure, dict[str, ColumnDataSource], Span]:
    """Compression ratio vs sparsity: analytic lines, measured points, the current sparsity.

    Sources:

    ``lines``
        ``xs``, ``ys`` (one list per codec), ``codec``, ``color``: analytic ratios.
    ``measured``
        ``x``, ``y``, ``codec``, ``color``: ratios of real encodes.
    ``current``
        ``x``, ``y``, ``codec``, ``color``: each codec's ratio at the current sparsity.

    The returned ``Span`` is the vertical line at the current sparsity (move
    it through its ``location``).
    """
    src = {
        "lines": ColumnDataSource({"xs": [], "ys": [], "codec": [], "color": []}),
        "measured": ColumnDataSource({"x": [], "y": [], "codec": [], "color": []}),
        "current": ColumnDataSource({"x": [], "y": [], "codec": [], "color": []}),
    }
    fig = figure(
        width=width,
        height=height,
        tools=_TOOLS,
        y_axis_type="log",
        x_range=Range1d(start=0, end=1),
        title="Compression ratio vs sparsity",
        x_axis_label="sparsity (fraction of zeros)",
        y_axis_label="raw bytes / encoded bytes",
    )
    lines = fig.multi_line(
        "xs", "ys", source=src["lines"], line_color="color", line_width=2, legend_field="codec"
    )
    fig.scatter(
        "x",
        "y",
        source=src["measured"],
        marker="triangle",
        size=9,
        fill_color="white",
        line_color="color",
        line_width=2,
        legend_label="measured (real encodes)",
    )
    cur = fig.scatter("x", "y", source=src["current"], size=10, color="color")
    fig.add_tools(
        HoverTool(renderers=[lines, cur], tooltips=[("codec", "@codec"), ("ratio", "$y{0.00}")])
    )
    span = Span(location=0.0, dimension="height", line_color="#444444", line_dash="dotted")
    fig.add_layout(span)
    fig.legend.location = "top_left"
    fig.legend.ncols = 3
    fig.legend.label_text_font_size = "8pt"
    fig.legend.spacing = 0
    fig.toolbar.logo = None
    return fig, src, span


def policy_bars_figure(
    policies: list[str], *, width: int = 460, height: int = 340
) -> tuple[figure, dict[str, ColumnDataSource]]:
    """Swap time and stall per policy, as horizontal bars (milliseconds).

    Source ``bars``: ``policy``, ``swap_ms``, ``stall_ms``, ``label``. When
    the policies change, set ``figure.y_range.factors`` too.
    """
    src = {"bars": ColumnDataSource({"policy": [], "swap_ms": [], "stall_ms": [], "label": []})}
    fig = figure(
        width=width,
        height=height,
        tools="save,reset",
        y_range=FactorRange(factors=list(reversed(policies))),
        x_range=DataRange1d(start=0),
        title="One training step: swap time and stall per policy",
        x_axis_label="milliseconds per step",
    )
    fig.hbar(
        y="policy",
        right="swap_ms",
        height=0.8,
        source=src["bars"],
        color="#c6dbef",
        legend_label="swap time (codec + copy)",
    )
    fig.hbar(
        y="policy",
        right="stall_ms",
        height=0.45,
        source=src["bars"],
        color="#d62728",
        legend_label="stall added to the step",
    )
    fig.add_tools(
        HoverTool(
            tooltips=[
                ("policy", "@policy"),
                ("swap", "@swap_ms{0.00} ms"),
                ("stall", "@stall_ms{0.00} ms"),
                ("", "@label"),
            ]
        )
    )
    fig.add_layout(fig.legend[0], "below")
    fig.legend.orientation = "horizontal"
    fig.toolbar.logo = None
    return fig, src


TIMELINE_COLORS = {
    "compute": "#9ecae1",
    "compress": "#ff7f0e",
    "decompress": "#2ca02c",
    "copy": "#9467bd",
    "stall": "#d62728",
}


def timeline_figure(
    *, width: int = 1000, height: int = 220
) -> tuple[figure, dict[str, ColumnDataSource]]:
    """The events of one step on the compute and copy streams.

    Source ``events``: the columns of
    :meth:`pcr_explore.swap.SimResult.timeline` with ``start``/``end`` in
    milliseconds, plus ``lane`` (the y factor) and ``color``.
    """
    cols = ("tensor", "name", "phase", "stream", "kind", "codec", "start", "end", "lane", "color")
    src = {"events": ColumnDataSource({c: [] for c in cols})}
    fig = figure(
        width=width,
        height=height,
        tools="xpan,xwheel_zoom,reset,save",
        y_range=FactorRange(factors=["copy", "compute"]),
        title="Timeline of the step (forward, then backward)",
        x_axis_label="milliseconds from the start of the step",
    )
    fig.hbar(
        legend_field="kind",
        y="lane",
        left="start",
        right="end",
        height=0.7,
        color="color",
        line_color=None,
        source=src["events"],
    )
    fig.add_tools(
        HoverTool(
            tooltips=[
                ("", "@kind @name (@phase)"),
                ("codec", "@codec"),
                ("ms", "@start{0.000} - @end{0.000}"),
            ]
        )
    )
    fig.add_layout(fig.legend[0], "right")
    fig.toolbar.logo = None
    return fig, src
