"""Progressive JPEG handling: scan splitting, level rebuilding, decoding.

A progressive JPEG is a sequence of *scans*. Piece *k* of an image is the byte
range from the end of scan *k - 1*'s entropy-coded data to the end of scan
*k*'s, so it carries any tables (DHT, DQT, ...) emitted between the two scans
and the SOS header of scan *k*. Piece 1 also carries everything before the
first scan (SOI, APPn, DQT, SOF2, DHT). Level *k* of the image is pieces
``1..k`` followed by an EOI marker; level "all" is byte-identical to the file.

Transcoding sources into progressive JPEGs lives in :mod:`pcr_explore.jpeg.transcode`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from .._checks import check_scan
from .._public import public
from ..errors import JPEGError
from . import _decoders
from ._frame import SOF_MARKERS
from ._segments import DRI, SOS, segments

EOI = b"\xff\xd9"

Size = int | tuple[int, int]


@public("pcr_explore.jpeg")
@dataclass(frozen=True)
class ScanHeader:
    """The parameters of one scan, as written in its SOS segment.

    ``components`` holds component *indices* in frame order (0 = Y, 1 = Cb,
    2 = Cr for a YCbCr image), not the ids written in the file.
    """

    components: tuple[int, ...]
    ss: int
    se: int
    ah: int
    al: int

    def describe(self) -> str:
        """A short label such as ``"Y AC 1-5 first (Ah=0, Al=1)"``."""
        names = ("Y", "Cb", "Cr", "K")
        comps = ",".join(names[c] if c < len(names) else str(c) for c in self.components)
        kind = "DC" if self.ss == 0 else f"AC {self.ss}-{self.se}"
        phase = "first" if self.ah == 0 else "refine"
        return f"{comps} {kind} {phase} (Ah={self.ah}, Al={self.al})"


def _script(*scans: tuple[tuple[int, ...], int, int, int, int]) -> tuple[ScanHeader, ...]:
    return tuple(ScanHeader(c, ss, se, ah, al) for c, ss, se, ah, al in scans)


# libjpeg's jpeg_simple_progression() for 3-component YCbCr images.
STANDARD_SCRIPT_COLOR: tuple[ScanHeader, ...] = _script(
    ((0, 1, 2), 0, 0, 0, 1),  # 1 DC, all components, first pass
    ((0,), 1, 5, 0, 2),  # 2 Y AC 1-5
    ((2,), 1, 63, 0, 1),  # 3 Cr AC
    ((1,), 1, 63, 0, 1),  # 4 Cb AC
    ((0,), 6, 63, 0, 2),  # 5 Y AC 6-63
    ((0,), 1, 63, 2, 1),  # 6 Y AC refine
    ((0, 1, 2), 0, 0, 1, 0),  # 7 DC refine
    ((2,), 1, 63, 1, 0),  # 8 Cr refine
    ((1,), 1, 63, 1, 0),  # 9 Cb refine
    ((0,), 1, 63, 1, 0),  # 10 Y AC last bit
)

# The same function's all-purpose script, for 1-component (grayscale) images.
STANDARD_SCRIPT_GRAY: tuple[ScanHeader, ...] = _script(
    ((0,), 0, 0, 0, 1),
    ((0,), 1, 5, 0, 2),
    ((0,), 6, 63, 0, 2),
    ((0,), 1, 63, 2, 1),
    ((0,), 0, 0, 1, 0),
    ((0,), 1, 63, 1, 0),
)

# Where each grayscale scan sits among the 10 colour levels: the colour level
# at which the same luminance information is complete. A grayscale image in a
# colour dataset has empty pieces at the chroma-only levels 3, 4, 8 and 9, so
# every image has the same luminance fidelity at every level.
GRAY_LEVELS_IN_COLOR: tuple[int, ...] = (1, 2, 5, 6, 7, 10)


@public("pcr_explore.jpeg")
@dataclass(frozen=True)
class ProgressiveJPEG:
    """A JPEG file split at its scan boundaries.

    Attributes
    ----------
    data : bytes
        The whole file.
    scan_ends : tuple of int
        Offset one past the last entropy-coded byte of each scan.
    scans : tuple of ScanHeader
        The SOS parameters of each scan.
    width, height : int
        Frame size in pixels (before any EXIF orientation).
    num_components : int
        1 for grayscale, 3 for YCbCr, 4 for CMYK/YCCK.
    sof : int
        The frame marker's code: 0xC0 baseline, 0xC1 extended, 0xC2 progressive.
    restart_interval : int
        MCUs between restart markers (0 when restarts are off).
    """

    data: bytes
    scan_ends: tuple[int, ...]
    scans: tuple[ScanHeader, ...]
    width: int
    height: int
    num_components: int
    sof: int
    restart_interval: int

    @property
    def num_scans(self) -> int:
        """Scans in the image."""
        return len(self.scans)

    @property
    def progressive(self) -> bool:
        """Whether the frame is progressive (SOF2, SOF6, SOF10 or SOF14)."""
        return self.sof in (0xC2, 0xC6, 0xCA, 0xCE)

    def piece_lengths(self) -> list[int]:
        """Byte length of each scan's piece (scan 1 includes the file header)."""
        starts = (0, *self.scan_ends[:-1])
        return [end - start for start, end in zip(starts, self.scan_ends)]

    def pieces(self) -> list[bytes]:
        """The bytes of each scan's piece, in order."""
        starts = (0, *self.scan_ends[:-1])
        return [self.data[s:e] for s, e in zip(starts, self.scan_ends)]

    def level(self, k: int | None = None) -> bytes:
        """A decodable JPEG holding scans ``1..k`` (``None``: all scans).

        Raises
        ------
        ValueError
            If *k* is not an int in ``1..num_scans``.
        """
        k = self.num_scans if k is None else check_scan(k, self.num_scans)
        return self.data[: self.scan_ends[k - 1]] + EOI


