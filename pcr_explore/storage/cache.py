"""A local cache of record prefixes, grown by delta fetches.

A record's scan groups are laid out in level order, so what a level-*k* read
fetched is the start of what any higher level needs. The cache keeps, for
each record, the longest prefix read so far in one file; raising the level
later fetches only the missing groups ``k+1..k'`` (one range request) and
appends them, and lowering it needs no request at all.

Layout: ``<cache_dir>/<16 hex digits of SHA-256 of the dataset URL>/`` holds
``source.json`` (the URL and the SHA-256 of the manifest the cache was filled
from), ``levels.jsonl`` (that digest on its first line; on its second, by
cache name, where each record's header and scan groups end, so that
:func:`cache_usage` tells offline which level each prefix holds) and one file
per record, ``<record file>.<header checksum>``. The header checksum covers
every group's CRC, so a record re-encoded with other content gets another
cache name: a stale prefix is never read. When the manifest's digest changes,
files that no record of the new manifest names are deleted.

A cached prefix only ever ends at a boundary the manifest knows (the end of
the header or of a scan group); a file cut short by a crash is trimmed back
to the last one. The reader checks every byte it takes from the cache against
the record's CRCs, as it does for bytes from the network.

With ``max_bytes``, the cache folder (the prefixes of every dataset in it
together; ``source.json`` and ``levels.jsonl``, about 100 bytes a record, and
the index are not counted) is held to a size. After a prefix grows to level
*k* (0: the header alone), the least recently used prefixes of the same
dataset that hold more than level *k* are first trimmed to level *k*, until
the total fits: a pass at a lower level after one at a higher level keeps
what it needs of every record instead of losing whole records. Only when
trimming is not enough are the least recently used prefixes deleted, whole
(other datasets' prefixes are only ever deleted whole: a level of this
dataset says nothing about what their readers need). The one just written is
kept whatever its size, so the folder never stays more than one record over
the limit per process writing at that moment; an eviction whose prefix
another writer changed meanwhile is left to that writer's, so that two
concurrent writers do not delete each other's.

Sizes and recency come from an index shared by the processes
(``.pcr-cache.sqlite``, see :mod:`._cache_index`): every prefix's bytes,
level and last use, and their total, so that a write costs the same however
many prefixes the cache holds, and no write lists a folder. Every read of a
bounded cache marks its prefix used, in the index and in the file's
modification time (what a rebuild of the index goes by). The index is made
true from the folders, one listing each, when it is missing, damaged or half
built (a rebuild, by the process that then holds the cache alone), when a
dataset folder appears that it does not know or whose manifest changed (at
opening), and when a write finds a file whose size is not the one its row
says (a crash between the two, a file removed or changed by hand, a writer
of an older version): a *mismatch*, after which that dataset's folder is
listed once. A row changes before its file grows and after it shrinks, under
the file's lock, so a process killed in between leaves a row that counts too
many bytes (the cache then holds less than its limit until the row is
corrected), never too few; only a power cut can lose the last rows (their
commits are not flushed), and a write to such a prefix finds it. Eviction
checks each prefix it trims or deletes on the disk first.

Several processes may share a cache: eviction, and making a new prefix
file, run under a lock on ``.pcr-cache.lock`` (eviction deletes a file and
then its row, so a file made at that path in between would be left
uncounted); a prefix is appended to, trimmed, cut back to a
boundary or deleted only under a lock on the file itself, after checking its
size, so no byte lands at a wrong offset; a reader whose prefix shrank or
went away underneath it reads it again from the store. Only files this
module writes (regular files named ``<record>.<checksum>`` in a folder that
holds a ``source.json``, its ``source.json`` and ``levels.jsonl``, and the
index) are ever changed or deleted. A symbolic link is never followed: an
entry that is a link is damage, deleted (the link, not what it points to)
and fetched again. After :func:`clear_cache`, a process still reading the
cleared dataset keeps no new prefix of it until the dataset is opened again.
"""

from __future__ import annotations

