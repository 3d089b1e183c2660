"""``budget``: how many bytes a training run needs, from one set of measurements.

The steps, each skipped where its result is passed in (measure once):

1. the quality curve (bytes and MS-SSIM per level, one sample);
2. optionally, a short proxy training at a few levels (``train_epochs``);
3. the gradient similarity to full quality (the PCR paper's criterion), at
   the trained full-quality model's weights when there is one;
4. the decode cost per image at every level, on this machine.

Given a disk size, the report also names the highest level whose prefixes of
every record fit on it (:meth:`~pcr_explore.PCRDataset.level_that_fits`).

Each criterion picks a level; the recommendation is the highest of them, so
every criterion measured finds it enough. Times at a storage bandwidth are
modelled from the measured bytes and decode cost (reading and decoding
pipelined; the slower of the two sets an epoch's input time).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_scans
from .._pool import check_client
from .._public import public
from ..errors import DatasetError, MissingExtraError
from ..quality import QualityCurve, quality_curve
from ..quality.metrics import metric_name
from ..quality.tune import Statistic, TuneOptions, _target, level_intervals, recommend
from ..read.reader import PCRDataset
from ..read.sources import LevelSource, open_source
from ..storage._units import parse_bytes
from ._findings import BudgetLevel
from .decode import DecodeCost, measure_decode
from .report import BudgetReport

__all__ = ["BudgetOptions", "budget"]


@public("pcr_explore")
@dataclass(frozen=True, kw_only=True)
class BudgetOptions:
    """The rarely changed settings of :func:`budget`.

    Parameters
    ----------
    tune : TuneOptions
        Bootstrap confidence and resamples of the quality intervals.
    gradient_threshold : float
        Similarity a level's gradients must reach (the paper: 0.8).
    gradient_batches, gradient_batch_size : int
        The gradient tuner's batch budget and batch size.
    of_full : float
        The accuracy criterion: the lowest level whose best validation
        accuracy reaches this share of full quality's.
    decode_sample, decode_repeats : int
        Images timed for the decode cost, and passes per level.
    """

    tune: TuneOptions = TuneOptions()
    gradient_threshold: float = 0.8
    gradient_batches: int = 10
    gradient_batch_size: int = 32
    of_full: float = 0.95
    decode_sample: int = 32
    decode_repeats: int = 3

    def __post_init__(self) -> None:
        if not 0.0 < self.of_full <= 1.0:
            raise ValueError(f"of_full must be in (0, 1], got {self.of_full}")
        if min(self.gradient_batches, self.gradient_batch_size, self.decode_sample) < 1:
            raise ValueError("gradient_batches, gradient_batch_size and decode_sample must be >= 1")
        if self.decode_repeats < 1:
            raise ValueError(f"decode_repeats must be at least 1, got {self.decode_repeats}")


def _check_val(src: LevelSource, val: Any, train_epochs: int) -> PCRDataset | None:
    """The validation set, opened and checked against training's classes (or None)."""
    where = getattr(src, "url", str(src))
    if train_epochs and val is None:
        raise ValueError(f"{where}: train_epochs needs a validation set (val=...)")
    if val is None:
        return None
    v = val if isinstance(val, LevelSource) else open_source(val)
    if list(v.classes) != list(src.classes):
        raise DatasetError(
            f"{getattr(v, 'url', val)}: its classes {list(v.classes)} are not the training "
            f"set's {list(src.classes)}"
        )
    if train_epochs and not (isinstance(src, PCRDataset) and isinstance(v, PCRDataset)):
        raise ValueError(
            f"{where}: train_epochs trains from PCR datasets: encode the folders first "
            "(pcr-explore encode)"
        )
    return v if isinstance(v, PCRDataset) else None


def _level_bytes(src: LevelSource, curve: QualityCurve) -> np.ndarray:
    """Bytes a pass reads per level: exact for a dataset, the sample scaled for a folder."""
    if isinstance(src, PCRDataset):
        return np.array([src.bytes_at(k) for k in range(1, src.num_scans + 1)], np.int64)
    per_image = curve.per_image.bytes.mean(axis=0)
    return np.round(per_image * len(src)).astype(np.int64)


def _bar(progress: bool, desc: str, total: int, unit: str) -> Any:
    """A progress bar of one step, left on screen when it ends (none without *progress*)."""
    from .._pool import progress_bar

    return progress_bar(total=total, desc=desc, unit=unit, disable=not progress, leave=True)


