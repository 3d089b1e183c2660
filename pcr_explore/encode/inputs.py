r"""Sources that are not a folder: WebDataset tar shards, Parquet files, Hugging Face datasets.

Each is unpacked into a staging folder laid out as a folder source is (one
sub-folder per class, the image bytes as they were), and that folder is
encoded. The encoder then sees the same names, bytes and labels as it would
from a folder of the same images, so the records come out byte-identical
whatever the input.

* **WebDataset**: a list of tar files or URLs, or a brace pattern
  (``shards-{000000..000009}.tar``, at most 1,000,000 shards). Members are
  read as one stream, grouped by key (the path up to the first dot of the
  file name) as they come; only regular files and folders may be members,
  and only image and label members are read, each after its size is
  checked against the encoder's per-image limit. A sample's image is its
  one ``jpg``, ``jpeg``, ``png``, ``webp``, ``bmp``, ``tif(f)`` or ``gif``
  member; its class is the ``class`` field of its ``json`` member, else
  its ``cls`` integer, else it has none.
* **Parquet** (``pcr-explore[parquet]``): files with an image column
  (bytes, or Hugging Face's ``{"bytes", "path"}`` struct) and a label column
  (integers or names). The default label column, ``label``, may be absent
  (the images are unlabelled); a column named otherwise must be there.
* **Hugging Face** ``datasets.Dataset`` (``pcr-explore[hf]``): an ``Image``
  column (bytes, or the path of a local file) and a ``ClassLabel``, integer
  or name column, as for Parquet.

Staging. :func:`stage` writes the samples, as they are read, into a
staging folder (:mod:`pcr_explore.encode._staging`: where it lies, how a
re-run finds it, when it is removed); :func:`identity` is what names an
input's content there.

Labels. A label becomes a folder name only if it is a safe one: integers
0 and up (-1 and None mean unlabelled), zero-padded to the width of the
largest so that the classes sort as the integers do; names that are one
path component (not empty, ``.`` or ``..``, no ``/``, ``\\``, NUL or other
control character, valid UTF-8 of at most 255 bytes). Anything else, a
dataset mixing integer labels with names (``2`` and ``"02"`` would merge),
or two names one folder on this file system, is refused. An image's own
file name (a tar key, a ``path`` field) is kept where it is a safe file name
and otherwise replaced, so that a name never becomes a path either.

Every refusal is a :class:`~pcr_explore.errors.DatasetError` naming the
shard (or file, or dataset column) and the member (or row, or class index)
and what was wrong; a shard that cannot be fetched names its URL.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import posixpath
import re
import stat
import tarfile
import uuid
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import DatasetError, MissingExtraError, no_such_path
from ..jpeg.transcode import IMAGE_SUFFIXES, MAX_SOURCE_BYTES
from ._braces import expand
from ._staging import Sample, Staging
from ._staging import shown as _shown

__all__ = ["describe", "identity", "is_staged_input", "stage"]

# Sorted: a sample's image member is looked up in this order, and a set's
# order would change from run to run.
_IMAGE_EXTS = tuple(sorted(s.lstrip(".") for s in IMAGE_SUFFIXES))
_METADATA_EXTS = ("json", "cls")
# What a member that is neither a file nor a folder is, for the message refusing it
_NOT_A_FILE = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a device",
    tarfile.BLKTYPE: "a device",
    tarfile.FIFOTYPE: "a FIFO",
}
# The label column EncodeOptions names by default: a file without it is
# unlabelled. A column the caller named otherwise must exist.
DEFAULT_LABEL_COLUMN = "label"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Room left in a 255-byte file name for the "-<n>" that tells apart two
# images of one name.
_MAX_FILE_NAME = 200
_MAX_INT_LABEL = 2**63 - 1  # Arrow's and most datasets' widest integer


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


# -- names ---------------------------------------------------------------


def _name_problem(name: str) -> str | None:
    """Why *name* cannot be one folder name in the staging folder; None if it can."""
    if name in ("", ".", ".."):
        return f"{name!r} is not a folder name"
    if "/" in name or "\\" in name:
        return "it holds a path separator"
    if _CONTROL.search(name):
        return "it holds a NUL or another control character"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "it is not valid Unicode text"
    if size > 255:
        return f"it is {size} bytes long in UTF-8 (at most 255)"
    return None


def _label(value: Any, where: str) -> str | int | None:
    """A label checked to make one safe class folder: a name or an integer 0 and up.

    Raises
    ------
    DatasetError
        Naming *where*, the label and what is wrong with it.
    """
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value == -1:  # the usual mark of an unlabelled image (ClassLabel's too)
            return None
        if not 0 <= value <= _MAX_INT_LABEL:
            raise DatasetError(
                f"{where}: integer label {_shown(value)} is out of range "
                "(0 to 2**63-1; -1 for none)"
            )
        return value
    if not isinstance(value, str):
        raise DatasetError(
            f"{where}: label {_shown(value)} is a {type(value).__name__}, "
            "not a class name or an integer"
        )
    why = _name_problem(value)
    if why is not None:
        raise DatasetError(f"{where}: class {_shown(value)} cannot be a class folder: {why}")
    return value


def _file_name(name: Any, fallback: str, data: bytes) -> str:
    """A safe staged file name: *name*'s last part, else *fallback*; with an image suffix.

    A name that starts with a dot would be skipped as hidden by
    :func:`~pcr_explore.encode.discover.find_sources`, and one without an
    image suffix would not be found at all, so neither is kept as it is.
    """
    base = posixpath.basename(name.replace("\\", "/")) if isinstance(name, str) else ""
    if base.startswith(".") or _name_problem(base) or len(base.encode()) > _MAX_FILE_NAME:
        base = fallback
    if Path(base).suffix.lower() not in IMAGE_SUFFIXES:
        base += _suffix(data)
    return base


def _safe_stem(text: str) -> str:
    """*text* if it can start a fallback file name, else ``image``."""
    stem = Path(text.replace("\\", "/")).stem
    ok = not stem.startswith(".") and _name_problem(stem) is None and len(stem) <= 100
    return stem if ok else "image"


def _suffix(data: bytes) -> str:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = (im.format or "").lower()
    except Exception:  # the encoder reports an unreadable image as a skipped file
        return ".jpg"
    return {"jpeg": ".jpg", "mpo": ".jpg", "tiff": ".tif"}.get(fmt, f".{fmt}" if fmt else ".jpg")


def _check_size(size: int, where: str) -> None:
    """Refuse an image larger than the folder encoder accepts (it reads each one whole)."""
    if size > MAX_SOURCE_BYTES:
        raise DatasetError(
            f"{where}: {size:,} bytes is larger than any image source allowed "
            f"({MAX_SOURCE_BYTES:,})"
        )


# -- shards and files ---------------------------------------------------


def _paths(src: Any) -> Iterator[str]:
    """Every shard or file *src* names, a pattern expanded as it is reached."""
    items = list(src) if isinstance(src, (list, tuple)) else [src]
    for s in items:
        yield from expand(os.fspath(s))


def _open(url: str) -> Any:
    """A readable binary file for a local path or an fsspec URL."""
    if "://" not in url:
        if not os.path.exists(url):
            raise no_such_path(url)
        try:
            return open(url, "rb")
        except OSError as exc:  # a folder, or no permission
            raise DatasetError(f"{url}: cannot open: {exc.strerror or exc}") from None
    import fsspec

    try:
        return fsspec.open(url, "rb").open()
    except FileNotFoundError as exc:
        raise DatasetError(f"{url}: shard not found ({exc})") from exc
    except OSError as exc:
        raise DatasetError(f"{url}: cannot fetch the shard: {exc}") from exc


# -- WebDataset ------------------------------------------------------------


def _files(tar: tarfile.TarFile, url: str) -> Iterator[tuple[str, str, tarfile.TarInfo]]:
    """(key, lower-case extension, member) of each file of a tar stream; folders pass by."""
    for m in tar:
        if not (m.isfile() or m.isdir()):
            what = _NOT_A_FILE.get(m.type, f"of tar type {m.type!r}")
            raise DatasetError(
                f"{url}: member {_shown(m.name)} is {what}, not a regular file; a sample's "
                "data must be stored in the shard itself"
            )
        if m.isfile():
            folder, base = posixpath.split(m.name)
            stem, _, ext = base.partition(".")
            yield posixpath.join(folder, stem), ext.lower(), m


def _read_member(tar: tarfile.TarFile, m: tarfile.TarInfo, where: str) -> bytes:
    _check_size(m.size, where)  # from the header: nothing read yet
    f = tar.extractfile(m)
    data = f.read(MAX_SOURCE_BYTES + 1) if f is not None else b""
    _check_size(len(data), where)
    return data


def _tar_groups(url: str) -> Iterator[tuple[str, dict[str, bytes | None]]]:
    """(key, {extension: bytes}) of each sample in one tar shard, in order, one at a time.

    Only image and label members are read, each after its size is checked
    from its header; others are noted (None) unread.
    """
    f = _open(url)
    try:
        with f, tarfile.open(fileobj=f, mode="r|*") as tar:
            for key, members in itertools.groupby(_files(tar, url), key=lambda t: t[0]):
                parts: dict[str, bytes | None] = {}
                for _, ext, m in members:
                    where = f"{url}: member {_shown(m.name)}"
                    if ext in parts:
                        raise DatasetError(
                            f"{where}: sample {_shown(key)} already has a {ext!r} member; "
                            "one sample holds one of each"
                        )
                    wanted = ext in _IMAGE_EXTS or ext in _METADATA_EXTS
                    parts[ext] = _read_member(tar, m, where) if wanted else None
                yield key, parts
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{url}: not a readable tar shard: {exc}") from exc
    except OSError as exc:  # a corrupt gzip stream, or the connection of a URL
        raise DatasetError(f"{url}: cannot read the shard: {exc}") from exc


def _tar_label(url: str, key: str, parts: dict[str, bytes | None]) -> tuple[str | int | None, str]:
    """A sample's label (its json ``class``, else its ``cls``) and the member it came from."""
    meta_bytes = parts.get("json")
    if meta_bytes is not None:
        where = f"{url}: {key}.json"
        try:
            meta = json.loads(meta_bytes)
        except (ValueError, RecursionError) as exc:
            raise DatasetError(f"{where} is not JSON: {exc}") from None
        if isinstance(meta, dict) and meta.get("class") is not None:
            return _label(meta["class"], where), where
    cls = parts.get("cls")
    if cls is not None:
        where = f"{url}: {key}.cls"
        text = cls.decode("ascii", "replace").strip()
        if not re.fullmatch(r"-?[0-9]{1,19}", text):
            raise DatasetError(f"{where} is {text!r:.40}, not an integer label")
        return _label(int(text), where), where
    return None, f"{url}: {key}"


