r"""Sources that are not a folder: WebDataset tar shards, Parquet files, Hugging Face datasets.

Each is unpacked into a staging folder laid out as a folder source is (one
sub-folder per class, the image bytes as they were), and that folder is
encoded. The encoder then sees the same names, bytes and labels as it would
from a folder of the same images, so the records come out byte-identical
whatever the input.

* **WebDataset**: a list of tar files or URLs, or a brace pattern
  (``shards-{000000..000009}.tar``, at most 1,000,000 shards). Members are
  grouped by key (the path up to the first dot of the file name); a
  sample's image is its one ``jpg``, ``jpeg``, ``png``, ``webp``, ``bmp``,
  ``tif(f)`` or ``gif`` member; its class is the ``class`` field of its
  ``json`` member, else its ``cls`` integer, else it has none.
* **Parquet** (``pcr-explore[parquet]``): files with an image column
  (bytes, or Hugging Face's ``{"bytes", "path"}`` struct) and a label column
  (integers or names). The default label column, ``label``, may be absent
  (the images are unlabelled); a column named otherwise must be there.
* **Hugging Face** ``datasets.Dataset`` (``pcr-explore[hf]``): an ``Image``
  column (bytes, or the path of a local file) and a ``ClassLabel``, integer
  or name column, as for Parquet.

Staging. :func:`staging_folder` makes a fresh folder of its own beside the
output (``.<output>.pcr-staging-<random>``; a temporary folder for an
output URL) and removes that folder, and only that one, afterwards; two
runs never share one. Samples are written into it as they are read, so
memory holds one sample, not the dataset.

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

import contextlib
import io
import json
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetError, MissingExtraError, no_such_path
from ..jpeg.transcode import IMAGE_SUFFIXES, MAX_SOURCE_BYTES

__all__ = ["is_staged_input", "stage", "staging_folder"]

# Sorted: a sample's image member is looked up in this order, and a set's
# order would change from run to run.
_IMAGE_EXTS = tuple(sorted(s.lstrip(".") for s in IMAGE_SUFFIXES))
_METADATA_EXTS = ("json", "cls")
# More shards than any dataset has; a pattern beyond it is a typo, and
# braceexpand lists every value of a range before yielding the first name.
MAX_SHARDS = 1_000_000
# The label column EncodeOptions names by default: a file without it is
# unlabelled. A column the caller named otherwise must exist.
DEFAULT_LABEL_COLUMN = "label"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Room left in a 255-byte file name for the "-<n>" that tells apart two
# images of one name.
_MAX_FILE_NAME = 200
_MAX_INT_LABEL = 2**63 - 1  # Arrow's and most datasets' widest integer


@dataclass(frozen=True)
class _Sample:
    """One image to stage: its bytes, its file name and its checked label."""

    name: str
    data: bytes
    label: str | int | None
    where: str  # the shard and member (or file and row) the label came from


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


def _shown(value: Any) -> str:
    """*value*'s repr, cut short for a one-line message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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


# -- shard lists and brace patterns -------------------------------------

# braceexpand's range forms ({1..10}, {a..e..2}), as its parser matches them
_INT_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$")
_CHAR_RANGE = re.compile(r"^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?(\d+))?$")


def _split_sequence(expr: str) -> list[str] | None:
    """*expr*'s comma-separated parts at brace depth 0 (None: not a sequence), as braceexpand."""
    start = pos = depth = 0
    parts = []
    while pos < len(expr):
        c = expr[pos]
        if c == "\\":
            pos += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(expr[start:pos])
            start = pos + 1
        pos += 1
    if depth != 0 or not parts:
        return None
    return [*parts, expr[start:]]


