"""What a budget found, as data: per level what it costs and keeps, each criterion's choice.

The report holds measurements only (bytes, quality, gradients, accuracy,
decode cost); the times at a storage bandwidth are computed from them on
demand, so :meth:`BudgetReport.reprice` answers for another bandwidth
without measuring anything again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._checks import check_scan
from .._json import to_json
from .._public import public
from ..quality import QualityCurve
from ..quality.metrics._names import metric_label
from ..storage._atomic import atomic_write
from ..storage._units import format_rate, parse_bytes
from .decode import DecodeCost

__all__ = ["BudgetFindings", "BudgetLevel", "format_bandwidth", "format_size"]


@public("pcr_explore.budgeting")
def format_bandwidth(bps: float) -> str:
    """Bytes per second as a short string (the one way the package writes a rate).

    Examples
    --------
    >>> format_bandwidth(20e6), format_bandwidth(1.5e9), format_bandwidth(800.0)
    ('20 MB/s', '1.5 GB/s', '800 B/s')
    """
    return format_rate(bps)


def format_size(nbytes: float) -> str:
    """Bytes as a short string, in the decimal units sizes are given in.

    Examples
    --------
    >>> format_size(20e9), format_size(1_500_000), format_size(800)
    ('20 GB', '1.5 MB', '800 B')
    """
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.3g} B"


def _finite(v: float | None) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


@public("pcr_explore.budgeting")
@dataclass(frozen=True)
class BudgetLevel:
    """One scan level's costs and qualities (measured; times come from the report).

    Attributes
    ----------
    scan : int
    bytes : int
        Bytes a pass over the dataset reads at this level (estimated from
        the sample for a folder of images).
    bytes_fraction : float
        ``bytes`` over the full level's.
    quality_mean, quality_p5 : float
        The quality metric's mean and 5th percentile over the sample.
    quality_mean_ci, quality_p5_ci : (float, float)
        Their bootstrap intervals (one value where every image was measured).
    gradient : float or None
        Mean cosine similarity of the loss gradients to full quality's
        (None: not measured at this level).
    gradient_ci : (float, float) or None
        Its Student-t interval.
    accuracy : float or None
        Best validation accuracy of the proxy training at this level (None:
        not trained).
    decode_seconds : float
        Seconds one core takes to decode one image at this level.
    """

    scan: int
    bytes: int
    bytes_fraction: float
    quality_mean: float
    quality_mean_ci: tuple[float, float]
    quality_p5: float
    quality_p5_ci: tuple[float, float]
    gradient: float | None
    gradient_ci: tuple[float, float] | None
    accuracy: float | None
    decode_seconds: float


_R = TypeVar("_R", bound="BudgetFindings")


@dataclass(frozen=True)
class BudgetFindings:
    """The fields and the time model of :class:`~pcr_explore.BudgetReport` (see there)."""

    source: str
    images: int
    metric: str
    statistic: str
    target: float
    levels: tuple[BudgetLevel, ...]
    choices: Mapping[str, int | None]
    decided: Mapping[str, bool]
    recommended: int
    bandwidth: float | None
    workers: int
    of_full: float
    notes: tuple[str, ...]
    curve: QualityCurve = dataclasses.field(repr=False, compare=False)
    decode: DecodeCost = dataclasses.field(repr=False, compare=False)
    gradient: Any = dataclasses.field(default=None, repr=False, compare=False)
    training: Any = dataclasses.field(default=None, repr=False, compare=False)
    disk: int | None = None
    disk_level: int | None = None

    def __repr__(self) -> str:
        bw = "" if self.bandwidth is None else f" at {format_bandwidth(self.bandwidth)}"
        k = self.recommended
        return (
            f"<{type(self).__name__} {self.source!r}: level {k} of {len(self.levels)} "
            f"({self.level(self.recommended).bytes_fraction:.0%} of the bytes){bw}>"
        )

    @property
    def num_scans(self) -> int:
        """Levels per image."""
        return len(self.levels)

    def level(self, scan: int) -> BudgetLevel:
        """The row of level *scan* (an int in 1..num_scans)."""
        return self.levels[check_scan(scan, self.num_scans, where="the budget report") - 1]

    # -- the time model ------------------------------------------------------
    def decode_seconds(self, scan: int) -> float:
        """Seconds an epoch's decoding takes at *scan* on ``workers`` cores."""
        return self.images * self.level(scan).decode_seconds / self.workers

    def read_seconds(self, scan: int, *, bandwidth: float | None = None) -> float | None:
        """Seconds an epoch's reads take at *scan* and *bandwidth* (None: no bandwidth given)."""
        bw = self.bandwidth if bandwidth is None else bandwidth
        return None if bw is None else self.level(scan).bytes / bw

    def epoch_seconds(self, scan: int, *, bandwidth: float | None = None) -> float:
        """An epoch's input time at *scan*: reading and decoding pipelined, the slower sets it."""
        read = self.read_seconds(scan, bandwidth=bandwidth)
        return max(self.decode_seconds(scan), read or 0.0)

    def crossover(self, scan: int) -> float:
        """The bandwidth below which reading, not decoding, is the bottleneck at *scan*."""
        return self.level(scan).bytes / max(self.decode_seconds(scan), 1e-12)

    def reprice(self: _R, bandwidth: float | str | None) -> _R:
        """The same report at another bandwidth: nothing is measured again.

        Examples
        --------
        >>> from pcr_explore import budget
        >>> r = budget("photos.pcr", bandwidth="20MB/s")
        >>> print(r.reprice("100MB/s").sentence)  # nothing is measured again
        level 5 reads 43% of the bytes; ...; at 100 MB/s ...
        """
        bw = None if bandwidth is None else parse_bytes(bandwidth, rate=True)
        return dataclasses.replace(self, bandwidth=bw)

    # -- words -----------------------------------------------------------------
    @property
    def sentence(self) -> str:
        """The recommendation and what it costs, in one sentence."""
        k, full = self.recommended, self.num_scans
        row = self.level(k)
        parts = [
            f"level {k} reads {row.bytes_fraction:.0%} of the bytes",
            f"{self.statistic} {quality_label(self.metric)} {_stat(row, self.statistic):.3g}",
        ]
        if row.gradient is not None:
            parts.append(f"gradients agree {row.gradient:.2f}")
        if row.accuracy is not None and self.level(full).accuracy is not None:
            parts.append(
                f"validation accuracy {row.accuracy:.3f} (full quality "
                f"{self.level(full).accuracy:.3f})"
            )
        if self.bandwidth is not None:
            bw = format_bandwidth(self.bandwidth)
            low, high = self.epoch_seconds(k), self.epoch_seconds(full)
            than = f"instead of {high:.3g} s" if k < full else "(the full level)"
            if (self.read_seconds(k) or 0.0) >= self.decode_seconds(k):
                parts.append(f"at {bw} an epoch reads in {low:.3g} s {than}")
            else:
                parts.append(
                    f"at {bw} decoding, not reading, sets the pace at this level: an epoch "
                    f"takes {low:.3g} s {than}"
                )
        return "; ".join(parts)

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per level, with the modelled times at the report's bandwidth."""
        out = []
        for r in self.levels:
            d = dataclasses.asdict(r)
            d["decode_epoch_seconds"] = self.decode_seconds(r.scan)
            d["read_epoch_seconds"] = self.read_seconds(r.scan)
            d["epoch_seconds"] = self.epoch_seconds(r.scan) if self.bandwidth else None
            d["crossover_bandwidth"] = self.crossover(r.scan)
            for key in ("quality_mean_ci", "quality_p5_ci", "gradient_ci"):
                if d[key] is not None:
                    d[key] = [_finite(v) for v in d[key]]
            out.append(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the levels, the choices, the recommendation and its sentence."""
        return {
            "source": self.source,
            "images": self.images,
            "metric": self.metric,
            "statistic": self.statistic,
            "target": self.target,
            "bandwidth": self.bandwidth,
            "workers": self.workers,
            "of_full": self.of_full,
            "choices": dict(self.choices),
            "decided": dict(self.decided),
            "recommended": self.recommended,
            "sentence": self.sentence,
            "disk": self.disk,
            "disk_level": self.disk_level,
            "levels": self.rows(),
            "decode": self.decode.to_dict(),
            "notes": list(self.notes),
        }

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The report as JSON (non-finite numbers as null), also written to *path* if given."""
        text = to_json(self.to_dict())
        if path is not None:
            atomic_write(Path(path), text + "\n")
        return text


def quality_label(metric: str) -> str:
    """The metric as the budget's table and sentence name it (PSNR without its unit)."""
    return metric_label(metric).removesuffix(" (dB)")


def _stat(row: BudgetLevel, statistic: str) -> float:
    return row.quality_p5 if statistic == "p5" else row.quality_mean