def _tar_samples(url: str) -> Iterator[Sample]:
    fallback = _safe_stem(url.rstrip("/").rsplit("/", 1)[-1])
    for n, (key, parts) in enumerate(_tar_groups(url)):
        exts = [e for e in _IMAGE_EXTS if e in parts]
        if len(exts) != 1:
            found = ", ".join(sorted(parts)) or "nothing"
            raise DatasetError(
                f"{url}: sample {key!r} has "
                + ("no image member" if not exts else "more than one image member")
                + f" ({found}; expected one of {', '.join(_IMAGE_EXTS)})"
            )
        data = parts[exts[0]] or b""
        label, where = _tar_label(url, key, parts)
        name = _file_name(
            f"{posixpath.basename(key)}.{exts[0]}", f"{fallback}-{n:08d}.{exts[0]}", data
        )
        yield Sample(name, data, label, where)


# -- Parquet and Hugging Face ----------------------------------------------


def _columns(
    image: str, label: str | None, columns: Sequence[str], where: str
) -> tuple[str | None, list[str]]:
    """The label column to read (None for no labels), and the columns to read.

    Raises
    ------
    DatasetError
        If *image* is not a column, or the caller named a label column
        (other than the default) that is not there.
    """
    if image not in columns:
        raise DatasetError(f"{where}: no column {image!r} (columns: {list(columns)})")
    use_label = None if label == DEFAULT_LABEL_COLUMN and label not in columns else label
    if use_label is not None and use_label not in columns:
        raise DatasetError(
            f"{where}: no label column {label!r} (columns: {', '.join(columns)}); "
            "name one of these, or pass label_column=None for unlabelled images"
        )
    return use_label, [image] + ([use_label] if use_label and use_label != image else [])


