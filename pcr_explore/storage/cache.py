"""A local cache of record prefixes, grown by delta fetches.

A record's scan groups are laid out in level order, so what a level-*k* read
fetched is the start of what any higher level needs. The cache keeps, for
each record, the longest prefix read so far in one file; raising the level
later fetches only the missing groups ``k+1..k'`` (one range request) and
appends them, and lowering it needs no request at all.

Layout: ``<cache_dir>/<16 hex digits of SHA-256 of the dataset URL>/`` holds
``source.json`` (the URL, without any user name or password, and the SHA-256
of the manifest the cache was filled from) and one file per record,
``<record file>.<header checksum>``. The header checksum covers every group's
CRC, so a record re-encoded with other content gets another cache name: a
stale prefix is never read. When the manifest's digest changes, files that no
record of the new manifest names are deleted. A cached prefix only ever ends
at a boundary the manifest knows (the end of the header or of a scan group);
a file cut short by a crash is trimmed back to the last one. The reader
checks every byte it takes from the cache against the record's CRCs, as it
does for bytes from the network.

What the cache holds is recorded in one place, the index
``<cache_dir>/.pcr-cache.sqlite`` (:mod:`._cache_index`): every prefix's
bytes, level and last use; the cache's size is the sum of those rows. The
index's write transaction is the cache's one lock: a prefix is created,
appended to, trimmed or deleted, and its row changed, inside one, after
checking the file on disk, so no byte lands at a wrong offset and no two
processes change the cache at once. Reads take no lock: a reader whose
prefix shrank or went away underneath it reads it again from the store. A
write that finds a file whose size is not the one its row says (a crash
between the write and its commit, a file changed by hand, an older version)
lists that dataset's folder once and corrects its rows; a dataset folder the
index does not know is listed when a dataset is opened.

With ``max_bytes``, the cache folder (the prefixes of every dataset in it
together; ``source.json`` and the index are not counted) is held to a size.
Before a prefix grows to level *k* (0: the header alone), the least recently
used prefixes of the same dataset that hold more than level *k* are trimmed
to level *k*, until the total fits: a pass at a lower level after one at a
higher level keeps what it needs of every record instead of losing whole
records. Only when trimming is not enough are prefixes deleted, whole
(other datasets' prefixes only ever whole: a level of this dataset says
nothing about what their readers need): the least recently used, unless
every record of this dataset at level *k* cannot fit in ``max_bytes``. A
pass at such a level refetches something whatever the cache does, and with
shuffled passes the least recently used prefix is the next one needed, so
the cache instead keeps a fixed part of the dataset: the records first in an
order set by a hash of their names (the same in every process), a record
ranked after every prefix it holds being read from the store and not kept.
Each later pass then fetches about the bytes that cannot fit, where least
recently used would fetch nearly every byte again. A prefix larger
than the limit by itself is kept only up to the highest level that fits, or
not at all (the reader's :class:`~pcr_explore.errors.CacheTooSmallWarning`
says that level does not fit). Every read of a bounded cache marks its
prefix used.

Only files this module writes (regular files named ``<record>.<checksum>`` in
a folder that holds a ``source.json``, that ``source.json``, the index and
the fill locks) are ever changed or deleted, and a row of the index names a
file only if its folder and name are of that form: a row is data, never a
path. A symbolic link is never followed: an entry that is a link is damage,
deleted (the link, not what it points to) and fetched again; an index or
lock file that is a link is refused. The cache is an optimisation: a folder
it cannot write (read-only, full, a link where its index belongs) serves
what it holds, keeps nothing more, and says so once in a warning. After
:func:`clear_cache`, a process still reading the cleared dataset keeps no new
prefix of it until the dataset is opened again.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import sqlite3
import stat
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..errors import DatasetError
from . import _cache_index as ix
from ._atomic import atomic_write
from ._cache_index import INDEX, CacheIndex, FolderRows, Row, refuse_link

__all__ = [
    "DatasetUsage",
    "LevelUsage",
    "PrefixCache",
    "cache_folder",
    "cache_usage",
    "clear_cache",
    "strip_credentials",
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
_OLD_LEVELS = "levels.jsonl"  # written by older versions; cleared with the rest
_FILL = ".fill-"  # + a prefix's name: the lock held while one process fetches it
_ENTRY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.[0-9a-f]{8}")
_FOLDER = re.compile(r"[0-9a-f]{16}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FAILURES = (OSError, sqlite3.Error)  # what turns a cache read-only: it is an optimisation
T = TypeVar("T")


def strip_credentials(url: str) -> str:
    """*url* without the user name and password it may carry.

    Examples
    --------
    >>> strip_credentials("https://ann:secret@host:8080/ds?x=1")
    'https://host:8080/ds?x=1'
    >>> strip_credentials("/data/ds")
    '/data/ds'
    """
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def cache_folder(cache_dir: str | os.PathLike[str], url: str) -> Path:
    """The folder under *cache_dir* that holds the prefixes of the dataset at *url*.

    A user name and password in *url* do not count: they never reach the disk.

    Examples
    --------
    >>> cache_folder("/tmp/c", "s3://bucket/ds").name
    '71591a45a16fff01'
    """
    url = strip_credentials(url)
    return Path(cache_dir) / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


class PrefixCache:
    """Record prefixes of one dataset on local disk.

    Parameters
    ----------
    cache_dir : path
        The cache's root folder (created if missing); several datasets may
        share it.
    url : str
        The dataset's URL (it names the dataset's folder in the cache; a
        user name and password in it are left out).
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
        If the dataset's folder in the cache is a symbolic link.

    Warns
    -----
    UserWarning
        Once, if the cache cannot be written (see the module's notes).
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
        self.url = strip_credentials(url)
        self.evicted = self.trimmed = self.reconciled = self.stale_dropped = 0
        self.folder = cache_folder(cache_dir, self.url)
        if self.folder.is_symlink():  # eviction and usage skip linked folders: it would grow unseen
            raise DatasetError(
                f"{self.folder}: this dataset's cache folder is a symbolic link; remove it"
            )
        self._names = [f"{r.file}.{r.checksum}" for r in records]
        self._record_of = {name: r for r, name in enumerate(self._names)}
        self._bounds = [(int(r.header_bytes), *(int(b) for b in r.bytes_per_scan)) for r in records]
        self._digest = hashlib.sha256(manifest_raw).hexdigest()
        self._index: CacheIndex | None = CacheIndex(self.root, functools.partial(_rows, self.root))
        self._bad: set[int] = set()  # records whose cached bytes failed, kept while read-only
        self._passes: dict[int, int] = {}  # bytes of a pass by level
        try:
            self._open()
        except _FAILURES as exc:
            self._fail(exc)

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if _source(self.folder, "manifest_sha256") != self._digest:
            keep = set(self._names)
            for name, _, _ in _prefix_files(self.folder):
                if name not in keep:
                    (self.folder / name).unlink(missing_ok=True)
                    self.stale_dropped += 1
            source = {"url": self.url, "manifest_sha256": self._digest}
            atomic_write(self.folder / _SOURCE, json.dumps(source) + "\n")
        assert self._index is not None
        known = self._index.run(ix.folders)
        todo = [
            (d, self._digest if d == self.folder else None)
            for d, _ in _datasets(self.root)
            if (known.get(d.name) != self._digest if d == self.folder else d.name not in known)
        ]

        def reconcile(db: sqlite3.Connection) -> None:
            for d, digest in todo:
                self._reconcile(db, d, digest)

        if todo:  # unknown to the index (an older version wrote it) or of another manifest
            self._locked(reconcile)

    def _fail(self, exc: BaseException) -> None:
        """Go on read-only: say why once, keep nothing more."""
        if self._index is None:
            return
        self._index.close()
        self._index = None
        warnings.warn(
            f"{self.root}: the prefix cache cannot be written ({exc}); reads go on, "
            "serving what it holds and keeping nothing more",
            UserWarning,
            stacklevel=4,
        )

    def _locked(self, step: Callable[[sqlite3.Connection], T]) -> T | None:
        """*step* in one write transaction of the index, the cache's lock (None: read-only)."""
        if self._index is None:
            return None
        try:
            return self._index.run(step, write=True)
        except _FAILURES as exc:
            self._fail(exc)
            return None

    def _reconcile(self, db: sqlite3.Connection, folder: Path, digest: str | None) -> None:
        """Replace *folder*'s rows in the index by what one listing of it finds."""
        bounds = self._bounds if folder == self.folder else []
        found = _folder_rows(
            folder, lambda name, size: _least(bounds, self._record_of.get(name), size)
        )
        ix.put_folder(db, folder.name, digest, found)
        if folder == self.folder:
            self.reconciled += 1

    def close(self) -> None:
        """Let go of the shared index (the next use connects again)."""
        if self._index is not None:
            self._index.close()

    def path(self, r: int) -> Path:
        """The cache file of record *r*."""
        return self.folder / self._names[r]

    def length(self, r: int) -> int:
        """Bytes of record *r* held, trimmed back to the last boundary the manifest knows."""
        if r in self._bad:
            return 0
        path = self.path(r)
        try:
            st = path.lstat()
        except FileNotFoundError:
            return 0
        except OSError as exc:  # an unreadable folder: read from the store
            self._fail(exc)
            self._bad.add(r)
            return 0
        if stat.S_ISLNK(st.st_mode):  # never ours: drop the link, never what it points to
            self.drop(r)
            return 0
        if not stat.S_ISREG(st.st_mode):
            raise DatasetError(
                f"{path}: this cache entry is not a file; remove it to fetch the record again"
            )
        fit = max((b for b in self._bounds[r] if b <= st.st_size), default=0)
        if fit != st.st_size:  # a crash in the middle of an append
            self._locked(lambda db: self._cut(db, r, None))
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
            if exc.errno not in (errno.ENOENT, errno.ELOOP):
                self._fail(exc)
            raise FileNotFoundError(2, "cached prefix is gone", str(path)) from None
        with os.fdopen(fd, "rb") as f:
            data = f.read(end)
        if len(data) != end:  # shrunk underneath us (another process trimmed or dropped it)
            raise FileNotFoundError(2, "cached prefix shrank while reading", str(path))
        if self.max_bytes is not None:  # used just now: the last to be evicted
            name, now = self._names[r], time.time_ns()
            self._locked(lambda db: ix.touch(db, self.folder.name, name, now))
        return data

    def extend(self, r: int, start: int, data: bytes) -> None:
        """Append *data* as bytes ``start..`` of record *r*, as much of it as the limit allows.

        Nothing is written unless the file holds exactly *start* bytes: a
        concurrent reader that appended first wins. An entry that is a link
        is deleted, not written through. Nothing is kept once the dataset's
        cache was cleared (its folder or its ``source.json`` gone).
        """
        if data and r not in self._bad:
            self._locked(lambda db: self._write(db, r, start, data))

    def _write(self, db: sqlite3.Connection, r: int, start: int, data: bytes) -> None:
        """:meth:`extend` inside the lock."""
        end = self._fitting(r, start + len(data))
        if end <= start or (start == 0 and not _is_file(self.folder / _SOURCE)):
            return  # nothing fits, or cleared since opening: keep nothing
        path, name = self.path(r), self._names[r]
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if start == 0 else 0) | _NOFOLLOW, 0o666)
        except FileNotFoundError:  # the folder was cleared away, or the prefix evicted
            return
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            path.unlink(missing_ok=True)  # a link appeared since length(): the next read refills
            ix.forget(db, self.folder.name, name)
            return
        with os.fdopen(fd, "r+b") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != start:
                return  # another writer was first, or it changed since length()
            if (ix.row(db, self.folder.name, name) or 0) != start:
                self._reconcile(db, self.folder, self._digest)  # the rows lag the folder
            if self.max_bytes is not None and not self._make_room(db, r, start, end):
                if start == 0:  # the records ranked before it fill the room: it streams
                    path.unlink()
                return
            try:
                os.pwrite(fd, data[: end - start], start)
            except OSError:
                f.truncate(start)
                raise
            ix.put(db, self.folder.name, name, end, _least(self._bounds, r, end), time.time_ns())

    def _fitting(self, r: int, end: int) -> int:
        """How much of record *r*'s first *end* bytes the limit lets the cache keep.

        A prefix larger than the limit by itself is kept up to the highest
        level that fits, or not at all: the reader's
        :class:`~pcr_explore.errors.CacheTooSmallWarning` has said that such
        a level does not fit.
        """
        if self.max_bytes is None or end <= self.max_bytes:
            return end
        return max((b for b in self._bounds[r] if b <= self.max_bytes), default=0)

    def _make_room(self, db: sqlite3.Connection, r: int, start: int, end: int) -> bool:
        """Trim, then delete, prefixes until record *r* fits at *end*: whether it does.

        This dataset's least recently used prefixes beyond *end*'s level are
        cut back to it first, then the least recently used prefixes go whole,
        except where a pass at *end*'s level cannot fit: there this dataset
        keeps the records it ranks first (:func:`._cache_index.rank`), and a
        record ranked after every one it holds is not kept (it streams). The
        total is the rows' sum, taken once; each victim is one step down an
        index of the rows.
        """
        assert self.max_bytes is not None
        folder, keep = self.folder.name, self._names[r]
        level = max(0, bisect.bisect_right(self._bounds[r], end) - 1)  # the highest it reaches
        top = len(self._bounds[r]) - 1
        over = ix.total(db) - start + end - self.max_bytes
        while over > 0 and level < top:
            head = ix.oldest_above(db, folder, level, top, keep)
            victim = None if head is None else self._record_of.get(head[0])
            if head is None or victim is None:  # a row with a level names a record of ours
                break
            cut, now = self._cut(db, victim, self._bounds[victim][level])
            self.trimmed += cut
            over -= head[1] - now
        ranked = self._pass_bytes(level) > self.max_bytes
        while over > 0:
            old = ix.oldest(db, (folder, keep))
            if old is not None and ranked and old[0] == folder:
                last = ix.last_kept(db, folder, keep)
                old = None if last is None else (folder, *last)
            if old is None:
                return False
            self.evicted += self._remove(db, old[0], old[1])
            over -= old[2]
        return True

    def _pass_bytes(self, level: int) -> int:
        """Bytes of every record of this dataset at *level* (0: the headers)."""
        if level not in self._passes:
            self._passes[level] = sum(b[min(level, len(b) - 1)] for b in self._bounds)
        return self._passes[level]

    def _cut(self, db: sqlite3.Connection, r: int, size: int | None) -> tuple[bool, int]:
        """Truncate record *r*'s cache file to *size* bytes: whether it was, and its bytes now.

        None: to the last boundary its bytes reach (checked here, inside the
        lock). Its row is then what the file holds (none if it is not a
        regular file).
        """
        name = self._names[r]
        try:
            fd = os.open(self.path(r), os.O_RDWR | _NOFOLLOW)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.EISDIR):
                raise
            ix.forget(db, self.folder.name, name)  # gone, or never a prefix (length() says which)
            return False, 0
        with os.fdopen(fd, "r+b") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                ix.forget(db, self.folder.name, name)
                return False, 0
            fit = max((b for b in self._bounds[r] if b <= st.st_size), default=0)
            held = min(st.st_size, fit if size is None else size)
            if held < st.st_size:
                f.truncate(held)
            ix.put(db, self.folder.name, name, held, _least(self._bounds, r, held), None)
        return held < st.st_size, held

    def _remove(self, db: sqlite3.Connection, folder: str, name: str) -> bool:
        """Delete the prefix *name* of dataset folder *folder* and its row; whether a file went.

        The row is data: its folder and name must be of the cache's own form,
        in a folder (not a link) that holds a ``source.json``, or nothing on
        the disk is touched.
        """
        ix.forget(db, folder, name)
        if not (_FOLDER.fullmatch(folder) and _ENTRY.fullmatch(name)):
            return False
        d = self.root / folder
        try:
            if not stat.S_ISDIR(d.lstat().st_mode) or not _is_file(d / _SOURCE):
                return False
            mode = (d / name).lstat().st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):  # a link: itself, never what it points to
            (d / name).unlink()
        return stat.S_ISREG(mode)

    def drop(self, r: int) -> None:
        """Forget record *r* (its cached bytes failed a check)."""
        gone = self._locked(lambda db: self._remove(db, self.folder.name, self._names[r]))
        if gone is None:  # read-only: not served again by this object
            self._bad.add(r)

    @contextlib.contextmanager
    def filling(self, r: int, end: int) -> Iterator[None]:
        """Hold record *r*'s fill lock while its first *end* bytes are fetched.

        Several DataLoader workers that need parts of one record at once then
        fetch its prefix from the store once: the first fills the cache, the
        others wait and read it from there. Nothing is locked when the cache
        holds the bytes or is read-only. The lock is ``filelock``'s on
        ``.fill-<prefix>`` in the dataset's folder (released by the system
        when its holder dies; removed by the holder as it lets go).
        """
        lock = None if self._index is None or self.length(r) >= end else self._fill_lock(r)
        try:
            yield
        finally:
            if lock is not None:
                with contextlib.suppress(OSError):  # removed while held: see storage._lock
                    Path(lock.lock_file).unlink()
                lock.release()

    def _fill_lock(self, r: int) -> Any:
        from filelock import FileLock  # a reader without a cache never needs it

        lock = FileLock(self.folder / f"{_FILL}{self._names[r]}", thread_local=False)
        try:
            lock.acquire()  # opens with O_NOFOLLOW: a link is refused
        except OSError as exc:
            self._fail(exc)
            return None
        return lock


