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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import DatasetError
from ._atomic import atomic_write

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends are not locked
    fcntl = None  # type: ignore[assignment]

__all__ = ["PrefixCache", "cache_folder"]


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
        The manifest's record entries.

    Attributes
    ----------
    folder : Path
        This dataset's folder in the cache.
    stale_dropped : int
        Cached files deleted on opening because the dataset changed.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike[str],
        url: str,
        manifest_raw: bytes,
        records: Sequence[_Entry],
    ) -> None:
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

    def drop(self, r: int) -> None:
        """Forget record *r* (its cached bytes failed a check)."""
        self.path(r).unlink(missing_ok=True)


def _lock(f: Any) -> None:
    """An exclusive lock on an open cache file, released when it is closed."""
    # flock on the entry itself, not filelock's sidecar file: the size check and
    # the append must be one step on the very file other processes append to.
    if fcntl is not None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