def _u16(data: bytes, pos: int) -> int:
    return (data[pos] << 8) | data[pos + 1]


@public("pcr_explore.jpeg")
def split_scans(data: bytes, *, source: str = "<bytes>") -> ProgressiveJPEG:
    """Split a JPEG file into its scans by walking its markers.

    Header segments are skipped by their length fields; entropy-coded data is
    skipped with one vectorised search for the next real marker, ignoring
    stuffed bytes (``FF 00``), restart markers (``FF D0``-``FF D7``) and fill
    bytes.

    Parameters
    ----------
    data : bytes
        A complete JPEG file (baseline or progressive).
    source : str
        Name used in error messages.

    Returns
    -------
    ProgressiveJPEG

    Raises
    ------
    JPEGError
        If the data is not a JPEG, is truncated, or holds no frame or no scan.

    Examples
    --------
    >>> from pathlib import Path
    >>> split_scans(Path("photo.jpg").read_bytes()).num_scans  # a baseline JPEG: one scan
    1
    >>> from pcr_explore.jpeg.transcode import transcode
    >>> pj = split_scans(transcode("photo.jpg").jpeg.data)  # made progressive, losslessly
    >>> pj.num_scans, len(pj.level(1)) < len(pj.data) / 5
    (10, True)
    """
    data = bytes(data)
    n = len(data)
    if n < 4 or data[0] != 0xFF or data[1] != 0xD8:
        raise JPEGError(f"{source}: not a JPEG file (no SOI marker at offset 0)")
    arr = np.frombuffer(data, dtype=np.uint8)
    ff = np.flatnonzero(arr[:-1] == 0xFF)
    follower = arr[ff + 1]
    is_marker = (follower != 0x00) & (follower != 0xFF) & ((follower < 0xD0) | (follower > 0xD7))
    marker_pos = ff[is_marker]

    scan_ends: list[int] = []
    scans: list[ScanHeader] = []
    frame: tuple[int, int, int, tuple[int, ...]] | None = None  # sof, h, w, ids
    restart = 0

    def scan_end(pos: int) -> int | None:
        i = int(np.searchsorted(marker_pos, pos))
        return int(marker_pos[i]) if i < len(marker_pos) else None

    for code, start, body, end in segments(data, scan_end, source=source):
        length = end - body + 2
        if code in SOF_MARKERS:
            if length < 8:
                raise JPEGError(f"{source}: frame header too short ({length} bytes)")
            h, w, nc = _u16(data, body + 1), _u16(data, body + 3), data[body + 5]
            if length < 8 + 3 * nc or nc == 0:
                raise JPEGError(f"{source}: frame header lists {nc} components in {length} bytes")
            ids = tuple(data[body + 6 + 3 * i] for i in range(nc))
            frame = (code, h, w, ids)
        elif code == DRI:
            restart = _u16(data, body) if length >= 4 else 0
        elif code == SOS:
            if frame is None:
                raise JPEGError(f"{source}: scan at byte {start} comes before any frame header")
            sos_length = _u16(data, start + 2)
            scans.append(_parse_sos(data, start + 2, sos_length, frame[3], source))
            scan_ends.append(end)

    if frame is None:
        raise JPEGError(f"{source}: no frame header (SOF) found")
    if not scans:
        raise JPEGError(f"{source}: no scans found")
    sof, h, w, ids = frame
    return ProgressiveJPEG(
        data=data,
        scan_ends=tuple(scan_ends),
        scans=tuple(scans),
        width=w,
        height=h,
        num_components=len(ids),
        sof=sof,
        restart_interval=restart,
    )