def _expression_count(expr: str) -> int:
    if m := _INT_RANGE.match(expr):
        first, last, step_text = m.groups()
        step = (int(step_text) or 1) if step_text else 1
        # len(range(...)) by arithmetic: the bounds may pass sys.maxsize
        return abs(int(last) - int(first)) // step + 1
    if m := _CHAR_RANGE.match(expr):
        from braceexpand import alphabet

        first, last, step_text = m.groups()
        step = (int(step_text) or 1) if step_text else 1
        a, b = alphabet.index(first), alphabet.index(last)
        if a < b:
            return len(alphabet[a : b + 1 : step])
        return len(alphabet[a : (b or -len(alphabet)) - 1 : -step])
    parts = _split_sequence(expr)
    if parts is None:  # kept as literal braces around an expanded pattern
        return _pattern_count(expr)
    return sum(_pattern_count(p) for p in parts)


def _pattern_count(pattern: str) -> int:
    """How many names braceexpand makes of *pattern*, without making them.

    Follows ``braceexpand.parse_pattern`` step by step (escapes, literal
    braces, nesting); the property tests hold the two to the same count.
    """
    count, start, depth, pos = 1, 0, 0, 0
    while pos < len(pattern):
        c = pattern[pos]
        if c == "\\":
            pos += 2
            continue
        if c == "{":
            if depth == 0 and pos > start:
                start = pos
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                count *= _expression_count(pattern[start + 1 : pos])
                start = pos + 1
        pos += 1
    if depth != 0:
        raise ValueError("unbalanced braces")
    return count


def _expand(pattern: str) -> Iterator[str]:
    """The names a brace pattern stands for, after checking how many there are.

    Raises
    ------
    DatasetError
        If the pattern is malformed or stands for more than ``MAX_SHARDS`` names.
    """
    from braceexpand import braceexpand

    try:
        n = _pattern_count(pattern)
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"{pattern}: not a usable brace pattern ({exc})") from None
    if n > MAX_SHARDS:
        raise DatasetError(
            f"{pattern}: the brace pattern stands for {n:,} shards, more than the "
            f"{MAX_SHARDS:,} allowed; check its ranges"
        )
    return braceexpand(pattern)


def _paths(src: Any) -> Iterator[str]:
    """Every shard or file *src* names, a pattern expanded as it is reached."""
    items = list(src) if isinstance(src, (list, tuple)) else [src]
    for s in items:
        yield from _expand(os.fspath(s))


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


def _member_kind(m: tarfile.TarInfo) -> str:
    if m.issym():
        return f"a symbolic link to {_shown(m.linkname)}"
    if m.islnk():
        return f"a hard link to {_shown(m.linkname)}"
    if m.ischr() or m.isblk():
        return "a device"
    if m.isfifo():
        return "a FIFO"
    return f"of tar type {m.type!r}"


def _read_member(tar: tarfile.TarFile, m: tarfile.TarInfo, url: str) -> bytes:
    where = f"{url}: member {_shown(m.name)}"
    _check_size(m.size, where)  # from the header: nothing read yet
    f = tar.extractfile(m)
    data = f.read(MAX_SOURCE_BYTES + 1) if f is not None else b""
    _check_size(len(data), where)
    return data


def _tar_groups(url: str) -> Iterator[tuple[str, dict[str, bytes | None]]]:
    """(key, {extension: bytes}) of each sample in one tar shard, in order, one at a time.

    Only image and label members are read; others are noted (None) unread.
    """
    f = _open(url)
    try:
        with f, tarfile.open(fileobj=f, mode="r|*") as tar:
            key: str | None = None
            parts: dict[str, bytes | None] = {}
            for m in tar:
                if m.isdir():
                    continue
                if not m.isfile():
                    raise DatasetError(
                        f"{url}: member {_shown(m.name)} is {_member_kind(m)}, not a regular "
                        "file; a sample's data must be stored in the shard itself"
                    )
                folder, base = posixpath.split(m.name)
                stem, _, ext = base.partition(".")
                k = posixpath.join(folder, stem)
                if k != key and key is not None:
                    yield key, parts
                    parts = {}
                key, ext = k, ext.lower()
                if ext in parts:
                    raise DatasetError(
                        f"{url}: member {_shown(m.name)}: sample {_shown(k)} already has a "
                        f"{ext!r} member; one sample holds one of each"
                    )
                wanted = ext in _IMAGE_EXTS or ext in _METADATA_EXTS
                parts[ext] = _read_member(tar, m, url) if wanted else None
            if key is not None:
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


