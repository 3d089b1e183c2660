"""TrainingExplorer: train at several scan levels and watch the accuracy curves grow."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from typing import Any

import traitlets as t
from PIL import Image, ImageDraw

from .._checks import check_scans
from .._public import public
from ..quality.tune import TuneResult, tune
from ..read.reader import PCRDataset, open_dataset
from ..storage._units import format_rate
from ..train import (
    GradientTuneResult,
    LevelRun,
    ScanSchedule,
    TrainOptions,
    TrainResult,
    default_levels,
    train_at_levels,
    tune_by_gradient,
)
from ..train.result import _fmt
from ._demo import static_text
from ._module_widget import ModuleWidget, module_text
from ._static import PALETTE, _Axes, _font, hstack, text_panel, to_jpeg, vstack

__all__ = ["TrainingExplorer"]

_SIZES = (32, 48, 64, 96, 128, 160, 224)
# 0.0 stands for "no limit" (a picker needs a value to show "unlimited" as chosen).
_BANDWIDTHS = (0.0, 200e6, 100e6, 50e6, 20e6, 10e6, 5e6)
_HINT = "Pick levels and press Train."


def _rate_label(bandwidth: float) -> str:
    """A storage speed as the picker, the caption and the readouts show it."""
    return "unlimited" if not bandwidth else format_rate(bandwidth)


def _run_state(label: str, run: LevelRun | None = None) -> dict[str, Any]:
    """One run's line: per epoch its accuracy, MB and seconds read so far, and level read."""
    if run is None or not run.epochs:
        return {"label": label, "epoch": [], "accuracy": [], "mbytes": [], "seconds": [],
                "scan": []}  # fmt: skip
    return {
        "label": label,
        "epoch": [int(e.epoch) for e in run.epochs],
        "accuracy": [float(e.val_accuracy) for e in run.epochs],
        "mbytes": [float(b) for b in run.cumulative_bytes() / 1e6],
        "seconds": [float(s) for s in run.cumulative_seconds()],
        "scan": [int(e.scan) for e in run.epochs],
    }


def result_table(result: TrainResult) -> dict[str, Any]:
    """The finished run's table: caption, column heads and each run's row, as text."""
    rows = result.rows()
    rate = "unthrottled" if result.bandwidth is None else format_rate(result.bandwidth)
    caption = (
        f"{result.train_images} training images at {result.size} px, {result.epochs} epochs, "
        f"{result.model}, seed {result.seed}, storage {rate}; validation at full quality"
    )
    return {
        "caption": caption,
        "columns": list(rows[0]) if rows else [],
        "rows": [[_fmt(k, v) for k, v in row.items()] for row in rows],
    }


def similarity_state(g: GradientTuneResult, trained_at: int) -> dict[str, Any]:
    """The gradient tuner's bars: mean and spread per level, the chosen level, the threshold."""
    return {
        "scans": [int(k) for k in g.scans],
        "mean": [float(g.similarity[k]) for k in g.scans],
        "std": [float(g.similarity_std[k]) for k in g.scans],
        "chosen": int(g.scan),
        "threshold": float(g.threshold),
        "title": f"Gradient similarity to full quality (model trained at scan {trained_at})",
    }


