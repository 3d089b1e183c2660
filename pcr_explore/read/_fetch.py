"""Where a dataset's bytes come from: the store, the prefix cache, and what they cost.

:func:`open_store` picks the store for a URL (HTTP(S) through
:class:`~pcr_explore.storage.remote.HTTPStore`, other remote URLs through fsspec
wrapped in :class:`~pcr_explore.storage.remote.FsspecStore`, local paths through
fsspec's local file system), or takes the caller's own
:class:`~pcr_explore.storage.Store`. :class:`RecordFetcher` reads byte ranges of
records from it, counting every byte in :class:`ReadStats`; with a
:class:`~pcr_explore.storage.cache.PrefixCache` it serves what the cache holds and
fetches only the missing part of a prefix, and when a server ignores Range
it downloads each record whole, once, into the cache.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from ..errors import (
    CorruptRecordError,
    DatasetError,
    MissingExtraError,
    RangeIgnoredWarning,
    RemoteReadError,
    no_such_path,
)
from ..records.manifest import MANIFEST, Manifest, RecordEntry
from ..storage._store import Store, missing_verbs
from ..storage.cache import PrefixCache, strip_credentials
from ..storage.remote import FsspecStore, HTTPStore, RetryPolicy, TooLargeError, install_hint
from ._stats import ReadStats

__all__ = [
    "FsspecStore",
    "ReadStats",
    "RecordFetcher",
    "is_local",
    "load_manifest",
    "open_store",
]


def is_local(fs: object) -> bool:
    """Whether *fs* reads the local file system (where concurrent requests gain nothing)."""
    protocol = getattr(fs, "protocol", ())
    return "file" in ((protocol,) if isinstance(protocol, str) else tuple(protocol))


def open_store(
    url: str,
    storage_options: dict[str, Any] | None,
    policy: RetryPolicy,
    *,
    store: Store | None = None,
) -> tuple[Store, str]:
    """The store that serves *url*, and the dataset folder's path in it.

    With *store*, that store, used as it is (its own retries, if any: *policy*
    is for the stores made here), and *url* is the folder's path in it.

    Raises
    ------
    MissingExtraError
        If the URL's scheme needs a package that is not installed.
    ValueError
        If *storage_options* has keys an HTTP store does not take, or comes
        with *store*.
    TypeError
        If *store* lacks a method of :class:`~pcr_explore.storage.Store`.
    """
    if store is not None:
        return _own_store(url, storage_options, store), url.rstrip("/") or url
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    opts = dict(storage_options or {})
    if scheme in ("http", "https"):
        headers = opts.pop("headers", None)
        if opts:
            raise ValueError(
                f"{url}: storage_options for http(s) take only 'headers', got {sorted(opts)}"
            )
        return HTTPStore(policy, headers), url.rstrip("/")
    if scheme in ("s3", "s3a"):
        # botocore's defaults wait 60 s to connect and 60 s per read; and it
        # retries on its own, which our retries would multiply: one attempt each.
        config = dict(opts.get("config_kwargs") or {})
        config.setdefault("connect_timeout", policy.timeout)
        config.setdefault("read_timeout", policy.timeout)
        config.setdefault("retries", {"max_attempts": 1, "mode": "standard"})
        opts["config_kwargs"] = config
    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(url, **opts)
    except ImportError as exc:
        how = install_hint(scheme)
        raise MissingExtraError(f"{url}: reading {scheme}:// URLs needs {exc.name}: {how}") from exc
    root = root.rstrip("/") or root
    if scheme in ("", "file", "local"):
        return fs, root
    return FsspecStore(fs, policy), root


def _own_store(url: str, storage_options: dict[str, Any] | None, store: object) -> Store:
    """*store* if it has every method of a store (checked here: a caller may be untyped)."""
    missing = missing_verbs(store)
    if missing or not isinstance(store, Store):
        raise TypeError(
            f"{url}: store must have the methods of pcr_explore.storage.Store; "
            f"{type(store).__name__} lacks {', '.join(missing)}"
        )
    if storage_options:
        raise ValueError(
            f"{url}: storage_options configure the store opened from a URL; "
            "a store given as store= is used as it is"
        )
    return store


class RecordFetcher:
    """Byte ranges of a dataset's records, from the store or the prefix cache.

    Parameters
    ----------
    fs : Store
        Where the records are (``cat_file`` and ``info`` are used).
    root : str
        The dataset folder's path in *fs*.
    records : sequence of RecordEntry
        The manifest's record entries.
    stats : ReadStats
        Counters to update.
    cache : PrefixCache, optional
        Where prefixes are kept between reads.
    """

    def __init__(
        self,
        fs: Store,
        root: str,
        records: Sequence[RecordEntry],
        stats: ReadStats,
        cache: PrefixCache | None = None,
    ) -> None:
        self.fs = fs
        self.root = root
        self.records = records
        self.stats = stats
        self.cache = cache
        self._checked: set[int] = set()
        self._warned = False
        self._count = threading.Lock()  # reads run in several threads (read-ahead)
        self._first = threading.Lock()  # one request at a time until Range support is known

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        del state["_count"], state["_first"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._count, self._first = threading.Lock(), threading.Lock()

    def path(self, r: int) -> str:
        """Record *r*'s path (or URL) in the store."""
        return posixpath.join(self.root, self.records[r].file)

    def _check_file(self, r: int) -> None:
        """One stat (or HEAD) per record before its first read: a regular file of the right size.

        A FIFO would block a read forever; a length that the file cannot hold
        would otherwise be allocated before the read fails.
        """
        if r in self._checked:
            return
        path = self.path(r)
        try:
            info = self.fs.info(path)
        except FileNotFoundError as exc:
            raise DatasetError(f"{path}: record file is missing") from exc
        if info.get("type") != "file":
            raise DatasetError(f"{path}: not a regular file ({info.get('type')})")
        size, want = info.get("size"), self.records[r].bytes_per_scan[-1]
        if size is not None and int(size) != want:
            how = "truncated" if int(size) < want else "has trailing bytes"
            raise CorruptRecordError(
                f"{path}: {how}: the file has {int(size):,} bytes, the manifest says {want:,}"
            )
        self._checked.add(r)

    def fetch(self, r: int, start: int | None, end: int | None) -> bytes:
        """Bytes *start*..*end* of record *r* from the store (None, None: all of it)."""
        self._check_file(r)
        path = self.path(r)
        try:
            buf = self.fs.cat_file(path, start=start, end=end)
        except FileNotFoundError as exc:
            raise DatasetError(f"{path}: record file is missing") from exc
        except RemoteReadError as exc:
            raise RemoteReadError(
                f"record {r}: {exc}",
                url=exc.url,
                start=exc.start,
                end=exc.end,
                status=exc.status,
                attempts=exc.attempts,
                range_ignored=exc.range_ignored,
            ) from exc
        with self._count:
            self.stats.bytes_read += len(buf)
            self.stats.requests += 1
        if start is not None and end is not None and len(buf) != end - start:
            raise CorruptRecordError(
                f"{path}: truncated: asked for bytes {start}..{end}, got {len(buf)}"
            )
        return bytes(buf)

    def prefix(self, r: int, end: int) -> tuple[bytes, int]:
        """The first *end* bytes of record *r*, and how many of them the cache held.

        Only the part the cache lacks is fetched, in one request. Call
        :meth:`commit` once the bytes have been checked, to keep them.
        """
        cache = self.cache
        if cache is None:
            return self.fetch(r, 0, end), 0
        have = cache.length(r)
        try:
            if have >= end:
                data = cache.read(r, end)
                self._served(end)
                return data, end
            head = cache.read(r, have) if have else b""
        except FileNotFoundError:  # another process dropped it just now: read it cold
            have, head = 0, b""
        self._served(have)
        if getattr(self.fs, "range_support", True) is None:
            # the first answer tells whether the server honours Range: until then one
            # request at a time, so that reads ahead do not all ask a server that ignores it
            with self._first:
                return self._missing(r, head, have, end)
        return self._missing(r, head, have, end)

    def _missing(self, r: int, head: bytes, have: int, end: int) -> tuple[bytes, int]:
        """Record *r*'s first *end* bytes: the cache's *head* and the rest from the store."""
        if getattr(self.fs, "range_support", None) is False:
            return self._whole(r, have, end)
        try:
            delta = self.fetch(r, have, end)
        except RemoteReadError as exc:
            if not exc.range_ignored:
                raise
            return self._whole(r, have, end)
        return head + delta, have

    def _served(self, nbytes: int) -> None:
        with self._count:
            self.stats.cache_bytes += nbytes

    def _whole(self, r: int, have: int, end: int) -> tuple[bytes, int]:
        """The server ignores Range: download record *r* once, whole, into the cache."""
        cache = self.cache
        if cache is None:  # pragma: no cover - only called with a cache
            raise RuntimeError("no cache")
        if not self._warned:
            self._warned = True
            total = sum(rec.bytes_per_scan[-1] for rec in self.records)
            warnings.warn(
                f"{strip_credentials(self.root)}: the server ignores Range requests, so every "
                f"record is downloaded whole, once, into the cache at {cache.folder} (the "
                f"whole dataset is {total:,} bytes, whatever level is read); later reads at "
                "any level come from the cache",
                RangeIgnoredWarning,
                stacklevel=4,
            )
        data = self.fetch(r, None, None)
        want = self.records[r].bytes_per_scan[-1]
        if len(data) != want:
            raise CorruptRecordError(
                f"{self.path(r)}: downloaded {len(data):,} bytes, the manifest says {want:,}"
            )
        cache.extend(r, have, data[have:])
        return data[:end], end

    def filling(self, r: int, end: int) -> contextlib.AbstractContextManager[None]:
        """Hold the cache's fill lock of record *r* while its first *end* bytes are fetched.

        Several DataLoader workers that need parts of one record at once
        then fetch its prefix from the store once: the first fills the
        cache, the others wait and read it from there
        (:meth:`~pcr_explore.storage.cache.PrefixCache.filling`). Nothing is
        locked without a cache.
        """
        if self.cache is None:
            return contextlib.nullcontext()
        return self.cache.filling(r, end)

    def commit(self, r: int, buf: bytes, have: int) -> None:
        """Keep the checked prefix *buf* in the cache (its first *have* bytes are there)."""
        if self.cache is not None and len(buf) > have:
            self.cache.extend(r, have, buf[have:])

    def forget(self, r: int) -> None:
        """Drop record *r* from the cache: its cached bytes failed a check."""
        if self.cache is not None:
            self.cache.drop(r)


