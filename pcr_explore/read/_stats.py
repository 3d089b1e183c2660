"""What a read cost: bytes and requests, and the seconds each stage of the pipeline took.

:class:`ReadStats` counts the bytes a dataset handle read and, per scan
level, the seconds its reads spent in three stages, so that a user sees
whether storage or the CPU sets the pace of a pass:

``waiting``
    Seconds the thread that consumes a read (the one that iterates
    ``PCRDataset.iter`` or ``iter_jpeg``, or a DataLoader worker's) was
    blocked for the bytes of a record (or image range) that were not there
    yet. With read-ahead it is the time spent waiting on a read still in
    flight; without (local paths, by default), the whole read: the request
    or file read, and the check of the bytes against their CRC-32s. The
    fetch threads' own busy time overlaps with decoding and is not counted.
``decode``
    Seconds decoding each image at the level and turning it upright at the
    size asked for (DCT-domain scaling and resize included), summed over
    the decoding threads; ``decode_cpu`` is the CPU time of the same calls
    (``time.thread_time``), so ``decode - decode_cpu`` is time a decoding
    thread was ready but not running.
``batch``
    Seconds stacking decoded images into a batch and laying it out as a
    tensor, where the package makes the batches
    (``torch_dataset(batch_size=...)``, in each worker). A ``DataLoader``
    that collates samples itself does so outside the dataset: not counted.

Each stage is timed with ``time.perf_counter`` around the one call that does
the work, once per record or image range (waiting), per image (decode) and
per batch (batch): a handful of clock reads per image. Sums are over the
threads of a process and, for the PyTorch adapter, over its DataLoader
workers (:mod:`pcr_explore.read._tally`), so with *W* workers a second of
wall time holds up to *W* seconds of each stage.
"""

from __future__ import annotations

import dataclasses
import html
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._public import public

__all__ = ["FIELDS", "ReadStats", "StageClock", "StageSeconds"]

#: The per-level sums a :class:`StageClock` keeps, in this order.
FIELDS = ("waiting", "decode", "decode_cpu", "batch", "images", "batches")
_WAITING, _DECODE, _DECODE_CPU, _BATCH, _IMAGES, _BATCHES = range(len(FIELDS))


@public("pcr_explore.read")
@dataclass(frozen=True)
class StageSeconds:
    """Seconds one scan level's reads spent in each stage, and what they made.

    The stages are defined in :class:`ReadStats`; every figure is summed
    over threads and DataLoader workers.

    Attributes
    ----------
    waiting : float
        Seconds the consuming thread waited for bytes that were not there yet.
    decode : float
        Seconds decoding and resizing images (wall time of the decode calls).
    decode_cpu : float
        CPU seconds of the same calls.
    batch : float
        Seconds stacking images into batches (batches made by the package).
    images : int
        Images decoded.
    batches : int
        Batches made.
    """

    waiting: float = 0.0
    decode: float = 0.0
    decode_cpu: float = 0.0
    batch: float = 0.0
    images: int = 0
    batches: int = 0

    def to_dict(self) -> dict[str, float | int]:
        """The figures as a plain dict (JSON-ready)."""
        return dataclasses.asdict(self)


class StageClock:
    """One level's running sums, added to by the read stages from any thread."""

    __slots__ = ("_lock", "_sums")

    def __init__(self) -> None:
        self._sums = [0.0] * len(FIELDS)
        self._lock = threading.Lock()

    def __getstate__(self) -> list[float]:
        return list(self._sums)

    def __setstate__(self, sums: list[float]) -> None:
        self._sums, self._lock = list(sums), threading.Lock()

    def waited(self, seconds: float) -> None:
        """Add *seconds* the consumer waited for bytes."""
        with self._lock:
            self._sums[_WAITING] += seconds

    def decoded(self, seconds: float, cpu: float, images: int = 1) -> None:
        """Add one decode call: its wall and CPU *seconds*, and the *images* it made."""
        with self._lock:
            self._sums[_DECODE] += seconds
            self._sums[_DECODE_CPU] += cpu
            self._sums[_IMAGES] += images

    def batched(self, seconds: float, batches: int = 1) -> None:
        """Add *seconds* spent making *batches* batches (0: more work on one already counted)."""
        with self._lock:
            self._sums[_BATCH] += seconds
            self._sums[_BATCHES] += batches

    def add(self, sums: Iterable[float]) -> None:
        """Add sums in :data:`FIELDS` order (another clock's, or a worker's)."""
        with self._lock:
            for i, v in enumerate(sums):
                self._sums[i] += float(v)

    def values(self) -> tuple[float, ...]:
        """The sums, in :data:`FIELDS` order."""
        with self._lock:
            return tuple(self._sums)

    def zero(self) -> None:
        """Set every sum back to zero."""
        with self._lock:
            self._sums = [0.0] * len(FIELDS)