def _tar_samples(url: str) -> Iterator[_Sample]:
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
        yield _Sample(name, data, label, where)


# -- Parquet and Hugging Face ----------------------------------------------


def _label_column(label: str | None, columns: Sequence[str], where: str) -> str | None:
    """The label column to read: None for no labels.

    Raises
    ------
    DatasetError
        If the caller named a column (other than the default) that is not there.
    """
    if label is None or label in columns:
        return label
    if label == DEFAULT_LABEL_COLUMN:
        return None
    raise DatasetError(
        f"{where}: no label column {label!r} (columns: {', '.join(columns)}); "
        "name one of these, or pass label_column=None for unlabelled images"
    )


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


def _parquet_samples(path: str, image: str, label: str | None) -> Iterator[_Sample]:
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
            columns = pf.schema_arrow.names
            if image not in columns:
                raise DatasetError(f"{path}: no column {image!r} (columns: {columns})")
            use_label = _label_column(label, columns, path)
            wanted = [image] + ([use_label] if use_label and use_label != image else [])
            # a few rows at a time: a file's images are never all in memory at once
            for batch in pf.iter_batches(batch_size=16, columns=wanted):
                for rec in batch.to_pylist():
                    value, where = rec[image], f"{path}: row {row}"
                    data = _image_bytes(value, f"{where}: column {image!r}")
                    lab_where = f"{where}: column {use_label!r}"
                    lab = _label(rec[use_label], lab_where) if use_label else None
                    raw_name = value.get("path") if isinstance(value, dict) else None
                    name = _file_name(raw_name, f"{fallback}-{row:08d}", data)
                    yield _Sample(name, data, lab, lab_where)
                    row += 1
    except (pa.ArrowException, OSError) as exc:
        what = "not a readable Parquet file" if row == 0 else f"row {row} cannot be read"
        raise DatasetError(f"{path}: {what}: {exc}") from None


def _hf_samples(ds: Any, image: str, label: str | None) -> Iterator[_Sample]:
    try:
        import pyarrow as pa
        from datasets import Image as HFImage
    except ImportError as exc:  # pragma: no cover - a datasets object implies the package
        raise MissingExtraError("reading a datasets.Dataset needs datasets") from exc
    if image not in ds.column_names:
        raise DatasetError(f"the dataset: no column {image!r} (columns: {ds.column_names})")
    use_label = _label_column(label, ds.column_names, "the dataset")
    names = getattr(ds.features.get(use_label), "names", None) if use_label else None
    wanted = [image] + ([use_label] if use_label and use_label != image else [])
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
        yield _Sample(name, data, _label(lab, lab_where), lab_where)


# -- the staging folder -----------------------------------------------------