def _missing_manifest(fs: Store, root: str, url: str) -> DatasetError | FileNotFoundError:
    """The most useful message for a dataset path without a readable manifest."""
    try:
        if fs.isfile(root):
            return DatasetError(
                f"{url}: is a file, not a dataset folder; give the folder that holds {MANIFEST}"
            )
        if not fs.exists(root):
            return no_such_path(url)
    except OSError:  # pragma: no cover - a store that cannot answer: keep the plain message
        pass
    return DatasetError(f"{url}: no {MANIFEST}: not a PCR dataset (or its encode did not finish)")


# A manifest of a million images in one-image records is about 400 MB; more
# than this is not a manifest but a server or a file that never ends.
MAX_MANIFEST_BYTES = 1 << 29


def _bounded_read(fs: Store, mpath: str) -> bytes:
    """The manifest's bytes, refusing what is not a regular file or is larger than the bound."""
    if isinstance(fs, HTTPStore):
        try:
            return fs.cat_file(mpath, limit=MAX_MANIFEST_BYTES)
        except TooLargeError as exc:
            raise DatasetError(
                f"{mpath}: more than {MAX_MANIFEST_BYTES:,} bytes: not a manifest"
            ) from exc
    info = fs.info(mpath)
    kind = info.get("type")
    if kind != "file":
        raise DatasetError(f"{mpath}: not a regular file ({kind or 'unknown type'})")
    size = info.get("size")
    if size is not None and int(size) > MAX_MANIFEST_BYTES:
        raise DatasetError(f"{mpath}: {int(size):,} bytes, more than a manifest can be")
    raw = bytes(fs.cat_file(mpath, start=0, end=MAX_MANIFEST_BYTES + 1))
    if len(raw) > MAX_MANIFEST_BYTES:
        raise DatasetError(f"{mpath}: more than {MAX_MANIFEST_BYTES:,} bytes: not a manifest")
    return raw


def load_manifest(fs: Store, root: str, url: str) -> tuple[Manifest, bytes]:
    """The dataset's manifest, checked field by field, and its bytes as fetched.

    Raises
    ------
    DatasetError
        If it is missing, not JSON, or malformed.
    """
    mpath = posixpath.join(root, MANIFEST)
    try:
        raw = _bounded_read(fs, mpath)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise _missing_manifest(fs, root, url) from exc
    except IsADirectoryError as exc:  # pragma: no cover - odd filesystems
        raise DatasetError(f"{mpath}: is a directory") from exc
    except OSError as exc:
        if isinstance(exc, RemoteReadError):
            raise
        why = exc.strerror or str(exc)  # a symlink loop, a permission, an I/O error
        raise DatasetError(f"{mpath}: cannot be read: {why}") from exc
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise DatasetError(f"{mpath}: not valid JSON: {why}") from exc
    return Manifest.from_json(manifest, mpath), bytes(raw)
