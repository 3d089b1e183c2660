"""TrainingExplorer: train at several scan levels and watch the accuracy curves grow."""

from __future__ import annotations

import os
from collections.abc import Sequence

import ipywidgets as w
import numpy as np

from .._checks import check_scans
from .._public import public
from ..quality.tune import TuneResult, tune
from ..read.reader import PCRDataset, open_dataset
from ..train import (
    GradientTuneResult,
    LevelRun,
    ScanSchedule,
    TrainOptions,
    TrainResult,
    default_levels,
    similarity_figure,
    train_at_levels,
    training_figure,
    tune_by_gradient,
)
from ._explorer import Explorer, html_table
from ._static import bar_chart, hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["TrainingExplorer"]

_SIZES = (32, 48, 64, 96, 128, 160, 224)
# 0.0 stands for "no limit": a Dropdown whose value is None shows nothing selected.
_BANDWIDTHS: list[tuple[str, float]] = [
    ("unlimited", 0.0),
    ("200 MB/s", 200e6),
    ("100 MB/s", 100e6),
    ("50 MB/s", 50e6),
    ("20 MB/s", 20e6),
    ("10 MB/s", 10e6),
    ("5 MB/s", 5e6),
]


def _rate_label(bandwidth: float) -> str:
    """A storage speed as a dropdown shows it: three figures, kB/s under 1 MB/s."""
    if bandwidth < 1e6:
        return f"{bandwidth / 1e3:.3g} kB/s"
    return f"{bandwidth / 1e6:.3g} MB/s"


