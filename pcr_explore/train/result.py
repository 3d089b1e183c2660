"""What a training run at several scan levels measured, and how to show it."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from .._json import json_safe, to_json
from .._public import public
from ..storage._atomic import atomic_write
from ..storage._units import format_rate

__all__ = ["EpochStats", "LevelRun", "TrainResult"]


@public("pcr_explore.train")
@dataclass(frozen=True)
class EpochStats:
    """One epoch of one run.

    Attributes
    ----------
    epoch : int
        1-based epoch number.
    scan : int
        Level the training images were read at.
    train_loss : float
        Mean training loss over the epoch.
    val_accuracy : float
        Top-1 accuracy on the validation set (read at full quality).
    bytes_read : int
        Bytes storage served this epoch (the level's records, plus any reads
        of the gradient tuner), counted by the reader.
    load_seconds : float
        Wall time of reading and decoding the epoch's images.
    compute_seconds : float
        Wall time of the forward and backward passes and optimiser steps.
    eval_seconds : float
        Wall time of the validation pass (not part of the time to accuracy).
    tune_seconds : float
        Wall time of the gradient tuner in this epoch (``scans="auto"``): before
        its training, and during it for the next epoch's level (then not part
        of ``compute_seconds``).
    """

    epoch: int
    scan: int
    train_loss: float
    val_accuracy: float
    bytes_read: int
    load_seconds: float
    compute_seconds: float
    eval_seconds: float
    tune_seconds: float = 0.0

    def seconds(self, pipelined: bool = False) -> float:
        """Training time of the epoch: load + compute (+ tuning).

        With *pipelined*, loading overlaps compute (a loader that prefetches
        the next epoch): ``max(load, compute)`` instead of their sum.
        """
        if pipelined:
            return max(self.load_seconds, self.compute_seconds) + self.tune_seconds
        return self.load_seconds + self.compute_seconds + self.tune_seconds

    def to_dict(self) -> dict[str, Any]:
        """The epoch as a JSON-ready dict."""
        return dict(self.__dict__)


@public("pcr_explore.train")
@dataclass(frozen=True)
class LevelRun:
    """One model trained on images read at one level (or at levels chosen as it goes).

    Attributes
    ----------
    scan : int, "auto" or "schedule"
        The level; ``"auto"`` when the gradient tuner chose it every few
        epochs; ``"schedule"`` when a :class:`~pcr_explore.train.ScanSchedule`
        set it (each epoch's ``scan`` says which).
    epochs : tuple of EpochStats
    """

    scan: int | str
    epochs: tuple[EpochStats, ...]

    @property
    def label(self) -> str:
        """``"scan k"``, ``"auto"`` or ``"schedule"``."""
        return self.scan if isinstance(self.scan, str) else f"scan {self.scan}"

    @property
    def bytes_read(self) -> int:
        """Bytes read from storage over the whole run."""
        return sum(e.bytes_read for e in self.epochs)

    @property
    def val_accuracy(self) -> np.ndarray:
        """Validation accuracy after each epoch."""
        return np.array([e.val_accuracy for e in self.epochs], np.float64)

    @property
    def best_val_accuracy(self) -> float:
        """The best validation accuracy of any epoch (NaN before the first)."""
        return float(self.val_accuracy.max()) if self.epochs else float("nan")

    @property
    def final_val_accuracy(self) -> float:
        """Validation accuracy after the last epoch (NaN before the first)."""
        return float(self.epochs[-1].val_accuracy) if self.epochs else float("nan")

    def cumulative_bytes(self) -> np.ndarray:
        """Bytes read by the end of each epoch."""
        return np.cumsum([e.bytes_read for e in self.epochs], dtype=np.int64)

    def cumulative_seconds(self, pipelined: bool = False) -> np.ndarray:
        """Training seconds by the end of each epoch (see :meth:`EpochStats.seconds`)."""
        return np.cumsum([e.seconds(pipelined) for e in self.epochs], dtype=np.float64)

    def _first_epoch_at(self, target: float) -> int | None:
        hits = np.flatnonzero(self.val_accuracy >= target)
        return int(hits[0]) if len(hits) else None

    def time_to_accuracy(self, target: float, *, pipelined: bool = False) -> float | None:
        """Training seconds until validation accuracy first reaches *target*.

        Parameters
        ----------
        target : float
            Accuracy in [0, 1].
        pipelined : bool
            Count ``max(load, compute)`` per epoch instead of their sum.

        Returns
        -------
        float or None
            None when no epoch reached *target*.
        """
        i = self._first_epoch_at(target)
        return None if i is None else float(self.cumulative_seconds(pipelined)[i])

    def bytes_to_accuracy(self, target: float) -> int | None:
        """Bytes read until validation accuracy first reaches *target* (None: never)."""
        i = self._first_epoch_at(target)
        return None if i is None else int(self.cumulative_bytes()[i])

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON-ready dict."""
        return {
            "scan": self.scan,
            "bytes_read": self.bytes_read,
            "epochs": [e.to_dict() for e in self.epochs],
            "best_val_accuracy": self.best_val_accuracy,
            "final_val_accuracy": self.final_val_accuracy,
        }


@public("pcr_explore.train")
@dataclass(frozen=True)
class TrainResult:
    """Models trained at several scan levels under identical conditions.

    Every run starts from the same initial weights and sees the training
    images in the same order with the same flips; only the level the
    images are read at differs.

    Attributes
    ----------
    levels : tuple of LevelRun
    size : int
        Side of the square training images, in pixels.
    model : str
        The model's name (or its class name for a user factory).
    seed : int
    epochs, batch_size : int
    lr : float
    bandwidth : float or None
        Storage bandwidth the training reads were held to (bytes/s); None:
        this machine's own speed.
    num_scans : int
        Levels the dataset has (the last is full quality).
    level_bytes : dict of int to int
        Bytes one epoch reads at each level run (``bytes_at(k)``).
    train_images, val_images : int
    classes : tuple of str
    models : dict of str to torch.nn.Module
        The trained models by run label (not part of the JSON).
    schedule : str or None
        The scan schedule of the ``"schedule"`` run (``"ramp:1-10:2-6"``).
    """

    levels: tuple[LevelRun, ...]
    size: int
    model: str
    seed: int
    epochs: int
    batch_size: int
    lr: float
    bandwidth: float | None
    num_scans: int
    level_bytes: dict[int, int]
    train_images: int
    val_images: int
    classes: tuple[str, ...]
    models: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    schedule: str | None = None

    def __repr__(self) -> str:
        runs = ", ".join(f"{r.label}: best {r.best_val_accuracy:.3f}" for r in self.levels)
        return (
            f"<TrainResult {self.train_images} images at {self.size}px, {self.epochs} epochs, "
            f"{self.model}, seed {self.seed}; {runs}>"
        )

    def level(self, scan: int | str) -> LevelRun:
        """The run at level *scan* (or ``"auto"``).

        Raises
        ------
        KeyError
            If no run was at that level.
        """
        for run in self.levels:
            if run.scan == scan:
                return run
        raise KeyError(f"no run at scan {scan!r}; runs: {[r.scan for r in self.levels]}")

    @property
    def full(self) -> LevelRun | None:
        """The run at full quality, when there is one."""
        return next((r for r in self.levels if r.scan == self.num_scans), None)

    def time_to_accuracy(
        self, target: float, *, pipelined: bool = False
    ) -> dict[str, float | None]:
        """:meth:`LevelRun.time_to_accuracy` of every run, by label."""
        return {r.label: r.time_to_accuracy(target, pipelined=pipelined) for r in self.levels}

    def target_accuracy(self, of_full: float = 0.95) -> float | None:
        """*of_full* times the full-quality run's best accuracy (None without one)."""
        full = self.full
        return None if full is None else of_full * full.best_val_accuracy

    def speedup(self, of_full: float = 0.95, *, pipelined: bool = False) -> dict[str, float | None]:
        """Time to *of_full* x the full run's best accuracy, full run's time / each run's.

        Returns
        -------
        dict of str to float or None
            By run label; None where a run (or the full one) never got there.
        """
        target = self.target_accuracy(of_full)
        if target is None:
            return {r.label: None for r in self.levels}
        times = self.time_to_accuracy(target, pipelined=pipelined)
        t_full = times[f"scan {self.num_scans}"]
        return {k: (t_full / t if t and t_full else None) for k, t in times.items()}

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (without the models)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "models"}
        return json_safe({**d, "levels": [r.to_dict() for r in self.levels]})

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The result as JSON (non-finite numbers as ``null``); written to *path* if given."""
        text = to_json(self.to_dict())
        if path is not None:
            atomic_write(Path(path), text + "\n")
        return text

    def rows(self, of_full: float = 0.95) -> list[dict[str, Any]]:
        """One dict per run: the columns of the HTML and text tables."""
        full_bytes = self.level_bytes.get(self.num_scans)
        target = self.target_accuracy(of_full)
        speed = self.speedup(of_full)
        out = []
        for r in self.levels:
            per_epoch = r.bytes_read / max(1, len(r.epochs))
            out.append(
                {
                    "run": r.label,
                    "MB per epoch": per_epoch / 1e6,
                    "of full bytes": per_epoch / full_bytes if full_bytes else float("nan"),
                    "best val acc": r.best_val_accuracy,
                    "final val acc": r.final_val_accuracy,
                    "load s": sum(e.load_seconds for e in r.epochs),
                    "compute s": sum(e.compute_seconds for e in r.epochs),
                    f"s to {of_full:.0%} of full": (
                        r.time_to_accuracy(target) if target is not None else None
                    ),
                    "speed-up": speed[r.label],
                }
            )
        return out

    def summary(self, of_full: float = 0.95) -> str:
        """A plain-text table for a terminal."""
        rows = self.rows(of_full)
        cells = [[k for k in rows[0]]] + [[_fmt(k, v) for k, v in row.items()] for row in rows]
        widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
        return "\n".join([self._setting(), *lines])

    def _setting(self) -> str:
        bw = "unthrottled" if self.bandwidth is None else format_rate(self.bandwidth)
        return (
            f"{self.train_images} training images at {self.size} px, {self.epochs} epochs, "
            f"{self.model}, seed {self.seed}, storage {bw}"
        )

    def _repr_html_(self) -> str:
        rows = self.rows()
        head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
        body = "".join(
            "<tr>"
            + "".join(f"<td>{html.escape(_fmt(k, v))}</td>" for k, v in row.items())
            + "</tr>"
            for row in rows
        )
        cap = html.escape(f"{self._setting()}; validation at full quality")
        return f"<table><caption>{cap}</caption><tr>{head}</tr>{body}</table>"


def _fmt(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if not np.isfinite(v):
            return "-"
        if key == "speed-up":
            return f"{v:.2f}x"
        if key.startswith("of full"):
            return f"{v:.1%}"
        if "acc" in key:
            return f"{v:.3f}"
        return f"{v:.2f}" if key.endswith("s") or "MB" in key else f"{v:.4g}"
    return str(v)