def _quality(
    src: LevelSource, sample: int | None, seed: int, workers: int, progress: bool, client: Any
) -> QualityCurve:
    """The quality curve, one step of the bar per image measured."""
    n = len(src) if sample is None else min(int(sample), len(src))
    with _bar(progress, "quality", n, "img") as bar:
        return quality_curve(
            src,
            sample=sample,
            seed=seed,
            workers=workers,
            progress=bar if progress else False,
            client=client,
        )


def _torch_or_note(notes: list[str], what: str, progress: bool = False) -> bool:
    """Whether PyTorch imports (a bar while it loads, the first time); else a note says so."""
    with _bar(progress and "torch" not in sys.modules, "loading PyTorch", 1, "step") as bar:
        try:
            from ..train._torch import require_torch

            require_torch(what)
        except MissingExtraError:
            notes.append(f"{what} skipped: it needs PyTorch (pip install 'pcr-explore[torch]')")
            return False
        finally:
            bar.update(1)
    return True


def _train(
    src: PCRDataset, val: PCRDataset, epochs: int, scans: Sequence[int] | None, **kw: Any
) -> Any:
    from ..train import train_at_levels

    return train_at_levels(src, val=val, scans=scans, epochs=epochs, **kw)


class _CountedLoss:
    """Cross-entropy that advances a progress bar: the tuner computes it once per gradient pass."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def __call__(self, logits: Any, labels: Any) -> Any:
        import torch

        loss = torch.nn.functional.cross_entropy(logits, labels)
        self.bar.update(1)
        return loss


def _most_passes(src: LevelSource, scans: Sequence[int] | None, o: BudgetOptions) -> int:
    """The gradient passes the tuner makes at most: per batch, full quality and each lower level."""
    from ..train.gradient import default_levels

    full = src.num_scans
    levels = default_levels(full) if scans is None else scans
    labelled = int((np.asarray(src.labels) >= 0).sum())
    batches = min(o.gradient_batches, -(-labelled // o.gradient_batch_size))
    return batches * (1 + sum(1 for k in levels if k < full))


def _gradient(
    src: LevelSource,
    model: Any,
    training: Any,
    scans: Any,
    o: BudgetOptions,
    progress: bool,
    **kw: Any,
) -> Any:
    from ..train import small_cnn, tune_by_gradient

    if model is None and training is not None and training.full is not None:
        model = training.models.get(training.full.label)
    if model is None:
        import torch

        torch.manual_seed(kw["seed"])
        model = small_cnn(len(src.classes))
    with _bar(progress, "gradients", _most_passes(src, scans, o), "pass") as bar:
        result = tune_by_gradient(
            src,
            model=model,
            scans=scans,
            batches=o.gradient_batches,
            batch_size=o.gradient_batch_size,
            threshold=o.gradient_threshold,
            confidence=o.tune.confidence,
            loss_fn=_CountedLoss(bar),
            **kw,
        )
        bar.total = bar.n  # the tuner may stop early, once every level is decided
        bar.refresh()
    return result


def _accuracy_choice(training: Any, of_full: float) -> int | None:
    target = training.target_accuracy(of_full)
    if target is None:
        return None
    ok = [
        int(run.scan)
        for run in training.levels
        if isinstance(run.scan, int) and run.best_val_accuracy >= target
    ]
    return min(ok) if ok else None


@public("pcr_explore")
def budget(
    train: LevelSource | str | os.PathLike[str],
    *,
    val: LevelSource | str | os.PathLike[str] | None = None,
    bandwidth: float | str | None = None,
    disk: int | str | None = None,
    target: float | None = None,
    statistic: Statistic = "p5",
    sample: int | None = 64,
    scans: Sequence[int] | None = None,
    size: int = 64,
    train_epochs: int = 0,
    model: Any = None,
    workers: int = 2,
    seed: int = 0,
    progress: bool = True,
    curve: QualityCurve | None = None,
    gradient: Any = None,
    training: Any = None,
    decode: DecodeCost | None = None,
    options: BudgetOptions | None = None,
    client: Any = None,
) -> BudgetReport:
    """How many bytes training needs: one report over every scan level.

    Parameters
    ----------
    train : LevelSource or path
        A PCR dataset or a folder of images (labelled, for the gradient and
        accuracy criteria).
    val : LevelSource or path, optional
        A validation set with the same classes (needed by *train_epochs*).
    bandwidth : float or str, optional
        Storage bandwidth for the epoch times ("20MB/s", bytes/s).
    disk : int or str, optional
        A local disk or prefix cache size ("20GB", bytes): the report gives
        the highest level whose prefixes of every record fit on it, which
        passes read from storage once however many epochs follow (PCR
        datasets only; for another source a note says it does not apply).
    target : float, optional
        The quality target (default the metric's: 0.95 MS-SSIM).
    statistic : {"p5", "mean"}
        What the quality criterion thresholds: the 5th percentile over images
        (nearly every image good enough; the default, as for
        :func:`~pcr_explore.tune` and :func:`~pcr_explore.audit`) or the mean.
    sample : int or None
        Images in the quality sample (None: all).
    scans : sequence of int, optional
        Levels for the gradient and accuracy criteria (default 1, 2, 5, 10
        for the standard script); quality and decode cover every level.
    size : int
        Side of the square images the model sees, for gradients, training and
        decode cost.
    train_epochs : int
        Epochs of a proxy training per level in *scans* (0: none; needs
        ``[torch]`` and PCR datasets).
    model : torch.nn.Module, optional
        The model whose gradients are compared (default: the proxy
        training's full-quality model, else a fresh small CNN).
    workers : int
        Decoding threads, in the measurements and in the time model.
    seed : int
        Seed of every sample.
    progress : bool
        A progress bar for each step that takes long (the quality sample,
        loading PyTorch, the proxy training, the gradient passes, the decode
        cost per level), left on screen when it ends.
    curve, gradient, training, decode : optional
        Results already measured (:func:`~pcr_explore.quality_curve`,
        :func:`~pcr_explore.train.tune_by_gradient`,
        :func:`~pcr_explore.train.train_at_levels`, :func:`measure_decode`):
        used as they are, never measured again.
    options : BudgetOptions, optional
        Intervals, the gradient tuner's budget, the accuracy criterion and
        the decode timing.
    client : dask.distributed.Client, optional
        Measure the quality curve on this Dask cluster (``pcr-explore[dask]``),
        as :func:`~pcr_explore.quality_curve` does: the same numbers as a
        local run, and every worker must be able to read *train* at the same
        path or URL. The proxy training, the gradients and the decode cost
        (this machine's, by definition) are measured here.

    Returns
    -------
    BudgetReport

    Raises
    ------
    ValueError
        If a level, the bandwidth, the disk size, the target or an option is
        out of range, checked before anything is measured.
    TypeError
        If *client* is not a Dask client.
    DatasetError
        If *val*'s classes are not *train*'s.

    Examples
    --------
    >>> report = budget("photos.pcr", bandwidth="20MB/s")
    >>> print(report.sentence)
    level 5 reads 43% of the bytes; p5 MS-SSIM 0.974; gradients agree ...; at 20 MB/s ...
    """
    o = options or BudgetOptions()
    src = train if isinstance(train, LevelSource) else open_source(train)
    where = str(getattr(src, "url", train))
    bw = None if bandwidth is None else parse_bytes(bandwidth, rate=True)
    disk_bytes = None if disk is None else int(parse_bytes(disk))
    metric = curve.metric if curve is not None else "mssim"
    target = _target(metric_name(metric), target)
    if statistic not in ("mean", "p5"):
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    levels = (
        None if scans is None else check_scans(scans, src.num_scans, where=where, distinct=True)
    )
    if train_epochs < 0 or workers < 1 or size < 8:
        raise ValueError(
            f"need train_epochs >= 0, workers >= 1 and size >= 8; got {train_epochs}, {workers}, "
            f"{size}"
        )
    v = _check_val(src, val, train_epochs)
    check_client(client)
    notes: list[str] = []
    # every step that takes long shows a bar, left on screen when it ends
    if curve is None:
        curve = _quality(src, sample, seed, workers, progress, client)
    labelled = bool((np.asarray(src.labels) >= 0).any())
    if training is None and train_epochs and _torch_or_note(notes, "the proxy training", progress):
        kw = dict(size=size, seed=seed, workers=workers, progress=progress)
        training = _train(src, v, train_epochs, levels, **kw)  # type: ignore[arg-type]
    if gradient is None and not labelled:
        notes.append("gradient similarity skipped: the images have no labels to compute a loss")
    elif gradient is None and _torch_or_note(notes, "gradient similarity", progress):
        gradient = _gradient(
            src, model, training, levels, o, progress, size=size, seed=seed, workers=workers
        )
    if decode is None:
        idx = curve.per_image.indices[: o.decode_sample].tolist()
        decode = measure_decode(
            src, indices=idx, size=size, repeats=o.decode_repeats, progress=progress
        )
    report = _report(
        src,
        where,
        curve,
        gradient,
        training,
        decode,
        o,
        target,
        statistic,
        bw,
        workers,
        notes,
        model_given=model is not None,
    )
    return report if disk_bytes is None else _with_disk(report, src, disk_bytes)


def _with_disk(report: BudgetReport, src: LevelSource, disk: int) -> BudgetReport:
    """*report* with the highest level whose prefixes fit in *disk* bytes (PCR datasets only)."""
    if isinstance(src, PCRDataset):
        return dataclasses.replace(report, disk=disk, disk_level=src.level_that_fits(disk))
    note = (
        f"disk size: does not apply to {report.source}: it is not a PCR dataset, so no level "
        "is a prefix of its files that a disk could keep (encode it: pcr-explore encode)"
    )
    return dataclasses.replace(report, notes=(*report.notes, note))


def _weights(training: Any, model_given: bool) -> str:
    if model_given:
        return "the weights of the model given"
    if training is not None and training.full is not None:
        return "the proxy training's full-quality weights"
    return (
        "a fresh small CNN's initial weights (pass model=, or train_epochs=, for a trained "
        "model's view)"
    )


def _report(
    src: LevelSource,
    where: str,
    curve: QualityCurve,
    gradient: Any,
    training: Any,
    decode: DecodeCost,
    o: BudgetOptions,
    target: float,
    statistic: str,
    bw: float | None,
    workers: int,
    notes: list[str],
    model_given: bool,
) -> BudgetReport:
    """Gather the measurements into rows and choices."""
    nbytes = _level_bytes(src, curve)
    ci = {s: level_intervals(curve, statistic=s, seed=0, options=o.tune) for s in ("mean", "p5")}
    sims = gradient.similarity if gradient is not None else {}
    sims_ci = gradient.similarity_ci if gradient is not None else {}
    acc = {}
    if training is not None:
        acc = {r.scan: r.best_val_accuracy for r in training.levels if isinstance(r.scan, int)}
    rows = tuple(
        BudgetLevel(
            scan=k,
            bytes=int(nbytes[k - 1]),
            bytes_fraction=float(nbytes[k - 1] / nbytes[-1]),
            quality_mean=float(curve.mean[k - 1]),
            quality_mean_ci=(float(ci["mean"][k - 1, 0]), float(ci["mean"][k - 1, 1])),
            quality_p5=float(curve.p5[k - 1]),
            quality_p5_ci=(float(ci["p5"][k - 1, 0]), float(ci["p5"][k - 1, 1])),
            gradient=sims.get(k),
            gradient_ci=sims_ci.get(k),
            accuracy=acc.get(k),
            decode_seconds=decode.at(k),
        )
        for k in range(1, src.num_scans + 1)
    )
    tuned = recommend(
        curve,
        target=target,
        statistic=statistic,  # type: ignore[arg-type]
        options=o.tune,
        bytes_fraction=nbytes / nbytes[-1],
    )
    choices: dict[str, int | None] = {"quality": tuned.scan, "gradient": None, "accuracy": None}
    decided = {"quality": tuned.decided}
    if gradient is not None:
        choices["gradient"], decided["gradient"] = gradient.scan, gradient.decided
        notes.append(
            f"gradients compared at {_weights(training, model_given)}, on {gradient.batches} "
            f"batches of {gradient.batch_size} at {gradient.size} px"
        )
    if training is not None:
        choices["accuracy"] = _accuracy_choice(training, o.of_full)
        decided["accuracy"] = True
    notes.append(
        f"decode cost measured on this machine: {decode.images} images at "
        f"{decode.size or 'full'} px with {decode.decoder}, the fastest of {decode.repeats} "
        f"passes; epoch times model {workers} decoding cores and reads pipelined with decoding"
    )
    recommended = max(c for c in choices.values() if c is not None)
    return BudgetReport(
        source=where,
        images=len(src),
        metric=curve.metric,
        statistic=statistic,
        target=float(target),
        levels=rows,
        choices=choices,
        decided=decided,
        recommended=recommended,
        bandwidth=bw,
        workers=workers,
        of_full=o.of_full,
        notes=tuple(notes),
        curve=curve,
        decode=decode,
        gradient=gradient,
        training=training,
    )
