"""What a PCR dataset holds: images, records, classes and bytes per scan level.

:meth:`PCRDataset.summary` returns one; it is what ``pcr-explore inspect``
prints, and in a notebook it shows as a table.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .._public import public

if TYPE_CHECKING:  # a type only: the summary's helpers stay light (the CLI's `cache info`)
    from .manifest import Manifest

__all__ = ["DatasetSummary"]


def count(n: int, one: str, many: str | None = None) -> str:
    """*n* (with thousands separators) and the word for it, singular or plural.

    Examples
    --------
    >>> count(1, "record"), count(1200, "image"), count(2, "class", "classes")
    ('1 record', '1,200 images', '2 classes')
    """
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


@public("pcr_explore")
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
    lossy : int
        Source files re-encoded with loss (not JPEG, or CMYK): for them the
        full level is that copy.
    scan_script : str
        Name of the scan script (``"custom"`` for a script from a file).
    scan_content : list of str
        What each level's scan adds, one line per level.
    """

    path: str
    images: int
    records: int
    scans: int
    classes: list[str]
    bytes_per_scan: list[int]
    source_bytes: int
    skipped: int
    scan_script: str = "standard"
    lossy: int = 0
    scan_content: list[str] | None = None

    @classmethod
    def from_manifest(cls, manifest: Manifest, path: str) -> DatasetSummary:
        """The summary of a dataset whose checked manifest is *manifest*."""
        script = manifest.scan_script
        per_scan = [
            sum(r.bytes_per_scan[k] for r in manifest.records) for k in range(manifest.num_scans)
        ]
        return cls(
            path=path,
            images=manifest.images,
            records=len(manifest.records),
            scans=manifest.num_scans,
            classes=list(manifest.classes),
            bytes_per_scan=per_scan,
            source_bytes=manifest.source_bytes,
            skipped=len(manifest.skipped),
            lossy=len(manifest.lossy_conversions),
            scan_script=script.name,
            scan_content=script.describe_levels(),
        )

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

    def _holds(self, escape: Callable[[str], str]) -> str:
        """What the dataset holds, in one line (the script's name passed through *escape*)."""
        return (
            f"{count(self.images, 'image')}, {count(self.records, 'record')}, "
            f"{count(len(self.classes), 'class', 'classes')}, {self.skipped:,} skipped at encode, "
            + (f"{self.lossy:,} re-encoded with loss, " if self.lossy else "")
            + f"{escape(self.scan_script)} scan script"
        )

    def __str__(self) -> str:
        lines = [
            f"{self.path}: {self._holds(str)}",
            f"{'scan':>4} {'bytes':>14} {'of full':>8} {'of source':>10}  adds",
        ]
        src = self.source_bytes
        content = self.scan_content or [""] * self.scans
        for k, (b, f) in enumerate(zip(self.bytes_per_scan, self.fraction_per_scan), 1):
            of_src = f"{b / src:10.3f}" if src else f"{'-':>10}"
            lines.append(f"{k:>4} {b:>14,} {f:8.3f} {of_src}  {content[k - 1]}".rstrip())
        lines.append(
            "bytes: what reading each level takes, record headers included "
            "(the audit counts the images' bytes alone)"
        )
        if self.lossy:
            lines.append(
                f"lossy: {count(self.lossy, 'source')} (not JPEG, or CMYK) re-encoded as JPEG at "
                "encode; the full level is that copy (the manifest's conversions list them)"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        content = self.scan_content or [""] * self.scans
        rows = "".join(
            f"<tr><td>{k}</td><td>{b:,}</td><td>{f:.3f}</td><td>{html.escape(c)}</td></tr>"
            for k, (b, f, c) in enumerate(
                zip(self.bytes_per_scan, self.fraction_per_scan, content), 1
            )
        )
        return (
            f"<p><b>{html.escape(self.path)}</b>: {self._holds(html.escape)}</p>"
            "<table><tr><th>scan</th><th>bytes</th><th>of full</th><th>adds</th></tr>"
            f"{rows}</table>"
        )
