"""The staged read pipeline: records to read, prefix fetch, split into images, decode, batch.

:meth:`PCRDataset.iter <pcr_explore.read.reader.PCRDataset.iter>`,
:meth:`FolderSource.iter <pcr_explore.read.sources.FolderSource.iter>` and
the PyTorch adapter are these stages put together, each a small function
over iterators that can be tested alone:

1. :func:`record_order` and :func:`shard` (whole records) or
   :func:`image_shard` (image ranges within records, so that every worker
   has an equal share however few records there are): what to read, in
   which order, for which worker;
2. :func:`fetch`: one read per record or image range, the next ones in
   flight (up to ``read_ahead`` bytes) while the current one is consumed;
3. :func:`split`: a record prefix (or a :class:`RecordSpan`) into its
   images' JPEG bytes at the level read (:class:`Encoded`);
4. :func:`decode`: JPEG bytes to upright arrays at the size asked for, in
   threads, in order. Decoding and turning upright are one step, because the
   DCT-domain scaling must know the stored image's size, which depends on its
   orientation;
5. :func:`batch`: arrays of equal shape stacked into batches.

What a failing record or image does is the caller's choice, ``on_error``
(see :class:`OnError`): raise (the default), skip and count, or call a
function. Given a ``clock`` (a level's
:class:`~pcr_explore.read._stats.StageClock`, from ``ReadStats.clock``),
:func:`fetch`, :func:`decode` and :func:`batch` add the seconds they spend
waiting for bytes, decoding and batching to it (see
:class:`~pcr_explore.read.ReadStats`).
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from .._pool import ordered_map
from .._public import public
from ..errors import PCRError, SkippedWarning
from ..jpeg import EOI, Size
from ..jpeg._decoders import carried
from ..jpeg._orient import decode_upright
from ..records.format import RecordHeader
from ..records.prefix import RecordPrefix
from ..storage.remote import Cancel
from ._stats import StageClock

__all__ = [
    "DEFAULT_READ_AHEAD",
    "Encoded",
    "OnError",
    "RecordSpan",
    "Span",
    "batch",
    "decode",
    "fetch",
    "image_shard",
    "record_order",
    "shard",
    "split",
]

ErrorChoice = Literal["raise", "skip"] | Callable[[str, Exception], None]
_T = TypeVar("_T")
_P = TypeVar("_P")
Span = tuple[int, int, int]
"""Images ``start..stop-1`` of a record: ``(record, start, stop)``."""


@dataclass(frozen=True)
class RecordSpan:
    """Images ``start..stop-1`` of a record at level *scan*, without the rest of the record.

    Scan group *g* of a record holds piece *g* of every image, in image order,
    so the pieces of an image range are one contiguous byte range per group:
    ``groups[g]`` holds those bytes, which start at file offset ``bases[g]``.
    The spans of a record together hold its prefix once.
    """

    header: RecordHeader
    scan: int
    start: int
    stop: int
    groups: tuple[bytes, ...]
    bases: tuple[int, ...]

    def jpeg_bytes(self, i: int) -> bytes:
        """Image *i* of the record (``start <= i < stop``) at this span's level, as a JPEG file."""
        if not self.start <= i < self.stop:
            raise IndexError(f"image {i} is not in this span ({self.start}..{self.stop - 1})")
        return b"".join(self._pieces(i)) + EOI

    def _pieces(self, i: int) -> list[bytes]:
        offs, lens = self.header.piece_ranges(i, self.scan)
        return [g[o - b : o - b + n] for g, b, o, n in zip(self.groups, self.bases, offs, lens)]

    def check_pieces(self) -> None:
        """Check every image's pieces against the header's lengths and CRC-32s.

        Raises
        ------
        CorruptRecordError
            Naming the file, the image and the scan group of the first mismatch.
        """
        for i in range(self.start, self.stop):
            self.header.check_pieces(i, self._pieces(i))


@dataclass(frozen=True)
class Encoded:
    """One image between the split and the decode.

    Attributes
    ----------
    index : int
        Its index in the dataset or folder.
    data : bytes
        Its JPEG at the level read.
    label : int
        Its class (-1: none).
    orientation : int
        Its EXIF orientation (1: upright as stored).
    where : str
        Where it came from, for error messages.
    """

    index: int
    data: bytes
    label: int
    orientation: int
    where: str


