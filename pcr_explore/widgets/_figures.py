"""Bokeh figures the widgets need beyond :mod:`pcr_explore.plots`.

Each builder returns the figure and the named ``ColumnDataSource`` objects a
widget updates, by replacing ``source.data`` in one assignment (one patch
crosses the comm) or, for a fixed number of rows, by patching the columns in
place. Every figure stretches to the width of its box.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from bokeh.models import (
    CDSView,
    ColumnDataSource,
    DataRange1d,
    FactorRange,
    GroupFilter,
    HoverTool,
    NumeralTickFormatter,
    Range1d,
)
from bokeh.models.annotations import Span
from bokeh.plotting import figure

__all__ = [
    "ratio_figure",
    "policy_bars_figure",
    "timeline_figure",
    "TIMELINE_COLORS",
    "update_source",
    "fit_range",
]

_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def ratio_figure(*, height: int = 330) -> tuple[figure, dict[str, ColumnDataSource], Span]:
    """Compression ratio vs sparsity: analytic lines, measured points, the current sparsity.

    Sources:

    ``lines``
        ``xs``, ``ys`` (one list per codec), ``codec``, ``color``: analytic ratios.
    ``measured``
        ``x``, ``y``, ``codec``, ``color``: ratios of real encodes.
    ``current``
        ``x``, ``y``, ``codec``, ``color``: each codec's ratio at the current sparsity.

    The returned ``Span`` is the vertical line at the current sparsity (move
    it through its ``location``). The measured points' legend entry is the
    one whose renderer draws ``measured`` (its label can name the size measured).
    """
    src = {
        "lines": ColumnDataSource({"xs": [], "ys": [], "codec": [], "color": []}),
        "measured": ColumnDataSource({"x": [], "y": [], "codec": [], "color": []}),
        "current": ColumnDataSource({"x": [], "y": [], "codec": [], "color": []}),
    }
    fig = figure(
        height=height,
        min_width=320,
        sizing_mode="stretch_width",
        tools=_TOOLS,
        y_axis_type="log",
        x_range=Range1d(start=0, end=1),
        y_range=DataRange1d(),
        title="Compression ratio vs sparsity",
        x_axis_label="sparsity (share of zeros)",
        y_axis_label="raw bytes / encoded bytes",
    )
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    lines = fig.multi_line(
        "xs", "ys", source=src["lines"], line_color="color", line_width=2, legend_field="codec"
    )
    measured = fig.scatter(
        "x",
        "y",
        source=src["measured"],
        marker="triangle",
        size=9,
        fill_color="white",
        line_color="color",
        line_width=2,
        legend_label="measured",
    )
    # What moves with the slider is drawn on the overlay layer (see scan_curve_figure).
    cur = fig.scatter("x", "y", source=src["current"], size=10, color="color", level="overlay")
    cast(DataRange1d, fig.y_range).renderers = [lines, measured]
    fig.add_tools(
        HoverTool(renderers=[lines, cur], tooltips=[("codec", "@codec"), ("ratio", "$y{0.00}")])
    )
    span = Span(
        location=0.0,
        dimension="height",
        line_color="#444444",
        line_dash="dotted",
        level="overlay",
    )
    fig.add_layout(span)
    fig.legend.location = "top_left"
    fig.legend.ncols = 2
    fig.legend.label_width = 56  # the longest codec name: no label runs into the next swatch
    fig.legend.label_text_font_size = "11px"
    fig.legend.spacing = 0
    fig.legend.background_fill_alpha = 0.75
    fig.toolbar.logo = None
    return fig, src, span


def policy_bars_figure(
    policies: list[str], *, height: int = 330
) -> tuple[figure, dict[str, ColumnDataSource]]:
    """Swap time and stall per policy, as horizontal bars (milliseconds).

    Source ``bars``: ``policy``, ``swap_ms``, ``stall_ms``, ``label``. When
    the policies change, set ``figure.y_range.factors`` too, and fit the x
    range with :func:`fit_range`. One tooltip per bar: the stall bar lies
    inside its swap bar, and only the swap bar answers. The bars are drawn on
    the overlay layer, so new values repaint only them.
    """
    src = {"bars": ColumnDataSource({"policy": [], "swap_ms": [], "stall_ms": [], "label": []})}
    fig = figure(
        height=height,
        min_width=300,
        sizing_mode="stretch_width",
        tools="save,reset",
        y_range=FactorRange(factors=list(reversed(policies))),
        x_range=Range1d(start=0, end=1),
        # short enough for half of a 1280 px screen; the axis says where the numbers come from
        title="Swap time and stall per step",
        x_axis_label="ms per step (simulated for the device)",
    )
    swap = fig.hbar(
        y="policy",
        right="swap_ms",
        height=0.8,
        source=src["bars"],
        color="#c6dbef",
        level="overlay",
    )
    fig.hbar(
        y="policy",
        right="stall_ms",
        height=0.45,
        source=src["bars"],
        color="#d62728",
        level="overlay",
    )
    # legend swatches from unseen twins, as in scan_curve_figure
    for label, color in (("swap (codec + copy)", "#c6dbef"), ("stall added", "#d62728")):
        fig.scatter(
            x=[float("nan")],
            y=[float("nan")],
            marker="square",
            size=12,
            color=color,
            legend_label=label,
        )
    fig.add_tools(
        HoverTool(
            renderers=[swap],
            tooltips=[
                ("policy", "@policy"),
                ("swap", "@swap_ms{0.00} ms"),
                ("stall", "@stall_ms{0.00} ms"),
                ("", "@label"),
            ],
        )
    )
    fig.add_layout(fig.legend[0], "below")
    fig.legend.orientation = "horizontal"
    fig.legend.label_text_font_size = "11px"
    fig.toolbar.logo = None
    return fig, src


TIMELINE_COLORS = {
    "compute": "#9ecae1",
    "compress": "#ff7f0e",
    "decompress": "#2ca02c",
    "copy": "#9467bd",
    "stall": "#d62728",
}


def timeline_figure(*, height: int = 210) -> tuple[figure, dict[str, ColumnDataSource]]:
    """The events of one step on the compute and copy streams.

    Source ``events``: ``name``, ``phase``, ``kind``, ``codec`` of
    :meth:`pcr_explore.swap.SimResult.timeline`, ``start``/``end`` in
    milliseconds, and ``lane`` (its stream, the y factor). One renderer per event kind
    filters the source, so the legend is fixed and a new step is one
    assignment without regrouping.
    """
    cols = ("name", "phase", "kind", "codec", "start", "end", "lane")
    src = {"events": ColumnDataSource({c: [] for c in cols})}
    fig = figure(
        height=height,
        min_width=320,
        sizing_mode="stretch_width",
        tools="xpan,xwheel_zoom,reset,save",
        y_range=FactorRange(factors=["copy", "compute"]),
        title="Simulated timeline of the step (forward, then backward)",
        x_axis_label="milliseconds from the start of the step",
    )
    renderers: list[Any] = [
        fig.hbar(
            y="lane",
            left="start",
            right="end",
            height=0.7,
            color=color,
            line_color=None,
            source=src["events"],
            view=CDSView(filter=GroupFilter(column_name="kind", group=kind)),
            legend_label=kind,
        )
        for kind, color in TIMELINE_COLORS.items()
    ]
    fig.add_tools(
        HoverTool(
            renderers=renderers,
            tooltips=[
                ("", "@kind @name (@phase)"),
                ("codec", "@codec"),
                ("ms", "@start{0.000} - @end{0.000}"),
            ],
        )
    )
    fig.add_layout(fig.legend[0], "right")
    fig.legend.label_text_font_size = "11px"
    fig.toolbar.logo = None
    return fig, src


def update_source(source: ColumnDataSource, data: Mapping[str, Sequence[Any]]) -> None:
    """Show *data* in *source*: patch the changed columns in place when the rows match.

    While a slider drags, the same rows (policies, codecs) change only some
    values: a patch of those columns is a smaller message than new data and
    BokehJS updates its arrays in place. Other columns or another row count
    replace the data in one assignment.
    """
    old = source.data
    n = len(next(iter(data.values()), []))
    same_rows = set(old) == set(data) and all(len(old[c]) == n for c in data)
    if not same_rows or n == 0:
        source.data = dict(data)
        return
    changed = {c: list(v) for c, v in data.items() if list(old[c]) != list(v)}
    if changed:
        source.patch({c: [(slice(0, n), v)] for c, v in changed.items()})


def fit_range(rng: Range1d, top: float, pad: float = 1.08) -> None:
    """Move a range's end to fit *top*, only when it no longer fits well.

    The end changes when *top* passes it or falls under 60% of it, so a
    drag that moves the bars a little keeps the axis (and everything drawn
    on the plot's primary layer) still.
    """
    end = rng.end if isinstance(rng.end, (int, float)) else 0.0
    if top > end or top < 0.6 * end:
        rng.end = max(top, 1e-9) * pad
