"""A JPEG's frame header, read by walking the segments before its first scan.

:func:`read_frame` costs a few microseconds: it never looks at entropy-coded
data, so it answers "baseline or progressive, how large, which components"
without :func:`~pcr_explore.jpeg.split_scans`'s search of the whole file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import JPEGError
from ._segments import DRI, SOS, segments

__all__ = ["Frame", "read_frame"]

# SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC)
SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


@dataclass(frozen=True)
class Frame:
    """What the segments before the first scan say.

    ``components`` holds ``(id, h, v)`` per component: its id and sampling
    factors. ``first_scan`` is the offset of the first SOS marker.
    """

    sof: int
    width: int
    height: int
    components: tuple[tuple[int, int, int], ...]
    restart_interval: int
    first_scan: int


def read_frame(data: bytes) -> Frame | None:
    """The frame header of JPEG *data*, or None if the segments before the first scan are not sound.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> buf = io.BytesIO()
    >>> Image.new("RGB", (40, 24)).save(buf, "JPEG")
    >>> f = read_frame(buf.getvalue())
    >>> hex(f.sof), f.width, f.height, f.components
    ('0xc0', 40, 24, ((1, 2, 2), (2, 1, 1), (3, 1, 1)))
    """
    if data[:2] != b"\xff\xd8":
        return None
    head: tuple[int, int, int, tuple[tuple[int, int, int], ...]] | None = None
    restart = 0
    try:
        for code, start, body, end in segments(data, _no_scan_end):
            if code == SOS:
                return None if head is None else Frame(*head, restart, start)
            seg = data[body:end]
            if code == DRI and len(seg) >= 2:
                restart = (seg[0] << 8) | seg[1]
            elif code in SOF_MARKERS:
                if head is not None or len(seg) < 6:
                    return None
                height, width, nc = struct.unpack(">HHB", seg[1:6])
                if not nc or len(seg) < 6 + 3 * nc:
                    return None
                comps = tuple(
                    (seg[6 + 3 * i], seg[7 + 3 * i] >> 4, seg[7 + 3 * i] & 15) for i in range(nc)
                )
                head = (code, width, height, comps)
    except JPEGError:
        return None
    return None


def _no_scan_end(pos: int) -> int | None:
    # read_frame stops at the first scan header, before any entropy-coded data
    return pos
