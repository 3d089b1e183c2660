"""Export a PCR dataset at one scan level: WebDataset tar shards or a folder of JPEGs.

A pipeline built on WebDataset (or on a folder of images) can then train on
level *k* with no other change. Each image is its level-*k* JPEG exactly as
the reader assembles it (no decode, no re-encode); one stored with an EXIF
orientation the reader applies after decoding gets that orientation as an
EXIF segment, so other readers turn it upright too.

WebDataset layout: shards ``shard-000000.tar``, ... of about ``shard_bytes``
each; per image the members ``<key>.jpg``, ``<key>.cls`` (the label as
text, absent for unlabelled images) and ``<key>.json`` (the source name,
label, class and level). The key is the image's name without its extension,
with dots made underscores (WebDataset splits a name at its first dot).
Folder layout: ``<name>.jpg`` under the output folder, keeping the class
sub-folders. Both write ``export.json``, and every file is written
atomically.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import tarfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from .._public import public
from ..errors import DatasetError
from ..storage._atomic import atomic_write
from .reader import PCRDataset, open_dataset

__all__ = ["ExportSummary", "export_dataset", "shard_pattern", "with_orientation"]

Target = Literal["webdataset", "folder"]
_INDEX = "export.json"


@public("pcr_explore")
@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    out: str
    to: str
    scan: int
    images: int
    files: int
    bytes: int

    def __str__(self) -> str:
        return (
            f"{self.images:,} images at scan {self.scan} to {self.out} as {self.to} "
            f"({self.files:,} files, {self.bytes:,} bytes)"
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)


def with_orientation(jpeg: bytes, orientation: int) -> bytes:
    """*jpeg* with an EXIF APP1 segment saying *orientation* (unchanged for 1)."""
    if orientation == 1:
        return jpeg
    from PIL import Image

    exif = Image.Exif()
    exif[0x0112] = int(orientation)
    payload = exif.tobytes()
    if not payload.startswith(b"Exif\x00\x00"):
        payload = b"Exif\x00\x00" + payload
    return jpeg[:2] + b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload + jpeg[2:]


def _images(ds: PCRDataset, scan: int) -> Iterator[tuple[str, bytes, int]]:
    names = ds.names
    for i, data, label in ds.iter_jpeg(scan):
        yield names[i], with_orientation(data, ds.orientation(i)), label


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder; choose another output folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise DatasetError(
            f"{out}: already holds files; choose an empty folder or use overwrite=True "
            "(--overwrite)"
        )


def _unique(key: str, seen: set[str], i: int) -> str:
    if key in seen:
        key = f"{key}_{i}"
    seen.add(key)
    return key


def _member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0  # the same bytes on every run
    tar.addfile(info, io.BytesIO(data))


def _to_webdataset(ds: PCRDataset, scan: int, out: Path, shard_bytes: int, bar: Any) -> list[str]:
    shards: list[str] = []
    seen: set[str] = set()
    buf, tar = io.BytesIO(), None

    def close() -> None:
        nonlocal tar
        if tar is None:
            return
        tar.close()
        name = f"shard-{len(shards):06d}.tar"
        atomic_write(out / name, buf.getvalue())
        shards.append(name)
        buf.seek(0)
        buf.truncate()
        tar = None

    for i, (name, data, label) in enumerate(_images(ds, scan)):
        if tar is not None and buf.tell() + len(data) > shard_bytes:
            close()
        if tar is None:
            tar = tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT)
        key = _unique(name.rsplit(".", 1)[0].replace(".", "_"), seen, i)
        cls = ds.classes[label] if 0 <= label < len(ds.classes) else None
        meta = {"name": name, "label": label, "class": cls, "scan": scan}
        _member(tar, f"{key}.jpg", data)
        if label >= 0:
            _member(tar, f"{key}.cls", str(label).encode())
        _member(tar, f"{key}.json", json.dumps(meta).encode())
        bar.update(1)
    close()
    return shards


def _to_folder(ds: PCRDataset, scan: int, out: Path, bar: Any) -> list[str]:
    files: list[str] = []
    seen: set[str] = set()
    for i, (name, data, _) in enumerate(_images(ds, scan)):
        rel = _unique(name.rsplit(".", 1)[0], seen, i) + ".jpg"
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        files.append(rel)
        bar.update(1)
    return files


@public("pcr_explore")
def export_dataset(
    dataset: PCRDataset | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    scan: int,
    to: Target = "webdataset",
    shard_bytes: int = 256 * 1024 * 1024,
    overwrite: bool = False,
    progress: bool = True,
) -> ExportSummary:
    """Write every image of *dataset* at level *scan* as WebDataset shards or a folder.

    Parameters
    ----------
    dataset : PCRDataset or path
        The dataset to export (local or remote).
    out : path
        The output folder (created; must be empty unless *overwrite*).
    scan : int
        The level to export.
    to : {"webdataset", "folder"}
        The layout (see the module docstring).
    shard_bytes : int
        About how many bytes each WebDataset shard holds.
    overwrite : bool
        Write into a folder that already holds files (same names are replaced).
    progress : bool
        Show a progress bar.

    Returns
    -------
    ExportSummary

    Raises
    ------
    ValueError
        If *scan*, *to* or *shard_bytes* is out of range (before anything is written).
    DatasetError
        If *out* is a file, or holds files and *overwrite* is not set.

    Examples
    --------
    >>> export_dataset("photos.pcr", "level3-wds", scan=3)  # doctest: +SKIP
    >>> import webdataset as wds  # doctest: +SKIP
    >>> next(iter(wds.WebDataset("level3-wds/shard-{000000..000000}.tar")))  # doctest: +SKIP
    """
    if to not in ("webdataset", "folder"):
        raise ValueError(f"to must be 'webdataset' or 'folder', got {to!r}")
    if isinstance(shard_bytes, bool) or int(shard_bytes) < 1:
        raise ValueError(f"shard_bytes must be a positive number of bytes, got {shard_bytes!r}")
    ds = dataset if isinstance(dataset, PCRDataset) else open_dataset(os.fspath(dataset))
    k = ds._check_scan(scan)
    folder = Path(out)
    _check_out(folder, overwrite)
    folder.mkdir(parents=True, exist_ok=True)
    from .._pool import progress_bar as tqdm

    with tqdm(total=len(ds), unit="img", desc=f"export scan {k}", disable=not progress) as bar:
        if to == "webdataset":
            files = _to_webdataset(ds, k, folder, int(shard_bytes), bar)
        else:
            files = _to_folder(ds, k, folder, bar)
    nbytes = sum((folder / f).stat().st_size for f in files)
    index = {
        "source": ds.url,
        "scan": k,
        "to": to,
        "images": len(ds),
        "files": files,
        "classes": list(ds.classes),
    }
    atomic_write(folder / _INDEX, json.dumps(index, indent=1) + "\n")
    return ExportSummary(str(folder), to, k, len(ds), len(files), nbytes)


def shard_pattern(files: list[str]) -> str:
    """The brace pattern WebDataset takes for *files* (``shard-{000000..000003}.tar``).

    Examples
    --------
    >>> shard_pattern(["shard-000000.tar", "shard-000001.tar"])
    'shard-{000000..000001}.tar'
    """
    if len(files) == 1:
        return files[0]
    first, last = (posixpath.basename(f)[6:12] for f in (files[0], files[-1]))
    return f"shard-{{{first}..{last}}}.tar"
