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
from collections.abc import Callable, Sequence
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


def _plan(scans: Scans, num_scans: int, where: str) -> list[int | str]:
    if isinstance(scans, str):
        if scans != "auto":
            raise ValueError(f"scans must be a sequence of levels or 'auto', got {scans!r}")
        return ["auto"]
    plan: list[int | str] = []
    for k in check_scans(scans, num_scans, where=where):
        if k not in plan:
            plan.append(k)
    if not plan:
        raise ValueError("scans is empty")
    return plan


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
    batch_size, lr, retune_every = o.batch_size, o.lr, o.retune_every
    if size < 8 or epochs < 1 or batch_size < 1 or retune_every < 1:
        raise ValueError(
            f"need size >= 8, epochs, batch_size and retune_every >= 1; got size={size}, "
            f"epochs={epochs}, batch_size={batch_size}, retune_every={retune_every}"
        )
    bw = None if bandwidth is None else parse_bandwidth(bandwidth)
    train_ds, val_ds = _open(train), _open(val)
    num_classes = _check_labels(train_ds, val_ds)
    full = train_ds.num_scans
    plan, curriculum = _plan_runs(scans, schedule, train_ds)
    reader = throttled(train_ds, bandwidth=bw) if bw is not None else train_ds
    val_level = read_level(val_ds, scan=None, size=size, workers=workers)

    from .._pool import progress_bar as tqdm

    bar = tqdm(total=len(plan) * epochs, desc="train", unit="epoch", disable=not progress)

    def after_epoch(run: LevelRun) -> None:
        bar.set_postfix_str(f"{run.label}: acc {run.epochs[-1].val_accuracy:.3f}")
        bar.update()
        if on_epoch is not None:
            on_epoch(run)

    runs: list[LevelRun] = []
    models: dict[str, Any] = {}
    try:
        for target in plan:
            torch.manual_seed(seed)
            net = build_model(model, num_classes=num_classes)
            run = _train_run(
                net,
                target,
                reader,
                val_level,
                curriculum=curriculum if target == "schedule" else None,
                full=full,
                epochs=epochs,
                o=o,
                size=size,
                seed=seed,
                workers=workers,
                after_epoch=after_epoch,
            )
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
        batch_size=batch_size,
        lr=lr,
        bandwidth=bw,
        num_scans=full,
        level_bytes={k: train_ds.bytes_at(k) for k in sorted({*range(1, full + 1)})},
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
    curriculum = _schedule(schedule, full)
    if curriculum is not None and scans is None:
        return ["schedule"], curriculum
    plan: list[int | str] = _plan(
        default_levels(full) if scans is None else scans, full, train_ds.url
    )
    return plan + (["schedule"] if curriculum is not None else []), curriculum


def _train_run(
    net: Any,
    target: int | str,
    reader: PCRDataset,
    val_level: Any,
    *,
    curriculum: ScanSchedule | None,
    full: int,
    epochs: int,
    o: TrainOptions,
    size: int,
    seed: int,
    workers: int,
    after_epoch: Callable[[LevelRun], None],
) -> LevelRun:
    """Train *net* (freshly seeded) for *epochs* at *target*'s levels; *after_epoch* sees each."""
    torch = require_torch("train_at_levels")
    opt = torch.optim.Adam(net.parameters(), lr=o.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    gen = torch.Generator().manual_seed(seed)
    scan = full if isinstance(target, str) else int(target)
    auto = target == "auto"
    run = LevelRun(target, ())
    for epoch in range(1, epochs + 1):
        if curriculum is not None:
            scan = curriculum.level(epoch)
        stats, scan = _epoch(
            net,
            (opt, sched, gen),
            reader,
            val_level,
            # the first level is tuned before training; the next ones during
            # the epoch before theirs, from its training steps' own gradients
            tune=(auto and epoch == 1, auto and epoch < epochs and epoch % o.retune_every == 0),
            scan=scan,
            epoch=epoch,
            o=o,
            size=size,
            seed=seed,
            workers=workers,
        )
        run = LevelRun(target, (*run.epochs, stats))
        after_epoch(run)
    return run


def _schedule(schedule: ScanSchedule | str | None, num_scans: int) -> ScanSchedule | None:
    if schedule is None:
        return None
    s = schedule if isinstance(schedule, ScanSchedule) else ScanSchedule.parse(schedule)
    s.check(num_scans)
    return s


def _epoch(
    net: Any,
    optimiser: tuple[Any, Any, Any],
    reader: PCRDataset,
    val_level: Any,
    *,
    tune: tuple[bool, bool],
    scan: int,
    epoch: int,
    o: TrainOptions,
    size: int,
    seed: int,
    workers: int,
) -> tuple[EpochStats, int]:
    """One epoch at *scan*, timed; and the next epoch's level.

    *tune* says whether the gradient tuner chooses this epoch's level first
    (on batches of its own) and whether it chooses the next epoch's level
    during this one (fed by the last training steps, whose own gradients
    are the trained level's).
    """
    opt, sched, gen = optimiser
    tune_s, tune_bytes = 0.0, 0
    if tune[0]:
        tuned = tune_by_gradient(
            reader,
            model=net,
            scans=o.auto_scans,
            batches=o.tune_batches,
            batch_size=o.batch_size,
            threshold=o.threshold,
            size=size,
            seed=seed + epoch,
            workers=workers,
        )
        scan, tune_s, tune_bytes = tuned.scan, tuned.seconds, tuned.bytes_read
    level = read_level(reader, scan=scan, size=size, workers=workers)
    steps = -(-len(level.labels) // o.batch_size)
    tuner = None
    if tune[1]:
        tuner = StepTuner(
            reader,
            model=net,
            trained=scan,
            scans=o.auto_scans,
            batches=o.tune_batches,
            start=max(0, steps - o.tune_batches),
            threshold=o.threshold,
            size=size,
            workers=workers,
        )
    t0 = _now()
    try:
        loss = train_epoch(
            net,
            opt,
            level.images,
            level.labels,
            batch_size=o.batch_size,
            generator=gen,
            on_step=tuner,
        )
    finally:
        if tuner is not None:
            tuner.__exit__(None, None, None)
    compute = _now() - t0
    next_scan = scan
    if tuner is not None:  # its time and reads were spent in this epoch, not in training
        next_scan = tuner.result().scan
        compute -= tuner.seconds
        tune_s, tune_bytes = tune_s + tuner.seconds, tune_bytes + tuner.bytes_read
    sched.step()
    t0 = _now()
    acc = evaluate(net, val_level.images, val_level.labels)
    stats = EpochStats(
        epoch=epoch,
        scan=scan,
        train_loss=loss,
        val_accuracy=acc,
        bytes_read=level.bytes_read + tune_bytes,
        load_seconds=level.seconds,
        compute_seconds=compute,
        eval_seconds=_now() - t0,
        tune_seconds=tune_s,
    )
    return stats, next_scan


def _now() -> float:
    import time

    return time.perf_counter()