@public("pcr_explore.widgets")
class TrainingExplorer(ModuleWidget):
    """Pick levels, size, epochs and a storage bandwidth; press Train.

    One model per chosen level is trained
    (:func:`~pcr_explore.train.train_at_levels`); after every epoch its
    validation accuracy joins three plots (against epochs, bytes read and
    training time), with the bytes read and time so far above them. When
    training ends, the gradient-similarity tuner
    (:func:`~pcr_explore.train.tune_by_gradient`, on the model trained at the
    highest chosen level) draws its bar chart, and its choice is shown next
    to the MS-SSIM tuner's (:func:`~pcr_explore.quality.tune.tune`) for the same
    training images.

    The front end is one ES module (``static/training_explorer.js``, on
    anywidget) that draws the plots and bars itself: it runs in JupyterLab,
    Notebook 7, VS Code, Colab and marimo with nothing fetched from a network.

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
    scans : list of int
        The ticked levels (traitlets: set ``explorer.scans = [1, 5]`` from
        code, or observe it); :attr:`num_scans` is the dataset's.
    size : int
        Training image side, one of :attr:`sizes`.
    epochs : int
        Epochs per level (1 to :attr:`max_epochs`).
    bandwidth : float
        Storage bandwidth in bytes/s (0: unlimited), one of
        :attr:`bandwidths` (``[label, value]`` pairs, the picker's choices;
        a new value joins them).
    schedule : str
        The curriculum (empty: none).
    running : bool
        A training run is under way (Train is disabled meanwhile).
    runs : list of dict
        One line per run of the latest training, in legend order: its
        ``label`` and per epoch ``epoch``, ``accuracy``, ``mbytes`` and
        ``seconds`` (read and spent so far) and ``scan`` (the level read).
    run_epochs : int
        Epochs per run of the latest training (the epoch axis's length).
    progress : list of [str, str]
        Readouts: what is training, its accuracy, bytes read and time so far.
    table : dict
        The finished run's table: ``caption``, ``columns``, ``rows``.
    similarity : dict
        The gradient tuner's bars (``scans``, ``mean``, ``std``, ``chosen``,
        ``threshold``, ``title``); empty before it runs.
    comparison : list of [str, str]
        The gradient tuner's choice next to the MS-SSIM tuner's.
    presentation : bool
        Larger text for a projector.
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
    >>> [(r["label"], r["epoch"]) for r in ex.runs]
    [('scan 1', [1, 2]), ('scan 10', [1, 2])]
    """

    _esm = module_text("training_explorer.js")
    _css = static_text("explorer.css") + static_text("training_explorer.css")

    num_scans = t.Int(1).tag(sync=True)
    scans = t.List(t.Int()).tag(sync=True)
    sizes = t.List(t.Int()).tag(sync=True)
    size = t.Int(64).tag(sync=True)
    epochs = t.Int(5, min=1).tag(sync=True)
    max_epochs = t.Int(30).tag(sync=True)
    bandwidths: t.List[Any] = t.List().tag(sync=True)
    bandwidth = t.Float(0.0, min=0.0).tag(sync=True)
    schedule = t.Unicode("").tag(sync=True)
    running = t.Bool(False).tag(sync=True)
    runs = t.List(t.Dict()).tag(sync=True)
    run_epochs = t.Int(0).tag(sync=True)
    progress: t.List[Any] = t.List().tag(sync=True)
    table = t.Dict().tag(sync=True)
    similarity = t.Dict().tag(sync=True)
    comparison: t.List[Any] = t.List().tag(sync=True)

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
        train_set = train if isinstance(train, PCRDataset) else open_dataset(str(train))
        self.train_set = train_set
        self.val_set = val if isinstance(val, PCRDataset) else open_dataset(str(val))
        self.batch_size, self.seed, self.workers = batch_size, seed, workers
        self.threshold, self.tune_batches = threshold, tune_batches
        self.target, self.sample = target, sample
        n = train_set.num_scans
        scans = default_levels(n) if scans is None else check_scans(scans, n, where=train_set.url)
        self.result: TrainResult | None = None
        self.gradient: GradientTuneResult | None = None
        self.quality: TuneResult | None = None
        self._runs: dict[str, LevelRun] = {}
        super().__init__(
            num_scans=n, scans=sorted(set(scans)), sizes=sorted({*_SIZES, size}), size=size,
            max_epochs=max(30, epochs), epochs=epochs,
            bandwidths=[[_rate_label(b), b] for b in _BANDWIDTHS],
            schedule=str(schedule or ""),
        )  # fmt: skip
        self.bandwidth = float(bandwidth or 0.0)
        self._lines([f"scan {k}" for k in scans] + (["schedule"] if schedule else []), epochs)
        self.on_msg(self._message)
        # what the saved picture shows: the picture follows it
        self.observe(
            lambda _: self._changed(),
            names=["presentation", "runs", "progress", "bandwidth", "similarity", "comparison"],
        )
        if result is not None:
            self.show_result(result)

    # -- the controls' values ----------------------------------------------------------

    @t.validate("scans")
    def _valid_scans(self, proposal: Any) -> list[int]:
        try:
            return sorted(set(check_scans(proposal["value"], self.num_scans,
                                          where=self.train_set.url)))  # fmt: skip
        except ValueError as exc:
            raise t.TraitError(str(exc)) from exc

    @t.validate("size")
    def _valid_size(self, proposal: Any) -> int:
        size = int(proposal["value"])
        if size < 8:
            raise t.TraitError(f"the training image side must be at least 8 px, got {size}")
        if size not in self.sizes:
            self.sizes = sorted({*self.sizes, size})
        return size

    @t.validate("epochs")
    def _valid_epochs(self, proposal: Any) -> int:
        epochs = int(proposal["value"])
        self.max_epochs = max(self.max_epochs, epochs)
        return epochs

    @t.validate("bandwidth")
    def _valid_bandwidth(self, proposal: Any) -> float:
        bw = float(proposal["value"] or 0.0)
        if bw not in [b for _, b in self.bandwidths]:
            self.bandwidths = [*self.bandwidths, [_rate_label(bw), bw]]
        return bw

    @property
    def bandwidth_label(self) -> str:
        """The storage bandwidth as the picker shows it (``"unlimited"``, ``"731 kB/s"``)."""
        return _rate_label(self.bandwidth)

    def _message(self, _: Any, content: Any, buffers: Any) -> None:
        """The page's Train button: a message, not a trait (a press is an event, not a state)."""
        if isinstance(content, dict) and content.get("event") == "train" and not self.running:
            self._guarded(self.train)()

    # -- actions -------------------------------------------------------------------

    def chosen_scans(self) -> list[int]:
        """The ticked levels, in order."""
        return sorted(self.scans)

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
        text = self.schedule.strip()
        curriculum = ScanSchedule.parse(text) if text else None
        if curriculum is not None:
            curriculum.check(self.train_set.num_scans)
        if not scans and curriculum is None:
            raise ValueError("tick at least one scan level, or give a curriculum")
        labels = [f"scan {k}" for k in scans] + (["schedule"] if curriculum else [])
        self.running = True
        try:
            self._lines(labels, int(self.epochs))
            self.result = train_at_levels(
                self.train_set,
                val=self.val_set,
                scans=scans or None,
                schedule=curriculum,
                size=int(self.size),
                epochs=int(self.epochs),
                seed=self.seed,
                bandwidth=self.bandwidth or None,
                workers=self.workers,
                progress=False,
                on_epoch=self._on_epoch,
                options=TrainOptions(batch_size=self.batch_size),
            )
            self.table = result_table(self.result)
            self._done(self.result)
            if scans:
                self._tune(scans)
        finally:
            self.running = False
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
        with self.hold_sync():
            self.scans = scans
            self.size, self.epochs = result.size, result.epochs
            self.bandwidth = result.bandwidth or 0.0
            self.schedule = result.schedule or ""
            self._lines([r.label for r in result.levels], result.epochs)
            for run in result.levels:  # each line drawn whole, the readout left at the last
                self._on_epoch(run)
            self.result = result
            self.batch_size, self.seed = result.batch_size, result.seed
            self.table = result_table(result)
            self._done(result)
        if tune and scans and f"scan {max(scans)}" in result.models:
            self._tune(scans)

    def _lines(self, labels: list[str], epochs: int) -> None:
        """Empty lines, one per label, in place of the last run's; table and tuners cleared."""
        self._runs = {}
        with self.hold_sync():
            self.runs = [_run_state(label) for label in labels]
            self.run_epochs = epochs
            self.table, self.similarity, self.comparison = {}, {}, []

    def _on_epoch(self, run: LevelRun) -> None:
        self._runs[run.label] = run
        self.runs = [
            _run_state(r["label"], self._runs.get(r["label"])) if r["label"] == run.label else r
            for r in self.runs
        ]
        last = run.epochs[-1]
        mb = sum(r.bytes_read for r in self._runs.values()) / 1e6
        secs = sum(float(r.cumulative_seconds()[-1]) for r in self._runs.values())
        rows = [
            ["training", f"{run.label}, epoch {last.epoch} of {self.run_epochs}"],
            ["validation accuracy", f"{last.val_accuracy:.3f}"],
            ["read from storage so far", f"{mb:,.1f} MB"],
            ["training time so far", f"{secs:,.1f} s (load + compute)"],
        ]
        if run.scan == "schedule":
            full = self.train_set.bytes_at(None) * len(run.epochs)
            saved = full - run.bytes_read
            rows.append(
                [
                    "curriculum: bytes saved so far",
                    f"{saved / 1e6:,.1f} MB ({saved / full:.0%} of reading every epoch in full; "
                    f"this epoch read level {last.scan})",
                ]
            )
        self.progress = rows

    def _done(self, result: TrainResult) -> None:
        """The readout of a finished run: what was trained, not the last epoch seen."""
        if not self._runs:
            return
        runs = ", ".join(r.label for r in result.levels)
        epochs = f"{result.epochs} epoch{'s' if result.epochs != 1 else ''}"
        self.progress = [
            ["trained", f"{runs}: {epochs} each, done"],
            *self.progress[1:],
        ]

    def _tune(self, scans: list[int]) -> None:
        if self.result is None:
            raise RuntimeError("nothing trained to tune")
        top = max(scans)
        model = self.result.models[f"scan {top}"]
        full = self.train_set.num_scans
        with self.busy(f"measuring the gradient similarity of the model trained at scan {top}"):
            self.gradient = tune_by_gradient(
                self.train_set,
                model=model,
                scans=sorted({*scans, full}),
                batches=self.tune_batches,
                batch_size=self.batch_size,
                threshold=self.threshold,
                size=int(self.size),
                seed=self.seed,
                workers=self.workers,
            )
            self.similarity = similarity_state(self.gradient, top)
        if self.quality is None:  # independent of the training size: measure once
            with self.busy("measuring MS-SSIM against full quality"):
                self.quality = tune(
                    self.train_set,
                    target=self.target,
                    sample=self.sample,
                    workers=self.workers,
                    progress=False,  # the widget shows its own state
                )
        g, q = self.gradient, self.quality
        self.comparison = [
            [
                "gradient similarity",
                f"scan {g.scan} ({g.bytes_fraction[g.scan]:.0%} of the bytes; "
                f"model trained at scan {top}, {g.size} px, threshold {g.threshold:g})",
            ],
            [
                "MS-SSIM tuner",
                f"scan {q.scan} ({q.bytes_fraction:.0%} of the bytes; mean MS-SSIM "
                f"\u2265 {q.target:g} over {q.sample_size} images)",
            ],
        ]

    # -- static picture --------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The accuracy curves, the readouts and the similarity bars, drawn with Pillow.

        Each chart's legend is drawn above it, as the page draws it: none covers data.

        Returns
        -------
        bytes
            A JPEG, for places where widgets cannot run.
        """
        runs = [r for r in self.runs if r["epoch"]]
        chart = _accuracy_picture(runs, self.run_epochs)
        rows = [*self.progress, ["storage", self.bandwidth_label], *self.comparison]
        lines = [
            wrapped
            for k, v in rows or [["", _HINT]]
            for wrapped in textwrap.wrap(f"{k}: {v}" if k else v, 60, subsequent_indent="    ")
        ]
        parts = [hstack([chart, text_panel([x.replace("\u2265", ">=") for x in lines], 460)])]
        if self.similarity:
            parts.append(_similarity_picture(self.similarity))
        return to_jpeg(vstack(parts))


def _legend_strip(items: Sequence[tuple[str, str]], width: int) -> Image.Image:
    """A legend as a strip of its own (swatch and label per entry), to go above a chart."""
    im = Image.new("RGB", (width, 22), "white")
    draw, x = ImageDraw.Draw(im), 56
    for label, color in items:
        draw.rectangle([x, 8, x + 14, 14], fill=color)
        draw.text((x + 19, 4), label, fill="#222222", font=_font(11))
        x += 19 + int(draw.textlength(label, font=_font(11))) + 14
    return im


def _accuracy_picture(runs: list[dict[str, Any]], epochs: int) -> Image.Image:
    """Validation accuracy per epoch, a line per run, its legend above the plot."""
    size = (480, 300)
    im = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(im)
    last = max([3, epochs, *(len(r["epoch"]) for r in runs)])
    ax = _Axes(draw, size, (0.5, last + 0.5), (0.0, 1.02))
    title = "Validation accuracy per epoch" if runs else "No training yet: press Train"
    ax.frame(title, "epoch", "accuracy", xfmt="{:.0f}")
    for k, r in enumerate(runs):
        color = PALETTE[k % len(PALETTE)]
        pts = [ax.px(x, y) for x, y in zip(r["epoch"], r["accuracy"])]
        if len(pts) > 1:
            draw.line(pts, fill=color, width=2)
        for x, y in pts:
            draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=color)
    items = [(r["label"], PALETTE[k % len(PALETTE)]) for k, r in enumerate(runs)]
    return vstack([_legend_strip(items, size[0]), im], gap=0)


def _similarity_picture(s: dict[str, Any]) -> Image.Image:
    """The gradient tuner's bars (the chosen level in red) and threshold, legend above."""
    size, other, chosen = (480, 280), PALETTE[0], PALETTE[3]
    im = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(im)
    n = len(s["scans"])
    ax = _Axes(draw, size, (0.0, float(n)), (0.0, 1.05))
    ax.frame(s["title"], "", "similarity", xticks=False)
    for i, (k, mean) in enumerate(zip(s["scans"], s["mean"])):
        x0, top = ax.px(i + 0.15, max(0.0, mean))
        x1, base = ax.px(i + 0.85, 0.0)
        draw.rectangle([x0, top, x1, base], fill=chosen if k == s["chosen"] else other)
        draw.text(((x0 + x1) / 2 - 12, ax.bottom + 6), f"scan {k}", fill="#222222", font=_font(11))
    _, y = ax.px(0.0, s["threshold"])
    for x in range(int(ax.left), int(ax.right), 10):  # dashed
        draw.line([(x, y), (min(x + 6, ax.right), y)], fill="#555555", width=2)
    items = [("other levels", other), (f"chosen: scan {s['chosen']}", chosen),
             (f"threshold {s['threshold']:g}", "#555555")]  # fmt: skip
    return vstack([_legend_strip(items, size[0]), im], gap=0)
