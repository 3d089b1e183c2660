"""BudgetExplorer: drag the storage bandwidth and see what each scan level costs an epoch."""

from __future__ import annotations

import html
import math
import os
import textwrap
from typing import Any

import numpy as np
import traitlets as t

from .._public import public
from ..budgeting import BudgetReport, budget, format_bandwidth
from ..budgeting._html import render_details
from ..budgeting._text import choices_line
from ..read.sources import LevelSource
from ..train.throttle import parse_bandwidth
from ._demo import static_text
from ._module_widget import ModuleWidget, module_text
from ._static import line_chart, text_panel, to_jpeg, vstack

__all__ = ["BudgetExplorer", "epoch_levels"]

# The bandwidth slider, in MB/s: 0.1 to 10,000 on a log scale.
_LOWEST, _HIGHEST = 0.1, 10_000.0


def epoch_levels(report: BudgetReport) -> dict[str, Any]:
    """What the page needs to price an epoch at any bandwidth, per scan level.

    Keys: ``scans``, ``bytes`` (an epoch's reads at each level: the page
    divides them by the bandwidth), ``decode`` (an epoch's decoding seconds
    on the report's cores), ``recommended``, ``images`` and ``workers``.
    """
    scans = [x.scan for x in report.levels]
    return {
        "scans": scans,
        "bytes": [int(x.bytes) for x in report.levels],
        "decode": [float(report.decode_seconds(k)) for k in scans],
        "recommended": int(report.recommended),
        "images": int(report.images),
        "workers": int(report.workers),
    }


@public("pcr_explore.widgets")
class BudgetExplorer(ModuleWidget):
    """How many bytes training needs, re-priced live at any storage bandwidth.

    Shows a :class:`~pcr_explore.BudgetReport`: per scan level the epoch's
    reading time at the chosen bandwidth and its decoding time on this
    machine (the slower sets the pace), the recommendation in one sentence,
    and the report's table. Dragging the bandwidth measures nothing: the
    page redraws the reading line itself (bytes / bandwidth) and the kernel
    re-prices the report (:meth:`~pcr_explore.BudgetReport.reprice`) for
    the sentence and the table. The front end is one ES module
    (``static/budget_explorer.js``, on anywidget).

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
    bandwidth : float
        The storage bandwidth in MB/s, from 0.1 to 10,000 (a traitlet: set
        ``ex.bandwidth = 500`` from code, or observe it).
    presentation : bool
        Larger text for a projector.
    readout : str
        The recommendation at the bandwidth shown, and each criterion's level
        (the only place the verdict is stated), as HTML.
    table : str
        The report's table and notes at that bandwidth, as HTML.
    levels : dict
        What the page prices an epoch with (:func:`epoch_levels`).
    shown : BudgetReport
        The report at the bandwidth shown.

    Examples
    --------
    >>> from pcr_explore.widgets import BudgetExplorer
    >>> ex = BudgetExplorer("photos.pcr", bandwidth="20MB/s")
    >>> ex.bandwidth = 500  # MB/s: nothing is measured again
    >>> ex.shown.bandwidth
    500000000.0
    """

    _esm = module_text("budget_explorer.js")
    _css = static_text("explorer.css") + static_text("budget_explorer.css")

    bandwidth = t.Float(20.0).tag(sync=True)
    levels = t.Dict().tag(sync=True)
    readout = t.Unicode("").tag(sync=True)
    table = t.Unicode("").tag(sync=True)

    def __init__(
        self,
        source: str | os.PathLike[str] | LevelSource | None = None,
        *,
        report: BudgetReport | None = None,
        bandwidth: float | str = "20MB/s",
        **budget_options: Any,
    ) -> None:
        bw = parse_bandwidth(bandwidth)
        if report is None:
            if source is None:
                raise ValueError("give a source to budget, or report=")
            report = budget(source, bandwidth=bw, **budget_options)
        self.report = report
        self.shown = report
        start = report.bandwidth or bw
        super().__init__(bandwidth=start / 1e6, levels=epoch_levels(report))
        self._update()
        self.observe(self._guarded(self._update), names="bandwidth")
        self.observe(lambda _: self._changed(), names="presentation")

    @t.validate("bandwidth")
    def _valid_bandwidth(self, proposal: Any) -> float:
        v = float(proposal["value"])
        if not math.isfinite(v):
            raise t.TraitError(f"the bandwidth must be a number of MB/s, got {v}")
        return min(_HIGHEST, max(_LOWEST, v))

    def _update(self, change: Any = None) -> None:
        self.shown = self.report.reprice(float(self.bandwidth) * 1e6)
        s = self.shown
        bw = format_bandwidth(float(s.bandwidth or 0))
        below = format_bandwidth(s.crossover(s.recommended))
        with self.hold_sync():
            self.readout = (
                f"<b>Level {s.recommended} of {s.num_scans}</b> at {bw}: "
                f"{html.escape(s.sentence)}.<br>"
                f"<span class='pcr-note'>{html.escape(choices_line(s))}; reading is the "
                f"bottleneck at this level below {below}.</span>"
            )
            self.table = render_details(s)

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
