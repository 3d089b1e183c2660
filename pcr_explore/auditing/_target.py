"""What is audited: a folder of images, one image file or a PCR dataset; and its contents."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..encode.discover import find_sources
from ..errors import no_such_path
from ..jpeg.transcode import IMAGE_SUFFIXES
from ..read.reader import PCRDataset, open_dataset
from ..read.sources import FolderSource, LevelSource
from ..records.manifest import MANIFEST
from ._inspect import TINY_SIDE, FileInfo

__all__ = ["Target", "class_counts", "open_target", "size_summary"]


@dataclass
class Target:
    """What is audited: its images, their classes, and what a dataset's manifest records."""

    kind: str
    source: LevelSource
    names: list[str]
    labels: np.ndarray
    classes: list[str]
    root: Path
    dataset: PCRDataset | None = None
    problems: list[dict[str, str]] = field(default_factory=list)
    conversions: list[dict[str, Any]] = field(default_factory=list)

    def class_of(self, i: int) -> str:
        """Image *i*'s class name ("" when it has none)."""
        k = int(self.labels[i])
        return self.classes[k] if 0 <= k < len(self.classes) else ""

    def load(self, i: int) -> bytes:
        """Image *i*'s bytes: the source file, or the dataset's full JPEG."""
        if self.dataset is not None:
            return self.dataset.jpeg_bytes(i)
        return (self.root / self.names[i]).read_bytes()


def open_target(path: str | os.PathLike[str], backend: str, quality: int) -> Target:
    """Return the target: a PCR dataset, one image file or a folder of images.

    Raises
    ------
    FileNotFoundError
        If *path* does not exist.
    ValueError
        If *path* is a file that is not an image.
    DatasetError
        If the folder holds no image, or the dataset is malformed.
    """
    p = Path(path)
    remote = "://" in os.fspath(path)
    if not p.exists() and not remote:
        raise no_such_path(p)
    if remote or (p.is_dir() and (p / MANIFEST).exists()):
        ds = open_dataset(os.fspath(path))
        return Target(
            "pcr",
            ds,
            ds.names,
            ds.labels,
            ds.classes,
            p,
            dataset=ds,
            problems=[
                {
                    "file": str(s.get("file", "?")),
                    "issue": f"skipped at encode: {s.get('issue', '')}",
                }
                for s in ds.manifest.skipped
            ],
            conversions=list(ds.manifest.conversions),
        )
    if p.is_file():
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise ValueError(f"{p}: not an image file ({', '.join(sorted(IMAGE_SUFFIXES))})")
        src = FolderSource(p, backend=backend, quality=quality)  # type: ignore[arg-type]
        return Target("file", src, [p.name], np.array([-1]), [], p.parent)
    items, classes = find_sources(p)
    index = {c: i for i, c in enumerate(classes)}
    labels = np.array([index[it.label] if it.label is not None else -1 for it in items])
    src = FolderSource(p, backend=backend, quality=quality)  # type: ignore[arg-type]
    return Target("folder", src, [it.name for it in items], labels, classes, p)


def class_counts(t: Target, infos: list[FileInfo]) -> dict[str, int]:
    """Images per class, and "(no class)" for those without one."""
    counts = Counter(t.labels[i.index] for i in infos)
    classes = {c: int(counts.get(k, 0)) for k, c in enumerate(t.classes)}
    if counts.get(-1):
        classes["(no class)"] = int(counts[-1])
    return classes


def _summary(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    lo, med, hi = np.percentile(values, [0, 50, 100])
    return {"min": float(lo), "median": float(med), "max": float(hi)}


def _shorter_side_buckets(widths: np.ndarray, heights: np.ndarray) -> dict[str, int]:
    edges = [0, TINY_SIDE, 128, 256, 512, 1024, 2048]
    counts, _ = np.histogram(np.minimum(widths, heights), bins=[*edges, np.inf])
    labels = [f"{lo}-{hi - 1}" for lo, hi in zip(edges, edges[1:])] + [f"{edges[-1]}+"]
    return {label: int(n) for label, n in zip(labels, counts)}


def size_summary(widths: np.ndarray, heights: np.ndarray) -> dict[str, Any]:
    """Width, height and megapixels (min, median, max), and shorter sides by bucket."""
    return {
        "width": _summary(widths),
        "height": _summary(heights),
        "megapixels": _summary(widths * heights / 1e6),
        "shorter_side": _shorter_side_buckets(widths, heights),
    }