def _parse_sos(
    data: bytes, pos: int, length: int, frame_ids: tuple[int, ...], source: str
) -> ScanHeader:
    ns = data[pos + 2]
    if length != 6 + 2 * ns or ns == 0:
        raise JPEGError(f"{source}: scan header at byte {pos - 2} is malformed")
    comps = []
    for i in range(ns):
        cid = data[pos + 3 + 2 * i]
        if cid not in frame_ids:
            raise JPEGError(f"{source}: scan refers to component id {cid} not in the frame")
        comps.append(frame_ids.index(cid))
    p = pos + 3 + 2 * ns
    return ScanHeader(tuple(comps), data[p], data[p + 1], data[p + 2] >> 4, data[p + 2] & 15)


def target_size(width: int, height: int, size: Size) -> tuple[int, int]:
    """The (width, height) an image of the given size is resized to.

    An int bounds the longer side (aspect kept) and never enlarges the image:
    a bound above the longer side keeps the stored size. A tuple is an exact
    size, enlarging if asked, up to :data:`MAX_OUTPUT_PIXELS`.

    Raises
    ------
    ValueError
        If a side is not a positive integer, or an exact size is absurdly large.

    Examples
    --------
    >>> target_size(640, 427, 80)
    (80, 53)
    >>> target_size(640, 427, 100_000)
    (640, 427)
    """
    if isinstance(size, tuple):
        if len(size) != 2 or not all(_positive_int(v) for v in size):
            raise ValueError(f"size must be positive integers (width, height), got {size!r}")
        tw, th = int(size[0]), int(size[1])
        if tw * th > MAX_OUTPUT_PIXELS:
            raise ValueError(f"size {tw}x{th} is more than {MAX_OUTPUT_PIXELS:,} pixels")
        return tw, th
    if not _positive_int(size):
        raise ValueError(f"size must be a positive integer, got {size!r}")
    s = int(size)
    if s >= max(width, height):
        return width, height
    scale = s / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


# An exact output size above this is a mistake, not a request (about 16k x 16k).
MAX_OUTPUT_PIXELS = 1 << 28


def _positive_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and int(v) >= 1


@public("pcr_explore.jpeg")
def decode(
    data: bytes,
    *,
    size: Size | None = None,
    mode: str | None = None,
    source: str = "<bytes>",
    decoder: str | None = None,
) -> np.ndarray:
    """Decode JPEG bytes to a uint8 array (H, W) or (H, W, 3).

    When *size* is at most half the stored size, libjpeg's DCT-domain scaling
    (``Image.draft``) decodes at 1/2, 1/4 or 1/8 scale first, which is several
    times faster than decoding in full and then shrinking; a BILINEAR resize
    then gives the exact size.

    The pixels are Pillow's. Where simplejpeg is installed, JPEG data is
    decoded through it, faster, with the same libjpeg-turbo settings and scale
    (see :func:`decoder_name`); ``decoder="pillow"``, ``with
    use_decoder("pillow"):`` or ``PCR_DECODER=pillow`` forces Pillow.

    Parameters
    ----------
    data : bytes
        A JPEG file (any level of a progressive JPEG).
    size : int or (int, int), optional
        Longer side in pixels, or an exact (width, height).
    mode : {"RGB", "L"}, optional
        Force three channels or one; default: as stored (L or RGB).
    source : str
        Name used in error messages.
    decoder : {"pillow", "simplejpeg", "auto"}, optional
        The decoder for this call; default: the one in force here
        (:func:`use_decoder`, :func:`set_decoder`, ``PCR_DECODER``).

    Raises
    ------
    JPEGError
        If the bytes do not decode.
    ValueError
        If *mode*, *size* or *decoder* is not one of the above.
    MissingExtraError
        If *decoder* names a decoder that is not installed.
    """
    if mode not in (None, "RGB", "L"):
        raise ValueError(f"mode must be 'RGB', 'L' or None, got {mode!r}")
    if size is not None:
        target_size(1, 1, size)  # argument errors are the caller's, not the file's
    backend = _decoders.backend_named(decoder)

    def target_for(width: int, height: int) -> tuple[int, int] | None:
        return None if size is None else target_size(width, height, size)

    try:
        return _decoders.decode(data, target_for, mode, backend)
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        # Pillow raises ValueError for some damaged files (a truncated PNG IHDR)
        raise JPEGError(f"{source}: cannot decode image: {exc}") from exc
