"""What an audit found, as data: the fields, the derived numbers, and their JSON."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._json import json_safe, to_json
from ..errors import MissingExtraError
from ..quality import QualityCurve
from ..quality.tune import TuneResult
from ..records.summary import count
from ..storage._atomic import atomic_write
from ._checks import ISSUE_TITLES

__all__ = ["AuditFindings", "lossy_note"]


def lossy_note(n: int) -> str:
    """What *n* sources re-encoded with loss mean for the quality figures."""
    them = "it" if n == 1 else "them"
    return (
        f"{count(n, 'image')} re-encoded with loss at encode (not JPEG, or CMYK): the full level "
        f"is that JPEG copy, so the quality figures compare against {them}, not the original "
        "files (1.0 at the full level is not lossless)"
    )


@dataclass(frozen=True)
class AuditFindings:
    """Everything :func:`~pcr_explore.auditing.audit` found, and its JSON form.

    The data of an :class:`~pcr_explore.auditing.AuditReport`, which adds the
    renderings (text, notebook HTML, standalone page); the renderers take
    this class, so the data never depends on how it is shown. The
    attributes are documented on :class:`~pcr_explore.auditing.AuditReport`.
    """

    path: str
    kind: str
    images: int
    readable: int
    formats: dict[str, int]
    modes: dict[str, int]
    sizes: dict[str, Any]
    widths: np.ndarray
    heights: np.ndarray
    classes: dict[str, int]
    coding: dict[str, int]
    problems: list[dict[str, str]]
    duplicates: list[list[str]]
    conversions: list[dict[str, Any]]
    level_bytes: np.ndarray
    source_bytes: int
    tune: TuneResult | None
    worst: list[dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    scores: list[dict[str, Any]] = field(default_factory=list)
    duplicate_sets: list[dict[str, Any]] = field(default_factory=list)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    thumbnails: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    bytes_measured: int | None = None
    bytes_interval: np.ndarray | None = None

    @property
    def issue_counts(self) -> dict[str, int]:
        """Files with each issue type, in report order (types with none left out)."""
        files: dict[str, set[str]] = {}
        for p in self.problems:
            files.setdefault(p.get("type", ""), set()).add(p["file"])
        order = [*ISSUE_TITLES, *sorted(set(files) - set(ISSUE_TITLES))]
        return {k: len(files[k]) for k in order if k in files}

    @property
    def problems_line(self) -> str:
        """How many problems, and of which kinds: "8 problems (near duplicates 3, blurry 2)".

        The kinds count files (a file may have several), the total counts problems.
        """
        kinds = ", ".join(
            f"{ISSUE_TITLES.get(k, k).lower()} {n:,}" for k, n in self.issue_counts.items()
        )
        return f"{count(len(self.problems), 'problem')}" + (f" ({kinds})" if kinds else "")

    def flagged(self, issue: str) -> list[str]:
        """Return the files with problems of type *issue*, sorted.

        Parameters
        ----------
        issue : str
            A problem type, e.g. "blurry" or "label_leak".

        Returns
        -------
        list of str
        """
        return sorted({p["file"] for p in self.problems if p.get("type") == issue})

    def to_frame(self) -> Any:
        """Return one row per image: its scores, size, class and issue types (pandas).

        Columns: ``file``, ``class``, ``width``, ``height``, ``format``,
        ``mode``, one score column per check (lower is worse; NaN for an
        image that could not be decoded), ``entropy_bits``, ``phash`` and
        ``issues`` (the problem types of that file, comma-separated).

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        MissingExtraError
            If pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingExtraError(
                "AuditReport.to_frame needs pandas: pip install 'pcr-explore[pandas]'"
            ) from exc
        types: dict[str, dict[str, None]] = {}  # a file's issue types, in order, once each
        for p in self.problems:
            types.setdefault(p["file"], {})[p.get("type", "")] = None
        rows = [{**r, "issues": ",".join(types.get(r["file"], []))} for r in self.scores]
        return pd.DataFrame(rows)

    @property
    def recommended_scan(self) -> int | None:
        """The recommended scan level (None when nothing could be measured)."""
        return self.tune.scan if self.tune is not None else None

    @property
    def curve(self) -> QualityCurve | None:
        """The quality measurements of the sample (None when nothing was measured)."""
        return self.tune.curve if self.tune is not None else None

    @property
    def bytes_fraction(self) -> np.ndarray:
        """Bytes at each level as a fraction of the full (all readable images)."""
        b = self.level_bytes.astype(np.float64)
        return b / b[-1] if len(b) and b[-1] > 0 else np.full(len(b), np.nan)

    def levels(self) -> list[dict[str, Any]]:
        """Return one dict per level: bytes (whole dataset) and quality (sample).

        Returns
        -------
        list of dict
            ``scan``, ``bytes``, ``bytes_fraction`` and the metric's ``mean``,
            ``p5``, ``p50``, ``p95`` (None when nothing was measured); where
            the bytes are estimated, ``bytes_low`` and ``bytes_high``, their
            95% interval.
        """
        curve = self.curve
        frac = self.bytes_fraction
        out = []
        for k in range(len(self.level_bytes)):
            row: dict[str, Any] = {
                "scan": k + 1,
                "bytes": int(self.level_bytes[k]),
                "bytes_fraction": float(frac[k]),
            }
            if self.bytes_interval is not None:
                row["bytes_low"], row["bytes_high"] = (int(b) for b in self.bytes_interval[:, k])
            for stat in ("mean", "p5", "p50", "p95"):
                row[stat] = float(curve.statistic(stat)[k]) if curve is not None else None
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (no thumbnails; NaN as None).

        ``problems`` is one ``{"file", "type", "issue"}`` per problem,
        ``scores`` one row per image (as :meth:`to_frame`), and
        ``duplicate_sets`` one ``{"kind", "files", "classes",
        "max_distance", "label_leak"}`` per set.
        """
        curve = self.curve
        d = {
            "path": self.path,
            "kind": self.kind,
            "images": self.images,
            "readable": self.readable,
            "formats": self.formats,
            "modes": self.modes,
            "sizes": self.sizes,
            "classes": self.classes,
            "coding": self.coding,
            "problems": self.problems,
            "issue_counts": self.issue_counts,
            "checks": self.checks,
            "duplicates": self.duplicates,
            "duplicate_sets": self.duplicate_sets,
            "examples": self.examples,
            "scores": self.scores,
            "notes": self.notes,
            "conversions": self.conversions,
            "source_bytes": self.source_bytes,
            "bytes_measured": self.readable if self.bytes_measured is None else self.bytes_measured,
            "levels": self.levels(),
            "recommended_scan": self.recommended_scan,
            "target": self.options.get("target"),
            "metric": self.options.get("metric"),
            "statistic": self.options.get("statistic"),
            "luminance": self.options.get("luminance"),
            "sample_size": curve.sample_size if curve is not None else 0,
            "tune": self.tune.to_dict() if self.tune is not None else None,
            "worst": [
                {k: v for k, v in w.items() if not k.startswith("thumb")} for w in self.worst
            ],
            "quality_notes": [
                {"file": n, "note": t} for n, t in (curve.notes if curve is not None else ())
            ],
            "options": self.options,
            "seconds": self.seconds,
            "timings": self.timings,
        }
        return json_safe(d)  # type: ignore[no-any-return]

    def to_json(self, path: str | os.PathLike[str] | None = None, *, indent: int = 1) -> str:
        """Return the report as JSON text; also write it (atomically) to *path* if given.

        Parameters
        ----------
        path : path, optional
            File to write; its folder is created.
        indent : int
            JSON indentation.

        Returns
        -------
        str
            Strict JSON (:func:`pcr_explore._json.to_json`: NaN and infinity
            as ``null``), ending in a newline.
        """
        text = to_json(self.to_dict(), indent=indent) + "\n"
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        return text
