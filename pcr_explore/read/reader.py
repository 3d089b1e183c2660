"""Read a PCR dataset at any scan level, locally or from a remote store.

``open_dataset`` takes a local path, an ``http(s)://`` URL, or any other URL
fsspec understands (``s3://`` with ``pcr-explore[s3]``). Reading level *k* of
a record is a single range read of its header and scan groups ``1..k``;
nothing past group *k* is fetched. Every byte read is counted in
:attr:`PCRDataset.stats`, with the seconds a pass spent waiting for bytes
and decoding at each level.

With ``cache_dir``, the prefixes read are kept on local disk
(:mod:`pcr_explore.storage.cache`): raising the level later fetches only the missing
scan groups of each record, lowering it reads nothing from the store. Remote
reads are retried and time out as :mod:`pcr_explore.storage.remote` describes.
"""

from __future__ import annotations

import contextvars
import os
import posixpath
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, cast

import numpy as np

from .._checks import check_scan
from .._public import public
from ..errors import CacheTooSmallWarning, CorruptRecordError
from ..jpeg import Size
from ..jpeg._orient import decode_upright
from ..jpeg.scan_script import ScanScript
from ..records.format import RecordHeader, parse_header
from ..records.manifest import Manifest, RecordEntry, check_header
from ..records.prefix import RecordPrefix, parse_prefix
from ..records.summary import DatasetSummary
from ..storage._store import Store
from ..storage._units import parse_bytes
from ..storage.cache import PrefixCache
from ..storage.remote import DEFAULT_DEADLINE, DEFAULT_RETRIES, DEFAULT_TIMEOUT, RetryPolicy
from . import pipeline
from ._fetch import (
    ReadStats,
    RecordFetcher,
    credentials_to_header,
    is_local,
    load_manifest,
    open_store,
)
from ._headers import HeaderCache
from ._stats import StageClock
from .pipeline import ErrorChoice, OnError, RecordSpan

__all__ = ["ReadStats", "PCRDataset", "open_dataset"]


#: Requests one span read sends at once (its scan groups' ranges that are not adjacent).
REQUEST_THREADS = 8


