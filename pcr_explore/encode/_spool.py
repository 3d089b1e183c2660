"""Transcoded images of a record not yet written, kept on disk so an interrupt loses little.

The journal (:mod:`pcr_explore.encode._journal`) keeps whole records; a 64 MiB
record holds several hundred images, all transcoded again after an interrupt.
While the local encoder collects a record's images, it appends each one to
``.record-NNNNN.spool`` in the output folder; a resumed run reads the spool
back and transcodes only the sources after it. The spool is removed once its
record is written and journaled.

Layout: a sequence of entries, each ``meta_len:u32``, the metadata as UTF-8
JSON, the image's scan pieces back to back, and ``crc:u32``, the CRC-32 of
every byte of the entry before it (all little-endian). A spool is read up to
the first entry that is torn, fails its CRC, or does not describe the next
planned source; the file is cut there and the rest is transcoded again.
"""

from __future__ import annotations

import itertools
import json
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..records.format import RecordImage
from ._shard import Transcoded

__all__ = ["Spool", "spool_file"]

_U32 = struct.Struct("<I")
_MAX_META = 1 << 20
# fsync after this many appends: an fsync per image would cost more than the
# transcode of a small one, and the journal still guarantees whole records.
_SYNC_EVERY = 16


def spool_file(i: int) -> str:
    """File name of record *i*'s spool (hidden, beside the records)."""
    return f".record-{i:05d}.spool"


# RecordImage's fields kept in an entry's metadata, beside its piece lengths and CRCs
_IMAGE_FIELDS = ("label", "width", "height", "components", "orientation")


def _meta(res: Transcoded) -> dict[str, Any]:
    meta = {k: v for k, v in vars(res).items() if k != "image"}
    im = res.image
    if im is not None:
        meta["image"] = {k: getattr(im, k) for k in _IMAGE_FIELDS}
        meta["image"].update(lengths=[len(p) for p in im.pieces], crcs=im.piece_crcs())
    return meta


def _entry(res: Transcoded) -> bytes:
    meta = json.dumps(_meta(res)).encode("utf-8")
    pieces = list(res.image.pieces) if res.image is not None else []
    body = b"".join([_U32.pack(len(meta)), meta, *pieces])
    return body + _U32.pack(zlib.crc32(body))


def _parse(buf: bytes, pos: int, index: int, name: str) -> tuple[Transcoded, int] | None:
    """The entry at *pos* if it is whole, intact and about source *index* / *name*."""
    if pos + 4 > len(buf):
        return None
    (n,) = _U32.unpack_from(buf, pos)
    if n > _MAX_META or pos + 4 + n > len(buf):
        return None
    try:
        meta = json.loads(buf[pos + 4 : pos + 4 + n].decode("utf-8"))
        if meta["index"] != index or meta["name"] != name:
            return None
        im = meta.get("image")
        lengths = [int(v) for v in im["lengths"]] if im is not None else []
        end = pos + 4 + n + sum(lengths)
        if min(lengths, default=0) < 0 or end + 4 > len(buf):
            return None
        if zlib.crc32(buf[pos:end]) != _U32.unpack_from(buf, end)[0]:
            return None
        image = None
        if im is not None:
            bounds = list(itertools.accumulate(lengths, initial=pos + 4 + n))
            pieces = [buf[a:b] for a, b in itertools.pairwise(bounds)]
            crcs = [int(c) for c in im["crcs"]]
            fields = {k: int(im[k]) for k in _IMAGE_FIELDS}
            image = RecordImage(name, pieces=pieces, crcs=crcs, **fields)
        texts = {k: str(meta[k]) for k in ("backend", "note", "error")}
        res = Transcoded(index, name, image, int(meta["source_bytes"]), **texts)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        return None
    return res, end + 4


class Spool:
    """Record *i*'s spool in *folder*: load what an earlier run kept, append, remove."""

    def __init__(self, folder: Path, i: int) -> None:
        self.path = folder / spool_file(i)
        self._fh: Any = None
        self._unsynced = 0

    def load(self, start: int, names: Sequence[str], num_scans: int) -> list[Transcoded]:
        """Images kept for sources ``start, start + 1, ...`` (plan order); cut the rest off.

        *names* are the plan's source names of the record, from *start* on;
        *num_scans* the pieces each image must have.
        """
        try:
            buf = self.path.read_bytes()
        except FileNotFoundError:
            return []
        kept: list[Transcoded] = []
        pos = 0
        while len(kept) < len(names):
            got = _parse(buf, pos, start + len(kept), names[len(kept)])
            if got is None or (got[0].image is not None and len(got[0].image.pieces) != num_scans):
                break
            kept.append(got[0])
            pos = got[1]
        if pos < len(buf):
            with open(self.path, "r+b") as f:  # a torn or foreign tail: cut it off
                f.truncate(pos)
        return kept

    def append(self, res: Transcoded) -> None:
        """Add one source's result at the end (fsynced every few entries)."""
        if self._fh is None:
            self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open across appends
        self._fh.write(_entry(res))
        self._fh.flush()
        self._unsynced += 1
        if self._unsynced >= _SYNC_EVERY:
            os.fsync(self._fh.fileno())
            self._unsynced = 0

    def remove(self) -> None:
        """Delete the spool (its record is written and journaled)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the file, keeping it for a later run."""
        if self._fh is not None:
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
