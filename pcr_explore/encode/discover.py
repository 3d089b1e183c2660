"""Find source images in a folder and their class labels.

Labels come from class sub-folders (the first folder of each image's path),
from a ``file,label`` CSV, or are absent. The writer (encoder) and the read
side (folder sources, the audit) share this one definition, so a folder and
the dataset encoded from it list the same images with the same labels.
"""

from __future__ import annotations

import csv
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from .._json import displayable
from .._public import public
from ..errors import DatasetError, LabelWarning, no_such_path
from ..jpeg.transcode import IMAGE_SUFFIXES

__all__ = ["SourceItem", "display_name", "find_sources"]


@dataclass(frozen=True)
class SourceItem:
    """One source image: its path relative to the source folder and its class."""

    name: str
    label: str | None


@public("pcr_explore")
def find_sources(
    src: str | os.PathLike[str], *, labels: str | os.PathLike[str] | None = None
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
    FileNotFoundError
        If *src* does not exist.
    DatasetError
        If *src* is not a folder, holds no images, or the CSV is malformed.
    """
    root = Path(src)
    if not root.exists():
        raise no_such_path(root)
    if not root.is_dir():
        raise DatasetError(f"{root}: is a file, not a folder of images")
    # Everything named like an image but a folder: a FIFO, a dangling link or a
    # link loop is listed too, so that the encoder and the audit report it as a
    # skipped file with its reason instead of leaving it out unseen.
    names = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".") and not p.is_dir()
    )
    if not names:
        raise DatasetError(f"{root}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})")
    if labels is not None:
        mapping = _read_label_csv(Path(labels))
        items = [SourceItem(n, mapping.get(n)) for n in names]
    elif any("/" in n for n in names):
        top = [n for n in names if "/" not in n]
        if top:
            warnings.warn(
                f"{root}: {len(top)} image(s) sit beside the class folders "
                f"(first: {display_name(top[0])}); they get no label (-1), the class "
                "folders keep theirs. Move them into a class folder, or pass a label CSV.",
                LabelWarning,
                stacklevel=2,
            )
        items = [SourceItem(n, n.split("/", 1)[0] if "/" in n else None) for n in names]
    else:
        items = [SourceItem(n, None) for n in names]
    classes = sorted({i.label for i in items if i.label is not None})
    return items, classes


def display_name(name: str) -> str:
    r"""*name* made printable: bytes that are not UTF-8 shown as ``\xNN`` escapes.

    File names on POSIX are bytes; Python keeps undecodable ones as lone
    surrogates, which cannot be printed or written as UTF-8.

    Examples
    --------
    >>> display_name("caf\udce9.jpg")
    'caf\\xe9.jpg'
    """
    return displayable(name)


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
