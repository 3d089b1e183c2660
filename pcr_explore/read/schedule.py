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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._public import public

__all__ = ["ScanSchedule"]


@public("pcr_explore.train")
@dataclass(frozen=True)
class ScanSchedule:
    """The scan level of every epoch (epochs count from 1).

    Parameters
    ----------
    steps : tuple of (int, int)
        ``(first epoch, level)`` pairs, by epoch: from its first epoch on, a
        step's level holds until the next step. The first step starts at
        epoch 1.

    Examples
    --------
    >>> s = ScanSchedule.ramp(1, 10, start_epoch=2, end_epoch=6)
    >>> s.levels(8)
    [1, 1, 3, 6, 8, 10, 10, 10]
    >>> ScanSchedule.parse("steps:1=2,4=5,7=10").levels(8)
    [2, 2, 2, 5, 5, 5, 10, 10]
    >>> str(s)
    'ramp:1-10:2-6'
    """

    steps: tuple[tuple[int, int], ...]
    text: str = ""

    def __post_init__(self) -> None:
        epochs = [e for e, _ in self.steps]
        if not self.steps or epochs[0] != 1 or epochs != sorted(set(epochs)):
            raise ValueError(
                f"schedule steps must start at epoch 1 and rise, got {list(self.steps)}"
            )
        if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for _, k in self.steps):
            raise ValueError(f"schedule levels must be whole numbers >= 1, got {list(self.steps)}")

    @classmethod
    def ramp(cls, start: int, end: int, *, start_epoch: int, end_epoch: int) -> ScanSchedule:
        """Level *start* up to *start_epoch*, *end* from *end_epoch*, linear (rounded) between."""
        if not 1 <= start_epoch <= end_epoch:
            raise ValueError(
                f"need 1 <= start_epoch <= end_epoch, got {start_epoch} and {end_epoch}"
            )
        steps: list[tuple[int, int]] = []
        for epoch in range(1, end_epoch + 1):
            if epoch >= end_epoch:
                level = end
            elif epoch <= start_epoch:
                level = start
            else:
                t = (epoch - start_epoch) / (end_epoch - start_epoch)
                level = int(round(start + t * (end - start)))
            if not steps or steps[-1][1] != level:
                steps.append((epoch, level))
        return cls(tuple(steps), f"ramp:{start}-{end}:{start_epoch}-{end_epoch}")

    @classmethod
    def from_steps(cls, steps: Sequence[tuple[int, int]]) -> ScanSchedule:
        """Explicit ``(first epoch, level)`` steps."""
        pairs = tuple((int(e), int(k)) for e, k in steps)
        return cls(pairs, "steps:" + ",".join(f"{e}={k}" for e, k in pairs))

    @classmethod
    def parse(cls, text: str) -> ScanSchedule:
        """``ramp:START-END:FROM-TO`` (levels, then epochs) or ``steps:EPOCH=LEVEL,...``.

        Raises
        ------
        ValueError
            If *text* is neither, naming what was expected.
        """
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
        raise ValueError(
            f"not a scan schedule: {text!r} (examples: ramp:1-10:2-6 for levels 1 to 10 "
            "between epochs 2 and 6; steps:1=2,4=5,7=10)"
        )

    def __str__(self) -> str:
        return self.text or "steps:" + ",".join(f"{e}={k}" for e, k in self.steps)

    def level(self, epoch: int) -> int:
        """The level epoch *epoch* (from 1) reads."""
        if epoch < 1:
            raise ValueError(f"epochs count from 1, got {epoch}")
        return next(k for e, k in reversed(self.steps) if e <= epoch)

    def levels(self, epochs: int) -> list[int]:
        """The levels of epochs 1..*epochs*."""
        return [self.level(e) for e in range(1, epochs + 1)]

    def check(self, num_scans: int) -> None:
        """Raise ValueError if a level lies outside 1..*num_scans*."""
        bad = [k for _, k in self.steps if not 1 <= k <= num_scans]
        if bad:
            raise ValueError(f"schedule {self}: levels {bad} are outside 1..{num_scans}")