@public("pcr_explore.widgets")
class TrainingExplorer(Explorer):
    """Pick levels, size, epochs and a storage bandwidth; press Train.

    One model per chosen level is trained
    (:func:`~pcr_explore.train.train_at_levels`); after every epoch its
    validation accuracy is streamed into three plots (against epochs, bytes
    read and training time), with the bytes read and time so far above them.
    When training ends, the gradient-similarity tuner
    (:func:`~pcr_explore.train.tune_by_gradient`, on the model trained at the
    highest chosen level) draws its bar chart, and its choice is shown next
    to the MS-SSIM tuner's (:func:`~pcr_explore.quality.tune.tune`) for the same
    training images.

    Parameters
    ----------
    train, val : path or PCRDataset
        Labelled PCR datasets with the same classes.
    scans : sequence of int
        Levels ticked at the start.
    schedule : str, optional
        A curriculum run next to the ticked levels (``"ramp:1-10:1-3"``, see
        :class:`~pcr_explore.train.ScanSchedule`): its readout says the bytes
        it has saved so far against reading every epoch in full.
    size : int
        Training image side at the start (one of 32, 48, 64, 96, 128, 160, 224).
    epochs : int
        Epochs per level at the start.
    bandwidth : float, optional
        Storage bandwidth at the start (bytes/s; None: unlimited).
    batch_size : int
    seed : int
    threshold : float
        Gradient-similarity threshold.
    tune_batches : int
        Batches the gradient tuner averages.
    target : float
        MS-SSIM target of the image-quality tuner.
    sample : int
        Images the MS-SSIM tuner measures.
    workers : int
        Decoding threads (and the MS-SSIM tuner's processes).
    result : TrainResult, optional
        A finished :func:`~pcr_explore.train.train_at_levels` run on these
        datasets, shown at once (see :meth:`show_result`): the explorer opens
        with its curves, table and tuners, and the controls set to its
        levels, size, epochs and bandwidth; Train reruns with what they say
        then.

    Attributes
    ----------
    level_boxes : dict of int to ipywidgets.Checkbox
    size, epochs, bandwidth : ipywidgets controls
    train_button : ipywidgets.Button
    progress : ipywidgets.HTML
        Bytes read and training time so far.
    table : ipywidgets.HTML
        The finished result's table.
    comparison : ipywidgets.HTML
        The gradient tuner's choice next to the MS-SSIM tuner's.
    figure : pcr_explore.train.TrainingFigure
        The accuracy plots of the latest run and their data sources.
    similarity : pcr_explore.train.SimilarityFigure
    result : TrainResult or None
    gradient : GradientTuneResult or None
    quality : TuneResult or None

    Examples
    --------
    >>> from pcr_explore.widgets.training_explorer import TrainingExplorer
    >>> ex = TrainingExplorer("train.pcr", "val.pcr")
    >>> ex  # a notebook shows the explorer: then press Train
    <pcr_explore.widgets.TrainingExplorer object at 0x...>

    A run made in code opens drawn:

    >>> from pcr_explore.train import train_at_levels
    >>> result = train_at_levels("train.pcr", val="val.pcr", scans=(1, 10), size=64, epochs=2)
    >>> ex = TrainingExplorer("train.pcr", "val.pcr", result=result)
    >>> sorted(ex.figure.sources), ex.figure.sources["scan 1"].data["epoch"]
    (['scan 1', 'scan 10'], [1, 2])
    """

    def __init__(
        self,
        train: str | os.PathLike[str] | PCRDataset,
        val: str | os.PathLike[str] | PCRDataset,
        *,
        scans: Sequence[int] | None = None,
        schedule: str | None = None,
        size: int = 64,
        epochs: int = 5,
        bandwidth: float | None = None,
        batch_size: int = 32,
        seed: int = 0,
        threshold: float = 0.8,
        tune_batches: int = 10,
        target: float = 0.95,
        sample: int = 32,
        workers: int = 2,
        result: TrainResult | None = None,
    ) -> None:
        super().__init__()
        self.train_set = train if isinstance(train, PCRDataset) else open_dataset(str(train))
        self.val_set = val if isinstance(val, PCRDataset) else open_dataset(str(val))
        self.batch_size, self.seed, self.workers = batch_size, seed, workers
        self.threshold, self.tune_batches = threshold, tune_batches
        self.target, self.sample = target, sample
        n = self.train_set.num_scans
        scans = (
            default_levels(n) if scans is None else check_scans(scans, n, where=self.train_set.url)
        )
        self.level_boxes = {
            k: w.Checkbox(
                value=k in scans, description=str(k), indent=False, layout=w.Layout(width="44px")
            )
            for k in range(1, n + 1)
        }
        self.size = w.Dropdown(
            options=sorted({*_SIZES, size}),
            value=size,
            description="size",
            layout=w.Layout(width="150px"),
        )
        self.epochs = w.IntSlider(
            value=epochs, min=1, max=max(30, epochs), description="epochs", continuous_update=False
        )
        options = list(_BANDWIDTHS)
        if bandwidth is not None and bandwidth not in dict(_BANDWIDTHS).values():
            options.append((_rate_label(bandwidth), bandwidth))
        self.bandwidth = w.Dropdown(
            options=options,
            value=bandwidth or 0.0,
            description="storage",
            layout=w.Layout(width="220px"),
        )
        self.schedule = w.Text(
            value=str(schedule or ""),
            placeholder="e.g. ramp:1-10:1-3",
            description="curriculum",
            tooltip="one more run whose level changes per epoch: ramp:START-END:FROM-TO "
            "or steps:EPOCH=LEVEL,...",
            layout=w.Layout(width="260px"),
        )
        self.train_button = w.Button(description="Train", button_style="primary", icon="play")
        self.progress = w.HTML("<i>Pick levels and press Train.</i>")
        self.table = w.HTML()
        self.comparison = w.HTML()
        self.figure = training_figure(
            [f"scan {k}" for k in scans] + (["schedule"] if schedule else []) or ["scan 1"]
        )
        self.plot_box = w.Box([self._plot(self.figure.layout)])
        self.similarity = similarity_figure()
        self.result: TrainResult | None = None
        self.gradient: GradientTuneResult | None = None
        self.quality: TuneResult | None = None
        self._runs: dict[str, LevelRun] = {}
        self._readout: list[tuple[str, str]] = []
        self.view = w.VBox(
            [
                w.HBox([w.HTML("<b>scan levels</b>&nbsp;"), *self.level_boxes.values()]),
                w.HBox(
                    [self.size, self.epochs, self.bandwidth, self.schedule, self.train_button],
                    layout=w.Layout(flex_flow="row wrap"),
                ),
                self.progress,
                self.plot_box,
                w.HBox([self._plot(self.similarity.figure), self.comparison]),
                self.table,
                self.errors,
            ]
        )
        self.train_button.on_click(self._guarded(lambda _: self.train()))
        if result is not None:
            self.show_result(result)

    # -- actions -------------------------------------------------------------------

    def chosen_scans(self) -> list[int]:
        """The ticked levels, in order."""
        return [k for k, box in self.level_boxes.items() if box.value]

    def train(self) -> TrainResult:
        """Train at the ticked levels (what the Train button does), then tune.

        Returns
        -------
        TrainResult

        Raises
        ------
        ValueError
            If no level is ticked.
        """
        scans = self.chosen_scans()
        text = self.schedule.value.strip()
        curriculum = ScanSchedule.parse(text) if text else None
        if curriculum is not None:
            curriculum.check(self.train_set.num_scans)
        if not scans and curriculum is None:
            raise ValueError("tick at least one scan level, or give a curriculum")
        labels = [f"scan {k}" for k in scans] + (["schedule"] if curriculum else [])
        self.train_button.disabled = True
        try:
            self._new_figure(labels)
            self.result = train_at_levels(
                self.train_set,
                val=self.val_set,
                scans=scans or None,
                schedule=curriculum,
                size=int(self.size.value),
                epochs=int(self.epochs.value),
                seed=self.seed,
                bandwidth=self.bandwidth.value or None,
                workers=self.workers,
                progress=False,
                on_epoch=self._on_epoch,
                options=TrainOptions(batch_size=self.batch_size),
            )
            self.table.value = self.result._repr_html_()
            self._done(self.result)
            if scans:
                self._tune(scans)
        finally:
            self.train_button.disabled = False
        return self.result

    def show_result(self, result: TrainResult, *, tune: bool = True) -> None:
        """Draw a finished run as if Train had made it: curves, readout, table, tuners.

        The controls are set to the run's levels, size, epochs, bandwidth and
        curriculum, so pressing Train repeats it unless they are changed.

        Parameters
        ----------
        result : TrainResult
            What :func:`~pcr_explore.train.train_at_levels` returned for this
            explorer's datasets.
        tune : bool
            Also run the gradient tuner (on the model trained at the highest
            level) and the MS-SSIM tuner, as Train does when it ends. Needs
            the result's models.

        Raises
        ------
        ValueError
            If the result's classes are not the training set's, or a level is
            outside the dataset's.
        """
        if tuple(result.classes) != tuple(self.train_set.classes):
            raise ValueError(
                f"the result was trained on classes {list(result.classes)}, "
                f"not this explorer's {list(self.train_set.classes)}"
            )
        scans = [r.scan for r in result.levels if isinstance(r.scan, int)]
        check_scans(scans, self.train_set.num_scans, where=self.train_set.url)
        for k, box in self.level_boxes.items():
            box.value = k in scans
        self._set_controls(result)
        self._new_figure([r.label for r in result.levels])
        for run in result.levels:  # each line drawn whole, the readout left at the last
            self._on_epoch(run)
        self.result = result
        self.batch_size, self.seed = result.batch_size, result.seed
        self.table.value = result._repr_html_()
        self._done(result)
        if tune and scans and f"scan {max(scans)}" in result.models:
            self._tune(scans)

    def _set_controls(self, result: TrainResult) -> None:
        if result.size not in self.size.options:
            self.size.options = sorted({*self.size.options, result.size})
        self.size.value = result.size
        self.epochs.max = max(self.epochs.max, result.epochs)
        self.epochs.value = result.epochs
        bw = result.bandwidth or 0.0
        if bw not in dict(self.bandwidth.options).values():
            self.bandwidth.options = [*self.bandwidth.options, (_rate_label(bw), bw)]
        self.bandwidth.value = bw
        self.schedule.value = result.schedule or ""

    def _new_figure(self, labels: list[str]) -> None:
        """Empty plots with a line per label, in place of the last run's; tuners cleared."""
        self._plots = [(m, f) for m, f in self._plots if f is not self.figure.layout]
        self.figure = training_figure(labels)
        self.plot_box.children = [self._plot(self.figure.layout)]
        self._runs = {}
        self.table.value = self.comparison.value = ""
        self.similarity.show(None)

    def _on_epoch(self, run: LevelRun) -> None:
        self._runs[run.label] = run
        self.figure.stream(run)
        last = run.epochs[-1]
        mb = sum(r.bytes_read for r in self._runs.values()) / 1e6
        secs = sum(float(r.cumulative_seconds()[-1]) for r in self._runs.values())
        self._readout = [
            ("training", f"{run.label}, epoch {last.epoch} of {self.epochs.value}"),
            ("validation accuracy", f"{last.val_accuracy:.3f}"),
            ("read from storage so far", f"{mb:,.1f} MB"),
            ("training time so far", f"{secs:,.1f} s (load + compute)"),
        ]
        if run.scan == "schedule":
            full = self.train_set.bytes_at(None) * len(run.epochs)
            saved = full - run.bytes_read
            self._readout.append(
                (
                    "curriculum: bytes saved so far",
                    f"{saved / 1e6:,.1f} MB ({saved / full:.0%} of reading every epoch in full; "
                    f"this epoch read level {last.scan})",
                )
            )
        self.progress.value = html_table(self._readout)

    def _done(self, result: TrainResult) -> None:
        """The readout of a finished run: what was trained, not the last epoch seen."""
        if not self._readout:
            return
        runs = ", ".join(r.label for r in result.levels)
        self._readout[0] = ("trained", f"{runs}: {result.epochs} epochs each, done")
        self.progress.value = html_table(self._readout)

    def _tune(self, scans: list[int]) -> None:
        assert self.result is not None  # train() sets it first
        model = self.result.models[f"scan {max(scans)}"]
        full = self.train_set.num_scans
        self.gradient = tune_by_gradient(
            self.train_set,
            model=model,
            scans=sorted({*scans, full}),
            batches=self.tune_batches,
            batch_size=self.batch_size,
            threshold=self.threshold,
            size=int(self.size.value),
            seed=self.seed,
            workers=self.workers,
        )
        self.similarity.show(self.gradient)
        if self.quality is None:  # independent of the training size: measure once
            self.quality = tune(
                self.train_set,
                target=self.target,
                sample=self.sample,
                workers=self.workers,
                progress=False,  # the widget shows its own state
            )
        g, q = self.gradient, self.quality
        self.comparison.value = html_table(
            [
                (
                    "gradient similarity",
                    f"scan {g.scan} ({g.bytes_fraction[g.scan]:.0%} of the bytes; "
                    f"model trained at scan {max(scans)}, {g.size} px, "
                    f"threshold {g.threshold:g})",
                ),
                (
                    "MS-SSIM tuner",
                    f"scan {q.scan} ({q.bytes_fraction:.0%} of the bytes; mean MS-SSIM "
                    f"&ge; {q.target:g} over {q.sample_size} images)",
                ),
            ]
        )

    # -- static picture --------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The accuracy curves, the readouts and the similarity bars, drawn with Pillow."""
        runs = list(self._runs.values())
        chart = line_chart(
            [(r.label, np.arange(1, len(r.epochs) + 1), r.val_accuracy) for r in runs],
            title="Validation accuracy per epoch" if runs else "No training yet: press Train",
            xlabel="epoch",
            ylabel="accuracy",
        )
        lines = [f"{k}: {v}" for k, v in self._readout]
        if self.gradient is not None:
            g = self.gradient
            lines += [
                "",
                f"gradient similarity: scan {g.scan} ({g.bytes_fraction[g.scan]:.0%} of the bytes)",
                "  " + ", ".join(f"scan {k}: {g.similarity[k]:.3f}" for k in g.scans),
            ]
        if self.quality is not None:
            q = self.quality
            lines.append(
                f"MS-SSIM >= {q.target:g}: scan {q.scan} ({q.bytes_fraction:.0%} of the bytes)"
            )
        parts = [hstack([chart, text_panel(lines, 440)])]
        if self.gradient is not None:
            g = self.gradient
            parts.append(
                bar_chart(
                    [str(k) for k in g.scans],
                    [("cosine similarity", np.clip([g.similarity[k] for k in g.scans], 0, None))],
                    title=f"Gradient similarity to full quality (chosen: scan {g.scan})",
                    ylabel="similarity",
                )
            )
        return to_jpeg(vstack(parts))