@public("pcr_explore")
class PCRDataset:
    """A dataset of Progressive Compressed Records opened for reading.

    Use :func:`open_dataset` to make one.
    """

    def __init__(
        self,
        fs: Store,
        root: str,
        manifest: Manifest,
        url: str,
        *,
        cache: PrefixCache | None = None,
        read_ahead: int = 0,
        options: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(read_ahead, bool) or int(read_ahead) < 0:
            raise ValueError(f"read_ahead must be a number of bytes >= 0, got {read_ahead!r}")
        self.read_ahead = int(read_ahead)
        # how it was opened (open_dataset's keywords): what DataLoader workers reopen it with
        self.options: dict[str, Any] = dict(options or {})
        self._fs = fs
        self._root = root
        self.url = url
        self.manifest = manifest
        self.num_scans: int = manifest.num_scans
        # the scans every image is stored in; version 1 manifests: the standard script
        self.scan_script: ScanScript = manifest.scan_script
        self.classes: list[str] = list(manifest.classes)
        self.records: tuple[RecordEntry, ...] = manifest.records
        counts = np.array([r.images for r in self.records], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(counts)])
        self._cum = np.array([r.bytes_per_scan for r in self.records], dtype=np.int64).reshape(
            len(self.records), self.num_scans
        )
        self._headers = HeaderCache()
        self._labels: np.ndarray | None = None
        self._prefix: tuple[int, RecordPrefix] | None = None
        self.stats = ReadStats()
        self._fetch = RecordFetcher(fs, root, self.records, self.stats, cache)
        self._warned_fit: set[int] = set()
        self._requests: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_requests"] = None  # threads do not travel; the copy starts its own
        return state

    # -- metadata --------------------------------------------------------
    def __len__(self) -> int:
        return int(self._starts[-1])

    def __repr__(self) -> str:
        return (
            f"<PCRDataset {self.url!r}: {len(self)} images, {len(self.records)} records, "
            f"{self.num_scans} scans, {len(self.classes)} classes>"
        )

    @property
    def source_bytes(self) -> int:
        """Bytes of the source files the dataset was encoded from."""
        return self.manifest.source_bytes

    @property
    def total_bytes(self) -> int:
        """Bytes of all record files."""
        return self.bytes_at(None)

    def bytes_at(self, scan: int | None) -> int:
        """Bytes a full read at level *scan* transfers (record headers included)."""
        k = self._check_scan(scan)
        return int(self._cum[:, k - 1].sum())

    def level_that_fits(self, nbytes: int | str) -> int | None:
        """The highest scan level whose prefixes of every record fit in *nbytes*.

        What a prefix cache (``cache_max_bytes``) or a local disk of that
        size can hold of this dataset for good: reading at that level or
        lower fetches each byte once, however many passes follow.

        Parameters
        ----------
        nbytes : int or str
            A size in bytes, or with a unit ("20GB").

        Returns
        -------
        int or None
            A level in ``1..num_scans``, or None when even level 1 does not fit.

        Examples
        --------
        >>> ds = open_dataset("photos.pcr")
        >>> five = ds.bytes_at(5)
        >>> ds.level_that_fits(five), ds.level_that_fits(five - 1)
        (5, 4)
        """
        limit = int(parse_bytes(nbytes))
        fits = [k for k, b in enumerate(self.bytes_per_scan(), start=1) if b <= limit]
        return fits[-1] if fits else None

    def summary(self) -> DatasetSummary:
        """Images, records, classes and bytes per scan level, from the manifest.

        Returns
        -------
        DatasetSummary
            Prints as a table; ``.to_dict()`` is ``pcr-explore inspect --json``.

        Examples
        --------
        >>> open_dataset("photos.pcr").summary().scans
        10
        """
        return DatasetSummary.from_manifest(self.manifest, self.url)

    def bytes_per_scan(self) -> list[int]:
        """``bytes_at(k)`` for k = 1..num_scans."""
        return [int(v) for v in self._cum.sum(axis=0)]

    def _check_scan(self, scan: int | None) -> int:
        """*scan* checked (None: full quality), as every scan level is checked."""
        return check_scan(scan, self.num_scans, where=self.url, full=True)

    @property
    def cache(self) -> PrefixCache | None:
        """The local prefix cache (None: every read goes to the store)."""
        return self._fetch.cache

    def header(self, r: int) -> RecordHeader:
        """The parsed header of record *r* (read once, then cached)."""
        h = self._headers.get(r)
        if h is None:
            n = self.records[r].header_bytes
            h = self._checked_read(r, n, None)[0]
        return h

    def _checked_read(
        self, r: int, end: int, scan: int | None, verify: bool = True
    ) -> tuple[RecordHeader, RecordPrefix | None]:
        """Record *r*'s header and (with *scan*) its first groups, from *end* bytes read.

        Bytes from the prefix cache are always checked; if they fail, they are
        dropped and fetched again from the store, once.
        """
        with self._fetch.filling(r, end):  # one process fetches what others then read cached
            buf, have = self._fetch.prefix(r, end)
            try:
                header, prefix = self._parse(r, buf, scan, verify or self.cache is not None)
            except CorruptRecordError:
                if not have:
                    raise
                self._fetch.forget(r)
                buf, have = self._fetch.prefix(r, end)
                header, prefix = self._parse(r, buf, scan, True)
            self._headers.put(r, header, self.records[r].header_bytes)
            self._fetch.commit(r, buf, have)
        return header, prefix

    def _parse(
        self, r: int, buf: bytes, scan: int | None, verify: bool
    ) -> tuple[RecordHeader, RecordPrefix | None]:
        header, path = self._headers.get(r), self._fetch.path(r)
        if header is None:
            header = parse_header(buf, path, expected_len=self.records[r].header_bytes)
            check_header(self.records[r], header, path, self.classes, self.scan_script)
        if scan is None:
            return header, None
        return header, parse_prefix(buf, path, scan, header, verify=verify)

    @property
    def names(self) -> list[str]:
        """Source path (relative) of every image, in dataset order."""
        return [n for r in range(len(self.records)) for n in self.header(r).names]

    @property
    def labels(self) -> np.ndarray:
        """Integer label of every image (-1: none), in dataset order."""
        if self._labels is None:  # kept: 4 bytes an image, where the headers are not all kept
            parts = [self.header(r).labels for r in range(len(self.records))]
            self._labels = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        return self._labels.copy()

    def orientation(self, i: int) -> int:
        """EXIF orientation (1-8) image *i* is stored with; ``image``/``iter`` turn it upright."""
        r, j = self.locate(i)
        return int(self.header(r).orientations[j])

    def locate(self, i: int) -> tuple[int, int]:
        """(record, index within record) of image *i*."""
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"image index must be an int, got {i!r}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"image index {i} out of range for {n} images")
        r = int(np.searchsorted(self._starts, i, side="right")) - 1
        return r, int(i - self._starts[r])

    # -- reading ---------------------------------------------------------
    def read_record(self, r: int, scan: int | None = None, *, verify: bool = True) -> RecordPrefix:
        """Read record *r*'s header and scan groups 1..*scan* in one request (or none, cached)."""
        k = self._check_scan(scan)
        if not 0 <= r < len(self.records):
            raise IndexError(f"record {r} out of range for {len(self.records)} records")
        if self._prefix is not None and self._prefix[0] == r and self._prefix[1].scan == k:
            return self._prefix[1]
        prefix = self._read_prefix(r, k, verify)
        self._prefix = (r, prefix)
        return prefix

    def _read_prefix(self, r: int, k: int, verify: bool = True) -> RecordPrefix:
        """Record *r*'s prefix at level *k*; safe to call from several threads at once."""
        return cast(RecordPrefix, self._checked_read(r, int(self._cum[r, k - 1]), k, verify)[1])

    def _span_bytes(self, span: tuple[int, int, int], k: int) -> int:
        """About the bytes images *start*..*stop* of a record take at level *k* (for read-ahead)."""
        r, start, stop = span
        whole = int(self._cum[r, k - 1])
        n = self.records[r].images
        return whole if self.cache is not None else max(1, whole * (stop - start) // max(n, 1))

    def read_span(
        self, r: int, start: int, stop: int, scan: int | None = None
    ) -> RecordPrefix | RecordSpan:
        """Images *start*..*stop*-1 of record *r* at level *scan*, reading only what they need.

        The whole record is one prefix read (:meth:`read_record`). With a
        cache, a part of a record is taken from the record's prefix in the
        cache, so the store serves each record's prefix once however many
        spans it is cut into. Without one, a part is the record's header
        (read once per handle) and one range per scan group ``1..scan``
        (group *g* holds piece *g* of every image in order), each image
        checked against its pieces' CRC-32s: the spans of a record together
        read its prefix once, in ``scan`` requests each.

        Returns
        -------
        RecordPrefix or RecordSpan
            Hand it to :func:`~pcr_explore.read.pipeline.split` with
            ``images=range(start, stop)``.

        Raises
        ------
        IndexError
            If the range is empty or not within the record.
        CorruptRecordError
            If a byte read does not match its checksum.
        """
        k = self._check_scan(scan)
        if not 0 <= r < len(self.records):
            raise IndexError(f"record {r} out of range for {len(self.records)} records")
        n = self.records[r].images
        if not 0 <= start < stop <= n:
            raise IndexError(
                f"{self._fetch.path(r)}: the image range {start}:{stop} is empty or not within its "
                f"{n} images"
            )
        if (start, stop) == (0, n) or self.cache is not None:
            return self._read_prefix(r, k)
        h = self.header(r)
        first, _ = h.piece_ranges(start, k)
        last, lens = h.piece_ranges(stop - 1, k)
        ranges = [(int(a), int(o + m)) for a, o, m in zip(first, last, lens)]
        groups = self._read_ranges(r, ranges)
        span = RecordSpan(h, k, start, stop, groups, tuple(a for a, _ in ranges))
        span.check_pieces()
        return span

    def _read_ranges(self, r: int, ranges: list[tuple[int, int]]) -> tuple[bytes, ...]:
        """Byte ranges of record *r*: adjacent ones in one request, the others concurrently.

        The requests run in this thread's context, so that the
        :class:`~pcr_explore.storage.remote.Cancel` of the pass reading (its
        read-ahead) ends them too; the read returns once every one of them
        has ended. From a server that ignores Range, all of them are one
        read from the record's first byte.
        """
        runs: list[list[int]] = []  # [start, end, first range, last range]
        for i, (a, b) in enumerate(ranges):
            if b <= a:
                continue
            if runs and runs[-1][1] == a:
                runs[-1][1], runs[-1][3] = b, i
            else:
                runs.append([a, b, i, i])
        if len(runs) > 1 and self._fetch.ignores_range:
            # each request would move every byte before its range: one from byte 0 moves them once
            lo, hi = min(run[0] for run in runs), max(run[1] for run in runs)
            runs = [[lo, hi, runs[0][2], runs[-1][3]]]
        if len(runs) > 1 and not is_local(self._fs):
            pool = self._request_pool()
            reads = [
                pool.submit(contextvars.copy_context().run, self._fetch.fetch, r, a, b)
                for a, b, *_ in runs
            ]
            wait(reads)  # none outlives this read: a cancel ends them all at once
            bufs = [f.result() for f in reads]
        else:
            bufs = [self._fetch.fetch(r, a, b) for a, b, *_ in runs]
        out = [b""] * len(ranges)
        for (base, _, i, j), buf in zip(runs, bufs):
            for g in range(i, j + 1):
                a, b = ranges[g]
                out[g] = buf[a - base : b - base] if b > a else b""
        return tuple(out)

    def _request_pool(self) -> ThreadPoolExecutor:
        """Threads for the concurrent requests of one read (made again in a forked worker)."""
        pid = os.getpid()
        if self._requests is None or self._requests[0] != pid:
            pool = ThreadPoolExecutor(REQUEST_THREADS, thread_name_prefix="pcr-request")
            self._requests = (pid, pool)
        return self._requests[1]

    def level_bytes(self, i: int) -> np.ndarray:
        """Bytes of image *i*'s JPEG at levels 1..num_scans (EOI included)."""
        r, j = self.locate(i)
        return np.cumsum(self.header(r).piece_lengths[j], dtype=np.int64) + 2

    def jpeg_bytes(self, i: int, scan: int | None = None) -> bytes:
        """Image *i* at level *scan* as JPEG bytes.

        Without a cache only the image's own pieces are read. With one, the
        cache's unit is a record prefix: the first read at a level fetches
        the groups the record's cached prefix lacks (one request), and every
        image of that record at that level or lower is then read from disk.

        Raises
        ------
        CorruptRecordError
            If a piece read does not match its checksum.
        """
        k = self._check_scan(scan)
        r, j = self.locate(i)
        held = self._prefix is not None and self._prefix[0] == r and self._prefix[1].scan >= k
        if self.cache is not None and not held:
            self.read_record(r, k)  # grows the cached prefix; the next reads use it in memory
        if self._prefix is not None and self._prefix[0] == r and self._prefix[1].scan >= k:
            prefix = self._prefix[1]
            offs, lens = prefix.header.piece_ranges(j, k)
            buf = prefix.buffer
            return prefix.header.assemble(j, [bytes(buf[o : o + n]) for o, n in zip(offs, lens)])
        h = self.header(r)
        offs, lens = h.piece_ranges(j, k)
        if self._fetch.ignores_range:  # one read from byte 0 for all the pieces
            return h.assemble(
                j, list(self._read_ranges(r, [(o, o + n) for o, n in zip(offs, lens)]))
            )
        return h.assemble(
            j, [self._fetch.fetch(r, o, o + n) if n else b"" for o, n in zip(offs, lens)]
        )

    def image(self, i: int, scan: int | None = None, *, size: Size | None = None) -> np.ndarray:
        """Image *i* decoded at level *scan*, as a uint8 array (H, W[, 3]).

        Parameters
        ----------
        i : int
            Image index in dataset order.
        scan : int, optional
            Scan level 1..num_scans (None: all scans, the full image).
        size : int or (int, int), optional
            Longer side, or exact (width, height). At half the stored size or
            less the decoder works in the DCT domain (``Image.draft``).
        """
        r, j = self.locate(i)
        o = int(self.header(r).orientations[j])  # turned upright after decoding
        return decode_upright(
            self.jpeg_bytes(i, scan), size, o, source=f"{self._fetch.path(r)}[{j}]"
        )

    def iter_jpeg(
        self,
        scan: int | None = None,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        on_error: ErrorChoice | OnError = "raise",
    ) -> Iterator[tuple[int, bytes, int]]:
        """Yield ``(index, jpeg_bytes, label)`` for every image at level *scan*.

        Records are read one at a time, each in one request; with *shuffle*
        the record order and the order within each record are shuffled.
        *scan*, *shuffle*, *seed* and *on_error* are :meth:`iter`'s. The
        seconds the pass waits for bytes are added to ``stats.stages[level]``.
        """
        self._check_scan(scan)  # at the call, not at the first image
        errors = OnError.of(on_error)
        items = ((e.index, e.data, e.label) for e in self._items(scan, shuffle, seed, errors))
        return errors.reported(items)

    def _items(
        self, scan: int | None, shuffle: bool, seed: int | None, on_error: OnError | None = None
    ) -> Iterator[pipeline.Encoded]:
        """:meth:`iter_jpeg` as the pipeline's stages: records, prefix fetch, split."""
        k = self._check_scan(scan)
        rng = np.random.default_rng(seed) if shuffle else None
        self.check_cache_fits(k)
        order = pipeline.record_order(len(self.records), rng)
        for r, prefix in self._prefixes(order, k, on_error, self.stats.clock(k)):
            yield from pipeline.split(
                prefix, first_index=int(self._starts[r]), where=self._image_name, rng=rng
            )

    def _image_name(self, i: int) -> str:
        return f"{self.url} image {i}"

    def iter(
        self,
        scan: int | None = None,
        *,
        size: Size | None = None,
        shuffle: bool = False,
        seed: int | None = None,
        mode: str | None = None,
        workers: int = 1,
        on_error: ErrorChoice | OnError = "raise",
    ) -> Iterator[tuple[np.ndarray, int]]:
        """Yield ``(image, label)`` for every image at level *scan*, in order.

        The seconds the pass waits for bytes and decodes are added to
        ``stats.stages[level]`` (:class:`ReadStats`).

        Parameters
        ----------
        scan : int, optional
            Scan level (None: full quality).
        size : int or (int, int), optional
            Output size, as for :meth:`image`.
        shuffle : bool
            Shuffle the record order and the order within each record.
        seed : int, optional
            Seed of the shuffle.
        mode : {"RGB", "L"}, optional
            Force the channel count (default: as stored).
        workers : int
            Decoding threads. libjpeg runs without Python's lock, so threads
            decode in parallel; order is kept and at most ``2 * workers``
            decoded images wait at a time. They decode with the JPEG decoder
            in force at this call (:func:`~pcr_explore.jpeg.use_decoder`).
        on_error : {"raise", "skip"}, callable or OnError
            What a corrupt record or an image that fails to decode does: stop
            the pass (default), be skipped and counted (one
            :class:`~pcr_explore.SkippedWarning` at the end), or call
            ``f(where, error)`` (see :class:`~pcr_explore.read.pipeline.OnError`).

        Raises
        ------
        ValueError
            At the call: a scan level out of range, *workers* below 1.

        Examples
        --------
        >>> ds = open_dataset("photos.pcr")
        >>> for img, label in ds.iter(3, size=224, workers=2):
        ...     pass
        """
        k = self._check_scan(scan)  # the arguments are checked at the call, not at the first image
        errors = OnError.of(on_error)
        items = self._items(scan, shuffle, seed, errors)
        # built here, so that it decodes with the decoder in force at this call
        decoded = pipeline.decode(
            items,
            size=size,
            mode=mode,
            workers=workers,
            on_error=errors,
            clock=self.stats.clock(k),
        )
        return errors.reported(decoded)

    def folder_files(self) -> list[str]:
        """Names of the files in the dataset's folder (one listing request).

        Raises
        ------
        OSError
            If the store cannot list the folder (plain HTTP servers cannot).
        """
        return sorted(
            posixpath.basename(p.rstrip("/")) for p in self._fs.ls(self._root, detail=False)
        )

    def prefetch(self, scan: int | None = None) -> ReadStats:
        """Read every record's prefix at level *scan* (into the cache, if there is one).

        Nothing is decoded. Returns what this call read: bytes from the
        store, requests, bytes the cache served, and the seconds it waited
        for them (``stages[level].waiting``).

        Examples
        --------
        >>> ds = open_dataset("photos.pcr", cache_dir="cache")  # or "https://host/photos.pcr"
        >>> ds.prefetch(1).bytes_read == ds.bytes_at(1)
        True
        >>> ds.prefetch(3).bytes_read == ds.bytes_at(3) - ds.bytes_at(1)
        True
        """
        before = self.stats + ReadStats()  # a copy
        k = self._check_scan(scan)
        self.check_cache_fits(k)
        for _ in self._prefixes(range(len(self.records)), k, clock=self.stats.clock(k)):
            pass
        return self.stats - before

    def verify(self) -> int:
        """Read every record in full and check every group and piece checksum; returns images."""
        total = 0
        for _, prefix in self._prefixes(range(len(self.records)), self.num_scans):
            prefix.check_pieces()
            total += prefix.header.num_images
        return total

    def _prefixes(
        self,
        records: Iterable[int],
        k: int,
        on_error: OnError | None = None,
        clock: StageClock | None = None,
    ) -> Iterator[tuple[int, RecordPrefix]]:
        """``(record, prefix)`` at level *k* in order, the next ones read ahead."""
        return pipeline.fetch(
            lambda r: self._read_prefix(r, k),
            records,
            on_error=on_error or OnError(),
            where=lambda r: f"{self.url} record {r}",
            cost=lambda r: int(self._cum[r, k - 1]),
            read_ahead=self.read_ahead,
            clock=clock,
        )

    def check_cache_fits(self, scan: int | None) -> int | None:
        """Warn once per level if the bounded cache cannot hold every record at level *scan*.

        Returns
        -------
        int or None
            Bytes each pass at that level fetches again at least (None: it
            fits, or there is no bounded cache).

        Warns
        -----
        CacheTooSmallWarning
            Once per level and handle, saying those bytes and the highest
            level that fits.
        """
        k = self._check_scan(scan)
        cache = self.cache
        if cache is None or cache.max_bytes is None:
            return None
        need = self.bytes_at(k)
        if need <= cache.max_bytes:
            return None
        if k not in self._warned_fit:
            self._warned_fit.add(k)
            fit = self.level_that_fits(cache.max_bytes)
            better = (
                f"level {fit} and below fit ({self.bytes_at(fit):,} bytes) and are fetched once"
                if fit is not None
                else "not even level 1 fits"
            )
            warnings.warn(
                f"{self.url}: the cache holds {cache.max_bytes:,} bytes, level {k} of every record "
                f"takes {need:,}: each pass at level {k} fetches at least "
                f"{need - cache.max_bytes:,} bytes again; {better}",
                CacheTooSmallWarning,
                stacklevel=3,
            )
        return need - cache.max_bytes


@public("pcr_explore")
def open_dataset(
    path: str,
    *,
    store: Store | None = None,
    storage_options: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_max_bytes: int | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    deadline: float | None = DEFAULT_DEADLINE,
    read_ahead: int | str | None = None,
) -> PCRDataset:
    """Open a PCR dataset directory (local path or URL).

    Parameters
    ----------
    path : str
        Directory holding ``manifest.json`` and the record files: a local
        path, ``http(s)://...`` (a user name and password in it are sent as
        a Basic ``Authorization`` header and kept out of the dataset's
        ``url``, its messages and the cache), ``s3://bucket/prefix`` (``pcr-explore[s3]``)
        or another fsspec URL; with *store*, the folder's path in that store.
    store : pcr_explore.storage.Store, optional
        Read through this store instead of one opened for *path*: any
        object with the five methods of :class:`~pcr_explore.storage.Store`
        (an fsspec file system, or a class of your own; docs/API.md, "Your
        own store"). It is used as it is: *storage_options*, *timeout*,
        *retries* and *deadline* are for the stores opened for a path.
    storage_options : dict, optional
        Passed to fsspec for remote URLs (for ``s3://``: ``key``, ``secret``,
        ``client_kwargs={"endpoint_url": ...}``); for ``http(s)://`` only
        ``headers``.
    cache_dir : path, optional
        Keep the record prefixes read under this folder and fetch only what
        a higher level adds (see :mod:`pcr_explore.storage.cache`). From a
        server that ignores Range requests, what a higher level adds is read
        from each record's first byte (and a level without a cache moves
        about its own bytes too: a read takes the first bytes of the whole
        file and closes the connection).
    cache_max_bytes : int or str, optional
        Hold the cache folder (every dataset in it) to this size ("2GB" or
        bytes), never more than one record over. When it fills, the least
        recently used records lose the scan groups above the level being
        read before any record is evicted whole, so a lower-level pass after
        a higher one keeps every record. Where the level being read does not
        fit, the cache keeps a fixed part of the dataset and streams the
        rest, so each shuffled pass fetches again only about what cannot
        fit. A read whose level does not fit warns once
        (:class:`~pcr_explore.CacheTooSmallWarning`);
        :meth:`PCRDataset.level_that_fits` says which level does. Needs
        *cache_dir*.
    timeout : float
        Seconds a remote request may go without an answer before it counts
        as failed.
    retries : int
        Retries of a remote request after a 5xx, a dropped connection or a
        timeout (waiting 0.2 s, then 0.4 s, ...) before a
        :class:`~pcr_explore.errors.RemoteReadError`.
    deadline : float or None
        Seconds one remote read may take in all, from its first request to
        its last byte, retries and the waits before them included (None: no
        limit): a server trickling a byte now and then cannot hold a read for
        hours, and a retry whose wait would end past the deadline is not
        made; the read fails at once. For fsspec backends no retry starts
        past it, and each attempt is cut off at it only where the backend is
        asynchronous.
    read_ahead : int or str, optional
        Bytes of the next records (or image ranges) a read keeps in flight
        while the current one is decoded ("64MB" or bytes; 0: one read at a
        time). Default: 32 MiB for a URL, 0 for a local path (the kernel
        reads local files ahead itself, and the threads would only cost).
        ``iter``, ``iter_jpeg``, ``prefetch``, ``verify`` and the PyTorch
        adapter's workers read ahead, so a slow link stays busy while the
        CPU decodes; memory holds at most this much beyond the record being
        decoded (one record, if larger).

    Returns
    -------
    PCRDataset

    Raises
    ------
    FileNotFoundError
        If *path* does not exist (``"<path>: no such file or folder"``, as
        every entry point says it).
    DatasetError
        If the folder holds no manifest, or a malformed one.
    RemoteReadError
        If the manifest cannot be fetched.
    TypeError
        If *store* lacks a method of a store.
    ValueError
        If *store* comes with *storage_options*.

    Examples
    --------
    >>> ds = open_dataset("photos.pcr")
    >>> ds
    <PCRDataset 'photos.pcr': 14 images, 5 records, 10 scans, 3 classes>
    >>> round(ds.bytes_at(1) / ds.bytes_at(None), 2)
    0.08

    A remote dataset, its prefixes kept on disk (needs the server: not run here):

    >>> ds = open_dataset("https://host/photos.pcr", cache_dir="~/.cache/pcr")  # doctest: +SKIP
    """
    url, storage_options = credentials_to_header(str(path), storage_options)
    max_bytes = None if cache_max_bytes is None else int(parse_bytes(cache_max_bytes))
    if max_bytes is not None and cache_dir is None:
        raise ValueError(f"{url}: cache_max_bytes needs a cache_dir")
    policy = RetryPolicy(retries=retries, timeout=timeout, deadline=deadline)
    fs, root = open_store(url, storage_options, policy, store=store)
    manifest, raw = load_manifest(fs, root, url)
    cache = None
    if cache_dir is not None:
        folder = os.path.expanduser(os.fspath(cache_dir))
        cache = PrefixCache(folder, url.rstrip("/"), raw, manifest.records, max_bytes)
    options = {
        "store": store,
        "storage_options": storage_options,
        "cache_dir": cache_dir,
        "cache_max_bytes": cache_max_bytes,
        "timeout": timeout,
        "retries": retries,
        "deadline": deadline,
        "read_ahead": read_ahead,
    }
    if read_ahead is None:
        ahead = 0 if is_local(fs) else pipeline.DEFAULT_READ_AHEAD
    else:
        ahead = 0 if read_ahead in (0, "0") else int(parse_bytes(read_ahead))
    ds = PCRDataset(fs, root, manifest, url, cache=cache, read_ahead=ahead, options=options)
    ds.stats.metadata_bytes += len(raw)
    return ds
