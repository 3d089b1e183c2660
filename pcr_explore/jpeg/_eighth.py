"""A progressive JPEG at 1/8 scale without the scans that cannot change its pixels.

At a DCT scale of 1/8, libjpeg's inverse DCT of each 8x8 block of a
full-resolution component is its DC coefficient alone (``jpeg_idct_1x1``),
so that component's AC scans only cost time: a full-level decode at 1/8
spends most of it Huffman-decoding coefficients it then ignores.
:func:`at_eighth` rewrites such a JPEG without them: its header, every DC
scan, every scan of a subsampled component (libjpeg-turbo scales 4:2:0
chroma at 1/8 with a 2x2 inverse DCT, which uses AC coefficients), and for
each full-resolution component one tiny scan that declares its AC
coefficients zero (an end-of-band run over all its blocks). The decoder
does the rest as before.

Where this gives the same pixels. The left-out AC coefficients could
reach a 1/8 picture only through libjpeg's block smoothing of progressive
images: libjpeg-turbo 2.1 and later re-estimate the DC coefficient of a
component for which none of AC coefficients 1-9 has been received yet
(``change_dc`` in ``jdcoefct.c``). The rewrite is therefore made only where
every full-resolution component has received some of AC 1-9 (for the
standard scan script: from level 2 where only Y is left out, as in grey,
4:2:0 and 4:2:2 images, and from level 4 in 4:4:4); earlier levels decode
as they are. The zero scans mark those AC coefficients as
known, so they are not smoothed, which leaves each DC as decoded. The
rewrite keeps every table segment between scans, needs complete scans
ending at EOI, no restart markers and Huffman coding, and otherwise
returns None. ``tests/test_eighth.py`` checks the pixels against the whole
file's at every level of every named scan script, for 4:2:0, 4:2:2, 4:4:4
and grey images.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from functools import lru_cache

from ..errors import JPEGError
from ._frame import SOF_MARKERS, read_frame
from ._segments import DRI, EOI, SOS, segments

__all__ = ["at_eighth", "zero_ac_scan"]

# The first marker after a scan's data: FF followed by anything but a stuffed
# zero or a restart marker (a run of FF fill bytes starts a marker too).
_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7]")
# Entropy-coded segments run until the next marker; other segments have lengths.
_SOF2 = 0xC2
_SMOOTHED = range(1, 10)  # AC coefficients whose absence lets libjpeg re-estimate DC
_MAX_RUN = 32767  # longest end-of-band run one symbol codes (EOB14 + 14 bits)


@lru_cache(maxsize=256)  # images of one dataset share a few sizes
def zero_ac_scan(component_id: int, blocks: int) -> bytes:
    """A DHT and an AC first scan (1-63, Al=0) that sets every AC coefficient of *blocks* to zero.

    The scan is end-of-band runs only: runs of 32,767 blocks and one for the
    rest, coded with a two-symbol table in AC table slot 0.

    Examples
    --------
    >>> scan = zero_ac_scan(1, 20)  # EOB4 ("0") and 4 bits: 0 0100 111 (padding)
    >>> scan[-11:].hex(" ")
    'ff da 00 08 01 01 00 01 3f 00 27'
    """
    runs = [_MAX_RUN] * (blocks // _MAX_RUN) + ([blocks % _MAX_RUN] if blocks % _MAX_RUN else [])
    symbols = sorted({(r.bit_length() - 1) << 4 for r in runs})  # EOBn: a run of 2**n + n bits
    counts = [1, len(symbols) - 1] + [0] * 14  # codes "0" and "10": none is all ones
    codes = {s: (c, n) for s, c, n in zip(symbols, (0b0, 0b10), (1, 2))}
    dht = bytes([0x10, *counts, *symbols])  # class 1 (AC), table 0
    acc = nbits = 0  # the scan's bits, packed from the top
    for run in runs:
        extra = run.bit_length() - 1
        code, length = codes[extra << 4]
        acc = (((acc << length) | code) << extra) | (run - (1 << extra))
        nbits += length + extra
    pad = -nbits % 8  # padded with ones, and every FF byte followed by a stuffed 00
    acc = (acc << pad) | ((1 << pad) - 1)
    bits = acc.to_bytes((nbits + pad) // 8, "big").replace(b"\xff", b"\xff\x00")
    sos = bytes([1, component_id, 0x00, 1, 63, 0x00])  # 1 component, tables 0/0, Ss=1 Se=63
    return (
        b"\xff\xc4"
        + struct.pack(">H", 2 + len(dht))
        + dht
        + b"\xff\xda"
        + struct.pack(">H", 2 + len(sos))
        + sos
        + bits
    )


def _scan_end(data: bytes) -> Callable[[int], int | None]:
    def find(pos: int) -> int | None:
        found = _MARKER.search(data, pos)
        return None if found is None else found.start()

    return find


def at_eighth(data: bytes, wanted: Callable[[int, int], bool] | None = None) -> bytes | None:
    """*data* rewritten to decode at 1/8 scale to the same pixels with less work; None if not.

    Parameters
    ----------
    data : bytes
        A JPEG file.
    wanted : callable (width, height) -> bool, optional
        Asked with the frame size before any scan is looked at: False skips
        the rewrite (for an image that will not be decoded at 1/8).

    Returns
    -------
    bytes or None
        The rewritten JPEG; None where it is not wanted, where it might change
        the pixels, or where *data* is not a complete progressive Huffman JPEG
        (the caller then decodes *data* itself).
    """
    frame = read_frame(data)
    if frame is None or frame.sof != _SOF2 or frame.restart_interval:
        return None  # not progressive Huffman, or restart markers
    width, height, comps, pos = frame.width, frame.height, frame.components, frame.first_scan
    if not width or not height or len(comps) not in (1, 3):
        return None
    if any(not 1 <= h <= 4 or not 1 <= v <= 4 for _, h, v in comps):
        return None
    if wanted is not None and not wanted(width, height):
        return None
    hmax, vmax = max(c[1] for c in comps), max(c[2] for c in comps)
    # Only full-resolution components decode to one pixel per block at 1/8:
    # libjpeg scales subsampled chroma by a larger IDCT instead of upsampling.
    lean = {cid for cid, h, v in comps if (h, v) == (hmax, vmax)}
    frame_ids = {cid for cid, _, _ in comps}
    if data.count(b"\xff\xda", pos) < 1 + len(lean):
        return None  # too few scans for a DC scan and an AC scan of each (level 1, say)
    seen_dc: set[int] = set()  # components whose DC has been received
    seen_low_ac: set[int] = set()  # lean components that received some of AC 1-9
    keep: list[bytes | memoryview] = []
    start = 0  # where the current piece (tables, then a scan) begins
    n = len(data)
    view = memoryview(data)  # kept pieces are copied once, by the final join
    try:
        for code, at, body, end in segments(data, _scan_end(data), start=pos):
            if code == EOI:
                if end != n:
                    return None  # data after EOI: leave it to the decoder
                break
            if code != SOS:
                restarts = code == DRI and (data[body] or data[body + 1])
                if code in SOF_MARKERS or restarts:
                    return None  # a second frame, or restart markers from here on
                continue
            ns = data[body]
            if ((data[at + 2] << 8) | data[at + 3]) != 6 + 2 * ns:
                return None
            ids = [data[body + 1 + 2 * i] for i in range(ns)]
            ss, se, ahl = data[body + 1 + 2 * ns : body + 4 + 2 * ns]
            if not set(ids) <= frame_ids or (ss and ns != 1):
                return None  # libjpeg refuses these: leave the error to the decoder
            if ss == 0:
                seen_dc.update(ids)
            elif not seen_dc.issuperset(ids):
                return None  # AC before DC: libjpeg warns; leave that to the decoder
            if ss == 0 or not lean.issuperset(ids):
                keep.append(view[start:end])  # a scan that shapes the picture, with its tables
            else:
                keep.append(view[start:at])  # only the tables (later scans may use them)
                if ahl >> 4 == 0 and ss <= _SMOOTHED[-1] and se >= _SMOOTHED[0]:
                    seen_low_ac.update(ids)
            start = end
    except JPEGError:
        return None  # broken structure: the decoder says what is wrong
    if seen_low_ac != lean:
        return None  # libjpeg would re-estimate some DC from its neighbours
    for cid, h, v in comps:
        if cid in lean:
            cols = -(-width * h // (8 * hmax))
            rows = -(-height * v // (8 * vmax))
            keep.append(zero_ac_scan(cid, cols * rows))
    keep.append(b"\xff\xd9")
    return b"".join(keep)
