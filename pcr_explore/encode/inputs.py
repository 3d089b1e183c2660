"""Sources that are not a folder: WebDataset tar shards, Parquet files, Hugging Face datasets.

Each is unpacked into a staging folder laid out as a folder source is (one
sub-folder per class, the image bytes as they were), and that folder is
encoded. The encoder then sees the same names, bytes and labels as it would
from a folder of the same images, so the records come out byte-identical
whatever the input. The staging folder sits beside the output and is
removed afterwards.

* **WebDataset**: a list of tar files or URLs, or a brace pattern
  (``shards-{000000..000009}.tar``). Members are grouped by key (the path up
  to the first dot of the file name); a sample's image is its ``jpg``,
  ``jpeg``, ``png``, ``webp``, ``bmp``, ``tif(f)`` or ``gif`` member; its
  class is the ``class`` field of its ``json`` member, else its ``cls``
  integer (as a zero-padded number, so that the classes sort as the
  integers do), else it has none.
* **Parquet** (``pcr-explore[parquet]``): files with an image column
  (bytes, or Hugging Face's ``{"bytes", "path"}`` struct) and an optional
  label column (integers or names).
* **Hugging Face** ``datasets.Dataset`` (``pcr-explore[hf]``): an ``Image``
  column and a ``ClassLabel`` (or integer) column.

A sample without an image, or an image column of the wrong type, is a
:class:`~pcr_explore.errors.DatasetError` naming the shard (or file) and
the member (or row); a shard that cannot be fetched names its URL.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import shutil
import tarfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import DatasetError, MissingExtraError, no_such_path
from ..jpeg.transcode import IMAGE_SUFFIXES

__all__ = ["is_staged_input", "stage"]

_IMAGE_EXTS = tuple(s.lstrip(".") for s in IMAGE_SUFFIXES)


def _expand(pattern: str) -> list[str]:
    from braceexpand import braceexpand

    return list(braceexpand(pattern))


def is_staged_input(src: Any) -> bool:
    """Whether *src* names tar shards, Parquet files or a Hugging Face dataset."""
    if hasattr(src, "features") and hasattr(src, "column_names"):
        return True
    if isinstance(src, (list, tuple)):
        return bool(src) and all(is_staged_input(s) for s in src)
    if not isinstance(src, (str, os.PathLike)):
        return False
    s = os.fspath(src)
    return s.endswith((".tar", ".parquet")) or (
        s.endswith("}") is False and "{" in s and ".tar" in s
    )


def _paths(src: Any) -> list[str]:
    items = list(src) if isinstance(src, (list, tuple)) else [src]
    out: list[str] = []
    for s in items:
        out += _expand(os.fspath(s))
    return out


def _open(url: str) -> Any:
    """A readable binary file for a local path or an fsspec URL."""
    if "://" not in url:
        if not os.path.exists(url):
            raise no_such_path(url)
        return open(url, "rb")
    import fsspec

    try:
        return fsspec.open(url, "rb").open()
    except FileNotFoundError as exc:
        raise DatasetError(f"{url}: shard not found ({exc})") from exc
    except OSError as exc:
        raise DatasetError(f"{url}: cannot fetch the shard: {exc}") from exc


def _samples(url: str) -> Iterator[tuple[str, dict[str, bytes]]]:
    """(key, {extension: bytes}) of each sample in one tar shard, in order."""
    try:
        with _open(url) as f, tarfile.open(fileobj=f, mode="r|*") as tar:
            key, parts = None, {}
            for m in tar:
                if not m.isfile():
                    continue
                folder, base = posixpath.split(m.name)
                stem, _, ext = base.partition(".")
                k = posixpath.join(folder, stem)
                if k != key and key is not None:
                    yield key, parts
                    parts = {}
                key = k
                data = tar.extractfile(m)
                parts[ext.lower()] = data.read() if data is not None else b""
            if key is not None:
                yield key, parts
    except tarfile.TarError as exc:
        raise DatasetError(f"{url}: not a readable tar shard: {exc}") from exc


def _label_of(url: str, key: str, parts: dict[str, bytes]) -> str | int | None:
    if "json" in parts:
        try:
            meta = json.loads(parts["json"])
        except ValueError as exc:
            raise DatasetError(f"{url}: {key}.json is not JSON: {exc}") from exc
        if isinstance(meta, dict) and isinstance(meta.get("class"), str):
            return str(meta["class"])
    if "cls" in parts:
        text = parts["cls"].decode("ascii", "replace").strip()
        if not text.lstrip("-").isdigit():
            raise DatasetError(f"{url}: {key}.cls is {text!r:.40}, not an integer label")
        return int(text)
    return None


def _stage_webdataset(urls: Sequence[str]) -> list[tuple[str, bytes, Any]]:
    out = []
    for url in urls:
        for key, parts in _samples(url):
            ext = next((e for e in _IMAGE_EXTS if e in parts), None)
            if ext is None:
                raise DatasetError(
                    f"{url}: sample {key!r} has no image member ({', '.join(sorted(parts))}; "
                    f"expected one of {', '.join(_IMAGE_EXTS)})"
                )
            out.append((f"{posixpath.basename(key)}.{ext}", parts[ext], _label_of(url, key, parts)))
    return out


def _stage_parquet(
    paths: Sequence[str], image: str, label: str | None
) -> list[tuple[str, bytes, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingExtraError(
            "reading Parquet needs pyarrow: pip install 'pcr-explore[parquet]'"
        ) from exc
    out = []
    for path in paths:
        with _open(path) as f:
            table = pq.read_table(f)
        if image not in table.column_names:
            raise DatasetError(f"{path}: no column {image!r} (columns: {table.column_names})")
        use_label = label if label in table.column_names else None
        for i, row in enumerate(table.to_pylist()):
            data = _image_bytes(row[image], path, i, image)
            name = _name_of(row[image], f"{Path(path).stem}-{i:08d}", data)
            out.append((name, data, row[use_label] if use_label else None))
    return out


def _name_of(value: Any, fallback: str, data: bytes) -> str:
    """The image's own file name where the column keeps one (``{"bytes", "path"}``)."""
    path = value.get("path") if isinstance(value, dict) else None
    if isinstance(path, str) and path:
        return posixpath.basename(path.replace("\\", "/"))
    return fallback + _suffix(data)


