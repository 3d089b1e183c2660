"""Find source images in a folder and their class labels.

Labels come from class sub-folders (the first folder of each image's path),
from a ``file,label`` CSV, or are absent. The writer (encoder) and the read
side (folder sources, the audit) share this one definition, so a folder and
the dataset encoded from it list the same images with the same labels.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import DatasetError
from .transcode import IMAGE_SUFFIXES

__all__ = ["SourceItem", "find_sources"]


@dataclass(frozen=True)
class SourceItem:
    """One source image: its path relative to the source folder and its class."""

    name: str
    label: str | None


def find_sources(
    src: str | os.PathLike[str], labels: str | os.PathLike[str] | None = None
) -> tuple[list[SourceItem], list[str]]:
    """List the images under *src* (sorted) and their classes.

    Parameters
    ----------
    src : path
        A folder of images, searched recursively.
    labels : path, optional
        A CSV with a ``file,label`` header; ``file`` relative to *src*. Images
        not in the CSV are unlabelled. Without it, the first sub-folder of an
        image is its class when every image sits in a sub-folder.

    Returns
    -------
    items : list of SourceItem
    classes : list of str
        Sorted class names; index = integer label.

    Raises
    ------
    DatasetError
        If *src* is not a folder, holds no images, or the CSV is malformed.
    """
    root = Path(src)
    if not root.is_dir():
        raise DatasetError(f"{root}: not a folder of images")
    names = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file() and not p.name.startswith(".")
    )
    if not names:
        raise DatasetError(f"{root}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})")
    if labels is not None:
        mapping = _read_label_csv(Path(labels))
        items = [SourceItem(n, mapping.get(n)) for n in names]
    elif all("/" in n for n in names):
        items = [SourceItem(n, n.split("/", 1)[0]) for n in names]
    else:
        items = [SourceItem(n, None) for n in names]
    classes = sorted({i.label for i in items if i.label is not None})
    return items, classes


def _read_label_csv(path: Path) -> dict[str, str]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or not {"file", "label"} <= set(reader.fieldnames):
                raise DatasetError(f"{path}: label CSV needs a 'file,label' header line")
            out: dict[str, str] = {}
            for line, row in enumerate(reader, start=2):
                if not row["file"] or row["label"] is None or row["label"] == "":
                    raise DatasetError(f"{path}: line {line}: empty file or label")
                out[Path(row["file"]).as_posix()] = row["label"]
            return out
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read label CSV: {exc.strerror or exc}") from exc
