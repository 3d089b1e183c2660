"""Slow storage, modelled honestly: reads that take as long as their bytes need.

:func:`throttled` wraps a PCR dataset's file system so that every read of *n*
bytes completes no sooner than ``n / bandwidth`` seconds after the link is
free. Reads queue on one link, as they would on a network file system or a
disk shared by the loader's threads and DataLoader worker processes, so the
time spent loading an epoch follows the bytes the level reads.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

from .._public import public
from ..read.reader import PCRDataset, open_dataset
from ..storage._units import parse_bytes

__all__ = ["ThrottledFileSystem", "parse_bandwidth", "throttled"]


@public("pcr_explore.train")
def parse_bandwidth(text: str | float | int) -> float:
    """Bytes per second from a number or a string such as ``"50MB/s"``.

    Parameters
    ----------
    text : str or float
        A positive number of bytes per second, or a string with an optional
        decimal (``k``, ``M``, ``G``) or binary (``Ki``, ``Mi``, ``Gi``) prefix
        and an optional ``B`` and ``/s``.

    Returns
    -------
    float
        Bytes per second.

    Raises
    ------
    ValueError
        If the text is not a positive bandwidth.

    Examples
    --------
    >>> parse_bandwidth("50MB/s")
    50000000.0
    >>> parse_bandwidth("1.5GiB/s") == 1.5 * 2**30
    True
    """
    return parse_bytes(text, rate=True)


class ThrottledFileSystem:
    """An fsspec file system whose reads are held to *bandwidth* bytes per second.

    Every other attribute is the wrapped file system's.

    Parameters
    ----------
    fs : fsspec.AbstractFileSystem
        The file system to wrap.
    bandwidth : float
        Bytes per second of the modelled link.
    latency : float
        Seconds added to every request (default 0).

    Attributes
    ----------
    waited : float
        Seconds this process spent sleeping so far.

    Notes
    -----
    The link is shared by the processes that inherit the file system (a
    DataLoader's workers, forked or spawned): the time it is next free and
    the bytes it carried live in shared memory, so two workers split the
    bandwidth instead of getting it each.
    """

    def __init__(self, fs: Any, bandwidth: float, latency: float = 0.0) -> None:
        self.fs = fs
        self.bandwidth = parse_bandwidth(bandwidth)
        self.latency = float(latency)
        self.waited = 0.0
        # time.monotonic is one clock for every process of the machine; a lock made
        # in the spawn context can go to forked, spawned and forkserver workers alike
        shared = multiprocessing.get_context("spawn")
        self._free_at = shared.Value("d", 0.0)
        self._carried = shared.Value("q", 0, lock=False)

    @property
    def bytes_carried(self) -> int:
        """Bytes read through the link so far, by every process sharing it."""
        return int(self._carried.value)

    def _hold(self, nbytes: int) -> None:
        """Sleep until a transfer of *nbytes* queued now would be complete."""
        with self._free_at.get_lock():
            start = max(time.monotonic(), self._free_at.value)
            done = self._free_at.value = start + self.latency + nbytes / self.bandwidth
            self._carried.value += nbytes
        delay = done - time.monotonic()
        if delay > 0:
            time.sleep(delay)
            self.waited += delay

    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        """Read bytes *start*..*end* of *path*, taking as long as the link needs.

        Parameters
        ----------
        path : str
            File path.
        start, end : int, optional
            Byte range (None: from the start, to the end).

        Returns
        -------
        bytes
        """
        data = self.fs.cat_file(path, start=start, end=end)
        self._hold(len(data))
        return bytes(data)

    def __getattr__(self, name: str) -> Any:
        if name == "fs" or name.startswith("__"):  # unpickling asks before fs is set
            raise AttributeError(name)
        return getattr(self.fs, name)


@public("pcr_explore.train")
def throttled(
    dataset: PCRDataset | str, *, bandwidth: float | str, latency: float = 0.0
) -> PCRDataset:
    """A new handle on *dataset* whose record reads run at *bandwidth*.

    Parameters
    ----------
    dataset : PCRDataset or str
        An open dataset or its path/URL.
    bandwidth : float or str
        Bytes per second, or a string such as ``"50MB/s"``.
    latency : float
        Seconds added to every request.

    Returns
    -------
    PCRDataset
        A fresh handle (its own :attr:`~PCRDataset.stats`) on the same records,
        opened with *dataset*'s settings (its prefix cache, read-ahead,
        timeouts): DataLoader workers reopen it with them, through the same
        throttled link.

    Raises
    ------
    ValueError
        If *bandwidth* is not positive.

    Examples
    --------
    >>> slow = throttled("photos.pcr", bandwidth="20MB/s")
    >>> sum(1 for _ in slow.iter(scan=1, size=64))
    14
    """
    ds = dataset if isinstance(dataset, PCRDataset) else open_dataset(str(dataset))
    # The reader reads through ``_fs`` only; wrapping it keeps every read counted.
    fs = ThrottledFileSystem(ds._fs, parse_bandwidth(bandwidth), latency)
    # the store given is used as it is: the options for opening one go with it
    options = {**ds.options, "store": fs, "storage_options": None}
    return open_dataset(ds._root, **options)
