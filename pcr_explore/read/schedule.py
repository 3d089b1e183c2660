"""A scan-level curriculum: which level each epoch reads.

Used by :func:`~pcr_explore.train.train_at_levels` and by the PyTorch
adapter (:func:`~pcr_explore.read.loader.torch_dataset`); its public home is
:mod:`pcr_explore.train`.

Progressive resizing elsewhere (FFCV's resolution ramp, fast.ai's
progressive resizing) reads and decodes every full JPEG and then shrinks it;
here an early epoch reads a shorter prefix of each record, so the bytes read
grow with the level. A :class:`ScanSchedule` is a ramp (from a start to an
end level between two epochs, rounded to whole levels, as FFCV ramps its
resolution) or explicit steps.

A schedule is held as its steps (the epochs where the level changes), and a
level never exceeds :data:`~pcr_explore.records.format.MAX_SCANS`, so a ramp
has at most that many steps however many epochs it spans: building one,
finding an epoch's level and listing the segments never walk the epochs one
by one (``ramp:1-10:1-100000000`` is as cheap as ``ramp:1-10:2-6``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .._checks import check_scans
from .._public import public
from ..records.format import MAX_SCANS

__all__ = ["ScanSchedule"]

#: The most epochs :meth:`ScanSchedule.levels` lists one by one; past it, use
#: :meth:`ScanSchedule.segments` (one row per level change).
MAX_LISTED_EPOCHS = 1_000_000

_EXAMPLES = "examples: ramp:1-10:2-6 for levels 1 to 10 between epochs 2 and 6; steps:1=2,4=5,7=10"


def _epoch(value: object, what: str) -> int:
    """*value* as a whole number of epochs >= 1 (bool and floats refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1 (epochs count from 1), got {value!r}")
    return int(value)


def _ramp_level(start: int, end: int, start_epoch: int, end_epoch: int, epoch: int) -> int:
    """The ramp's level at *epoch*, in closed form (rounded, as FFCV rounds its resolution)."""
    if epoch >= end_epoch:
        return end
    if epoch <= start_epoch:
        return start
    t = (epoch - start_epoch) / (end_epoch - start_epoch)
    return int(round(start + t * (end - start)))


def _changes(level: Callable[[int], int], last: int) -> list[tuple[int, int]]:
    """The steps of a monotone *level* over epochs ``1..last``: where it changes, by bisection.

    A monotone function of the epoch takes each value on one run of epochs,
    so each step costs a binary search (``log2(last)`` calls), never a walk
    over the epochs.
    """
    steps = [(1, level(1))]
    while steps[-1][0] < last and level(last) != steps[-1][1]:
        lo, hi = steps[-1][0], last  # level(lo) is the current level, level(hi) is not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if level(mid) == steps[-1][1] else (lo, mid)
        steps.append((hi, level(hi)))
    return steps


@public("pcr_explore.train")
@dataclass(frozen=True)
class ScanSchedule:
    """The scan level of every epoch (epochs count from 1).

    Parameters
    ----------
    steps : tuple of (int, int)
        ``(first epoch, level)`` pairs, by epoch: from its first epoch on, a
        step's level holds until the next step. The first step starts at
        epoch 1. Levels are whole numbers in ``1..64`` (a record's most scan
        groups); :meth:`check` holds them to a dataset's own.
    text : str
        How the schedule was written (``str(schedule)``).

    Raises
    ------
    ValueError
        If the steps do not start at epoch 1 and rise, or a level or an
        epoch is not a whole number in range; the message names the schedule.

    Examples
    --------
    >>> s = ScanSchedule.ramp(1, 10, start_epoch=2, end_epoch=6)
    >>> s.levels(8)
    [1, 1, 3, 6, 8, 10, 10, 10]
    >>> ScanSchedule.parse("steps:1=2,4=5,7=10").levels(8)
    [2, 2, 2, 5, 5, 5, 10, 10]
    >>> str(s)
    'ramp:1-10:2-6'
    >>> ScanSchedule.parse("ramp:1-10:1-100000000").level(50_000_000)
    5
    """

    steps: tuple[tuple[int, int], ...]
    text: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.steps, tuple) or not all(
            isinstance(s, tuple) and len(s) == 2 for s in self.steps
        ):
            raise ValueError(
                f"schedule steps must be (first epoch, level) pairs, got {self.steps!r:.80}"
            )
        where = f"schedule {self}"
        epochs = [_epoch(e, f"{where}: a step's first epoch") for e, _ in self.steps]
        if not epochs or epochs[0] != 1 or any(a >= b for a, b in zip(epochs, epochs[1:])):
            raise ValueError(
                f"schedule steps must start at epoch 1 and rise, got {list(self.steps)}"
            )
        # no record has more than MAX_SCANS levels, which also keeps a ramp's steps few
        check_scans([k for _, k in self.steps], MAX_SCANS, where=where)

    @classmethod
    def ramp(cls, start: int, end: int, *, start_epoch: int, end_epoch: int) -> ScanSchedule:
        """Level *start* up to *start_epoch*, *end* from *end_epoch*, linear (rounded) between.

        Built from the ramp's closed form at the epochs where its level
        changes (a binary search each), so a ramp over any number of epochs
        is built at once.

        Raises
        ------
        ValueError
            If a level is not a whole number in ``1..64`` or the epochs are
            not whole numbers with ``1 <= start_epoch <= end_epoch``.
        """
        text = f"ramp:{start}-{end}:{start_epoch}-{end_epoch}"
        a, b = check_scans([start, end], MAX_SCANS, where=f"schedule {text}")
        e0 = _epoch(start_epoch, f"schedule {text}: start_epoch")
        e1 = _epoch(end_epoch, f"schedule {text}: end_epoch")
        if not e0 <= e1:
            raise ValueError(
                f"need 1 <= start_epoch <= end_epoch, got {start_epoch} and {end_epoch}"
            )
        steps = _changes(lambda epoch: _ramp_level(a, b, e0, e1, epoch), e1)
        return cls(tuple(steps), text)

    @classmethod
    def from_steps(cls, steps: Sequence[tuple[int, int]]) -> ScanSchedule:
        """Explicit ``(first epoch, level)`` steps (ints; numpy integers accepted).

        Raises
        ------
        ValueError
            As the constructor does; a float is refused, not rounded.
        """
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise ValueError(
                f"schedule steps must be (first epoch, level) pairs, got {steps!r:.80}"
            )
        pairs = tuple(
            tuple(int(v) if isinstance(v, np.integer) else v for v in p)
            if isinstance(p, (tuple, list))
            else p
            for p in steps
        )
        checked = cls(pairs)  # type: ignore[arg-type]
        return cls(checked.steps, str(checked))

    @classmethod
    def parse(cls, text: str) -> ScanSchedule:
        """``ramp:START-END:FROM-TO`` (levels, then epochs) or ``steps:EPOCH=LEVEL,...``.

        Raises
        ------
        ValueError
            If *text* is not a string, or neither form, naming it and what
            was expected.

        Examples
        --------
        >>> ScanSchedule.parse("ramp:1-10:2-6").steps
        ((1, 1), (3, 3), (4, 6), (5, 8), (6, 10))
        >>> ScanSchedule.parse(None)
        Traceback (most recent call last):
        ...
        ValueError: a scan schedule is text, got None (NoneType) (examples: ramp:1-10:2-6 ...
        """
        if not isinstance(text, str):
            raise ValueError(
                f"a scan schedule is text, got {text!r:.60} ({type(text).__name__}) ({_EXAMPLES})"
            )
        kind, _, rest = text.strip().partition(":")
        try:
            if kind == "ramp":
                levels, _, epochs = rest.partition(":")
                a, b = (int(v) for v in levels.split("-"))
                e0, e1 = (int(v) for v in epochs.split("-"))
                return cls.ramp(a, b, start_epoch=e0, end_epoch=e1)
            if kind == "steps":
                pairs = [p.split("=") for p in rest.split(",")]
                return cls.from_steps([(int(e), int(k)) for e, k in pairs])
        except ValueError as exc:
            if "schedule" in str(exc) or "epoch" in str(exc):
                raise
        raise ValueError(f"not a scan schedule: {text!r:.80} ({_EXAMPLES})")

    def __str__(self) -> str:
        return self.text or "steps:" + ",".join(f"{e}={k}" for e, k in self.steps)

    def level(self, epoch: int) -> int:
        """The level epoch *epoch* (from 1) reads: a binary search over the steps."""
        e = _epoch(epoch, "epoch")
        i = bisect.bisect_right(self.steps, e, key=lambda s: s[0])
        return self.steps[i - 1][1]

    def segments(self, epochs: int) -> list[tuple[int, int, int]]:
        """``(first epoch, last epoch, level)`` runs covering epochs 1..*epochs*.

        One row per step that starts by *epochs*, so as short for a billion
        epochs as for ten.

        Examples
        --------
        >>> ScanSchedule.parse("steps:1=2,4=5,7=10").segments(8)
        [(1, 3, 2), (4, 6, 5), (7, 8, 10)]
        >>> ScanSchedule.parse("ramp:1-3:1-100000000").segments(10**9)
        [(1, 25000000, 1), (25000001, 75000000, 2), (75000001, 1000000000, 3)]
        """
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"epochs must be a whole number >= 0, got {epochs!r}")
        n = int(epochs)
        starts = [e for e, _ in self.steps if e <= n]
        ends = [*(s - 1 for s in starts[1:]), n]
        return [(s, t, k) for s, t, (_, k) in zip(starts, ends, self.steps)]

    def levels(self, epochs: int) -> list[int]:
        """The levels of epochs 1..*epochs*, one per epoch.

        Raises
        ------
        ValueError
            If *epochs* is above a million (the list would be that long):
            :meth:`segments` describes any number of epochs in one row per
            level change.
        """
        if isinstance(epochs, (int, np.integer)) and epochs > MAX_LISTED_EPOCHS:
            raise ValueError(
                f"schedule {self}: levels() lists one level per epoch, and {epochs:,} epochs is "
                f"more than {MAX_LISTED_EPOCHS:,}; segments({epochs}) gives the same as "
                "(first epoch, last epoch, level) runs"
            )
        return [k for first, last, k in self.segments(epochs) for _ in range(last - first + 1)]

    def check(self, num_scans: int) -> None:
        """Raise ValueError if a level lies outside 1..*num_scans*."""
        check_scans([k for _, k in self.steps], num_scans, where=f"schedule {self}")
