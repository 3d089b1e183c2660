"""What a PCR dataset holds: images, records, classes and bytes per scan level.

:meth:`PCRDataset.summary` returns one; it is what ``pcr-explore inspect``
prints, and in a notebook it shows as a table.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DatasetSummary"]


@dataclass(frozen=True)
class DatasetSummary:
    """Sizes of a PCR dataset, per scan level.

    Attributes
    ----------
    path : str
        Where the dataset was opened from.
    images, records, scans : int
        Counts.
    classes : list of str
        Class names; index = integer label.
    bytes_per_scan : list of int
        Bytes a full read at level 1..scans transfers (headers included).
    source_bytes : int
        Bytes of the source files (0 when unknown).
    skipped : int
        Source files the encoder skipped.
    """

    path: str
    images: int
    records: int
    scans: int
    classes: list[str]
    bytes_per_scan: list[int]
    source_bytes: int
    skipped: int

    @property
    def total_bytes(self) -> int:
        """Bytes of every record file: the full level."""
        return self.bytes_per_scan[-1]

    @property
    def fraction_per_scan(self) -> list[float]:
        """``bytes_per_scan`` as fractions of the full level."""
        return [b / self.total_bytes for b in self.bytes_per_scan]

    def to_dict(self) -> dict[str, Any]:
        """The fields and derived totals as plain JSON-ready values."""
        return {
            **asdict(self),
            "fraction_per_scan": self.fraction_per_scan,
            "total_bytes": self.total_bytes,
        }

    def __str__(self) -> str:
        lines = [
            f"{self.path}: {self.images} images, {self.records} records, "
            f"{len(self.classes)} classes, {self.skipped} skipped at encode",
            f"{'scan':>4} {'bytes':>14} {'of full':>8} {'of source':>10}",
        ]
        src = self.source_bytes
        for k, (b, f) in enumerate(zip(self.bytes_per_scan, self.fraction_per_scan), 1):
            of_src = f"{b / src:10.3f}" if src else f"{'-':>10}"
            lines.append(f"{k:>4} {b:>14,} {f:8.3f} {of_src}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{k}</td><td>{b:,}</td><td>{f:.3f}</td></tr>"
            for k, (b, f) in enumerate(zip(self.bytes_per_scan, self.fraction_per_scan), 1)
        )
        return (
            f"<p><b>{html.escape(self.path)}</b>: {self.images} images, {self.records} records,"
            f" {len(self.classes)} classes, {self.skipped} skipped at encode</p>"
            "<table><tr><th>scan</th><th>bytes</th><th>of full</th></tr>"
            f"{rows}</table>"
        )