class _Staging:
    """A staging folder being filled, one sample written at a time.

    Integer classes go into unpadded folders (``7``) while the largest is
    not known yet, and are renamed to their padded names (``007``) at the
    end; nothing else can take those names, since staged file names end in
    an image suffix and integer labels never mix with names.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0
        self._taken: set[str] = set()
        self._classes: dict[str | int, str] = {}
        self._first: dict[type, tuple[Any, str]] = {}  # int / str: its first label and where

    def add(self, sample: _Sample) -> None:
        """Write *sample* into its class folder under a name not taken yet."""
        sub = "" if sample.label is None else self._class_folder(sample.label, sample.where)
        stem, _, ext = sample.name.rpartition(".")
        candidate, tries = sample.name, 0
        while True:
            rel = f"{sub}/{candidate}" if sub else candidate
            if rel not in self._taken:
                self._taken.add(rel)
                try:
                    with open(self.folder / rel, "xb") as f:
                        f.write(sample.data)
                    break
                except FileExistsError:  # a name this file system folds onto one staged
                    pass
            tries += 1  # two images of one name: keep both
            candidate = f"{stem}-{self.count}" + (f"-{tries}" if tries > 1 else "") + f".{ext}"
        self.count += 1

    def _class_folder(self, label: str | int, where: str) -> str:
        if label in self._classes:
            return self._classes[label]
        kind = int if isinstance(label, int) else str
        self._first.setdefault(kind, (label, where))
        if len(self._first) > 1:
            (a, a_where), (b, b_where) = self._first[int], self._first[str]
            raise DatasetError(
                f"{b_where}: class name {_shown(b)} in a dataset with integer labels "
                f"(first: {a_where}: {a}); labels must be all integers or all names, since "
                "integers are stored as zero-padded names and could merge with one"
            )
        sub = str(label)
        try:
            (self.folder / sub).mkdir()
        except FileExistsError:
            other = next(
                (
                    f"class {_shown(c)}"
                    for c, s in self._classes.items()
                    if os.path.samefile(self.folder / s, self.folder / sub)
                ),
                "an image's file name",
            )
            raise DatasetError(
                f"{where}: class {_shown(label)} and {other} are one folder name on this "
                "file system (it folds case or Unicode forms); rename one of them"
            ) from None
        self._classes[label] = sub
        return sub

    def finish(self) -> None:
        """Give the integer classes their zero-padded names."""
        ints = [c for c in self._classes if isinstance(c, int)]
        width = len(str(max(ints))) if ints else 0
        for c in ints:
            padded = f"{c:0{width}d}"
            if padded != self._classes[c]:
                (self.folder / self._classes[c]).rename(self.folder / padded)


def _samples(src: Any, image: str, label: str | None) -> Iterator[_Sample]:
    if hasattr(src, "features"):
        yield from _hf_samples(src, image, label)
        return
    for path in _paths(src):
        if path.endswith(".parquet"):
            yield from _parquet_samples(path, image, label)
        else:
            yield from _tar_samples(path)


def stage(
    src: Any, folder: Path, *, image: str = "image", label: str | None = DEFAULT_LABEL_COLUMN
) -> Path:
    """Unpack *src* into *folder*, an empty folder, as a folder source; return the folder.

    Parameters
    ----------
    src : str, list of str or datasets.Dataset
        Tar shards (paths, URLs or a brace pattern), Parquet files, or a dataset.
    folder : Path
        An empty folder the caller owns (see :func:`staging_folder`); only
        files and folders inside it are written.
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
    folder.mkdir(parents=True, exist_ok=True)
    staging = _Staging(folder)
    for sample in _samples(src, image, label):
        staging.add(sample)
    staging.finish()
    if not staging.count:
        raise DatasetError(f"{src}: no samples")
    return folder


@contextlib.contextmanager
def staging_folder(out: str | os.PathLike[str]) -> Iterator[Path]:
    """A fresh, private folder to unpack an input into while it is encoded to *out*.

    Made beside a local *out* (the disk that takes the dataset, not a
    possibly small temporary one) under a new random name, and in the
    temporary folder for an output URL; removed on exit. Only the folder
    made here is ever removed: another run's staging, or a user's folder of
    a similar name, is never touched.

    Parameters
    ----------
    out : path or URL
        The encode's output.

    Yields
    ------
    Path
        The empty folder.
    """
    out_s = os.fspath(out)
    if "://" in out_s:
        path = tempfile.mkdtemp(prefix="pcr-staging-")
    else:
        p = Path(out_s).resolve()
        p.parent.mkdir(parents=True, exist_ok=True)
        path = tempfile.mkdtemp(prefix=f".{p.name}.pcr-staging-", dir=p.parent)
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)