import bisect
import errno
import functools
import hashlib
import json
import os
import re
import sqlite3
import stat
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol, TypedDict

from ..errors import DatasetError
from ._atomic import atomic_write
from ._cache_index import INDEX, CacheIndex, FolderRows, Row

if sys.platform == "win32":  # pragma: no cover - no fcntl: appends are not locked
    fcntl = None
else:
    import fcntl

__all__ = [
    "DatasetUsage",
    "LevelUsage",
    "PrefixCache",
    "cache_folder",
    "cache_usage",
    "clear_cache",
]


class _Entry(Protocol):
    """What the cache reads of a manifest's record entry (records.manifest.RecordEntry)."""

    @property
    def file(self) -> str: ...
    @property
    def checksum(self) -> str: ...
    @property
    def header_bytes(self) -> int: ...
    @property
    def bytes_per_scan(self) -> Sequence[int]: ...


_SOURCE = "source.json"
_LEVELS = "levels.jsonl"
_LOCK = ".pcr-cache.lock"
_ENTRY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.[0-9a-f]{8}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def cache_folder(cache_dir: str | os.PathLike[str], url: str) -> Path:
    """The folder under *cache_dir* that holds the prefixes of the dataset at *url*.

    Examples
    --------
    >>> cache_folder("/tmp/c", "s3://bucket/ds").name
    '71591a45a16fff01'
    """
    return Path(cache_dir) / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


def _level(bounds: Sequence[int], size: int) -> int | None:
    """The highest level whose boundary a prefix of *size* bytes reaches (None: not the header).

    *bounds* are where the header (level 0) and scan groups 1..S end.

    Examples
    --------
    >>> _level((100, 300, 300, 900), 300), _level((100, 300, 300, 900), 899), _level((100,), 5)
    (2, 2, None)
    """
    held = [k for k, b in enumerate(bounds) if b <= size]
    return held[-1] if held else None


