"""One planned record: transcode its sources, write it whole, describe it.

The local encoder transcodes sources in a pool and hands each record's
results to :func:`write_shard`; a Dask task runs :func:`encode_shard`, which
does both for one record. Either way the record's bytes depend only on its
sources and the options, and the returned entry (start/end positions in the
shuffled source order, the sources skipped or converted, the record's file,
sizes and checksum) is what the journal and the manifest are built from.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._json import displayable
from ..errors import PCRError
from ..jpeg.scan_script import STANDARD, ScanScript
from ..jpeg.transcode import Backend, transcode
from ..records.format import RecordImage, encode_record, parse_header
from ._plan import record_file

__all__ = ["Transcoded", "encode_shard", "transcode_batch", "transcode_source", "write_shard"]


class Output(Protocol):
    """Where records are published (see :mod:`pcr_explore.storage._output`)."""

    url: str

    def write(self, name: str, data: Sequence[bytes]) -> None: ...


@dataclass(frozen=True)
class Transcoded:
    """A worker's answer for one source: the image, or why it was skipped."""

    index: int
    name: str
    image: RecordImage | None
    source_bytes: int
    backend: str = ""
    note: str = ""
    error: str = ""


def transcode_source(
    index: int,
    path: str,
    name: str,
    label: int,
    backend: Backend,
    quality: int,
    script: ScanScript,
) -> Transcoded:
    """Transcode one source into the record image it becomes (or say why it cannot)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return Transcoded(
            index,
            name,
            None,
            0,
            error=f"{displayable(name)}: file name is not valid UTF-8 (records store names "
            "as UTF-8); rename the file",
        )
    try:
        size = os.path.getsize(path)
        r = transcode(path, backend=backend, quality=quality, name=name, scan_script=script)
    except (PCRError, OSError) as exc:
        return Transcoded(index, name, None, 0, error=str(exc))
    pj = r.jpeg
    pieces = pj.pieces()
    if pj.num_components == 1:
        slots = [b""] * script.num_levels
        for level, piece in zip(script.gray_levels, pieces):
            slots[level - 1] = piece
        pieces = slots
    crcs = [zlib.crc32(p) for p in pieces]  # here, in parallel, not in the writing process
    image = RecordImage(
        name, label, pj.width, pj.height, pj.num_components, pieces, crcs, r.orientation
    )
    return Transcoded(index, name, image, size, r.backend, r.note)


def transcode_batch(batch: list[tuple[Any, ...]]) -> list[Transcoded]:
    """:func:`transcode_source` over a few sources (one round trip to a pool)."""
    return [transcode_source(*t) for t in batch]


def write_shard(
    output: Output,
    i: int,
    start: int,
    end: int,
    results: Sequence[Transcoded],
    script: ScanScript,
) -> dict[str, Any]:
    """Write record *i* from its sources' results; return its journal entry.

    A run of sources that were all skipped writes no file (``"file": None``).
    """
    images = [r.image for r in results if r.image is not None]
    entry: dict[str, Any] = {
        "slice": i,
        "start": start,
        "end": end,
        "skipped": [
            {"file": displayable(r.name), "issue": r.error} for r in results if r.image is None
        ],
        "notes": [
            {"file": r.name, "note": r.note, "lossless": r.backend == "jpegtran"}
            for r in results
            if r.image and r.note
        ],
        "source_bytes": sum(r.source_bytes for r in results),
        "images": len(images),
        "file": None,
        "header_bytes": 0,
        "bytes_per_scan": [0] * script.num_levels,
        "checksum": None,
    }
    if images:
        name = record_file(i)
        chunks = encode_record(images, script.num_levels, script.text())
        output.write(name, chunks)
        size = sum(len(c) for c in chunks)
        header = parse_header(chunks[0], f"{output.url}/{name}", file_size=size)
        entry.update(
            file=name,
            header_bytes=header.header_len,
            bytes_per_scan=header.cumulative_bytes(),
            checksum=f"{header.header_crc:08x}",
        )
    return entry


def encode_shard(
    output: Output, i: int, start: int, end: int, tasks: Sequence[tuple[Any, ...]]
) -> dict[str, Any]:
    """Transcode record *i*'s sources in order and write the record: one independent task."""
    script: ScanScript = tasks[0][6] if tasks else STANDARD
    return write_shard(output, i, start, end, [transcode_source(*t) for t in tasks], script)