def _seconds(sums: tuple[float, ...]) -> StageSeconds:
    w, d, c, b, n, k = sums
    return StageSeconds(w, d, c, b, int(round(n)), int(round(k)))


@public("pcr_explore.read")
@dataclass
class ReadStats:
    """Bytes and requests a dataset has read, and the seconds of each read stage per level.

    ``bytes_read`` and ``requests`` count what came from storage (the
    network, for a URL); ``cache_bytes`` counts what the local prefix cache
    served instead; ``metadata_bytes`` the manifest's bytes.

    :attr:`stages` maps each scan level read to a :class:`StageSeconds`:
    ``waiting``, the seconds the consuming thread (the one iterating, or a
    DataLoader worker) was blocked for bytes that had not arrived (with
    read-ahead, the wait on a read in flight; without, the whole read and
    its checksum check; never the fetch threads' overlapping busy time);
    ``decode`` (and ``decode_cpu``), decoding and resizing each image,
    summed over decoding threads; ``batch``, stacking images into the
    batches the PyTorch adapter makes (``torch_dataset(batch_size=...)``).
    ``PCRDataset.iter``, ``iter_jpeg`` and ``prefetch``, the PyTorch adapter
    and ``mix`` record them; the adapter's and the mix's ``stats`` sum them
    over DataLoader workers, as they sum the bytes. Wall time spent
    elsewhere (the training step, handing samples to the loop) is in no
    stage.

    Examples
    --------
    >>> stats = ReadStats()
    >>> stats.clock(3).decoded(0.5, 0.4)
    >>> stats.stages[3].decode, stats.stages[3].images
    (0.5, 1)
    >>> stats.reset(); stats.stages
    {}
    """

    bytes_read: int = 0
    requests: int = 0
    metadata_bytes: int = 0
    cache_bytes: int = 0

    def __post_init__(self) -> None:
        self._clocks: dict[int, StageClock] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def clock(self, level: int) -> StageClock:
        """The running sums of level *level*, which the read stages add to."""
        with self._lock:
            clock = self._clocks.get(level)
            if clock is None:
                clock = self._clocks[level] = StageClock()
            return clock

    @property
    def stages(self) -> dict[int, StageSeconds]:
        """Each level read, ascending, and the seconds of its stages (empty levels left out)."""
        with self._lock:
            clocks = sorted(self._clocks.items())
        out = {k: c.values() for k, c in clocks}
        return {k: _seconds(v) for k, v in out.items() if any(v)}

    def reset(self) -> None:
        """Set every counter and every stage's seconds back to zero."""
        self.bytes_read = self.requests = self.metadata_bytes = self.cache_bytes = 0
        with self._lock:
            clocks = list(self._clocks.values())
        for c in clocks:  # zeroed, not dropped: a pass under way keeps adding to them
            c.zero()

    def _combined(self, other: ReadStats, sign: int) -> ReadStats:
        names = [f.name for f in dataclasses.fields(self)]
        out = ReadStats(*(getattr(self, n) + sign * getattr(other, n) for n in names))
        for stats, s in ((self, 1), (other, sign)):
            for k, v in stats.stages.items():
                out.clock(k).add(s * x for x in dataclasses.astuple(v))
        return out

    def __add__(self, other: ReadStats) -> ReadStats:
        """Counts and stage seconds of both (two handles', or two workers')."""
        if not isinstance(other, ReadStats):
            return NotImplemented
        return self._combined(other, 1)

    def __sub__(self, other: ReadStats) -> ReadStats:
        """What was read after *other*, an earlier copy of these counts, was taken."""
        if not isinstance(other, ReadStats):
            return NotImplemented
        return self._combined(other, -1)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the four counters and one row per level read (``stages``)."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["stages"] = [{"level": k, **s.to_dict()} for k, s in self.stages.items()]
        return out

    def _rows(self) -> list[list[str]]:
        rows = [["level", "images", "batches", "waiting s", "decode s", "decode CPU s", "batch s"]]
        for k, s in self.stages.items():
            secs = (s.waiting, s.decode, s.decode_cpu, s.batch)
            rows.append([str(k), f"{s.images:,}", f"{s.batches:,}", *(f"{v:.3f}" for v in secs)])
        return rows

    def _heading(self) -> str:
        return (
            f"{self.bytes_read:,} bytes read in {self.requests:,} requests, "
            f"{self.cache_bytes:,} from the cache, {self.metadata_bytes:,} of metadata"
        )

    def __str__(self) -> str:
        rows = self._rows()
        if len(rows) == 1:
            return self._heading()
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in rows]
        return "\n".join([self._heading(), *lines])

    def _repr_html_(self) -> str:
        rows = self._rows()
        head = "".join(f"<th>{html.escape(v)}</th>" for v in rows[0])
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in rows[1:]
        )
        table = f"<table><tr>{head}</tr>{body}</table>" if body else ""
        return f"<p>{html.escape(self._heading())}</p>{table}"
