"""Where a dataset's bytes come from: the store, the prefix cache, and what they cost.

:func:`open_store` picks the store for a URL (HTTP(S) through
:class:`~pcr_explore.storage.remote.HTTPStore`, other remote URLs through fsspec
wrapped in :class:`~pcr_explore.storage.remote.FsspecStore`, local paths through
fsspec's local file system), or takes the caller's own
:class:`~pcr_explore.storage.Store`. :class:`RecordFetcher` reads byte ranges of
records from it, counting every byte in :class:`ReadStats`; with a
:class:`~pcr_explore.storage.cache.PrefixCache` it serves what the cache holds and
fetches only the missing part of a prefix. From a server that ignores Range
it reads each span from the record's first byte, never the whole file.
"""

from __future__ import annotations

import base64
import contextlib
import json
import posixpath
import threading
import warnings
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

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


def credentials_to_header(
    url: str, storage_options: dict[str, Any] | None
) -> tuple[str, dict[str, Any] | None]:
    """An ``http(s)://user:password@host/...`` URL as the URL alone and a Basic auth header.

    The header goes where every request of the dataset (and of its
    DataLoader workers, which reopen it with its options) sends it; the URL
    the dataset keeps, shows in messages and writes anywhere has no
    credentials. Other schemes are left as they are.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or "@" not in parts.netloc:
        return url, storage_options
    user, _, password = parts.netloc.rpartition("@")[0].partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    options = dict(storage_options or {})
    headers = dict(options.get("headers") or {})
    if not any(k.lower() == "authorization" for k in headers):  # the caller's own header wins
        headers["Authorization"] = f"Basic {token}"
    options["headers"] = headers
    return strip_credentials(url), options


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

    A server that ignores Range requests answers each read with the whole
    record file: a read of bytes 0..*end* takes the first *end* bytes of it
    and closes the connection (:class:`~pcr_explore.storage.remote.HTTPStore`),
    so a level still moves its own bytes; a read of bytes *start*..*end*
    takes bytes 0..*end* and keeps the last ones (the bytes moved are
    counted). The first read that finds such a server warns once
    (:class:`~pcr_explore.errors.RangeIgnoredWarning`).

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

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        del state["_count"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._count = threading.Lock()

    def path(self, r: int) -> str:
        """Record *r*'s path (or URL) in the store."""
        return posixpath.join(self.root, self.records[r].file)

    @property
    def ignores_range(self) -> bool:
        """Whether the store has answered a range request with a whole file."""
        return getattr(self.fs, "range_support", None) is False

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

    def fetch(self, r: int, start: int, end: int) -> bytes:
        """Bytes *start*..*end* of record *r* from the store (*end* at most the record's size).

        Raises
        ------
        CorruptRecordError
            If fewer bytes come (the file is shorter than the manifest says).
        RemoteReadError
            If the store cannot serve them.
        """
        self._check_file(r)
        size = self.records[r].bytes_per_scan[-1]
        if not 0 <= start <= end <= size:  # a read never asks past the record
            raise ValueError(f"{self.path(r)}: bytes {start}..{end} are not within {size:,}")
        if start and self.ignores_range:
            return self._from_zero(r, start, end)
        try:
            buf = self._read(r, start, end)
        except RemoteReadError as exc:
            if not (exc.range_ignored and start):
                raise
            return self._from_zero(r, start, end)
        self._check_range_support()
        return buf

    def _from_zero(self, r: int, start: int, end: int) -> bytes:
        """Bytes *start*..*end* of record *r* from a server that ignores Range: 0..*end*, cut."""
        self._check_range_support()
        return self._read(r, 0, end)[start:]

    def _read(self, r: int, start: int, end: int) -> bytes:
        """One read of bytes *start*..*end* of record *r*, counted; all of them, or an error."""
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
        if len(buf) != end - start:
            raise CorruptRecordError(
                f"{path}: truncated: asked for bytes {start}..{end}, got {len(buf)}"
            )
        return bytes(buf)

    def _check_range_support(self) -> None:
        """Warn once when the store turns out to ignore Range requests."""
        if not self.ignores_range:
            return
        with self._count:
            if self._warned:
                return
            self._warned = True
        warnings.warn(
            f"{strip_credentials(self.root)}: the server ignores Range requests and answers "
            "each read with the whole record file: a read takes the bytes it needs from its "
            "start and hangs up, so a level still moves about its own bytes, but a read that "
            "starts inside a record (one image, part of a record, the scan groups a cached "
            "prefix lacks) also moves every byte before it; a server that honours Range "
            "(nginx, Apache, npx http-server, an S3-compatible store) moves only the bytes asked "
            "for",
            RangeIgnoredWarning,
            stacklevel=2,
        )

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
        return head + self.fetch(r, have, end), have

    def _served(self, nbytes: int) -> None:
        with self._count:
            self.stats.cache_bytes += nbytes

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
