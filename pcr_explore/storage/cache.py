"""A local cache of record prefixes, grown by delta fetches.

A record's scan groups are laid out in level order, so what a level-*k* read
fetched is the start of what any higher level needs. The cache keeps, for
each record, the longest prefix read so far in one file; raising the level
later fetches only the missing groups ``k+1..k'`` (one range request) and
appends them, and lowering it needs no request at all.

Layout: ``<cache_dir>/<16 hex digits of SHA-256 of the dataset URL>/`` holds
``source.json`` (the URL and the SHA-256 of the manifest the cache was filled
from) and one file per record, ``<record file>.<header checksum>``. The
header checksum covers every group's CRC, so a record re-encoded with other
content gets another cache name: a stale prefix is never read. When the
manifest's digest changes, files that no record of the new manifest names are
deleted.

A cached prefix only ever ends at a boundary the manifest knows (the end of
the header or of a scan group); a file cut short by a crash is trimmed back
to the last one. The reader checks every byte it takes from the cache against
the record's CRCs, as it does for bytes from the network.

With ``max_bytes``, the cache folder (every dataset in it together) is held
to a size: after a prefix grows, the least recently used prefixes (by
modification time, which every read refreshes) are deleted, whole, until
the total fits. Only the one just written is kept whatever its size, so the
folder never stays more than one record over the limit. Several processes
may share a cache: eviction runs under a lock on ``.pcr-cache.lock``, a
prefix deleted under a reader is read again from the store, and only files
this module writes (prefixes named ``<record>.<checksum>`` in a folder that
holds a ``source.json``, and those ``source.json`` files) are ever deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import DatasetError
from ._atomic import atomic_write

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends are not locked
    fcntl = None  # type: ignore[assignment]

__all__ = ["PrefixCache", "cache_folder", "cache_usage", "clear_cache"]


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
_LOCK = ".pcr-cache.lock"
_ENTRY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.[0-9a-f]{8}")


def cache_folder(cache_dir: str | os.PathLike[str], url: str) -> Path:
    """The folder under *cache_dir* that holds the prefixes of the dataset at *url*.

    Examples
    --------
    >>> cache_folder("/tmp/c", "s3://bucket/ds").name
    '71591a45a16fff01'
    """
    return Path(cache_dir) / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


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
        Hold the whole cache folder to this many bytes, evicting the least
        recently used prefixes (None: no limit).

    Attributes
    ----------
    folder : Path
        This dataset's folder in the cache.
    stale_dropped : int
        Cached files deleted on opening because the dataset changed.
    evicted : int
        Prefixes this object deleted to stay under ``max_bytes``.
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
        self.evicted = 0
        self.folder = cache_folder(cache_dir, url)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._names = [f"{r.file}.{r.checksum}" for r in records]
        self._bounds = [sorted({r.header_bytes, *r.bytes_per_scan}) for r in records]
        digest = hashlib.sha256(manifest_raw).hexdigest()
        self.stale_dropped = 0
        if self._source_digest() != digest:
            self._drop_stale()
            atomic_write(
                self.folder / _SOURCE,
                json.dumps({"url": url, "manifest_sha256": digest}) + "\n",
            )

    def _source_digest(self) -> str | None:
        try:
            return str(json.loads((self.folder / _SOURCE).read_text("utf-8"))["manifest_sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _drop_stale(self) -> None:
        keep = set(self._names)
        for p in self.folder.iterdir():
            if p.is_file() and _ENTRY.fullmatch(p.name) and p.name not in keep:
                p.unlink(missing_ok=True)
                self.stale_dropped += 1

    def path(self, r: int) -> Path:
        """The cache file of record *r*."""
        return self.folder / self._names[r]

    def length(self, r: int) -> int:
        """Bytes of record *r* held, trimmed back to the last boundary the manifest knows."""
        try:
            st = self.path(r).stat()
        except FileNotFoundError:
            return 0
        if not stat.S_ISREG(st.st_mode):
            raise DatasetError(
                f"{self.path(r)}: this cache entry is not a file; remove it to fetch the "
                "record again"
            )
        size = st.st_size
        fit = max((b for b in self._bounds[r] if b <= size), default=0)
        if fit != size:
            with open(self.path(r), "r+b") as f:
                _lock(f)
                if os.fstat(f.fileno()).st_size == size:
                    f.truncate(fit)
        return fit

    def read(self, r: int, end: int) -> bytes:
        """The first *end* bytes of record *r* (the caller knows ``length(r) >= end``)."""
        with open(self.path(r), "rb") as f:
            data = f.read(end)
        if len(data) != end:  # shrunk underneath us (another process trimmed or dropped it)
            raise FileNotFoundError(2, "cached prefix shrank while reading", str(self.path(r)))
        if self.max_bytes is not None:
            _touch(self.path(r))  # used just now: the last to be evicted
        return data

    def extend(self, r: int, start: int, data: bytes) -> None:
        """Append *data* as bytes ``start..`` of record *r*.

        Nothing is written unless the file holds exactly *start* bytes: a
        concurrent reader that appended first wins, and no byte lands at the
        wrong offset.
        """
        if not data:
            return
        path = self.path(r)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        with os.fdopen(fd, "r+b") as f:
            _lock(f)
            if os.fstat(fd).st_size != start:
                return
            f.seek(start)
            f.write(data)
        if self.max_bytes is not None:
            _touch(path)
            self._evict(path)

    def _evict(self, keep: Path) -> None:
        """Delete the least recently used prefixes until the folder fits ``max_bytes``."""
        assert self.max_bytes is not None
        with open(self.root / _LOCK, "a+b") as lock:
            _lock(lock)
            entries = sorted(_entries(self.root), key=lambda e: (e[0], str(e[2])))
            total = sum(size for _, size, _ in entries)
            for _, size, path in entries:
                if total <= self.max_bytes:
                    break
                if path == keep:
                    continue
                path.unlink(missing_ok=True)
                total -= size
                self.evicted += 1

    def drop(self, r: int) -> None:
        """Forget record *r* (its cached bytes failed a check)."""
        self.path(r).unlink(missing_ok=True)


def _touch(path: Path) -> None:
    """Mark *path* used now, to the nanosecond (the recency eviction goes by)."""
    now = time.time_ns()
    try:
        os.utime(path, ns=(now, now))
    except FileNotFoundError:  # evicted by another process meanwhile
        pass


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
    out = []
    for d, _ in _datasets(cache_dir):
        for p in d.iterdir():
            if not _ENTRY.fullmatch(p.name):
                continue
            try:
                st = p.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((st.st_mtime_ns, st.st_size, p))
    return out


def cache_usage(cache_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """What a cache folder holds: per dataset its URL, folder, prefixes and bytes.

    Examples
    --------
    >>> cache_usage("/nonexistent")
    []
    """
    root = Path(cache_dir)
    sizes: dict[Path, list[int]] = {}
    for _, size, p in _entries(root):
        sizes.setdefault(p.parent, []).append(size)
    return [
        {
            "url": url,
            "folder": str(d),
            "prefixes": len(sizes.get(d, [])),
            "bytes": sum(sizes.get(d, [])),
        }
        for d, url in _datasets(root)
    ]


def clear_cache(cache_dir: str | os.PathLike[str], url: str | None = None) -> tuple[int, int]:
    """Delete the cached prefixes (of the dataset at *url*, or all); return (files, bytes).

    Only what this module wrote goes: prefixes, ``source.json``, then the
    dataset's folder if nothing else is left in it.
    """
    root = Path(cache_dir)
    files = nbytes = 0
    if not root.is_dir():
        return 0, 0
    with open(root / _LOCK, "a+b") as lock:
        _lock(lock)
        for d, u in _datasets(root):
            if url is not None and u.rstrip("/") != url.rstrip("/"):
                continue
            for _, size, p in [e for e in _entries(root) if e[2].parent == d]:
                p.unlink(missing_ok=True)
                files, nbytes = files + 1, nbytes + size
            (d / _SOURCE).unlink(missing_ok=True)
            try:
                d.rmdir()  # only when empty: a user's own file keeps it
            except OSError:
                pass
    return files, nbytes


def _lock(f: Any) -> None:
    """An exclusive lock on an open cache file, released when it is closed."""
    # flock on the entry itself, not filelock's sidecar file: the size check and
    # the append must be one step on the very file other processes append to.
    if fcntl is not None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
