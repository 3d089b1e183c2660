"""What DataLoader workers have read, summed in shared memory.

A DataLoader worker reads through its own dataset handle, so what it counts
(:class:`~pcr_explore.read.ReadStats`: bytes, requests, the seconds of each
read stage per level) lives in its process. The PyTorch adapter gathers
those counts in a :class:`WorkerTally`: a float64 tensor in shared memory,
made where the dataset is made and pickled to the workers as a handle to
the same memory, with one row per worker. A worker adds to its row what its
handle counted since it last did so: at most every :data:`REPORT_SECONDS`
while it reads (one clock read per sample or batch), and when its pass ends.
Only that worker writes its row, so the sum of the rows is every worker's
count, and no update is lost.

Where that does not hold: worker *w* writes row ``w % ROWS``, so workers
beyond :data:`ROWS` share rows with others, as do two DataLoaders iterating
one dataset object at once, and two updates that meet may lose one; a pass
stopped early (the loop left mid-epoch, the workers shut down) may miss what
its workers counted since their last report. Distributed ranks are separate
processes with separate dataset objects: each sums its own workers.

A row is ``num_scans + 1`` slots of :data:`~pcr_explore.read._stats.FIELDS`
width: slot 0 holds ``bytes_read``, ``requests``, ``metadata_bytes`` and
``cache_bytes``; slot *k* the stage sums of level *k*.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from ._stats import FIELDS, ReadStats

__all__ = ["REPORT_SECONDS", "ROWS", "Reporter", "WorkerTally", "as_array", "from_array"]

#: Rows of a tally: one per DataLoader worker (worker *w* writes row ``w % ROWS``).
ROWS = 256
#: Seconds between a worker's reports while it reads.
REPORT_SECONDS = 0.05
_COUNTERS = ("bytes_read", "requests", "metadata_bytes", "cache_bytes")


def as_array(stats: ReadStats, num_scans: int) -> np.ndarray:
    """*stats* as one row of a tally: ``(num_scans + 1, len(FIELDS))`` float64."""
    out = np.zeros((num_scans + 1, len(FIELDS)))
    out[0, : len(_COUNTERS)] = [getattr(stats, c) for c in _COUNTERS]
    for k, s in stats.stages.items():
        out[k] = dataclasses.astuple(s)
    return out


def from_array(row: np.ndarray) -> ReadStats:
    """The :class:`ReadStats` a row (or a sum of rows) of a tally holds."""
    stats = ReadStats(*(int(round(v)) for v in row[0, : len(_COUNTERS)]))
    for k in range(1, len(row)):
        if row[k].any():
            stats.clock(k).add(row[k])
    return stats


class WorkerTally:
    """Every DataLoader worker's :class:`ReadStats`, one row each, in shared memory.

    Parameters
    ----------
    num_scans : int
        Levels of the dataset (the slots of a row).
    """

    def __init__(self, num_scans: int) -> None:
        import torch  # the adapter has imported it, with its error naming the extra

        self.num_scans = int(num_scans)
        shape = (ROWS, self.num_scans + 1, len(FIELDS))
        self.rows = torch.zeros(shape, dtype=torch.float64).share_memory_()
        self._sent: tuple[int, np.ndarray] | None = None  # (pid, what this process has added)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_sent"] = None  # what a process has sent is its own
        return state

    def _sent_here(self) -> np.ndarray:
        """What this process has added to its row so far (zero in a new process)."""
        pid = os.getpid()
        if self._sent is None or self._sent[0] != pid:
            self._sent = (pid, np.zeros((self.num_scans + 1, len(FIELDS))))
        return self._sent[1]

    def report(self, stats: ReadStats, worker: int) -> None:
        """Add to row *worker* what *stats* (that worker's handle's) counted since it last did."""
        now = as_array(stats, self.num_scans)
        sent = self._sent_here()
        self.rows.numpy()[worker % ROWS] += now - sent
        sent[...] = now

    def total(self, own: ReadStats | None = None) -> ReadStats:
        """Every row summed, and *own* (this process's handle) less what it has reported."""
        rows = self.rows.numpy().sum(axis=0)
        if own is not None:
            rows += as_array(own, self.num_scans) - self._sent_here()
        return from_array(rows)

    def reset(self, own: ReadStats | None = None) -> None:
        """Zero every row, and *own* (this process's handle) with what it has reported."""
        self.rows.zero_()
        if own is not None:
            own.reset()
            self._sent_here()[...] = 0.0


class Reporter:
    """One worker's pass: reports its handle's *stats* to *tally* now and then, and at the end."""

    def __init__(self, tally: WorkerTally, stats: ReadStats, worker: int) -> None:
        self.tally, self.stats, self.worker = tally, stats, worker
        self.due = time.perf_counter() + REPORT_SECONDS

    def tick(self) -> None:
        """Report if :data:`REPORT_SECONDS` have passed since the last report."""
        now = time.perf_counter()
        if now >= self.due:
            self.tally.report(self.stats, self.worker)
            self.due = now + REPORT_SECONDS

    def flush(self) -> None:
        """Report now (the pass has ended)."""
        self.tally.report(self.stats, self.worker)