class PrefixCache:
    """Record prefixes of one dataset on local disk.

    Parameters
    ----------
    cache_dir : path
        The cache's root folder (created if missing); several datasets may
        share it.
    url : str
        The dataset's URL (it names the dataset's folder in the cache).
    manifest_raw : bytes
        The manifest as fetched: its digest tells a stale cache.
    records : sequence of RecordEntry
        The manifest's record entries (anything with their four fields).
    max_bytes : int, optional
        Hold the whole cache folder to this many bytes, trimming the least
        recently used prefixes to the level just read, then evicting them
        whole (None: no limit).

    Attributes
    ----------
    folder : Path
        This dataset's folder in the cache.
    stale_dropped : int
        Cached files deleted on opening because the dataset changed.
    trimmed : int
        Prefixes this object cut back to a lower level to stay under
        ``max_bytes``.
    evicted : int
        Prefixes this object deleted to stay under ``max_bytes``.
    reconciled : int
        Times this object listed its dataset's folder to correct the shared
        index (on opening, or after a mismatch; see the module's notes).

    Raises
    ------
    DatasetError
        If the dataset's folder in the cache is a symbolic link; or if the
        cache's index cannot be opened with ``max_bytes`` (a read-only
        folder), or is missing or damaged while other processes use it.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike[str],
        url: str,
        manifest_raw: bytes,
        records: Sequence[_Entry],
        max_bytes: int | None = None,
    ) -> None:
        if max_bytes is not None and (isinstance(max_bytes, bool) or int(max_bytes) < 1):
            raise ValueError(f"max_bytes must be a positive number of bytes, got {max_bytes!r}")
        self.root = Path(cache_dir)
        self.max_bytes = None if max_bytes is None else int(max_bytes)
        self.evicted = self.trimmed = self.reconciled = 0
        self.folder = cache_folder(cache_dir, url)
        if self.folder.is_symlink():  # eviction and usage skip linked folders: it would grow unseen
            raise DatasetError(
                f"{self.folder}: this dataset's cache folder is a symbolic link; remove it"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        self._names = [f"{r.file}.{r.checksum}" for r in records]
        self._record_of = {name: r for r, name in enumerate(self._names)}
        self._bounds = [(int(r.header_bytes), *(int(b) for b in r.bytes_per_scan)) for r in records]
        self._digest = digest = hashlib.sha256(manifest_raw).hexdigest()
        self.stale_dropped = 0
        if _source_of(self.folder) != digest:
            self._drop_stale()
            self._write_levels(digest)  # first: a source.json never vouches for older levels
            atomic_write(
                self.folder / _SOURCE,
                json.dumps({"url": url, "manifest_sha256": digest}) + "\n",
            )
        elif _levels_digest(self.folder) != digest:  # written by an older version
            try:
                self._write_levels(digest)
            except OSError:  # a read-only cache still serves reads; its levels show as unknown
                pass
        self._index = self._open_index()
        self._mismatch = False
        self._adopt()

    def _write_levels(self, digest: str) -> None:
        levels = dict(zip(self._names, self._bounds))
        head = json.dumps({"manifest_sha256": digest})
        atomic_write(self.folder / _LEVELS, f"{head}\n{json.dumps(levels)}\n")

    def _drop_stale(self) -> None:
        keep = set(self._names)
        for p in self.folder.iterdir():
            if _ENTRY.fullmatch(p.name) and p.name not in keep and _is_file(p):
                p.unlink(missing_ok=True)
                self.stale_dropped += 1

    def _open_index(self) -> CacheIndex | None:
        """The cache folder's shared index (None: it cannot hold one, and no limit needs it)."""
        index = CacheIndex(self.root, functools.partial(_index_rows, self.root))
        try:
            index.total()  # connects: rebuilds it from the folders if missing or damaged
        except (OSError, sqlite3.OperationalError) as exc:
            if self.max_bytes is None:  # a read-only cache still serves reads
                return None
            raise DatasetError(
                f"{index.path}: the cache index cannot be opened ({exc}); a cache_max_bytes "
                "needs it: give a cache_dir this process can write to"
            ) from exc
        return index

    def _adopt(self) -> None:
        """Make the index know every dataset folder as it is on disk (one listing per change).

        A folder the index does not know (written by an older version) or
        whose manifest changed since is listed; the others are not.
        """
        if self._index is None:
            return
        known = self._index.folders()
        for d, _ in _datasets(self.root):
            digest = self._digest if d == self.folder else _source_of(d)
            if d.name not in known or known[d.name] != digest:
                self._reconcile(d, digest)

    def _reconcile(self, folder: Path, digest: str | None) -> None:
        """Replace *folder*'s rows in the index by what one listing of it finds."""
        assert self._index is not None
        if folder == self.folder:
            bounds: Mapping[str, Sequence[int]] = _Bounds(self._record_of, self._bounds)
        else:
            bounds = _held_levels(folder)
        self._index.put_folder(folder.name, digest, _folder_rows(folder, bounds))
        if folder == self.folder:
            self.reconciled += 1

    def close(self) -> None:
        """Let go of the shared index (the object must not be used afterwards)."""
        if self._index is not None:
            self._index.close()

    def path(self, r: int) -> Path:
        """The cache file of record *r*."""
        return self.folder / self._names[r]

    def _least_level(self, r: int, size: int) -> int:
        """The lowest level of record *r* whose prefix holds *size* bytes (trimming goes by it)."""
        return bisect.bisect_left(self._bounds[r], size)

    def length(self, r: int) -> int:
        """Bytes of record *r* held, trimmed back to the last boundary the manifest knows."""
        path = self.path(r)
        try:
            st = path.lstat()
        except FileNotFoundError:
            return 0
        if stat.S_ISLNK(st.st_mode):  # never ours: drop the link, never what it points to
            path.unlink(missing_ok=True)
            self._forget(r)
            return 0
        if not stat.S_ISREG(st.st_mode):
            raise DatasetError(
                f"{path}: this cache entry is not a file; remove it to fetch the record again"
            )
        size = st.st_size
        fit = max((b for b in self._bounds[r] if b <= size), default=0)
        if fit != size:
            self._cut(r, fit, expect=size)
        return fit

    def read(self, r: int, end: int) -> bytes:
        """The first *end* bytes of record *r* (the caller knows ``length(r) >= end``).

        Raises
        ------
        FileNotFoundError
            If the prefix went away or shrank meanwhile (another process
            evicted or trimmed it): read it from the store.
        """
        path = self.path(r)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise FileNotFoundError(2, "cached prefix is a link", str(path)) from None
        with os.fdopen(fd, "rb") as f:
            data = f.read(end)
        if len(data) != end:  # shrunk underneath us (another process trimmed or dropped it)
            raise FileNotFoundError(2, "cached prefix shrank while reading", str(path))
        if self.max_bytes is not None:
            now = _touch(path)  # used just now: the last to be evicted
            if self._index is not None:
                self._index.touch(self.folder.name, self._names[r], now)
        return data

    def extend(self, r: int, start: int, data: bytes) -> None:
        """Append *data* as bytes ``start..`` of record *r*.

        Nothing is written unless the file holds exactly *start* bytes: a
        concurrent reader that appended first wins, and no byte lands at the
        wrong offset. An entry that is a link is deleted, not written through.
        Nothing is kept once the dataset's cache was cleared (its folder or
        its ``source.json`` gone).
        """
        if not data:
            return
        if start == 0 and self._index is not None:
            # A new prefix is made under the cache's lock, as eviction runs: eviction
            # deletes a file, then its row, and a file made at that path in between
            # would lose the row it was just given (on disk, counted nowhere).
            with open(self.root / _LOCK, "a+b") as lock:
                _lock(lock)
                written = self._write(r, start, data)
        else:
            written = self._write(r, start, data)
        if not written:
            return
        if self._mismatch:
            self._mismatch = False
            self._reconcile(self.folder, self._digest)
        if self.max_bytes is not None:
            path = self.path(r)
            _touch(path)
            self._evict(path, start + len(data), _level(self._bounds[r], start + len(data)) or 0)

    def _write(self, r: int, start: int, data: bytes) -> bool:
        """:meth:`extend`'s write under the file's lock; whether *data* was written."""
        path = self.path(r)
        end = start + len(data)
        create = os.O_CREAT if start == 0 else 0  # a prefix evicted meanwhile is not made anew
        try:
            fd = os.open(path, os.O_RDWR | create | _NOFOLLOW, 0o666)
        except FileNotFoundError:  # the folder was cleared away, or the prefix evicted
            return False
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            path.unlink(missing_ok=True)  # a link appeared since length(): the next read refills
            self._forget(r)
            return False
        with os.fdopen(fd, "r+b") as f:
            _lock(f)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != start or st.st_nlink == 0:
                return False  # another writer was first, or evicted it since we opened it
            if start == 0 and not (self.folder / _SOURCE).exists():
                path.unlink(missing_ok=True)  # cleared since opening: keep nothing
                return False
            self._grow(r, start, end)
            try:
                os.pwrite(fd, data, start)
            except OSError:
                self._resize(r, os.fstat(fd).st_size)
                raise
        return True

    def _grow(self, r: int, start: int, end: int) -> None:
        """Tell the index, before writing, that record *r* grows from *start* to *end* bytes."""
        if self._index is None:
            return
        name = self._names[r]
        had = self._index.grow(
            self.folder.name, name, end, self._least_level(r, end), time.time_ns()
        )
        if had != start:  # the row lagged its file: a crash, a hand, or an older version
            self._mismatch = True

    def _resize(self, r: int, size: int) -> None:
        if self._index is not None:
            self._index.resize(self.folder.name, self._names[r], size, self._least_level(r, size))

    def _forget(self, r: int) -> None:
        if self._index is not None:
            self._index.forget(self.folder.name, self._names[r])

    def _cut(self, r: int, size: int, expect: int | None = None) -> bool:
        """Truncate record *r*'s cache file to *size* bytes under its lock; whether it was cut.

        Nothing is cut if the file is not longer than *size*, is not a regular
        file (a link is never opened), or no longer has *expect* bytes
        (another process changed it since it was measured). Its row in the
        index is set to what the file then holds.
        """
        try:
            fd = os.open(self.path(r), os.O_RDWR | _NOFOLLOW)
        except (FileNotFoundError, IsADirectoryError):
            self._forget(r)
            return False
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            self._forget(r)  # a link is never a prefix: length() deletes it
            return False
        with os.fdopen(fd, "r+b") as f:
            _lock(f)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._forget(r)
                return False
            if st.st_nlink == 0 or (expect is not None and st.st_size != expect):
                return False  # removed or changed meanwhile: its row is the other writer's
            held = min(st.st_size, size)
            if held < st.st_size:
                f.truncate(held)
            self._resize(r, held)
        return held < st.st_size

    def _remove(self, folder: str, name: str) -> bool:
        """Delete the prefix *name* of dataset folder *folder* under its lock; whether it was."""
        assert self._index is not None
        path = self.root / folder / name
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                raise
            self._index.forget(folder, name)  # gone, or never a prefix
            return False
        with os.fdopen(fd, "rb") as f:
            _lock(f)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._index.forget(folder, name)
                return False
            try:
                now = os.lstat(path)
            except FileNotFoundError:
                now = None
            if (
                st.st_nlink == 0
                or now is None
                or (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev)
            ):
                return False  # removed or replaced meanwhile: its row is the other writer's
            path.unlink()
            self._index.forget(folder, name)
        return True

    def _evict(self, keep: Path, kept: int, level: int) -> None:
        """Trim, then delete, the least recently used prefixes until the folder fits ``max_bytes``.

        *keep* was just extended to *kept* bytes, level *level*: this
        dataset's prefixes beyond that level are cut back to it first.
        Sizes, recency and the total come from the index: nothing is listed.
        """
        assert self.max_bytes is not None
        index = self._index
        assert index is not None
        with open(self.root / _LOCK, "a+b") as lock:
            _lock(lock)
            try:
                st = keep.lstat()
            except FileNotFoundError:
                return
            if st.st_size != kept:
                # Changed since our append, so another writer's eviction (which saw
                # our bytes) ran or will run after it: evicting again would delete
                # that writer's own fresh prefix too, and could leave nothing.
                return
            total = index.total()
            top = len(self._bounds[0]) - 1 if self._bounds else 0
            while total > self.max_bytes and level < top:
                name = index.oldest_above(self.folder.name, level, top, keep.name)
                r = None if name is None else self._record_of.get(name)
                if r is None:  # none left (a row with a level names a record of this manifest)
                    break
                if self._cut(r, self._bounds[r][level]):
                    self.trimmed += 1
                total = index.total()
            while total > self.max_bytes:
                victim = index.oldest((self.folder.name, keep.name))
                if victim is None:
                    break
                if self._remove(*victim):
                    self.evicted += 1
                total = index.total()

    def drop(self, r: int) -> None:
        """Forget record *r* (its cached bytes failed a check)."""
        path = self.path(r)
        if self._index is None or path.is_symlink():
            path.unlink(missing_ok=True)
            self._forget(r)
        else:
            self._remove(self.folder.name, self._names[r])