def _image_bytes(value: Any, where: str, row: int, column: str) -> bytes:
    if isinstance(value, dict):
        value = value.get("bytes")
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value):
        return bytes(value)
    raise DatasetError(
        f"{where}: row {row}: column {column!r} holds {type(value).__name__}, not image bytes "
        "(bytes, or a {'bytes', 'path'} struct)"
    )


def _suffix(data: bytes) -> str:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = (im.format or "").lower()
    except Exception:  # the encoder reports an unreadable image as a skipped file
        return ".jpg"
    return {"jpeg": ".jpg", "mpo": ".jpg", "tiff": ".tif"}.get(fmt, f".{fmt}" if fmt else ".jpg")


def _stage_hf(ds: Any, image: str, label: str | None) -> list[tuple[str, bytes, Any]]:
    try:
        from datasets import Image as HFImage
    except ImportError as exc:  # pragma: no cover - a datasets object implies the package
        raise MissingExtraError("reading a datasets.Dataset needs datasets") from exc
    if image not in ds.column_names:
        raise DatasetError(f"{ds}: no column {image!r} (columns: {ds.column_names})")
    raw = ds.cast_column(image, HFImage(decode=False))
    names = None
    if label is not None:
        feature = ds.features.get(label)
        names = getattr(feature, "names", None)
    out = []
    for i, row in enumerate(raw):
        data = _image_bytes(row[image], "the dataset", i, image)
        lab = row[label] if label is not None else None
        if names is not None and isinstance(lab, int) and lab >= 0:
            lab = names[lab]
        out.append((_name_of(row[image], f"{i:08d}", data), data, lab))
    return out


def _class_names(labels: Iterable[Any]) -> dict[Any, str]:
    """Folder names for the labels: names as they are, integers zero-padded to sort as numbers."""
    found = {lab for lab in labels if lab is not None and lab != -1}
    ints = [lab for lab in found if isinstance(lab, int)]
    width = len(str(max(ints))) if ints else 1
    return {lab: (f"{lab:0{width}d}" if isinstance(lab, int) else str(lab)) for lab in found}


def stage(src: Any, folder: Path, *, image: str = "image", label: str | None = "label") -> Path:
    """Unpack *src* into *folder* as a folder source; return the folder.

    Raises
    ------
    DatasetError
        On a sample without an image, a bad label or image column, an
        unreadable shard; each names the shard or file and the member or row.
    """
    if hasattr(src, "features"):
        samples = _stage_hf(src, image, label if label in src.column_names else None)
    else:
        paths = _paths(src)
        if all(p.endswith(".parquet") for p in paths):
            samples = _stage_parquet(paths, image, label)
        else:
            samples = _stage_webdataset(paths)
    if not samples:
        raise DatasetError(f"{src}: no samples")
    names = _class_names(lab for _, _, lab in samples)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    seen: set[str] = set()
    for i, (name, data, lab) in enumerate(samples):
        sub = names.get(lab, "")
        rel = posixpath.join(sub, name) if sub else name
        if rel in seen:  # two samples of one name: keep both
            stem, _, ext = rel.rpartition(".")
            rel = f"{stem}-{i}.{ext}"
        seen.add(rel)
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder
