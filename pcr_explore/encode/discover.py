"""Find source images in a folder and their class labels.

Labels come from class sub-folders (the first folder of each image's path),
from a ``file,label`` CSV, or are absent. The writer (encoder) and the read
side (folder sources, the audit) share this one definition, so a folder and
the dataset encoded from it list the same images with the same labels.
"""

from __future__ import annotations

import csv
import io
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from .._json import displayable
from .._public import public
from ..errors import DatasetError, LabelWarning, no_such_path
from ..jpeg.transcode import IMAGE_SUFFIXES

__all__ = ["MAX_LABELS_BYTES", "SourceItem", "find_sources"]

#: The largest label CSV read: a line per image, so millions of images (ImageNet's
#: 1.28 million take about 60 MB).
MAX_LABELS_BYTES = 256 * 2**20


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
        not in the CSV are unlabelled; at most ``MAX_LABELS_BYTES`` (256 MiB).
        Without it, the first sub-folder of an image is its class when every
        image sits in a sub-folder.

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
        If *src* is not a folder, holds no images, or the CSV is malformed
        or too large.
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
                f"(first: {displayable(top[0])}); they get no label (-1), the class "
                "folders keep theirs. Move them into a class folder, or pass a label CSV.",
                LabelWarning,
                stacklevel=2,
            )
        items = [SourceItem(n, n.split("/", 1)[0] if "/" in n else None) for n in names]
    else:
        items = [SourceItem(n, None) for n in names]
    classes = sorted({i.label for i in items if i.label is not None})
    return items, classes


def _read_label_csv(path: Path) -> dict[str, str]:
    try:
        with path.open("rb") as f:  # bounded: /dev/zero or a huge file must not fill memory
            big = os.fstat(f.fileno()).st_size > MAX_LABELS_BYTES
            raw = b"" if big else f.read(MAX_LABELS_BYTES + 1)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read label CSV: {exc.strerror or exc}") from exc
    if big or len(raw) > MAX_LABELS_BYTES:
        raise DatasetError(
            f"{path}: label CSV is larger than {MAX_LABELS_BYTES:,} bytes, the most read "
            "(a line per image); is it the right file?"
        )
    try:
        reader = csv.DictReader(io.StringIO(raw.decode("utf-8"), newline=""))
        if reader.fieldnames is None or not {"file", "label"} <= set(reader.fieldnames):
            raise DatasetError(f"{path}: label CSV needs a 'file,label' header line")
        out: dict[str, str] = {}
        for line, row in enumerate(reader, start=2):
            if not row["file"] or row["label"] is None or row["label"] == "":
                raise DatasetError(f"{path}: line {line}: empty file or label")
            out[Path(row["file"]).as_posix()] = row["label"]
    except (UnicodeDecodeError, csv.Error) as exc:  # not UTF-8; a field past csv's limit
        raise DatasetError(f"{path}: label CSV is not UTF-8 comma-separated text: {exc}") from None
    return out
