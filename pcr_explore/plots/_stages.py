"""Where a read's time went: a bar per stage (waiting for bytes, decoding, batching) per level."""

from __future__ import annotations

from typing import Any, NamedTuple

from bokeh.models import ColumnDataSource, DataRange1d, FactorRange, HoverTool
from bokeh.plotting import figure

from .._public import public
from ..read._stats import ReadStats

__all__ = ["STAGE_COLORS", "StageFigure", "stage_data", "stage_figure"]

#: The stages drawn, in order, and their colours (storage blue, CPU orange and red).
STAGE_COLORS = {"waiting": "#1f77b4", "decode": "#ff7f0e", "batch": "#d62728"}


def stage_data(stats: ReadStats) -> dict[str, list[Any]]:
    """Return the columns of :func:`stage_figure`: one row per level and stage.

    Columns: ``x`` (``("level 3", "decode")``, the nested category),
    ``level``, ``stage``, ``seconds``, ``cpu`` (CPU seconds: decode only,
    else NaN), ``ms_per_image`` (the stage's seconds per image of its level,
    in ms; NaN with no images), ``images`` and ``color``.

    Parameters
    ----------
    stats : ReadStats
        A dataset's (or a PyTorch adapter's) ``stats``.

    Returns
    -------
    dict of str to list

    Examples
    --------
    >>> stats = ReadStats()
    >>> stats.clock(3).waited(0.25); stats.clock(3).decoded(0.5, 0.4)
    >>> d = stage_data(stats)
    >>> d["x"], d["seconds"]
    ([('level 3', 'waiting'), ('level 3', 'decode'), ('level 3', 'batch')], [0.25, 0.5, 0.0])
    """
    cols: dict[str, list[Any]] = {
        k: [] for k in ("x", "level", "stage", "seconds", "cpu", "ms_per_image", "images", "color")
    }
    nan = float("nan")
    for level, s in stats.stages.items():
        for stage, color in STAGE_COLORS.items():
            seconds = float(getattr(s, stage))
            cols["x"].append((f"level {level}", stage))
            cols["level"].append(level)
            cols["stage"].append(stage)
            cols["seconds"].append(seconds)
            cols["cpu"].append(s.decode_cpu if stage == "decode" else nan)
            cols["ms_per_image"].append(1e3 * seconds / s.images if s.images else nan)
            cols["images"].append(s.images)
            cols["color"].append(color)
    return cols


@public("pcr_explore.plots")
class StageFigure(NamedTuple):
    """A bar per read stage and level (:func:`stage_figure`), and its :func:`stage_data` source."""

    figure: Any
    source: ColumnDataSource

    def update(self, stats: ReadStats) -> None:
        """Show other stats: the levels on the axis and the bars, in one ``.data`` assignment.

        Parameters
        ----------
        stats : ReadStats
            A dataset's ``stats``.
        """
        data = stage_data(stats)
        self.figure.x_range.factors = list(data["x"])
        self.source.data = data


@public("pcr_explore.plots")
def stage_figure(
    stats: ReadStats,
    *,
    title: str | None = None,
    width: int = 640,
    height: int = 280,
) -> StageFigure:
    """Seconds a read spent in each stage at each level: a bar per stage, grouped by level.

    ``waiting`` (for bytes that had not arrived), ``decode`` (decoding and
    resizing) and ``batch`` (stacking batches made by the PyTorch adapter),
    as :class:`~pcr_explore.read.ReadStats` defines them, summed over threads
    and DataLoader workers. A tall waiting bar beside a short decode bar: the
    storage sets the pace; the other way round: the CPU does. The hover shows
    the decode's CPU seconds and each stage's milliseconds per image.

    Parameters
    ----------
    stats : ReadStats
        A dataset's ``stats`` (``PCRDataset.stats``, ``PCRIterableDataset.stats``).
    title : str, optional
        Figure title.
    width, height : int
        Size in pixels.

    Returns
    -------
    StageFigure
        ``(figure, source)``; ``update(stats)`` shows other stats.

    Examples
    --------
    >>> stats = ReadStats()
    >>> stats.clock(1).waited(0.2); stats.clock(1).decoded(0.1, 0.1)
    >>> sf = stage_figure(stats)
    >>> sf.figure.x_range.factors
    [('level 1', 'waiting'), ('level 1', 'decode'), ('level 1', 'batch')]
    """
    src = ColumnDataSource(stage_data(stats))
    fig = figure(
        x_range=FactorRange(factors=list(src.data["x"])),
        y_range=DataRange1d(start=0),
        width=width,
        height=height,
        title=title or "Seconds per read stage (summed over threads and workers)",
        y_axis_label="seconds",
        tools="save",
        toolbar_location="above",
    )
    bars = fig.vbar(
        x="x",
        top="seconds",
        width=0.8,
        source=src,
        fill_color="color",
        line_color="color",
        fill_alpha=0.75,
        legend_field="stage",
    )
    fig.add_tools(
        HoverTool(
            renderers=[bars],
            tooltips=[
                ("level", "@level"),
                ("stage", "@stage"),
                ("seconds", "@seconds{0.000}"),
                ("CPU seconds", "@cpu{0.000}"),
                ("ms per image", "@ms_per_image{0.00}"),
                ("images", "@images{0,0}"),
            ],
        )
    )
    fig.xgrid.grid_line_color = None
    fig.xaxis.major_label_orientation = 0.8
    fig.legend.location = "top_left"
    fig.legend.orientation = "horizontal"
    return StageFigure(fig, src)