class _Bounds(Mapping[str, Sequence[int]]):
    """Record boundaries by cache name, read from the open manifest (no copy)."""

    def __init__(self, record_of: dict[str, int], bounds: list[tuple[int, ...]]) -> None:
        self._record_of, self._bounds = record_of, bounds

    def __getitem__(self, name: str) -> Sequence[int]:
        return self._bounds[self._record_of[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._record_of)

    def __len__(self) -> int:
        return len(self._record_of)


def _is_file(p: Path) -> bool:
    """Whether *p* is a regular file itself (a link to one is not)."""
    try:
        return stat.S_ISREG(p.lstat().st_mode)
    except FileNotFoundError:
        return False


def _touch(path: Path) -> int:
    """Mark *path* used now, to the nanosecond (what a rebuilt index takes as its last use)."""
    now = time.time_ns()
    try:
        os.utime(path, ns=(now, now), follow_symlinks=False)
    except FileNotFoundError:  # evicted by another process meanwhile
        pass
    return now


def _datasets(cache_dir: Path) -> list[tuple[Path, str]]:
    """The dataset folders in *cache_dir* this module made, with their URLs."""
    out = []
    try:
        children = sorted(cache_dir.iterdir())
    except FileNotFoundError:
        return []
    for d in children:
        if d.is_symlink() or not d.is_dir() or not re.fullmatch(r"[0-9a-f]{16}", d.name):
            continue
        try:
            url = json.loads((d / _SOURCE).read_text("utf-8"))["url"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not ours: never touched
        out.append((d, str(url)))
    return out


def _entries(cache_dir: Path) -> list[tuple[int, int, Path]]:
    """(modification time in ns, bytes, path) of every cached prefix under *cache_dir*."""
    return [e for d, _ in _datasets(cache_dir) for e in _folder_entries(d)]


def _folder_entries(folder: Path) -> list[tuple[int, int, Path]]:
    """(modification time in ns, bytes, path) of every cached prefix in a dataset *folder*."""
    out = []
    for p in folder.iterdir():
        if not _ENTRY.fullmatch(p.name):
            continue
        try:
            st = p.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((st.st_mtime_ns, st.st_size, p))
    return out


def _source_of(folder: Path) -> str | None:
    """The manifest digest in *folder*'s ``source.json`` (None: none readable)."""
    try:
        return str(json.loads((folder / _SOURCE).read_text("utf-8"))["manifest_sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _folder_rows(folder: Path, bounds: Mapping[str, Sequence[int]]) -> Iterator[Row]:
    """The index rows of the prefixes in *folder*, from one listing of it.

    Their last use is the file's modification time (every read of a bounded
    cache sets it), their level the lowest of *bounds* that holds them (None:
    a record *bounds* does not name).
    """
    try:
        listing = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    with listing:
        for e in listing:
            if not _ENTRY.fullmatch(e.name):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            b = bounds.get(e.name)
            try:
                level = None if b is None else bisect.bisect_left([int(x) for x in b], st.st_size)
            except (TypeError, ValueError):  # a damaged levels file: unknown
                level = None
            yield e.name, st.st_size, level, st.st_mtime_ns


def _index_rows(cache_dir: Path) -> Iterator[FolderRows]:
    """Every dataset folder of *cache_dir* as index rows: what a rebuild of the index holds."""
    for d, _ in _datasets(cache_dir):
        yield d.name, _source_of(d), _folder_rows(d, _held_levels(d))


def _levels_digest(folder: Path) -> str | None:
    """The manifest digest on the first line of *folder*'s levels file (None: none)."""
    try:
        with open(folder / _LEVELS, "rb") as f:
            return str(json.loads(f.readline(200))["manifest_sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _held_levels(folder: Path) -> dict[str, list[int]]:
    """Every record's level boundaries, by cache name, if they are the cached manifest's.

    Empty when unknown: no levels file (a cache written by an older
    version), a damaged one, or one of another manifest than ``source.json``'s.
    """
    try:
        source = json.loads((folder / _SOURCE).read_text("utf-8"))["manifest_sha256"]
        with open(folder / _LEVELS, "rb") as f:
            if json.loads(f.readline(200))["manifest_sha256"] != source:
                return {}
            levels = json.loads(f.readline())
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return levels if isinstance(levels, dict) else {}


class LevelUsage(TypedDict):
    """Prefixes a cache holds at one level: the level (None: unknown), records and bytes."""

    level: int | None
    records: int
    bytes: int


class DatasetUsage(TypedDict):
    """What a cache holds of one dataset (see :func:`cache_usage`)."""

    url: str
    folder: str
    prefixes: int
    bytes: int
    levels: list[LevelUsage]


def cache_usage(cache_dir: str | os.PathLike[str]) -> list[DatasetUsage]:
    """What a cache folder holds: per dataset its URL, folder, prefixes, bytes and levels.

    Returns
    -------
    list of dict
        One per dataset: ``url``, ``folder``, ``prefixes`` (records held),
        ``bytes`` and ``levels``, a list of ``{"level", "records", "bytes"}``
        by level, lowest first, where level 0 is the header alone and level
        None a prefix whose level cannot be told (cached by an older
        version, or a record the manifest no longer names).

    Examples
    --------
    >>> cache_usage("/nonexistent")
    []
    """
    root = Path(cache_dir)
    sizes: dict[Path, list[tuple[str, int]]] = {}
    for _, size, p in _entries(root):
        sizes.setdefault(p.parent, []).append((p.name, size))
    rows: list[DatasetUsage] = []
    for d, url in _datasets(root):
        held = sizes.get(d, [])
        rows.append(
            {
                "url": url,
                "folder": str(d),
                "prefixes": len(held),
                "bytes": sum(size for _, size in held),
                "levels": _by_level(held, _held_levels(d)) if held else [],
            }
        )
    return rows


def _by_level(held: list[tuple[str, int]], bounds: dict[str, list[int]]) -> list[LevelUsage]:
    """Records and bytes held at each level, lowest first, the unknown level last."""
    counts: dict[int | None, list[int]] = {}
    for name, size in held:
        b = bounds.get(name)
        try:
            k = None if b is None else _level([int(x) for x in b], size)
        except (TypeError, ValueError):  # a damaged levels file: unknown, not an error
            k = None
        counts.setdefault(k, []).append(size)
    order = sorted(counts, key=lambda k: (k is None, k or 0))
    return [{"level": k, "records": len(counts[k]), "bytes": sum(counts[k])} for k in order]


def clear_cache(cache_dir: str | os.PathLike[str], url: str | None = None) -> tuple[int, int]:
    """Delete the cached prefixes (of the dataset at *url*, or all); return (files, bytes).

    Only what this module wrote goes: ``source.json`` (first: a process still
    reading the dataset then keeps no new prefix), prefixes, ``levels.jsonl``,
    then the dataset's folder if nothing else is left in it; the prefixes'
    rows leave the shared index.
    """
    root = Path(cache_dir)
    files = nbytes = 0
    if not root.is_dir():
        return 0, 0
    with open(root / _LOCK, "a+b") as lock:
        _lock(lock)
        index = _index_if_any(root)
        try:
            for d, u in _datasets(root):
                if url is not None and u.rstrip("/") != url.rstrip("/"):
                    continue
                held = _folder_entries(d)
                (d / _SOURCE).unlink(missing_ok=True)
                for _, size, p in held:
                    p.unlink(missing_ok=True)
                    files, nbytes = files + 1, nbytes + size
                if _is_file(d / _LEVELS):
                    (d / _LEVELS).unlink()
                if index is not None:
                    index.forget_folder(d.name)
                try:
                    d.rmdir()  # only when empty: a user's own file keeps it
                except OSError:
                    pass
        finally:
            if index is not None:
                index.close()
    return files, nbytes


def _index_if_any(root: Path) -> CacheIndex | None:
    """The cache's index, if it has one that opens (none is made just to be emptied)."""
    if not (root / INDEX).exists():
        return None
    index = CacheIndex(root, functools.partial(_index_rows, root))
    try:
        index.total()
    except (OSError, sqlite3.Error, DatasetError):
        # Its rows then count prefixes no longer there: eviction drops each row
        # it meets whose file is gone, so the cache holds less, never more.
        return None
    return index


def _lock(f: IO[bytes]) -> None:
    """An exclusive lock on an open cache file, released when it is closed."""
    # flock on the entry itself, not filelock's sidecar file: the size check and
    # the append must be one step on the very file other processes append to.
    if fcntl is not None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
