"""The encoder's plan: which source goes into which record, decided before any transcoding.

The sources are listed and shuffled with the seed, then cut into records by
their *source* file sizes: a record is closed after the source that brings
its sources' bytes to ``record_size`` or more (the last record may be
smaller). Transcoded sizes are only known after transcoding, so cutting by
them would make each record depend on every image before it; cutting by
source sizes makes every record an independent task. The local encoder and
the Dask encoder follow the same plan, so their outputs are byte-identical
whatever the number of workers. A JPEG source shrinks to about 0.94 of its
bytes in the lossless transcode, so record files come out a little under
``record_size``; PNG and other re-encoded sources shrink more.

The plan's digest covers the options and each source's name, label, size and
modification time: a resumed encode must have the same one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..jpeg.scan_script import script_from_option
from .discover import find_sources

__all__ = ["EncodePlan", "cut_records", "make_plan", "record_file"]


def record_file(i: int) -> str:
    """The file name of the record planned as slice *i*.

    Examples
    --------
    >>> record_file(3)
    'record-00003.pcr'
    """
    return f"record-{i:05d}.pcr"


def cut_records(sizes: Sequence[int] | np.ndarray, record_size: int) -> list[tuple[int, int]]:
    """Cut sources of the given sizes, in order, into ``[start, end)`` runs.

    A run ends after the source that brings its total to *record_size* or
    more; the last run keeps whatever is left.

    Examples
    --------
    >>> cut_records([5, 5, 5, 5, 5], 10)
    [(0, 2), (2, 4), (4, 5)]
    >>> cut_records([30, 1, 1], 10)
    [(0, 1), (1, 3)]
    """
    cum = np.cumsum(np.asarray(sizes, dtype=np.int64))
    n, out, start, base = len(cum), [], 0, 0
    while start < n:
        # first position whose running total since `start` reaches record_size
        end = int(np.searchsorted(cum, base + record_size, side="left")) + 1
        end = min(max(end, start + 1), n)
        out.append((start, end))
        base, start = int(cum[end - 1]), end
    return out


@dataclass(frozen=True)
class EncodePlan:
    """Sources in dataset order and the record each one goes into."""

    src: Path
    names: tuple[str, ...]
    labels: tuple[int, ...]
    classes: tuple[str, ...]
    slices: tuple[tuple[int, int], ...]
    digest: str

    def __len__(self) -> int:
        return len(self.names)

    def tasks(self, i: int, options: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Transcode arguments for the sources of record *i*, in order."""
        start, end = self.slices[i]
        names, labels = self.names, self.labels
        backend, quality = options["backend"], options["quality"]
        script = script_from_option(options.get("scan_script"))
        return [
            (pos, str(self.src / names[pos]), names[pos], labels[pos], backend, quality, script)
            for pos in range(start, end)
        ]


def make_plan(
    src: Path,
    labels: str | os.PathLike[str] | None,
    shuffle: bool,
    seed: int,
    record_size: int,
    options: dict[str, Any],
) -> EncodePlan:
    """List, shuffle and cut the sources under *src* (one ``stat`` per source).

    Raises
    ------
    DatasetError
        From :func:`~pcr_explore.encode.discover.find_sources`.
    """
    items, classes = find_sources(src, labels=labels)
    order = np.arange(len(items))
    if shuffle:
        order = np.random.default_rng(seed).permutation(len(items))
    class_index = {c: i for i, c in enumerate(classes)}
    h = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    sizes = np.zeros(len(items), dtype=np.int64)
    for j, it in enumerate(items):
        try:
            st = (src / it.name).stat()
            size, mtime = st.st_size, st.st_mtime_ns
        except OSError:  # vanished or unreadable: the transcode will say why
            size, mtime = 0, 0
        sizes[j] = size
        line = f"{it.name}\0{it.label}\0{size}\0{mtime}\n"
        h.update(line.encode("utf-8", "surrogateescape"))  # names are bytes on POSIX
    ordered = [items[j] for j in order]
    return EncodePlan(
        src=src,
        names=tuple(it.name for it in ordered),
        labels=tuple(class_index.get(it.label or "", -1) for it in ordered),
        classes=tuple(classes),
        slices=tuple(cut_records(sizes[order], record_size)),
        digest=h.hexdigest(),
    )