def _image_bytes(value: Any, where: str, *, read_path: bool = False) -> bytes:
    """The bytes of one image-column value: bytes, or a ``{"bytes", "path"}`` struct.

    With *read_path*, a struct without bytes is read from the local file its
    path names (how ``datasets`` stores images built from files).
    """
    if isinstance(value, dict):
        path = value.get("path")
        if value.get("bytes") is None and read_path and isinstance(path, str) and path:
            return _read_local(path, where)
        value = value.get("bytes")
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value):
        _check_size(len(value), where)
        return bytes(value)
    raise DatasetError(
        f"{where} holds {type(value).__name__}, not image bytes "
        "(bytes, or a {'bytes', 'path'} struct)"
    )


def _read_local(path: str, where: str) -> bytes:
    """A local image file's bytes, after checking it is a regular file of a bounded size."""
    data = b""
    try:
        # O_NONBLOCK: a FIFO at that path must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            regular = stat.S_ISREG(st.st_mode)
            if regular and st.st_size <= MAX_SOURCE_BYTES:
                with os.fdopen(fd, "rb", closefd=False) as f:
                    data = f.read(MAX_SOURCE_BYTES + 1)
        finally:
            os.close(fd)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise DatasetError(
            f"{where}: cannot read the image file {_shown(path)}: {reason}"
        ) from None
    if not regular:
        raise DatasetError(
            f"{where}: cannot read the image file {_shown(path)}: not a regular file"
        )
    _check_size(max(st.st_size, len(data)), where)
    return data


