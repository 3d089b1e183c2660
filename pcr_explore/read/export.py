"""Export a PCR dataset at one scan level: WebDataset tar shards or a folder of JPEGs.

A pipeline built on WebDataset (or on a folder of images) can then train on
level *k* with no other change. Each image is its level-*k* JPEG exactly as
the reader assembles it (no decode, no re-encode); one stored with an EXIF
orientation the reader applies after decoding gets that orientation as an
EXIF segment, so other readers turn it upright too.

WebDataset layout: shards ``shard-000000.tar``, ... of about ``shard_bytes``
each, written to disk as they fill (the export holds one image in memory, not
a shard); per image the members ``<key>.jpg``, ``<key>.cls`` (the label as
text, absent for unlabelled images) and ``<key>.json`` (the source name,
label, class and level). The key is the image's name without its extension,
with dots made underscores (WebDataset splits a name at its first dot).
The shards are POSIX (PAX) tar files, so a member's name has no length limit.
Folder layout: ``<name>.jpg`` under the output folder, keeping the class
sub-folders. Names that would collide (``a.jpg`` and ``a.png``, or ``A.jpg``
and ``a.jpg`` on a folder that ignores case) get ``_<i>`` (then ``_<i>_2``,
...) added until unused, *i* being the image's index. A part of a path
longer than the output's file system allows (255 bytes on most) keeps its
start and gets ``~`` and 16 hex digits of its SHA-256 (and ``.jpg`` for a
file's name) within the limit: the same name each run, one name per image,
and ``export.json``'s ``shortened`` maps each such file to its image's
name; one warning says how many. A path too long for the system as a whole
is refused before anything is written, naming the image.

Both write ``export.json``: the source, level, layout and the ``files``
written (``complete`` is false only while an export is being moved in). It
is how ``overwrite`` knows what an earlier export wrote: an overwrite
removes exactly those files (and the export's own leftover temporary files
and folders, known by name) and refuses a folder holding anything else. An
export is written into a private folder beside *out* and only then moved
in, so an interrupted run leaves the earlier export whole. The output
folder is locked for the whole export (``.pcr-lock``, the encoder's lock): a
second export into it is refused at once, naming the folder, instead of
mixing its files with the first's.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Literal

from .._public import public
from ..errors import DatasetError
from ..storage._atomic import atomic_write
from ..storage._lock import LOCK, FolderLock
from .reader import PCRDataset, open_dataset

__all__ = ["ExportSummary", "export_dataset", "shard_pattern", "with_orientation"]

Target = Literal["webdataset", "folder"]
_INDEX = "export.json"
# The temporary name atomic_write gives a file the export writes (".shard-000003.tar.x8k2j4h5.tmp"):
# an interrupted run of this or an earlier version may leave one in the folder.
_TEMP = re.compile(r"\.(export\.json|shard-\d{6}\.tar|.+\.jpg)\.[a-z0-9_]{8}\.tmp")
_STAGE = (
    ".pcr-export-"  # the private folder an export is written in: .<out name>.pcr-export-<random>
)


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

    @property
    def pattern(self) -> str | None:
        """The brace pattern WebDataset takes for the shards written (None for a folder, or none).

        Examples
        --------
        >>> ExportSummary("wds", "webdataset", 3, 40, 2, 9_000).pattern
        'wds/shard-{000000..000001}.tar'
        """
        if self.to != "webdataset" or self.files < 1:
            return None
        shards = [_shard_name(i) for i in range(self.files)]
        return posixpath.join(self.out, shard_pattern(shards))


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


def _images(ds: PCRDataset, scan: int) -> Iterator[tuple[int, str, bytes, int]]:
    names = ds.names
    for i, data, label in ds.iter_jpeg(scan):
        yield i, names[i], with_orientation(data, ds.orientation(i)), label


def _listed(out: Path) -> set[str] | None:
    """The files *out*'s ``export.json`` lists, or None if it holds no listing an export wrote."""
    try:
        index = json.loads((out / _INDEX).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(index, dict) or index.get("to") not in ("webdataset", "folder"):
        return None
    files = index.get("files")
    if not isinstance(files, list):
        return None
    safe = all(
        isinstance(f, str)
        and f
        and "\\" not in f
        and not PurePosixPath(f).is_absolute()
        and not {"", ".", ".."} & set(f.split("/"))
        for f in files
    )
    return set(files) if safe else None  # a listing naming a file outside the folder is not ours


def _check_out(out: Path, overwrite: bool) -> bool:
    """Whether *out* holds anything (its lock file aside); refused where that is not allowed.

    Raises DatasetError if *out* is a file, or holds files and *overwrite* is not set.
    """
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder; choose another output folder")
    if not out.is_dir() or not any(p.name != LOCK for p in out.iterdir()):
        return False
    if not overwrite:
        raise DatasetError(
            f"{out}: already holds files; choose an empty folder or use overwrite=True "
            "(--overwrite) to replace an earlier export there"
        )
    return True


def _earlier_export(out: Path, overwrite: bool) -> tuple[set[str], list[Path]]:
    """What an export into *out* replaces: the files its listing names, and every path to remove.

    Raises DatasetError if *out* is a file, holds files without *overwrite*, or holds files that
    no export wrote (an overwrite never removes those). The lock file is never counted.
    """
    if not _check_out(out, overwrite):
        return set(), []
    listed = _listed(out)
    stage = _stage_prefix(out.resolve().name)
    ours: list[Path] = []
    foreign: list[str] = []
    for root, dirs, names in os.walk(out):  # symbolic links are never followed
        here = Path(root)
        for d in list(dirs):
            path = here / d
            if path.is_symlink() or (here == out and d.startswith(stage)):
                dirs.remove(d)
                names.append(d)
        for name in names:
            path = here / name
            rel = path.relative_to(out).as_posix()
            if rel == LOCK:
                continue  # this export holds it
            if rel == _INDEX and listed is not None:
                continue  # replaced by the new listing, never removed
            if (
                (listed is not None and rel in listed)
                or (_TEMP.fullmatch(name) and not path.is_dir())
                or (here == out and name.startswith(stage) and not path.is_symlink())
            ):
                ours.append(path)
            else:
                foreign.append(rel)
    if foreign:
        shown = ", ".join(sorted(foreign)[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        raise DatasetError(
            f"{out}: holds files no export wrote ({shown}); overwrite replaces only an earlier "
            f"export (the files its {_INDEX} lists): move them or choose another folder"
        )
    return listed or set(), ours


def _remove(paths: list[Path], out: Path) -> None:
    """Remove *paths* (files, or leftover private folders), then the folders they leave empty."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        for parent in path.parents:
            if parent == out or out not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:  # not empty: it holds the rest of the export
                break


def _stage_prefix(name: str) -> str:
    """How the private folders of an export into a folder called *name* begin.

    ``.<name>.pcr-export-``, with a long *name* shortened (:func:`_fit`) so that the folder's
    name, 8 random characters added, stays within 255 bytes.
    """
    return f".{_fit(name, 255 - 8 - len(_STAGE) - 1)}{_STAGE}"


def _stage(out: Path) -> Path:
    """A new private folder to write the export in, beside *out*.

    Beside, so that a run stopped before its end leaves nothing inside *out* that a glob or an
    image-folder reader would pick up; inside *out* where that cannot be (the parent on another
    disk, or not writable). Leftovers of an interrupted run beside *out* are removed first
    (the caller holds *out*'s lock: no other export is writing them).
    """
    real = out.resolve()
    prefix = _stage_prefix(real.name)
    try:
        for path in real.parent.iterdir():
            if path.name.startswith(prefix) and path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
        if real.parent.stat().st_dev == real.stat().st_dev:
            return Path(tempfile.mkdtemp(prefix=prefix, dir=real.parent))
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix=prefix, dir=real))


def _swap_in(
    stage: Path,
    out: Path,
    files: list[str],
    index: dict[str, Any],
    old: set[str],
    remove: list[Path],
) -> None:
    """Replace the earlier export in *out* by the one written in *stage*.

    Writing the images (the slow part, where a run is likely stopped) happened in *stage*, so
    the earlier export stays whole until here. This swap only renames and unlinks; the listing
    first names the old and new files together, so even a run stopped in the middle of it
    leaves a folder whose every file the next overwrite recognises and removes. The old files
    go before the new come in: never a mix of two levels, at worst an incomplete export that
    says so (``"complete": false``).
    """
    both = sorted(old | set(files))
    atomic_write(out / _INDEX, json.dumps({**index, "complete": False, "files": both}) + "\n")
    _remove(remove, out)
    for f in files:
        (out / f).parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / f, out / f)
    atomic_write(out / _INDEX, json.dumps(index, indent=1) + "\n")


def _fit(part: str, limit: int, ext: str = "") -> str:
    """``part + ext``, or where that is over *limit* bytes (UTF-8) a name within it.

    The shortened name is *part*'s start, ``~``, 16 hex digits of the SHA-256 of ``part + ext``
    and *ext*: the same each run, and another for every other name.

    Examples
    --------
    >>> _fit("cat", 255, ".jpg")
    'cat.jpg'
    >>> _fit("a" * 300, 40, ".jpg")
    'aaaaaaaaaaaaaaaaaaa~3d87a649700e8685.jpg'
    """
    whole = part + ext
    if len(os.fsencode(whole)) <= limit:
        return whole
    tag = f"~{hashlib.sha256(os.fsencode(whole)).hexdigest()[:16]}{ext}"
    head = os.fsencode(part)[: max(0, limit - len(os.fsencode(tag)))]
    return head.decode("utf-8", "ignore") + tag  # a character cut in two is dropped


def _fit_path(stem: str, ext: str, limit: int | None) -> str:
    """``stem + ext`` with each part of the path within *limit* bytes (None: as it is)."""
    if limit is None:
        return stem + ext
    *folders, name = stem.split("/")
    return "/".join([*(_fit(f, limit) for f in folders), _fit(name, limit, ext)])


def _claim(stem: str, ext: str, i: int, taken: set[str], limit: int | None = None) -> str:
    """``stem + ext``, with ``_<i>`` (then ``_<i>_2``, ...) added to *stem* until unused.

    Names compare case-folded, as on macOS and Windows, where ``A.jpg`` is ``a.jpg``. With
    *limit*, each part of the path is kept within *limit* bytes (:func:`_fit`) before it is
    compared, so the name claimed is the one written.
    """
    name, n = _fit_path(stem, ext, limit), 1
    while name.casefold() in taken:
        name = _fit_path(f"{stem}_{i}" if n == 1 else f"{stem}_{i}_{n}", ext, limit)
        n += 1
    taken.add(name.casefold())
    return name


def _keys(names: list[str]) -> list[str]:
    """The WebDataset key of each image: its name without extension, dots made underscores."""
    taken: set[str] = set()
    return [
        _claim(posixpath.splitext(n)[0].replace(".", "_"), "", i, taken)
        for i, n in enumerate(names)
    ]


def _folder_names(names: list[str], limit: int | None = None) -> list[str]:
    """The path of each image in a folder export: its name with the extension ``.jpg``.

    With *limit*, no part of a path is longer than *limit* bytes (see :func:`_fit`).
    """
    stems = [posixpath.splitext(n)[0] for n in names]
    # the class folders first, so that no file takes a folder's name
    taken = {
        _fit_path(str(p), "", limit).casefold()
        for s in stems
        for p in PurePosixPath(s).parents
        if str(p) != "."
    }
    return [_claim(s, ".jpg", i, taken, limit) for i, s in enumerate(stems)]


def _system_limit(folder: Path, name: str, default: int) -> int:
    """The file system's *name* (``PC_NAME_MAX``, ``PC_PATH_MAX``) at *folder*, or *default*."""
    try:
        value = os.pathconf(folder, name)
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows), or not told
        return default
    return value if value > 0 else default


def _folder_plan(names: list[str], out: Path, stage: Path) -> tuple[list[str], dict[str, str]]:
    """Each image's path in a folder export, and the shortened ones' image names by path.

    Warns once if any name was shortened to the file system's limit. Raises DatasetError,
    naming the image, if a path is too long for the system whatever its parts' lengths.
    """
    limit = _system_limit(out, "PC_NAME_MAX", 255)
    paths = _folder_names(names, limit)
    natural = _folder_names(names)
    shortened = {p: names[i] for i, p in enumerate(paths) if p != natural[i]}
    path_max = _system_limit(out, "PC_PATH_MAX", 4096)
    for i, rel in enumerate(paths):
        for base in (out.resolve(), stage):
            n = len(os.fsencode(str(base / rel)))
            if n >= path_max:
                raise DatasetError(
                    f"{names[i]}: its path in the export, {base / rel}, would be {n:,} bytes; "
                    f"the file system takes at most {path_max - 1:,}: choose an output folder "
                    "with a shorter path"
                )
    if shortened:
        path, name = next(iter(shortened.items()))
        warnings.warn(
            f"{out}: {len(shortened):,} image path(s) had a part longer than the file system's "
            f"{limit} bytes and were shortened (its start, '~' and a digest), e.g. {name} as "
            f'{path}; {_INDEX}\'s "shortened" maps each to its image',
            UserWarning,
            stacklevel=4,  # the caller of export_dataset
        )
    return paths, shortened


def _shard_name(i: int) -> str:
    return f"shard-{i:06d}.tar"


def _member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0  # the same bytes on every run
    tar.addfile(info, io.BytesIO(data))


def _cannot_write(exc: OSError, name: str, how: str, where: Path) -> OSError:
    """*exc* as an error naming the file *where* and the image *name* it was writing."""
    return OSError(exc.errno, f"cannot write image {name} {how}: {exc.strerror or exc}", str(where))


def _sample(tar: tarfile.TarFile, key: str, data: bytes, meta: dict[str, Any], where: Path) -> None:
    """Add one image's members to *tar*; an error names the image and the shard (*where*)."""
    name = meta["name"]
    try:
        _member(tar, f"{key}.jpg", data)
        if meta["label"] >= 0:
            _member(tar, f"{key}.cls", str(meta["label"]).encode())
        _member(tar, f"{key}.json", json.dumps(meta).encode())
    except OSError as exc:
        raise _cannot_write(exc, name, "into it", where) from exc
    except (ValueError, tarfile.TarError) as exc:
        raise DatasetError(f"{name}: cannot be written to {where}: {exc}") from exc


def _to_webdataset(
    ds: PCRDataset, scan: int, stage: Path, out: Path, shard_bytes: int, bar: Any
) -> list[str]:
    """Write the shards straight into the staging folder *stage*: memory stays one image.

    PAX tar files: a member's name may be of any length (USTAR stops at 100 bytes).
    """
    shards: list[str] = []
    keys = _keys(ds.names)
    file: BinaryIO | None = None
    tar: tarfile.TarFile | None = None

    def close() -> None:
        nonlocal file, tar
        if tar is None or file is None:
            return
        tar.close()  # the end-of-archive blocks; the file stays open
        file.flush()
        os.fsync(file.fileno())
        file.close()
        shards.append(Path(file.name).name)
        file = tar = None

    try:
        for i, name, data, label in _images(ds, scan):
            if file is not None and file.tell() + len(data) > shard_bytes:
                close()
            if tar is None:
                file = open(stage / _shard_name(len(shards)), "wb")  # noqa: SIM115
                tar = tarfile.open(fileobj=file, mode="w", format=tarfile.PAX_FORMAT)
            cls = ds.classes[label] if 0 <= label < len(ds.classes) else None
            meta = {"name": name, "label": label, "class": cls, "scan": scan}
            _sample(tar, keys[i], data, meta, out / _shard_name(len(shards)))
            bar.update(1)
        close()
    finally:
        if file is not None:  # an error mid-shard: the staging folder is removed
            file.close()
    return shards


def _write_new(path: Path, data: bytes) -> None:
    """Write *path*, a new file in the private folder, to disk.

    Not through a temporary file (the folder is private and removed if the export fails), so
    that a name as long as the file system allows can be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _to_folder(
    ds: PCRDataset, scan: int, stage: Path, out: Path, paths: list[str], bar: Any
) -> list[str]:
    files: list[str] = []
    for i, name, data, _ in _images(ds, scan):
        try:
            _write_new(stage / paths[i], data)
        except OSError as exc:
            raise _cannot_write(exc, name, "there", out / paths[i]) from exc
        files.append(paths[i])
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
        The export is written into a private folder beside it (inside it
        where that cannot be) and moved in once complete.
    scan : int
        The level to export.
    to : {"webdataset", "folder"}
        The layout (see the module docstring).
    shard_bytes : int
        About how many bytes each WebDataset shard holds.
    overwrite : bool
        Replace an earlier export in *out*: afterwards the folder holds
        exactly the new export. The files removed are those the earlier
        ``export.json`` lists (and an interrupted export's temporary files);
        a folder holding any other file is refused, untouched.
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
        If *out* is a file, or holds files and *overwrite* is not set, or
        holds files that no export wrote (the message names some); if
        another export is writing to *out* (refused at once, naming it); or,
        for a folder, if an image's path would be longer than the system
        allows (naming the image, before anything is written).
    OSError
        If a file cannot be written (the error names the file and the image).

    Warns
    -----
    UserWarning
        Once, if a folder export shortened names longer than the file
        system allows (see the module docstring).

    Examples
    --------
    >>> export_dataset("photos.pcr", "level3-wds", scan=3)
    ExportSummary(out='level3-wds', to='webdataset', scan=3, images=14, files=1, bytes=...)

    Each image is a ``.jpg``, its label a ``.cls`` and its name a ``.json``;
    ``webdataset.WebDataset("level3-wds/shard-{000000..000000}.tar")`` reads them:

    >>> import tarfile
    >>> with tarfile.open("level3-wds/shard-000000.tar") as shard:
    ...     shard.getnames()[:3]
    ['scenes/coffee.jpg', 'scenes/coffee.cls', 'scenes/coffee.json']
    """
    if to not in ("webdataset", "folder"):
        raise ValueError(f"to must be 'webdataset' or 'folder', got {to!r}")
    if isinstance(shard_bytes, bool) or int(shard_bytes) < 1:
        raise ValueError(f"shard_bytes must be a positive number of bytes, got {shard_bytes!r}")
    ds = dataset if isinstance(dataset, PCRDataset) else open_dataset(os.fspath(dataset))
    k = ds._check_scan(scan)
    folder = Path(out)
    _check_out(folder, overwrite)  # before the folder or its lock is made
    folder.mkdir(parents=True, exist_ok=True)
    with FolderLock(folder, doing="export"):  # the encoder's: a second export is refused at once
        old, remove = _earlier_export(folder, overwrite)  # again: now no other export writes
        files, nbytes = _write(ds, k, folder, to, int(shard_bytes), progress, old, remove)
    return ExportSummary(str(folder), to, k, len(ds), len(files), nbytes)


def _write(
    ds: PCRDataset,
    k: int,
    folder: Path,
    to: Target,
    shard_bytes: int,
    progress: bool,
    old: set[str],
    remove: list[Path],
) -> tuple[list[str], int]:
    """Write the export in a private folder, then move it into *folder* (whose lock is held)."""
    from .._pool import progress_bar as tqdm

    stage = _stage(folder)
    shortened: dict[str, str] = {}
    try:
        if to == "folder":
            paths, shortened = _folder_plan(ds.names, folder, stage)
        with tqdm(total=len(ds), unit="img", desc=f"export scan {k}", disable=not progress) as bar:
            if to == "webdataset":
                files = _to_webdataset(ds, k, stage, folder, shard_bytes, bar)
            else:
                files = _to_folder(ds, k, stage, folder, paths, bar)
        nbytes = sum((stage / f).stat().st_size for f in files)
        index = {
            "source": ds.url,
            "scan": k,
            "to": to,
            "images": len(ds),
            "complete": True,
            "files": files,
            "classes": list(ds.classes),
            **({"shortened": shortened} if shortened else {}),
        }
        _swap_in(stage, folder, files, index, old, remove)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return files, nbytes


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
