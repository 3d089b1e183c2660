"""The parsed record headers a dataset keeps: the most recently used, up to a byte bound.

A header holds every image's name, label and piece offsets: a few hundred
bytes per image once parsed. Keeping every header read would make a
dataset's memory grow with the images it has touched (hundreds of MB for a
full pass over ImageNet-sized data); the bound keeps it flat, and a header
dropped is read again, in the same request as the prefix, when its record
is next needed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..records.format import RecordHeader

__all__ = ["DEFAULT_HEADER_BYTES", "HeaderCache"]

DEFAULT_HEADER_BYTES = 64 * 2**20  # of headers as stored; parsed, about three times that


class HeaderCache:
    """Parsed headers by record, least recently used dropped past *max_bytes* of header.

    The size of a header is its length in the record (the manifest's
    ``header_bytes``); the one just added is always kept.

    Examples
    --------
    >>> from pcr_explore.records.format import RecordHeader
    >>> cache = HeaderCache(max_bytes=0)
    >>> h = RecordHeader.__new__(RecordHeader)
    >>> cache.put(0, h, 100); cache.put(1, h, 100)
    >>> cache.get(0) is None, cache.get(1) is h, len(cache)
    (True, True, 1)
    """

    def __init__(self, max_bytes: int = DEFAULT_HEADER_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._held: OrderedDict[int, tuple[RecordHeader, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # decode threads look headers up at once

    def __len__(self) -> int:
        return len(self._held)

    def get(self, r: int) -> RecordHeader | None:
        """Record *r*'s header if held (it becomes the most recently used)."""
        with self._lock:
            held = self._held.get(r)
            if held is None:
                return None
            self._held.move_to_end(r)
            return held[0]

    def put(self, r: int, header: RecordHeader, nbytes: int) -> None:
        """Hold *header* of record *r* (*nbytes* long), dropping the least recently used."""
        with self._lock:
            old = self._held.pop(r, None)
            if old is not None:
                self._bytes -= old[1]
            self._held[r] = (header, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes and len(self._held) > 1:
                _, (_, dropped) = self._held.popitem(last=False)
                self._bytes -= dropped

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:  # the lock stays; the headers travel (to DataLoader workers)
            return {"max_bytes": self.max_bytes, "held": list(self._held.items())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.max_bytes = int(state["max_bytes"])
        self._held = OrderedDict(state["held"])
        self._bytes = sum(n for _, n in self._held.values())
        self._lock = threading.Lock()