def _parquet_samples(path: str, image: str, label: str | None) -> Iterator[Sample]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingExtraError(
            "reading Parquet needs pyarrow: pip install 'pcr-explore[parquet]'"
        ) from exc
    fallback, row = _safe_stem(path), 0
    f = _open(path)
    try:
        with f:
            pf = pq.ParquetFile(f)
            use_label, wanted = _columns(image, label, pf.schema_arrow.names, path)
            # a few rows at a time: a file's images are never all in memory at once
            for batch in pf.iter_batches(batch_size=16, columns=wanted):
                for rec in batch.to_pylist():
                    value, where = rec[image], f"{path}: row {row}"
                    data = _image_bytes(value, f"{where}: column {image!r}")
                    lab_where = f"{where}: column {use_label!r}"
                    lab = _label(rec[use_label], lab_where) if use_label else None
                    raw_name = value.get("path") if isinstance(value, dict) else None
                    name = _file_name(raw_name, f"{fallback}-{row:08d}", data)
                    yield Sample(name, data, lab, lab_where)
                    row += 1
    except (pa.ArrowException, OSError) as exc:
        what = "not a readable Parquet file" if row == 0 else f"row {row} cannot be read"
        raise DatasetError(f"{path}: {what}: {exc}") from None


def _hf_samples(ds: Any, image: str, label: str | None) -> Iterator[Sample]:
    try:
        import pyarrow as pa
        from datasets import Image as HFImage
    except ImportError as exc:  # pragma: no cover - a datasets object implies the package
        raise MissingExtraError("reading a datasets.Dataset needs datasets") from exc
    use_label, wanted = _columns(image, label, ds.column_names, "the dataset")
    names = getattr(ds.features.get(use_label), "names", None) if use_label else None
    try:  # bytes or path as stored, not decoded pixels
        raw = ds.select_columns(wanted).cast_column(image, HFImage(decode=False))
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise DatasetError(
            f"the dataset: column {image!r} is not an image column ({exc})"
        ) from None
    for i, rec in enumerate(raw):
        value, where = rec[image], f"the dataset: row {i}"
        data = _image_bytes(value, f"{where}: column {image!r}", read_path=True)
        lab, lab_where = (rec[use_label] if use_label else None), f"{where}: column {use_label!r}"
        if names is not None and isinstance(lab, int) and lab != -1:
            if not 0 <= lab < len(names):
                raise DatasetError(
                    f"{lab_where}: class index {lab} is outside the ClassLabel's {len(names)} names"
                )
            lab_where = f"the dataset: column {use_label!r}: class index {lab}"
            lab = names[lab]
        raw_name = value.get("path") if isinstance(value, dict) else None
        name = _file_name(raw_name, f"{i:08d}", data)
        yield Sample(name, data, _label(lab, lab_where), lab_where)