def _is_file(p: Path) -> bool:
    """Whether *p* is a regular file itself (a link to one is not)."""
    try:
        return stat.S_ISREG(p.lstat().st_mode)
    except FileNotFoundError:
        return False


def _least(bounds: Sequence[Sequence[int]], r: int | None, size: int) -> int | None:
    """The lowest level of record *r* of *bounds* that holds *size* bytes (None: unknown).

    Trimming goes by it: a prefix at that level is cut back first.
    """
    return None if r is None or r >= len(bounds) else bisect.bisect_left(bounds[r], size)


def _source(folder: Path, key: str) -> str | None:
    """Field *key* of *folder*'s ``source.json``, not following a link (None: none readable)."""
    try:
        with os.fdopen(os.open(folder / _SOURCE, os.O_RDONLY | _NOFOLLOW), "rb") as f:
            return str(json.loads(f.read(1 << 16))[key])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _datasets(cache_dir: Path) -> list[tuple[Path, str]]:
    """The dataset folders in *cache_dir* this module made, with their URLs."""
    out = []
    try:
        children = sorted(cache_dir.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    for d in children:
        if not _FOLDER.fullmatch(d.name) or d.is_symlink() or not d.is_dir():
            continue
        url = _source(d, "url")
        if url is None:
            continue  # not ours: never touched
        out.append((d, strip_credentials(url)))  # an older version wrote it as given
    return out


def _prefix_files(folder: Path) -> list[tuple[str, int, int]]:
    """(name, bytes, modification time in ns) of every cached prefix in a dataset *folder*."""
    out = []
    try:
        listing = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with listing:
        for e in listing:
            if not _ENTRY.fullmatch(e.name):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((e.name, st.st_size, st.st_mtime_ns))
    return out


def _folder_rows(folder: Path, level: Callable[[str, int], int | None]) -> list[Row]:
    """The index rows of the prefixes in *folder*, from one listing of it.

    Their last use is the file's modification time, their level
    ``level(name, size)`` (None: unknown until the dataset is opened).
    """
    return [(name, size, level(name, size), mtime) for name, size, mtime in _prefix_files(folder)]


def _rows(cache_dir: Path) -> Iterator[FolderRows]:
    """Every dataset folder of *cache_dir* as index rows, levels unknown: what a new index holds."""
    for d, _ in _datasets(cache_dir):
        yield d.name, None, _folder_rows(d, lambda name, size: None)


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
        One per dataset: ``url`` (without a user name or password),
        ``folder``, ``prefixes`` (records held), ``bytes`` and ``levels``, a
        list of ``{"level", "records", "bytes"}`` by level, lowest first,
        where level 0 is the header alone and level None a prefix whose level
        cannot be told (cached by an older version, or a record the manifest
        no longer names, until its dataset is opened again).

    Examples
    --------
    >>> cache_usage("/nonexistent")
    []
    """
    root = Path(cache_dir)
    index = ix.saved_rows(root)  # the levels; the sizes are the disk's
    out: list[DatasetUsage] = []
    for d, url in _datasets(root):
        counts: dict[int | None, list[int]] = {}
        held = _prefix_files(d)
        for name, size, _ in held:
            size_, level, _ = index.get((d.name, name), (None, None, 0))
            counts.setdefault(level if size_ == size else None, []).append(size)
        order = sorted(counts, key=lambda k: (k is None, k or 0))
        levels: list[LevelUsage] = [
            {"level": k, "records": len(counts[k]), "bytes": sum(counts[k])} for k in order
        ]
        total = sum(size for _, size, _ in held)
        out.append(
            {"url": url, "folder": str(d), "prefixes": len(held), "bytes": total, "levels": levels}
        )
    return out


def clear_cache(cache_dir: str | os.PathLike[str], url: str | None = None) -> tuple[int, int]:
    """Delete the cached prefixes (of the dataset at *url*, or all); return (files, bytes).

    Only what this module wrote goes: ``source.json`` (first: a process still
    reading the dataset then keeps no new prefix), prefixes, fill locks, then
    the dataset's folder if nothing else is left in it; the prefixes' rows
    leave the shared index.
    """
    root = Path(cache_dir)
    if not root.is_dir():
        return 0, 0
    want = None if url is None else strip_credentials(url).rstrip("/")
    counted = [0, 0]

    def clear(db: sqlite3.Connection | None) -> None:
        counted[:] = [0, 0]
        for d, u in _datasets(root):
            if want is not None and u.rstrip("/") != want:
                continue
            (d / _SOURCE).unlink(missing_ok=True)
            for name, size, _ in _prefix_files(d):
                (d / name).unlink(missing_ok=True)
                counted[0], counted[1] = counted[0] + 1, counted[1] + size
            for p in d.iterdir():
                if (p.name == _OLD_LEVELS or p.name.startswith(_FILL)) and _is_file(p):
                    p.unlink(missing_ok=True)
            if db is not None:
                ix.forget_folder(db, d.name)
            with contextlib.suppress(OSError):
                d.rmdir()  # only when empty: a user's own file keeps it

    if (root / INDEX).exists():  # none is made just to be emptied
        index = CacheIndex(root, functools.partial(_rows, root))
        try:
            refuse_link(root / INDEX)
            index.run(clear, write=True)
            return counted[0], counted[1]
        except _FAILURES:  # its rows then count prefixes no longer there: eviction drops them
            pass
        finally:
            index.close()
    clear(None)
    return counted[0], counted[1]
