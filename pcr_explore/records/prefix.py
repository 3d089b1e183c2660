"""A prefix read of one record: its first scan groups, checked, and the images in them.

Reading level *k* of a record is one read of its first
``header.prefix_length(k)`` bytes; :func:`parse_prefix` checks that read
(length, then each group's CRC-32) and :class:`RecordPrefix` hands out every
image of the record at that level.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from ..errors import CorruptRecordError
from ..jpeg import EOI
from .format import RecordHeader, parse_header

__all__ = ["RecordPrefix", "parse_prefix"]


@dataclass(frozen=True)
class RecordPrefix:
    """The first *scan* groups of a record, checked against their CRCs."""

    header: RecordHeader
    scan: int
    buffer: bytes | memoryview

    def jpeg_bytes(self, i: int) -> bytes:
        """Image *i* of the record at this prefix's level, as a JPEG file."""
        return b"".join(self._pieces(i)) + EOI

    def _pieces(self, i: int) -> list[bytes | memoryview]:
        offs, lens = self.header.piece_ranges(i, self.scan)
        return [self.buffer[o : o + n] for o, n in zip(offs, lens)]

    def check_pieces(self) -> None:
        """Check every image's pieces in the prefix against the header's CRC-32s.

        The scan groups' checksums cover the bytes; these check that each byte
        range belongs to the image the header says (a header whose piece table
        was altered and re-signed passes the group checks, not these).

        Raises
        ------
        CorruptRecordError
            Naming the file, the image and the scan group.
        """
        for i in range(self.header.num_images):
            self.header.check_pieces(i, self._pieces(i))


def parse_prefix(
    buf: bytes | memoryview,
    path: str,
    scan: int | None,
    header: RecordHeader | None = None,
    verify: bool = True,
) -> RecordPrefix:
    """Check a prefix read of a record and make its images available.

    Parameters
    ----------
    buf : bytes
        The bytes ``[0, header.prefix_length(scan))`` of the record.
    path : str
        Name used in error messages.
    scan : int or None
        Number of scan groups the prefix holds (None: all).
    header : RecordHeader, optional
        Already parsed header (it is parsed from *buf* otherwise).
    verify : bool
        Check the CRC-32 of every group in the prefix.

    Raises
    ------
    CorruptRecordError
        If the prefix is short or a group's checksum does not match; the
        message names the file and the scan group.
    """
    h = header if header is not None else parse_header(buf, path)
    k = h._check_scan(scan)
    need = h.prefix_length(k)
    if len(buf) < need:
        raise CorruptRecordError(
            f"{path}: truncated: scan groups 1..{k} end at byte {need}, only {len(buf)} read"
        )
    if verify:
        view = memoryview(buf)
        for g in range(k):
            o, n = int(h.group_offsets[g]), int(h.group_lengths[g])
            if zlib.crc32(view[o : o + n]) != int(h.group_crcs[g]):
                raise CorruptRecordError(
                    f"{path}: scan group {g + 1} checksum mismatch (bytes {o}..{o + n})"
                )
    return RecordPrefix(h, k, buf)