def _samples(src: Any, image: str, label: str | None) -> Iterator[Sample]:
    if hasattr(src, "features"):
        yield from _hf_samples(src, image, label)
        return
    for path in _paths(src):
        if path.endswith(".parquet"):
            yield from _parquet_samples(path, image, label)
        else:
            yield from _tar_samples(path)


def stage(
    src: Any,
    folder: Path,
    *,
    out: Path | None = None,
    image: str = "image",
    label: str | None = DEFAULT_LABEL_COLUMN,
) -> Path:
    """Unpack *src* into *folder* as a folder source, unless an earlier run did; return *folder*.

    Parameters
    ----------
    src : str, list of str or datasets.Dataset
        Tar shards (paths, URLs or a brace pattern), Parquet files, or a dataset.
    folder : Path
        The staging folder (:func:`~pcr_explore.encode._staging.staging_path`),
        emptied first unless it was staged whole for *out*; only files and
        folders inside it are written.
    out : Path, optional
        The output folder it is staged for (None: a private temporary folder).
    image, label : str
        The image and label columns of Parquet files and datasets (label
        None: unlabelled). The default label column may be absent.

    Returns
    -------
    Path
        *folder*, holding one sub-folder per class.

    Raises
    ------
    DatasetError
        On a sample without an image (or with two), a label that cannot be
        a class folder, a missing column, a tar member that is a link or is
        too large, an unreadable shard or file; each names the shard or file
        and the member or row.
    """
    staging = Staging(folder, out)
    if staging.whole():
        return folder
    staging.start()
    for sample in _samples(src, image, label):
        staging.add(sample)
    if not staging.count:
        raise DatasetError(f"{src}: no samples")
    staging.finish()
    return folder


def identity(src: Any, image: str, label: str | None) -> list[Any]:
    """What names *src*'s content, for the staging folder's name.

    Per shard or file its absolute path, size and modification time (a URL:
    its address), or a dataset's fingerprint; and the columns read.

    Raises
    ------
    DatasetError
        If a brace pattern is malformed or stands for too many shards.
    """
    if hasattr(src, "features"):  # no fingerprint: a folder of its own, never found again
        return [getattr(src, "_fingerprint", None) or uuid.uuid4().hex, image, label]
    found: list[Any] = []
    for p in _paths(src):
        try:
            st = None if "://" in p else os.stat(p)
        except OSError:  # the staging says why
            st = None
        found.append(
            [p, None, None] if st is None else [os.path.abspath(p), st.st_size, st.st_mtime_ns]
        )
    return [found, image, label]


def describe(src: Any) -> str:
    """*src* as the manifest names it: local paths by their base name, URLs without a query.

    Examples
    --------
    >>> describe(["/data/s-0000.tar", "https://host/s-0001.tar?token=x"])
    's-0000.tar, https://host/s-0001.tar'
    """
    if hasattr(src, "features"):
        info = getattr(src, "info", None)
        return f"datasets.Dataset({getattr(info, 'dataset_name', None) or len(src)})"
    items = [os.fspath(s) for s in (src if isinstance(src, (list, tuple)) else [src])]
    return ", ".join(s.split("?", 1)[0] if "://" in s else os.path.basename(s) for s in items)