@public("pcr_explore.read")
@dataclass
class OnError:
    """What a read does with a record or image that fails with a :class:`~pcr_explore.PCRError`.

    Parameters
    ----------
    choice : {"raise", "skip"} or callable
        ``"raise"``: the error stops the pass (the default). ``"skip"``: the
        record or image is left out and counted; when the pass ends, one
        :class:`~pcr_explore.SkippedWarning` says how many and why the first
        was. A callable ``f(where, error)`` is called instead; if it returns,
        the item is left out (it may raise to stop).

    Attributes
    ----------
    skipped : list of (str, str)
        Where each left-out item was, and its error.
    """

    choice: ErrorChoice = "raise"
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not callable(self.choice) and self.choice not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise', 'skip' or a callable, got {self.choice!r}")

    @classmethod
    def of(cls, choice: ErrorChoice | OnError) -> OnError:
        """*choice* as an OnError (an OnError is returned as is, so its count is shared)."""
        return choice if isinstance(choice, OnError) else cls(choice)

    def handle(self, where: str, exc: PCRError) -> None:
        """Raise *exc*, or record that the item at *where* is left out."""
        if self.choice == "raise":
            raise exc
        if callable(self.choice):
            self.choice(where, exc)
        self.skipped.append((where, str(exc)))

    def report(self) -> None:
        """Warn once about what ``"skip"`` left out, if anything."""
        if self.choice == "skip" and self.skipped:
            where, why = self.skipped[0]
            warnings.warn(
                f"{len(self.skipped)} unreadable item(s) skipped; the first: {why}",
                SkippedWarning,
                stacklevel=3,
            )

    def reported(self, items: Iterable[_T]) -> Iterator[_T]:
        """*items*, then :meth:`report` once the last has been taken."""
        yield from items
        self.report()


def record_order(num_records: int, rng: np.random.Generator | None = None) -> list[int]:
    """Records in reading order: as stored, or permuted by *rng*.

    Examples
    --------
    >>> record_order(4), record_order(4, np.random.default_rng(0))
    ([0, 1, 2, 3], [2, 0, 1, 3])
    """
    order = range(num_records) if rng is None else rng.permutation(num_records)
    return [int(r) for r in order]


def shard(order: list[int], index: int, count: int) -> list[int]:
    """The records shard *index* of *count* reads: every *count*-th, so shards never overlap.

    Examples
    --------
    >>> shard([5, 1, 4, 0, 3, 2], 1, 2)
    [1, 0, 2]
    """
    if not 0 <= index < count:
        raise ValueError(f"shard {index} out of range for {count} shards")
    return order[index::count]


def image_shard(counts: Sequence[int], order: list[int], index: int, count: int) -> list[Span]:
    """The image ranges shard *index* of *count* reads: an equal slice of the images.

    The records' images, taken in *order*, are cut into *count* consecutive
    slices whose sizes differ by at most one; a slice is one range of images
    in each record it touches. So every shard is busy whatever the number
    of records, shards never overlap, and together they cover every image.

    Examples
    --------
    >>> [image_shard([4, 4], [1, 0], s, 3) for s in range(3)]
    [[(1, 0, 2)], [(1, 2, 4), (0, 0, 1)], [(0, 1, 4)]]
    """
    if not 0 <= index < count:
        raise ValueError(f"shard {index} out of range for {count} shards")
    total = int(sum(counts))
    lo, hi = index * total // count, (index + 1) * total // count
    out: list[Span] = []
    pos = 0
    for r in order:
        n = int(counts[r])
        a, b = max(lo, pos), min(hi, pos + n)
        if a < b:
            out.append((int(r), a - pos, b - pos))
        pos += n
        if pos >= hi:
            break
    return out


#: Bytes a read keeps in flight ahead of the record being decoded (``read_ahead``).
DEFAULT_READ_AHEAD = 32 << 20
#: Reads in flight at once at most, whatever their size.
READ_AHEAD_THREADS = 8


def fetch(
    read: Callable[[_T], _P],
    records: Iterable[_T],
    *,
    on_error: OnError,
    where: Callable[[_T], str],
    release: Callable[[], None] | None = None,
    cost: Callable[[_T], int] | None = None,
    read_ahead: int = 0,
    clock: StageClock | None = None,
) -> Iterator[tuple[_T, _P]]:
    """Read each record's prefix (or each span) with *read*, in the order given.

    With *read_ahead* bytes and a *cost* (the bytes a read will fetch), the
    next reads run in threads while the consumer works on the current one:
    reads done and not yet taken, and reads in flight, together up to
    *read_ahead* bytes (always at least the next one). So that the read the
    consumer needs next is not slowed by the others sharing the link, at
    most a sixteenth of *read_ahead* (2 MiB by default, or one read) is in
    flight at a time, in order, and at most :data:`READ_AHEAD_THREADS` reads; a read that ends
    starts the next one at once, even while the consumer is busy. What is
    held is then the record being consumed plus at most *read_ahead* bytes
    (or one record, if a record is larger). Results come in order, and an
    error is handled at its record's place. When the pass stops early (the
    iterator closed, ``break``, an error, ``KeyboardInterrupt``), reads not
    begun are dropped and HTTP reads in flight are ended at once (see
    :class:`~pcr_explore.storage.remote.Cancel`), so that it returns without
    waiting for their bytes and leaves no read-ahead thread behind. Without
    them, one read at a time; *release* is called once the consumer is done
    with a record, so that at most one record is held.

    With a *clock*, the seconds the consumer waits for a read that has not
    ended (without read-ahead: each whole read) are added to its
    ``waiting``.
    """
    if read_ahead <= 0 or cost is None:
        yield from _fetch_one_by_one(read, records, on_error, where, release, clock)
        return
    yield from _ReadAhead(read, records, cost, read_ahead).run(on_error, where, clock)


