"""Bytes read per scan level, and reading speed per level, as bar charts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from bokeh.core.enums import SizingModeType
from bokeh.layouts import row
from bokeh.models import (
    ColumnDataSource,
    FactorRange,
    HoverTool,
    NumeralTickFormatter,
    Range1d,
)
from bokeh.models.annotations import LabelSet, Whisker
from bokeh.plotting import figure

from .._public import public
from ..read.throughput import ReadingReport

__all__ = ["BytesFigure", "bytes_figure", "bytes_data", "reading_data", "reading_figure"]


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


@public("pcr_explore.plots")
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


@public("pcr_explore.plots")
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
    bars = _fraction_bars(fig, src, "scan", width=0.8, alpha=0.7, font="8pt")
    fig.add_tools(
        HoverTool(
            renderers=[bars],
            tooltips=[("scan", "@scan"), ("bytes", "@bytes{0,0}"), ("of full", "@label")],
        )
    )
    fig.xaxis.ticker = list(range(1, 11))
    return BytesFigure(fig, src)


def reading_data(report: ReadingReport) -> dict[str, Any]:
    """Return the per-level columns of :func:`reading_figure`.

    Columns: ``level`` (a category: "1", "2", ..., "full"), ``scan``,
    ``bytes_fraction``, ``bytes``, ``images_per_s`` (median pass),
    ``low``/``high`` (slowest and fastest pass), ``speedup`` (I/O-bound,
    against full quality) and ``label`` (bytes as a percentage).

    Parameters
    ----------
    report : ReadingReport
        From :func:`~pcr_explore.read.throughput.measure_reading`.

    Returns
    -------
    dict of str to list

    Examples
    --------
    >>> from pcr_explore.read.throughput import LevelReading, ReadingReport
    >>> levels = (LevelReading(1, 8, 100, 0.01), LevelReading(10, 8, 400, 0.04))
    >>> rep = ReadingReport(levels, 1e8, 224)
    >>> d = reading_data(rep)
    >>> d["level"], d["bytes_fraction"], d["images_per_s"]
    (['1', 'full'], [0.25, 1.0], [800.0, 200.0])
    """
    full = report.full.scan
    levels = ["full" if r.scan == full else str(r.scan) for r in report.levels]
    rates = [r.images_per_s for r in report.levels]

    def rate(r: Any, pick: Any) -> float:
        secs = r.pass_seconds or (r.seconds,)
        return float(r.images / pick(secs)) if pick(secs) > 0 else float("inf")

    return {
        "level": levels,
        "scan": [r.scan for r in report.levels],
        "bytes": [r.bytes_read for r in report.levels],
        "bytes_fraction": [report.fraction(r) for r in report.levels],
        "images_per_s": rates,
        "low": [rate(r, max) for r in report.levels],
        "high": [rate(r, min) for r in report.levels],
        "speedup": [report.io_seconds(report.full) / report.io_seconds(r) for r in report.levels],
        "label": [f"{report.fraction(r):.0%}" for r in report.levels],
    }


@public("pcr_explore.plots")
def reading_figure(
    report: ReadingReport,
    *,
    width: int = 320,
    height: int = 300,
    sizing_mode: SizingModeType | None = "stretch_width",
) -> Any:
    """Bytes read and images per second at each level, side by side.

    Left: the bytes one epoch reads at each level, as a share of reading at
    full quality (what an I/O-bound loop saves). Right: images read and
    decoded per second, the median pass with whiskers from the slowest to
    the fastest pass (what a decode-bound loop gains).

    Parameters
    ----------
    report : ReadingReport
        From :func:`~pcr_explore.read.throughput.measure_reading`.
    width, height : int
        Size of each of the two plots, in pixels (*width* is the least
        width under ``stretch_width``).
    sizing_mode : str or None
        Bokeh's sizing mode; the default shares the page's width.

    Returns
    -------
    bokeh.layouts.Row
        The two figures, sharing the level axis.

    Examples
    --------
    >>> from pcr_explore.read.throughput import LevelReading, ReadingReport
    >>> levels = (LevelReading(1, 8, 100, 0.01), LevelReading(10, 8, 400, 0.04))
    >>> rep = ReadingReport(levels, 1e8, 224)
    >>> fig = reading_figure(rep)
    >>> [f.title.text for f in fig.children]  # doctest: +NORMALIZE_WHITESPACE
    ['Bytes read per epoch (share of full quality)',
     'Images per second (read + decode at 224 px)']
    """
    src = ColumnDataSource(reading_data(report))
    levels = list(src.data["level"])
    size = "as stored" if report.size is None else f"{report.size} px"
    # the two plots alike but for their titles and y ranges; they share the level axis
    panel: dict[str, Any] = dict(
        width=width,
        min_width=width,
        height=height,
        sizing_mode=sizing_mode,
        x_axis_label="scan level",
        tools="save",
        toolbar_location=None,
    )
    left = figure(
        x_range=FactorRange(factors=levels),
        title="Bytes read per epoch (share of full quality)",
        y_range=Range1d(start=0, end=1.15),
        **panel,
    )
    bars = _fraction_bars(left, src, "level", width=0.7, alpha=0.75, font="10pt")
    left.add_tools(
        HoverTool(
            renderers=[bars],
            tooltips=[
                ("level", "@level"),
                ("bytes", "@bytes{0,0}"),
                ("I/O speed-up", "@speedup{0.00}x"),
            ],
        )
    )
    top = max([h for h in src.data["high"] if np.isfinite(h)] + [1.0])
    right = figure(
        x_range=left.x_range,
        title=f"Images per second (read + decode at {size})",
        y_range=Range1d(start=0, end=top * 1.12),
        **panel,
    )
    rate = right.vbar(
        x="level",
        top="images_per_s",
        width=0.7,
        source=src,
        fill_color="#ff7f0e",
        fill_alpha=0.75,
        line_color="#ff7f0e",
    )
    right.add_layout(Whisker(base="level", lower="low", upper="high", source=src))
    right.add_tools(
        HoverTool(
            renderers=[rate],
            tooltips=[
                ("level", "@level"),
                ("images/s", "@images_per_s{0,0}"),
                ("passes", "@low{0,0} to @high{0,0}"),
            ],
        )
    )
    for f in (left, right):
        f.xgrid.grid_line_color = None
    return row(left, right, sizing_mode=sizing_mode)


def _fraction_bars(
    fig: Any, src: ColumnDataSource, x: str, *, width: float, alpha: float, font: str
) -> Any:
    """Bars of ``bytes_fraction`` per *x*, labelled above with ``label``, on a percent axis."""
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    bars = fig.vbar(x=x, top="bytes_fraction", width=width, source=src, fill_alpha=alpha)
    fig.add_layout(
        LabelSet(
            x=x,
            y="bytes_fraction",
            text="label",
            source=src,
            text_align="center",
            y_offset=3,
            text_font_size=font,
        )
    )
    return bars
