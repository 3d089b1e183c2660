"""How fast a PCR dataset reads at each scan level, and what a lower level saves.

:func:`measure_reading` iterates the whole dataset once per level, the way a
training loop would (``dataset.iter(scan, size=size)``), and reports the bytes
read from storage, the decode rate, and the time an I/O-bound epoch would
take at a given storage bandwidth.
"""

from __future__ import annotations

import html
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .._checks import check_scans
from .._public import public
from ..jpeg import Size
from .reader import PCRDataset

__all__ = ["LevelReading", "ReadingReport", "read_pass", "measure_reading"]


@public("pcr_explore.read")
@dataclass(frozen=True)
class LevelReading:
    """One pass over the dataset at one scan level.

    Attributes
    ----------
    scan : int
        The level read.
    images : int
        Images yielded.
    bytes_read : int
        Bytes fetched from storage (record data and headers).
    seconds : float
        Wall time of the pass: reading plus decoding (the median pass when
        the level was read several times).
    pass_seconds : tuple of float
        Wall time of each pass, when the level was read several times.
    """

    scan: int
    images: int
    bytes_read: int
    seconds: float
    pass_seconds: tuple[float, ...] = ()

    @property
    def images_per_s(self) -> float:
        """Images read and decoded per second."""
        return self.images / self.seconds if self.seconds > 0 else float("inf")


@public("pcr_explore.read")
@dataclass(frozen=True)
class ReadingReport:
    """Reading a dataset at several levels, against reading it in full.

    Attributes
    ----------
    levels : tuple of LevelReading
        One entry per level, in the order measured; the full level is last.
    bandwidth : float
        Storage bandwidth in bytes/s used for the I/O-bound estimates.
    size : int, (int, int) or None
        Decode size of the pass.
    """

    levels: tuple[LevelReading, ...]
    bandwidth: float
    size: Size | None

    @property
    def full(self) -> LevelReading:
        """The pass at full quality (the last level)."""
        return self.levels[-1]

    def fraction(self, r: LevelReading) -> float:
        """Bytes read at *r*'s level as a fraction of a full-quality pass."""
        return r.bytes_read / self.full.bytes_read

    def io_seconds(self, r: LevelReading) -> float:
        """Seconds to fetch *r*'s bytes at :attr:`bandwidth`."""
        return r.bytes_read / self.bandwidth

    def saved_seconds(self, r: LevelReading) -> float:
        """I/O seconds saved per epoch against reading at full quality."""
        return self.io_seconds(self.full) - self.io_seconds(r)

    def rows(self) -> list[dict[str, float | int]]:
        """One dict per level: the columns of the HTML table."""
        return [
            {
                "scan": r.scan,
                "images": r.images,
                "bytes read": r.bytes_read,
                "fraction of full": self.fraction(r),
                "images/s (read + decode)": r.images_per_s,
                "I/O s per epoch": self.io_seconds(r),
                "I/O s saved": self.saved_seconds(r),
                "I/O-bound speed-up": self.io_seconds(self.full) / self.io_seconds(r),
            }
            for r in self.levels
        ]

    def _repr_html_(self) -> str:
        rows = self.rows()
        head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
        fmt = {
            "bytes read": "{:,}",
            "fraction of full": "{:.1%}",
            "images/s (read + decode)": "{:,.0f}",
            "I/O s per epoch": "{:.4f}",
            "I/O s saved": "{:.4f}",
            "I/O-bound speed-up": "{:.2f}x",
        }
        body = "".join(
            "<tr>"
            + "".join(f"<td>{fmt.get(k, '{}').format(v)}</td>" for k, v in row.items())
            + "</tr>"
            for row in rows
        )
        cap = f"I/O estimates at {self.bandwidth / 1e6:,.0f} MB/s storage bandwidth"
        return f"<table><caption>{cap}</caption><tr>{head}</tr>{body}</table>"


def read_pass(
    dataset: PCRDataset,
    scan: int | None,
    size: Size | None = None,
    *,
    workers: int = 1,
    limit: int | None = None,
    progress: bool = False,
) -> LevelReading:
    """Iterate *dataset* once at level *scan*, timing it and counting bytes read.

    Parameters
    ----------
    dataset : PCRDataset
        An open PCR dataset.
    scan : int or None
        Level to read (None: full quality).
    size : int, (int, int) or None
        Decode size, as for :meth:`PCRDataset.iter`.
    workers : int
        Decoding threads.
    limit : int, optional
        Stop after this many images.
    progress : bool
        Show a progress bar (images read and decoded).

    Returns
    -------
    LevelReading
        Images, bytes read from storage and wall time of the pass.
    """
    from .._pool import progress_bar as tqdm

    level = dataset._check_scan(scan)
    total = len(dataset) if limit is None else min(limit, len(dataset))
    before = dataset.stats.bytes_read
    n = 0
    t0 = time.perf_counter()
    with tqdm(total=total, unit="img", desc=f"read scan {level}", disable=not progress) as bar:
        for _ in dataset.iter(level, size=size, workers=workers):
            n += 1
            bar.update(1)
            if limit is not None and n >= limit:
                break
    seconds = time.perf_counter() - t0
    return LevelReading(level, n, dataset.stats.bytes_read - before, seconds)


@public("pcr_explore.read")
def measure_reading(
    dataset: PCRDataset,
    *,
    scans: Sequence[int] = (1, 2, 5),
    size: Size | None = 224,
    bandwidth: float = 100e6,
    limit: int | None = None,
    workers: int = 1,
    passes: int = 1,
) -> ReadingReport:
    """Iterate *dataset* once per level and once in full; bytes and speed of each.

    Parameters
    ----------
    dataset : PCRDataset
        An open PCR dataset.
    scans : sequence of int
        Levels to measure; the full level is always measured last.
    size : int, (int, int) or None
        Decode size, as for :meth:`PCRDataset.iter`.
    bandwidth : float
        Storage bandwidth (bytes/s) for the I/O-bound estimates, e.g. 100e6
        for a busy network file system.
    limit : int, optional
        Stop each pass after this many images.
    workers : int
        Decoding threads per pass.
    passes : int
        Passes per level, taken in turns (1, 2, ..., full, 1, 2, ...) so
        that a busy moment of the machine spreads over every level; each
        level reports its median pass. A small dataset needs several for a
        stable images/s figure.

    Returns
    -------
    ReadingReport

    Raises
    ------
    ValueError
        If *bandwidth* or *passes* is not positive or a level is out of range.

    Examples
    --------
    >>> from pcr_explore import open_dataset
    >>> report = measure_reading(open_dataset("photos.pcr"), scans=[1, 5])
    >>> report.fraction(report.levels[0]) < 0.2
    True
    """
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth}")
    if passes < 1:
        raise ValueError(f"passes must be at least 1, got {passes}")
    full = dataset.num_scans
    levels = [s for s in check_scans(scans, full, where=dataset.url) if s != full]
    order = [*levels, full]
    runs: dict[int, list[LevelReading]] = {s: [] for s in order}
    for _ in range(passes):
        for s in order:
            runs[s].append(read_pass(dataset, s, size, workers=workers, limit=limit))
    out = [
        LevelReading(
            s,
            r[0].images,
            r[0].bytes_read,
            statistics.median(x.seconds for x in r),
            tuple(x.seconds for x in r) if passes > 1 else (),
        )
        for s, r in runs.items()
    ]
    return ReadingReport(tuple(out), float(bandwidth), size)
