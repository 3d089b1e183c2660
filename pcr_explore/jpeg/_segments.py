"""One walk over a JPEG's marker segments, shared by every reader of JPEG structure.

:func:`~pcr_explore.jpeg.split_scans` (every scan), :func:`~pcr_explore.jpeg._frame.read_frame`
(the segments before the first scan) and the 1/8-scale rewrite of
:mod:`~pcr_explore.jpeg._eighth` all walk the same way: a marker, fill bytes
skipped, a length, a segment; after a scan header, the entropy-coded data up
to the next real marker. :func:`segments` is that walk; what each caller does
with a segment, and what it calls an error, stays with the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import JPEGError

__all__ = ["DRI", "EOI", "SOS", "STANDALONE", "segments"]

SOS, EOI, SOI, DRI = 0xDA, 0xD9, 0xD8, 0xDD
# TEM and RST0-7 carry no length
STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})

# (marker code, offset of its FF, offset of its payload, end): for a scan, the
# end is that of its entropy-coded data; for EOI, the offset after it.
Segment = tuple[int, int, int, int]


def segments(
    data: bytes,
    scan_end: Callable[[int], int | None],
    *,
    start: int = 2,
    source: str = "<bytes>",
) -> Iterator[Segment]:
    """Walk the marker segments of JPEG *data* from *start* (after its SOI) up to and including EOI.

    Parameters
    ----------
    data : bytes
        A JPEG file (its first two bytes are SOI; the caller checks).
    scan_end : callable
        ``scan_end(pos)``: the offset of the first real marker at or after
        *pos* (the end of a scan's entropy-coded data), or None if none.
    start : int
        Offset of the first marker to read (default: right after SOI).
    source : str
        Name used in error messages.

    Yields
    ------
    (code, start, payload, end)
        Standalone markers are skipped.

    Raises
    ------
    JPEGError
        Where the structure breaks: no marker where one must be, a segment
        longer than the file, a second SOI, a scan without an end, no EOI.

    Examples
    --------
    >>> jpeg = bytes.fromhex("ffd8 fffe0004 6869 ffd9")
    >>> [hex(code) for code, *_ in segments(jpeg, lambda pos: None)]
    ['0xfe', '0xd9']
    """
    n = len(data)
    pos = start
    scans = 0
    while True:
        if pos >= n:
            raise JPEGError(f"{source}: truncated: file ends at byte {n} before the EOI marker")
        if data[pos] != 0xFF:
            raise JPEGError(f"{source}: expected a marker at byte {pos}, found 0x{data[pos]:02X}")
        while pos < n and data[pos] == 0xFF:  # fill bytes before a marker
            pos += 1
        if pos >= n:
            raise JPEGError(f"{source}: truncated inside a marker at byte {pos}")
        code = data[pos]
        pos += 1
        if code == EOI:
            yield code, start, pos, pos
            return
        if code in STANDALONE:
            continue
        if code == SOI:
            raise JPEGError(f"{source}: unexpected second SOI marker at byte {pos - 2}")
        if pos + 2 > n:
            raise JPEGError(f"{source}: truncated segment header of marker 0x{code:02X}")
        length = (data[pos] << 8) | data[pos + 1]
        end = pos + length
        if length < 2 or end > n:
            raise JPEGError(
                f"{source}: segment 0xFF{code:02X} at byte {pos - 2} claims {length} bytes, "
                f"past the end of the file ({n} bytes)"
            )
        if code == SOS:
            scans += 1
            found = scan_end(end)
            if found is None:
                raise JPEGError(
                    f"{source}: truncated: scan {scans} has no end (no marker after byte {end})"
                )
            yield code, pos - 2, pos + 2, found
            pos = found
            continue
        yield code, pos - 2, pos + 2, end
        pos = end
