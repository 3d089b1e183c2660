"""Bokeh figures of training runs and gradient similarity, built from data sources.

Like :mod:`pcr_explore.plots`, every column drawn comes from a
``ColumnDataSource``: :meth:`TrainingFigure.stream` appends one epoch to a
run's line (``source.stream``) and :meth:`TrainingFigure.show` fills every
line from a finished result.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from bokeh.layouts import row
from bokeh.models import (
    AdaptiveTicker,
    ColumnDataSource,
    FactorRange,
    LayoutDOM,
    Range1d,
)
from bokeh.models.annotations import Span
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from .._public import public
from ..storage._atomic import atomic_write
from .gradient import GradientTuneResult
from .result import LevelRun, TrainResult

__all__ = [
    "TrainingFigure",
    "training_figure",
    "run_data",
    "SimilarityFigure",
    "similarity_figure",
    "similarity_data",
    "result_figure",
    "write_html",
]

_COLUMNS = ("epoch", "accuracy", "mbytes", "seconds", "loss", "scan")
_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def run_data(run: LevelRun | None, pipelined: bool = False) -> dict[str, Any]:
    """The columns of one run's line in a :class:`TrainingFigure`.

    Parameters
    ----------
    run : LevelRun or None
        The run (None: empty columns).
    pipelined : bool
        Count ``max(load, compute)`` per epoch in ``seconds``.

    Returns
    -------
    dict of str to list
        ``epoch``, ``accuracy``, ``mbytes`` and ``seconds`` (cumulative bytes
        read and training time by the end of each epoch), ``loss``, and
        ``scan`` (the level each epoch read).

    Examples
    --------
    >>> sorted(run_data(None))
    ['accuracy', 'epoch', 'loss', 'mbytes', 'scan', 'seconds']
    """
    if run is None or not run.epochs:
        return {c: [] for c in _COLUMNS}
    return {
        "epoch": [e.epoch for e in run.epochs],
        "accuracy": [e.val_accuracy for e in run.epochs],
        "mbytes": (run.cumulative_bytes() / 1e6).tolist(),
        "seconds": run.cumulative_seconds(pipelined).tolist(),
        "loss": [e.train_loss for e in run.epochs],
        "scan": [e.scan for e in run.epochs],
    }


@public("pcr_explore.train")
class TrainingFigure(NamedTuple):
    """Accuracy against epoch, megabytes read and seconds; one line per run.

    Attributes
    ----------
    layout : bokeh.models.LayoutDOM
        The three plots side by side.
    figures : tuple of bokeh.plotting.figure
    sources : dict of str to ColumnDataSource
        One per run label, with the columns of :func:`run_data`.
    """

    layout: LayoutDOM
    figures: tuple[Any, ...]
    sources: dict[str, ColumnDataSource]

    def stream(self, run: LevelRun, *, pipelined: bool = False) -> None:
        """Append *run*'s last epoch to its line (the run's earlier epochs are drawn)."""
        src = self.sources[run.label]
        have = len(src.data["epoch"])
        new = run_data(run, pipelined)
        if len(new["epoch"]) <= have:
            return
        src.stream({k: v[have:] for k, v in new.items()})

    def show(self, result: TrainResult, *, pipelined: bool = False) -> None:
        """Draw every run of *result* (replacing what each line held)."""
        for run in result.levels:
            if run.label in self.sources:
                self.sources[run.label].data = run_data(run, pipelined)

    def clear(self) -> None:
        """Empty every line."""
        for src in self.sources.values():
            src.data = run_data(None)


@public("pcr_explore.train")
def training_figure(
    labels: Sequence[str], *, width: int = 340, height: int = 300
) -> TrainingFigure:
    """Three empty plots with one line (and its data source) per run label.

    Parameters
    ----------
    labels : sequence of str
        Run labels (``"scan 1"``, ..., ``"auto"``), in legend order.
    width, height : int
        Size of each plot in pixels; in a notebook the three share the
        width of the output area (``stretch_width``), so none is cut off.

    Returns
    -------
    TrainingFigure

    Examples
    --------
    >>> fig = training_figure(["scan 1", "scan 10"])
    >>> sorted(fig.sources)
    ['scan 1', 'scan 10']
    """
    sources = {label: ColumnDataSource(run_data(None), name=label) for label in labels}
    axes = [
        ("epoch", "epoch", "Validation accuracy per epoch"),
        ("mbytes", "MB read from storage", "... against bytes read"),
        ("seconds", "training seconds (load + compute)", "... against time"),
    ]
    figs: list[Any] = []
    for x, xlabel, title in axes:
        fig = figure(
            width=width,
            height=height,
            min_width=220,
            sizing_mode="stretch_width",
            tools=_TOOLS,
            title=title,
            x_axis_label=xlabel,
            y_axis_label="validation accuracy",
            y_range=Range1d(start=0, end=1.02),
            tooltips=[
                ("epoch", "@epoch"),
                ("scan", "@scan"),
                ("accuracy", "@accuracy{0.000}"),
                ("MB read", "@mbytes{0,0.0}"),
                ("seconds", "@seconds{0.0}"),
            ],
        )
        if x == "epoch":  # whole epochs only
            fig.xaxis.ticker = AdaptiveTicker(min_interval=1, num_minor_ticks=0)
        for k, (label, src) in enumerate(sources.items()):
            color = Category10_10[k % 10]
            fig.line(x, "accuracy", source=src, color=color, line_width=2, legend_label=label)
            fig.scatter(x, "accuracy", source=src, color=color, size=5)
        # the legend above the first plot, off the data (a run may cross any corner);
        # the plots against bytes and time share the colours. A click on a label hides
        # its run.
        fig.legend.click_policy = "hide"
        if not figs:
            legend = fig.legend[0]
            legend.orientation = "horizontal"
            fig.add_layout(legend, "above")
        else:
            fig.legend.visible = False
        figs.append(fig)
    return TrainingFigure(row(*figs, sizing_mode="stretch_width"), tuple(figs), sources)


def similarity_data(result: GradientTuneResult | None) -> dict[str, Any]:
    """The columns of a :class:`SimilarityFigure`'s bars.

    Parameters
    ----------
    result : GradientTuneResult or None
        The measurement (None: empty columns).

    Returns
    -------
    dict of str to list
        ``scan`` (as text), ``mean``, ``lo`` and ``hi`` (mean -/+ one standard
        deviation over batches), ``color`` (the chosen scan in red).

    Examples
    --------
    >>> similarity_data(None)["mean"]
    []
    """
    if result is None:
        return {"scan": [], "mean": [], "lo": [], "hi": [], "color": []}
    scans = [str(k) for k in result.scans]
    mean = np.array([result.similarity[k] for k in result.scans])
    std = np.array([result.similarity_std[k] for k in result.scans])
    return {
        "scan": scans,
        "mean": mean.tolist(),
        "lo": (mean - std).tolist(),
        "hi": (mean + std).tolist(),
        "color": ["#d62728" if k == result.scan else "#1f77b4" for k in result.scans],
    }


@public("pcr_explore.train")
class SimilarityFigure(NamedTuple):
    """Mean gradient cosine similarity per scan, with its spread and the threshold.

    Attributes
    ----------
    figure : bokeh.plotting.figure
    source : ColumnDataSource
        Columns of :func:`similarity_data`.
    threshold : bokeh.models.Span
    """

    figure: Any
    source: ColumnDataSource
    threshold: Span

    def show(self, result: GradientTuneResult | None) -> None:
        """Draw *result* (None: clear)."""
        self.source.data = similarity_data(result)
        self.figure.x_range.factors = self.source.data["scan"]
        if result is not None:
            self.threshold.location = result.threshold


@public("pcr_explore.train")
def similarity_figure(
    result: GradientTuneResult | None = None, *, width: int = 420, height: int = 300
) -> SimilarityFigure:
    """Bars of the gradient similarity per scan; the chosen scan in red.

    Parameters
    ----------
    result : GradientTuneResult, optional
        Drawn at once when given.
    width, height : int
        Size in pixels.

    Returns
    -------
    SimilarityFigure

    Examples
    --------
    >>> fig = similarity_figure()
    >>> fig.source.data["scan"]
    []
    """
    src = ColumnDataSource(similarity_data(None))
    fig = figure(
        width=width,
        height=height,
        tools=_TOOLS,
        x_range=FactorRange(),
        y_range=Range1d(start=-0.05, end=1.05),
        title="Gradient cosine similarity to full quality",
        x_axis_label="scan level",
        y_axis_label="mean cosine similarity",
        tooltips=[("scan", "@scan"), ("similarity", "@mean{0.000}")],
    )
    fig.vbar(x="scan", top="mean", width=0.7, color="color", source=src)
    fig.segment(x0="scan", y0="lo", x1="scan", y1="hi", color="#222222", source=src)
    span = Span(location=0.8, dimension="width", line_color="#555555", line_dash="dashed")
    fig.add_layout(span)
    out = SimilarityFigure(fig, src, span)
    if result is not None:
        out.show(result)
    return out


@public("pcr_explore.train")
def result_figure(result: TrainResult, *, pipelined: bool = False) -> LayoutDOM:
    """Accuracy against epochs, bytes read and training time: one line per run.

    Parameters
    ----------
    result : TrainResult
        What :func:`~pcr_explore.train.train_at_levels` returned.
    pipelined : bool
        Plot the time a pipelined loader would take (reading overlapped with
        compute) instead of the measured one.

    Returns
    -------
    bokeh.models.LayoutDOM
    """
    fig = training_figure([r.label for r in result.levels])
    fig.show(result, pipelined=pipelined)
    return fig.layout


@public("pcr_explore.train")
def write_html(result: TrainResult, path: str | os.PathLike[str]) -> Path:
    """A standalone HTML page of a training run: its table and figure (BokehJS inlined).

    Returns
    -------
    pathlib.Path
        The file written.
    """
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    page = file_html(result_figure(result), INLINE, title="Training at scan levels")
    table = f"<h2>Training at scan levels</h2>{result._repr_html_()}"
    page = page.replace("<body>", f"<body>{table}", 1)
    out = Path(path)
    atomic_write(out, page)
    return out
