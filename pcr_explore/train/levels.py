"""Train one model per scan level, under identical conditions, and measure each.

Every run starts from the same weights (seeded) and sees the training images
in the same order with the same flips; only the level the training images
are read at differs. Validation images are read once, at full quality.
Each epoch re-reads the training set through the reader, so the bytes
storage serves are counted (and, with a bandwidth limit, paid for) every
epoch, as they would be without a local cache.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Literal

from .._checks import check_scans
from .._public import public
from ..errors import DatasetError
from ..read.reader import PCRDataset, open_dataset
from ..read.schedule import ScanSchedule
from ._torch import require_torch
from .gradient import StepTuner, default_levels, tune_by_gradient
from .loop import evaluate, read_level, train_epoch
from .model import build_model
from .result import EpochStats, LevelRun, TrainResult
from .throttle import parse_bandwidth, throttled

__all__ = ["TrainOptions", "train_at_levels"]

Scans = Sequence[int] | Literal["auto"]


def _open(ds: PCRDataset | str | os.PathLike[str]) -> PCRDataset:
    return ds if isinstance(ds, PCRDataset) else open_dataset(str(ds))


def _check_labels(train: PCRDataset, val: PCRDataset) -> int:
    if train.classes != val.classes:
        raise DatasetError(
            f"{train.url} and {val.url} have different classes: {train.classes} vs {val.classes}"
        )
    if len(train.classes) < 2:
        raise DatasetError(f"{train.url}: need at least 2 classes, found {train.classes}")
    for ds in (train, val):
        if len(ds) == 0 or (ds.labels < 0).any():
            raise DatasetError(f"{ds.url}: every image needs a label (class sub-folders)")
    return len(train.classes)


@public("pcr_explore.train")
@dataclass(frozen=True, kw_only=True)
class TrainOptions:
    """Training settings rarely changed from their defaults (see :func:`train_at_levels`).

    Parameters
    ----------
    batch_size : int
        Images per optimiser step.
    lr : float
        Adam's learning rate, decayed to zero over the run by a cosine.
    retune_every : int
        ``scans="auto"``: epochs between gradient tunings.
    auto_scans : sequence of int, optional
        ``scans="auto"``: the levels compared (default
        :func:`~pcr_explore.train.default_levels`: 1, 2, 5, 10).
    threshold : float
        ``scans="auto"``: the gradient similarity a level must reach.
    tune_batches : int
        ``scans="auto"``: the batch budget of each tuning (each stops early
        once it knows).
    """

    batch_size: int = 32
    lr: float = 2e-3
    retune_every: int = 2
    auto_scans: Sequence[int] | None = None
    threshold: float = 0.8
    tune_batches: int = 10


@public("pcr_explore.train")
def train_at_levels(
    train: PCRDataset | str | os.PathLike[str],
    *,
    val: PCRDataset | str | os.PathLike[str],
    scans: Scans | None = None,
    schedule: ScanSchedule | str | None = None,
    size: int = 64,
    epochs: int = 10,
    model: str | Callable[[int], Any] = "small-cnn",
    seed: int = 0,
    bandwidth: float | str | None = None,
    workers: int = 2,
    progress: bool = True,
    on_epoch: Callable[[LevelRun], None] | None = None,
    options: TrainOptions | None = None,
) -> TrainResult:
    """Train a fresh model on *train* read at each level; evaluate on *val* each epoch.

    Parameters
    ----------
    train : PCRDataset or path
        A labelled PCR dataset.
    val : PCRDataset or path
        A labelled PCR dataset with the same classes, always read at full
        quality.
    scans : sequence of int or "auto", optional
        Levels to train at, one run each (default
        :func:`~pcr_explore.train.gradient.default_levels`: 1, 2, 5, 10 for
        the standard script). ``"auto"``: a single run whose
        level :func:`~pcr_explore.train.tune_by_gradient` chooses before
        epoch 1 and every ``options.retune_every`` epochs after. The later
        choices are measured during the epoch before, on its last training
        steps (:class:`~pcr_explore.train.StepTuner`): each step's own
        gradient is the trained level's, so only the other levels cost a
        pass.
    schedule : ScanSchedule or str, optional
        A curriculum (``"ramp:1-10:2-6"``: level 1 up to epoch 2, then up to
        level 10 at epoch 6): one more run, labelled ``"schedule"``, whose
        epochs read the levels it gives. With a schedule and no *scans*, it
        is the only run.
    size : int
        Side of the square training images, in pixels.
    epochs : int
        Epochs per run.
    model : "small-cnn" or callable
        A name, or a factory ``f(num_classes) -> torch.nn.Module`` called
        once per run after seeding.
    seed : int
        Seeds the weights, the epoch order and the flips.
    bandwidth : float, str or None
        Storage bandwidth to hold training reads to (bytes/s or a string such
        as ``"50MB/s"``; see :func:`~pcr_explore.train.throttled`). None: the
        machine's own speed.
    workers : int
        Decoding threads.
    progress : bool
        Show a progress bar.
    on_epoch : callable, optional
        Called with the run so far after every epoch (a live plot's hook).
    options : TrainOptions, optional
        Batch size, learning rate and the ``"auto"`` schedule.

    Returns
    -------
    TrainResult

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).
    DatasetError
        If the datasets are unlabelled or their classes differ.
    ValueError
        If a level, *size*, *epochs* or *bandwidth* is out of range.

    Examples
    --------
    >>> r = train_at_levels("train.pcr", val="val.pcr", scans=(1, 2, 5, 10), size=64, epochs=2)
    >>> r
    <TrainResult 10 images at 64px, 2 epochs, small-cnn, seed 0;
    scan 1: best ..., scan 10: best ...>
    >>> speedup = r.speedup(0.95)  # full quality's time to 95% of its accuracy / each run's
    >>> sorted(speedup)
    ['scan 1', 'scan 10', 'scan 2', 'scan 5']
    """
    torch = require_torch("train_at_levels")
    o = options or TrainOptions()
    if size < 8 or epochs < 1 or o.batch_size < 1 or o.retune_every < 1:
        raise ValueError(
            f"need size >= 8, epochs, batch_size and retune_every >= 1; got size={size}, "
            f"epochs={epochs}, batch_size={o.batch_size}, retune_every={o.retune_every}"
        )
    bw = None if bandwidth is None else parse_bandwidth(bandwidth)
    train_ds, val_ds = _open(train), _open(val)
    num_classes = _check_labels(train_ds, val_ds)
    full = train_ds.num_scans
    plan, curriculum = _plan_runs(scans, schedule, train_ds)
    reader = throttled(train_ds, bandwidth=bw) if bw is not None else train_ds
    val_level = read_level(val_ds, scan=None, size=size, workers=workers)
    setup = _Setup(reader, val_level, o, size, seed, workers)

    from .._pool import progress_bar as tqdm

    bar = tqdm(total=len(plan) * epochs, desc="train", unit="epoch", disable=not progress)
    runs: list[LevelRun] = []
    models: dict[str, Any] = {}
    try:
        for target in plan:
            torch.manual_seed(seed)
            net = build_model(model, num_classes=num_classes)
            run = LevelRun(target, ())
            for stats in _train_run(
                net, target, setup, curriculum if target == "schedule" else None, epochs
            ):
                run = LevelRun(target, (*run.epochs, stats))
                bar.set_postfix_str(f"{run.label}: acc {stats.val_accuracy:.3f}")
                bar.update()
                if on_epoch is not None:
                    on_epoch(run)
            runs.append(run)
            models[run.label] = net
    finally:
        bar.close()
    name = model if isinstance(model, str) else getattr(model, "__name__", type(model).__name__)
    return TrainResult(
        levels=tuple(runs),
        size=size,
        model=name,
        seed=seed,
        epochs=epochs,
        batch_size=o.batch_size,
        lr=o.lr,
        bandwidth=bw,
        num_scans=full,
        level_bytes={k: train_ds.bytes_at(k) for k in range(1, full + 1)},
        train_images=len(train_ds),
        val_images=len(val_ds),
        classes=tuple(train_ds.classes),
        models=models,
        schedule=None if curriculum is None else str(curriculum),
    )


def _plan_runs(
    scans: Scans | None, schedule: ScanSchedule | str | None, train_ds: PCRDataset
) -> tuple[list[int | str], ScanSchedule | None]:
    """The runs to train (levels, ``"auto"``, ``"schedule"``) and the curriculum, if any."""
    full = train_ds.num_scans
    curriculum = None
    if schedule is not None:
        curriculum = (
            schedule if isinstance(schedule, ScanSchedule) else ScanSchedule.parse(schedule)
        )
        curriculum.check(full)
    extra: list[int | str] = [] if curriculum is None else ["schedule"]
    if curriculum is not None and scans is None:
        return extra, curriculum
    if isinstance(scans, str):
        if scans != "auto":
            raise ValueError(f"scans must be a sequence of levels or 'auto', got {scans!r}")
        return ["auto", *extra], curriculum
    levels = check_scans(default_levels(full) if scans is None else scans, full, where=train_ds.url)
    if not levels:
        raise ValueError("scans is empty")
    return [*dict.fromkeys(levels), *extra], curriculum


@dataclass(frozen=True)
class _Setup:
    """What every run of one call shares."""

    reader: PCRDataset
    val_level: Any
    o: TrainOptions
    size: int
    seed: int
    workers: int


def _train_run(
    net: Any, target: int | str, setup: _Setup, curriculum: ScanSchedule | None, epochs: int
) -> Iterator[EpochStats]:
    """Train *net* (freshly seeded) for *epochs* at *target*'s levels, yielding each epoch."""
    torch = require_torch("train_at_levels")
    opt = torch.optim.Adam(net.parameters(), lr=setup.o.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    gen = torch.Generator().manual_seed(setup.seed)
    scan = setup.reader.num_scans if isinstance(target, str) else int(target)
    auto, every = target == "auto", setup.o.retune_every
    for epoch in range(1, epochs + 1):
        if curriculum is not None:
            scan = curriculum.level(epoch)
        # the first level is tuned before training; the next ones during the
        # epoch before theirs, from its training steps' own gradients
        tune = (auto and epoch == 1, auto and epoch < epochs and epoch % every == 0)
        stats, scan = _epoch(net, (opt, sched, gen), setup, tune=tune, scan=scan, epoch=epoch)
        yield stats


def _epoch(
    net: Any,
    optimiser: tuple[Any, Any, Any],
    setup: _Setup,
    *,
    tune: tuple[bool, bool],
    scan: int,
    epoch: int,
) -> tuple[EpochStats, int]:
    """One epoch at *scan*, timed; and the next epoch's level.

    *tune* says whether the gradient tuner chooses this epoch's level first
    (on batches of its own) and whether it chooses the next epoch's level
    during this one (fed by the last training steps, whose own gradients
    are the trained level's).
    """
    opt, sched, gen = optimiser
    o, reader, size, workers = setup.o, setup.reader, setup.size, setup.workers
    tuning: dict[str, Any] = dict(scans=o.auto_scans, batches=o.tune_batches, workers=workers)
    tuning.update(threshold=o.threshold, size=size)
    tune_s, tune_bytes = 0.0, 0
    if tune[0]:
        tuned = tune_by_gradient(
            reader, model=net, batch_size=o.batch_size, seed=setup.seed + epoch, **tuning
        )
        scan, tune_s, tune_bytes = tuned.scan, tuned.seconds, tuned.bytes_read
    level = read_level(reader, scan=scan, size=size, workers=workers)
    # the tuner sees the epoch's last steps (the latest weights)
    start = max(0, -(-len(level.labels) // o.batch_size) - o.tune_batches)
    steps = StepTuner(reader, model=net, trained=scan, start=start, **tuning) if tune[1] else None
    t0 = time.perf_counter()
    with steps or nullcontext():
        x, y = level.images, level.labels
        loss = train_epoch(net, opt, x, y, batch_size=o.batch_size, generator=gen, on_step=steps)
    compute = time.perf_counter() - t0
    next_scan = scan
    if steps is not None:  # its time and reads were spent in this epoch, not in training
        next_scan = steps.result().scan
        compute -= steps.seconds
        tune_s, tune_bytes = tune_s + steps.seconds, tune_bytes + steps.bytes_read
    sched.step()
    t0 = time.perf_counter()
    acc = evaluate(net, setup.val_level.images, setup.val_level.labels)
    stats = EpochStats(
        epoch=epoch,
        scan=scan,
        train_loss=loss,
        val_accuracy=acc,
        bytes_read=level.bytes_read + tune_bytes,
        load_seconds=level.seconds,
        compute_seconds=compute,
        eval_seconds=time.perf_counter() - t0,
        tune_seconds=tune_s,
    )
    return stats, next_scan