class _ReadAhead:
    """The reads of :func:`fetch` with read-ahead: submitted from the consumer and on completion."""

    def __init__(
        self,
        read: Callable[[_T], _P],
        records: Iterable[_T],
        cost: Callable[[_T], int],
        read_ahead: int,
    ) -> None:
        self.read, self.cost, self.budget = read, cost, read_ahead
        # bytes in flight at most (or one read): enough to hide a request's latency, small
        # enough that the read needed next gets most of the link
        self.window = max(1, read_ahead // 16)
        self.todo = iter(records)
        self.next: Any = next(self.todo, _END)
        self.pending: deque[tuple[Any, int, Future[Any]]] = deque()
        self.queued = 0  # bytes of the reads in flight or done and not yet handed out
        self.closed = False
        self.stop = Cancel()  # ends the HTTP reads in flight when the pass stops
        # re-entrant: a read that is already done calls its callback in the submitting thread
        self.lock = threading.RLock()

    def top_up(self, _: object = None) -> None:
        """Start the next reads that fit (called by the consumer and by each read that ends)."""
        with self.lock:
            while not self.closed and self.next is not _END:
                need = int(self.cost(self.next))
                flying = [n for _, n, f in self.pending if not f.done()]
                if self.pending and self.queued + need > self.budget:
                    return
                if flying and (
                    len(flying) >= READ_AHEAD_THREADS or sum(flying) + need > self.window
                ):
                    return
                item = self.next
                done = self.pool.submit(self.stop.run, self.read, item)
                self.pending.append((item, need, done))
                self.queued += need
                self.next = next(self.todo, _END)
                done.add_done_callback(self.top_up)

    def run(
        self, on_error: OnError, where: Callable[[Any], str], clock: StageClock | None
    ) -> Iterator[tuple[Any, Any]]:
        with ThreadPoolExecutor(READ_AHEAD_THREADS, thread_name_prefix="pcr-read-ahead") as pool:
            self.pool = pool
            try:
                self.top_up()
                while True:
                    with self.lock:
                        if not self.pending:
                            return
                        r, need, done = self.pending[0]
                    prefix, failed = _waited(done.result, clock)
                    with self.lock:
                        self.pending.popleft()
                        self.queued -= need
                    self.top_up()  # before handing it out: the link stays busy while it decodes
                    if failed is not None:
                        on_error.handle(where(r), failed)
                        continue
                    yield r, prefix
                    del prefix
            finally:  # the consumer stopped early, or an error stops the pass
                with self.lock:
                    self.closed = True
                    for *_, f in self.pending:
                        f.cancel()
                # the reads in flight end now, not when their bytes come: the pool's
                # threads are joined as the block ends
                self.stop.cancel()


_END = object()


def _waited(get: Callable[[], _P], clock: StageClock | None) -> tuple[Any, PCRError | None]:
    """``(get(), None)``, or ``(None, error)`` for a PCRError; the seconds it took go to *clock*."""
    start = time.perf_counter() if clock is not None else 0.0
    try:
        return get(), None
    except PCRError as exc:
        return None, exc
    finally:
        if clock is not None:
            clock.waited(time.perf_counter() - start)


def _fetch_one_by_one(
    read: Callable[[_T], _P],
    records: Iterable[_T],
    on_error: OnError,
    where: Callable[[_T], str],
    release: Callable[[], None] | None,
    clock: StageClock | None,
) -> Iterator[tuple[_T, _P]]:
    for r in records:
        prefix, failed = _waited(functools.partial(read, r), clock)
        if failed is not None:
            on_error.handle(where(r), failed)
            continue
        yield r, prefix
        if release is not None:
            release()


def split(
    prefix: RecordPrefix | RecordSpan,
    *,
    first_index: int,
    where: Callable[[int], str],
    rng: np.random.Generator | None = None,
    images: range | None = None,
) -> Iterator[Encoded]:
    """The images of one record prefix, in stored order or permuted by *rng*.

    *where* names an image (by its dataset index) for error messages.
    *images* are the record's images to give (default: a span's own, or all
    of a prefix); *rng* permutes them.
    """
    header = prefix.header
    if images is None:
        whole = range(header.num_images)
        images = range(prefix.start, prefix.stop) if isinstance(prefix, RecordSpan) else whole
    n = len(images)
    for p in range(n) if rng is None else rng.permutation(n):
        j = images[int(p)]
        yield Encoded(
            index=first_index + j,
            data=prefix.jpeg_bytes(j),
            label=int(header.labels[j]),
            orientation=int(header.orientations[j]),
            where=where(first_index + j),
        )


def decode(
    items: Iterable[Encoded],
    *,
    size: Size | None = None,
    mode: str | None = None,
    workers: int = 1,
    on_error: OnError | None = None,
    decoder: str | None = None,
    clock: StageClock | None = None,
) -> Iterator[tuple[np.ndarray, int]]:
    """Decode each image upright at *size*; ``(array, label)`` in the order given.

    Parameters
    ----------
    items : iterable of Encoded
        What :func:`split` (or a folder's transcode) gave.
    size : int or (int, int), optional
        The upright image's size (see :func:`~pcr_explore.jpeg.decode`).
    mode : {"RGB", "L"}, optional
        Force the channel count.
    workers : int
        Decoding threads (libjpeg runs without Python's lock); at most
        ``2 * workers`` decoded images wait at a time.
    on_error : OnError, optional
        What an image that fails to decode does (default: raise).
    decoder : {"pillow", "simplejpeg", "auto"}, optional
        The JPEG decoder of every image, in whichever thread decodes it;
        default: the one in force where ``decode`` is called
        (:func:`~pcr_explore.jpeg.use_decoder`), not where it is iterated.
    clock : StageClock, optional
        Where each decode call's wall and CPU seconds (``decode``,
        ``decode_cpu``) and each image made are added, from the thread
        that decodes it.

    Raises
    ------
    ValueError
        If *workers* is below 1 or *decoder* is unknown (at the call).
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    errors = on_error or OnError()

    def work(item: Encoded) -> tuple[np.ndarray, int] | None:
        timed = clock is not None
        start, cpu = (time.perf_counter(), time.thread_time()) if timed else (0.0, 0.0)
        try:
            arr = decode_upright(item.data, size, item.orientation, mode=mode, source=item.where)
        except PCRError as exc:
            if clock is not None:
                clock.decoded(time.perf_counter() - start, time.thread_time() - cpu, images=0)
            errors.handle(item.where, exc)
            return None
        if clock is not None:
            clock.decoded(time.perf_counter() - start, time.thread_time() - cpu)
        return arr, item.label

    # a pool's threads keep their own context: the choice goes with each call
    return _decoded(items, carried(work, decoder), workers)


def _decoded(
    items: Iterable[Encoded],
    work: Callable[[Encoded], tuple[np.ndarray, int] | None],
    workers: int,
) -> Iterator[tuple[np.ndarray, int]]:
    if workers == 1:
        yield from (d for d in map(work, items) if d is not None)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from (d for d in ordered_map(work, items, pool, window=2 * workers) if d is not None)


def batch(
    pairs: Iterable[tuple[np.ndarray, int]],
    size: int,
    *,
    drop_last: bool = False,
    clock: StageClock | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Stack ``(array, label)`` pairs into ``(images, labels)`` batches of *size*.

    Every array in a batch must have the same shape (decode at a fixed size).
    With a *clock*, the seconds each stack takes are added to its ``batch``
    (and each batch to ``batches``).

    Examples
    --------
    >>> pairs = [(np.full((2, 2), i, np.uint8), i) for i in range(5)]
    >>> [(x.shape, y.tolist()) for x, y in batch(pairs, 2)]
    [((2, 2, 2), [0, 1]), ((2, 2, 2), [2, 3]), ((1, 2, 2), [4])]
    """
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    images: list[np.ndarray] = []
    labels: list[int] = []
    for arr, label in pairs:
        if images and arr.shape != images[0].shape:
            raise ValueError(
                f"images of shapes {images[0].shape} and {arr.shape} cannot share a batch; "
                "decode at a fixed size"
            )
        images.append(arr)
        labels.append(label)
        if len(images) == size:
            yield _stacked(images, labels, clock)
            images, labels = [], []
    if images and not drop_last:
        yield _stacked(images, labels, clock)


def _stacked(
    images: list[np.ndarray], labels: list[int], clock: StageClock | None
) -> tuple[np.ndarray, np.ndarray]:
    """One batch: the images stacked, the labels as int64; the seconds it took go to *clock*."""
    start = time.perf_counter()
    out = np.stack(images), np.array(labels, np.int64)
    if clock is not None:
        clock.batched(time.perf_counter() - start)
    return out
