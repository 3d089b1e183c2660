"""BudgetExplorer: drag the storage bandwidth and see what each scan level costs an epoch."""

from __future__ import annotations

import html
import os
import textwrap
from typing import Any

import ipywidgets as w
import numpy as np
from bokeh.models import ColumnDataSource
from bokeh.models.annotations import Span
from bokeh.plotting import figure

from .._public import public
from ..budgeting import BudgetReport, budget, format_bandwidth
from ..budgeting._html import render_details
from ..budgeting._text import choices_line
from ..read.sources import LevelSource
from ..train.throttle import parse_bandwidth
from ._explorer import Explorer
from ._static import line_chart, text_panel, to_jpeg, vstack

__all__ = ["BudgetExplorer"]

_ROW = w.Layout(flex_flow="row wrap", align_items="center", width="100%")


@public("pcr_explore.widgets")
class BudgetExplorer(Explorer):
    """How many bytes training needs, re-priced live at any storage bandwidth.

    Shows a :class:`~pcr_explore.BudgetReport`: per scan level the epoch's
    reading time at the chosen bandwidth and its decoding time on this
    machine (the slower sets the pace), the recommendation in one sentence,
    and the report's table. Dragging the bandwidth measures nothing: the
    report is re-priced (:meth:`~pcr_explore.BudgetReport.reprice`).

    Parameters
    ----------
    source : path or LevelSource
        What to budget (ignored when *report* is given).
    report : BudgetReport, optional
        A report already made by :func:`~pcr_explore.budget`: shown as it is.
    bandwidth : float or str
        The starting bandwidth ("20MB/s"), unless the report has one.
    **budget_options
        Passed to :func:`~pcr_explore.budget` when there is no report
        (``val``, ``sample``, ``scans``, ``size``, ``train_epochs``, ...).

    Attributes
    ----------
    bandwidth : ipywidgets.FloatLogSlider
        MB/s, from 0.1 to 10,000.
    readout : ipywidgets.HTML
        The recommendation at the bandwidth shown, and each criterion's level
        (the only place the verdict is stated).
    table : ipywidgets.HTML
        The report's table and notes at that bandwidth.
    shown : BudgetReport
        The report at the bandwidth shown.

    Examples
    --------
    >>> from pcr_explore.widgets import BudgetExplorer
    >>> ex = BudgetExplorer("photos.pcr", bandwidth="20MB/s")
    >>> ex.bandwidth.value = 500  # MB/s: nothing is measured again
    >>> ex.shown.bandwidth
    500000000.0
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | LevelSource | None = None,
        *,
        report: BudgetReport | None = None,
        bandwidth: float | str = "20MB/s",
        **budget_options: Any,
    ) -> None:
        super().__init__()
        bw = parse_bandwidth(bandwidth)
        if report is None:
            if source is None:
                raise ValueError("give a source to budget, or report=")
            report = budget(source, bandwidth=bw, **budget_options)
        self.report = report
        start = report.bandwidth or bw
        self.bandwidth = w.FloatLogSlider(
            value=start / 1e6,
            base=10,
            min=-1,
            max=4,
            step=0.01,
            description="MB/s",
            readout_format=".3g",
            continuous_update=True,
            layout=w.Layout(width="420px"),
        )
        self.readout = w.HTML()
        self.table = w.HTML(layout=w.Layout(overflow="auto", width="100%"))
        self._read = ColumnDataSource({"scan": [], "seconds": []})
        self.plot = self._plot(self._figure())
        self.view = w.VBox(
            [
                w.HBox([self.bandwidth, self.presentation], layout=_ROW),
                self.status,
                self.plot,
                self.readout,
                self.table,
                self.errors,
            ],
            layout=w.Layout(width="100%"),
        )
        self.bandwidth.observe(self._guarded(self._update), names="value")
        self.shown = report
        self._update()

    def _figure(self) -> Any:
        r = self.report
        scans = [x.scan for x in r.levels]
        fig = figure(
            title=f"Input time of one epoch per scan level ({r.images:,} images)",
            x_axis_label="scan level",
            y_axis_label="seconds per epoch",
            sizing_mode="stretch_width",
            height=300,
            tools="hover,save",
            tooltips=[("level", "@scan"), ("seconds", "@seconds{0.000}")],
        )
        decode = ColumnDataSource({"scan": scans, "seconds": [r.decode_seconds(k) for k in scans]})
        decoding = f"decoding, {r.workers} cores (measured)"
        fig.line(
            "scan", "seconds", source=decode, color="#9a6700", line_width=2, legend_label=decoding
        )
        reading = "reading at the bandwidth (bytes / bandwidth)"
        fig.line(
            "scan",
            "seconds",
            source=self._read,
            color="#1f77b4",
            line_width=2,
            legend_label=reading,
        )
        fig.scatter("scan", "seconds", source=self._read, color="#1f77b4", size=6)
        fig.add_layout(
            Span(
                location=r.recommended, dimension="height", line_dash="dashed", line_color="#cf222e"
            )
        )
        fig.xaxis.ticker = scans
        # above the plot, not on it: inside, it covered the start of the curves
        legend = fig.legend[0]
        legend.orientation = "horizontal"
        legend.click_policy = "hide"
        fig.add_layout(legend, "above")
        return fig

    def _update(self, change: Any = None) -> None:
        self.shown = self.report.reprice(float(self.bandwidth.value) * 1e6)
        s = self.shown
        scans = [x.scan for x in s.levels]
        self._read.data = {"scan": scans, "seconds": [s.read_seconds(k) for k in scans]}
        bw = format_bandwidth(float(s.bandwidth or 0))
        below = format_bandwidth(s.crossover(s.recommended))
        self.readout.value = (
            f"<b>Level {s.recommended} of {s.num_scans}</b> at {bw}: {s.sentence}.<br>"
            f"<span class='pcr-note'>{html.escape(choices_line(s))}; reading is the "
            f"bottleneck at this level below {below}.</span>"
        )
        self.table.value = render_details(s)

    def snapshot(self) -> bytes:
        """The epoch-time chart and the recommendation, drawn with Pillow (a JPEG)."""
        s = self.shown
        x = np.array([r.scan for r in s.levels], float)
        chart = line_chart(
            [
                ("reading", x, np.array([s.read_seconds(int(k)) or 0.0 for k in x])),
                ("decoding", x, np.array([s.decode_seconds(int(k)) for k in x])),
            ],
            title=f"Input time of one epoch at {format_bandwidth(float(s.bandwidth or 0))}",
            xlabel="scan level",
            ylabel="seconds",
            legend_at="top_left",
            xfmt="{:.0f}",
        )
        parts = [f"level {s.recommended} of {s.num_scans}", *s.sentence.split("; ")]
        lines = [line for p in parts for line in textwrap.wrap(p, 70)]
        return to_jpeg(vstack([chart, text_panel(lines, chart.width)]))
