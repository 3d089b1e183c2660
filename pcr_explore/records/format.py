"""One Progressive Compressed Record file: header, scan groups, checksums.

The byte layout is specified in ``docs/FORMAT.md``. In short, all integers
little-endian::

    preamble   magic(8) version:u16 num_scans:u16 num_images:u32 header_len:u64
    groups     num_scans x (offset:u64 length:u64 crc32:u32 reserved:u32)
    images     labels:i32[N] widths:u16[N] heights:u16[N] components:u8[N]
               orientations:u8[N]
               piece_lengths:u32[N*S] piece_crcs:u32[N*S] (both image-major)
               name_offsets:u32[N+1]
               names (UTF-8, name_offsets[N] bytes)
    script     script_len:u32, the scan script (ASCII, jpegtran -scans syntax)
    header_crc:u32   CRC-32 of every header byte before it
    group 1 .. group S   (group k = piece k of image 0, 1, ..., N-1)

Reading level *k* is one read of ``[0, groups[k-1].offset + groups[k-1].length)``.
The per-piece CRCs let a random-access read of one image verify exactly the
bytes it fetched. Version 1 records (no orientations, no script: every image
upright, the standard script) are still read.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .._checks import check_scan
from .._public import public
from ..errors import CorruptRecordError, PCRFormatError
from ..jpeg import EOI
from ..storage._atomic import atomic_write

__all__ = [
    "MAGIC",
    "VERSION",
    "RecordImage",
    "RecordHeader",
    "encode_record",
    "write_record",
    "parse_header",
    "read_header",
    "MAX_SCANS",
]

MAGIC = b"\x89PCR\r\n\x1a\n"  # PNG-style: catches text-mode and 7-bit mangling
VERSION = 2
_READABLE = (1, 2)
MAX_SCANS = 64
_MAX_HEADER = 1 << 30  # a header above 1 GiB is corrupt, not large

_PREAMBLE = struct.Struct("<8sHHIQ")  # 24 bytes
_GROUP = np.dtype([("offset", "<u8"), ("length", "<u8"), ("crc32", "<u4"), ("reserved", "<u4")])
# Fixed bytes per image in the header: label, width, height, components,
# one name offset (version 2: and an orientation); plus 8 per scan for the
# piece length and CRC.
_PER_IMAGE = {1: 4 + 2 + 2 + 1 + 4, 2: 4 + 2 + 2 + 1 + 1 + 4}
# Fixed bytes after the names: version 2's script length, the header CRC.
_TAIL = {1: 4, 2: 4 + 4}


@public("pcr_explore.records")
@dataclass(frozen=True)
class RecordImage:
    """One image to store: its scan pieces and metadata.

    ``pieces`` has one entry per scan level; an empty piece is allowed (a
    grayscale image has nothing to add at the chroma-only colour levels).
    ``crcs`` may carry the pieces' CRC-32s when they were computed already
    (in an encoder worker, say); they are computed here otherwise.
    ``orientation`` is the EXIF orientation (1-8) a reader applies after
    decoding; 1 means the JPEG is stored upright.
    """

    name: str
    label: int
    width: int
    height: int
    components: int
    pieces: Sequence[bytes]
    crcs: Sequence[int] | None = None
    orientation: int = 1

    def piece_crcs(self) -> list[int]:
        """CRC-32 of each piece."""
        if self.crcs is not None:
            return list(self.crcs)
        return [zlib.crc32(p) for p in self.pieces]


@public("pcr_explore.records")
@dataclass(frozen=True, eq=False)
class RecordHeader:
    """The parsed header of a record file.

    Headers compare equal when every field is (arrays: the same dtype, shape and
    values), and hash alike then, so they can be set members and dict keys.
    """

    path: str
    version: int
    num_scans: int
    header_len: int
    group_offsets: np.ndarray  # (S,) uint64
    group_lengths: np.ndarray  # (S,) uint64
    group_crcs: np.ndarray  # (S,) uint32
    labels: np.ndarray  # (N,) int32
    widths: np.ndarray  # (N,) uint16
    heights: np.ndarray  # (N,) uint16
    components: np.ndarray  # (N,) uint8
    orientations: np.ndarray  # (N,) uint8, EXIF orientation 1-8
    piece_lengths: np.ndarray  # (N, S) uint32
    piece_crcs: np.ndarray  # (N, S) uint32
    names: tuple[str, ...]
    header_crc: int
    scan_script: str | None  # jpegtran -scans text; None: the standard script (version 1)
    _piece_offsets: np.ndarray = field(repr=False, compare=False)  # (N, S) absolute

    def _key(self) -> tuple[object, ...]:
        """The compared fields, each array as its dtype, shape and bytes."""
        return tuple(
            (v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v
            for v in (getattr(self, f.name) for f in fields(self) if f.compare)
        )

    # The dataclass's own == compares the arrays' tuples with ==, which gives arrays (and
    # ValueError), and its hash cannot hash an array: both compare the fields' bytes instead.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordHeader) or type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def num_images(self) -> int:
        """Images in the record."""
        return len(self.labels)

    @property
    def file_size(self) -> int:
        """Bytes of the whole record file (header and every scan group)."""
        return int(self.header_len + self.group_lengths.sum())

    def prefix_length(self, scan: int | None) -> int:
        """Bytes from the start of the file to the end of scan group *scan*."""
        k = self._check_scan(scan)
        return int(self.group_offsets[k - 1] + self.group_lengths[k - 1])

    def cumulative_bytes(self) -> list[int]:
        """``prefix_length(k)`` for k = 1..num_scans."""
        return [int(v) for v in self.header_len + np.cumsum(self.group_lengths)]

    def piece_ranges(self, i: int, scan: int | None) -> tuple[list[int], list[int]]:
        """File offsets and lengths of image *i*'s pieces 1..*scan*."""
        if not 0 <= i < self.num_images:
            raise IndexError(f"{self.path}: image {i} out of range 0..{self.num_images - 1}")
        k = self._check_scan(scan)
        return self._piece_offsets[i, :k].tolist(), self.piece_lengths[i, :k].tolist()

    def assemble(self, i: int, pieces: Sequence[bytes | memoryview], verify: bool = True) -> bytes:
        """Join image *i*'s pieces 1..len(pieces) into a JPEG file.

        Raises
        ------
        CorruptRecordError
            If a piece's length or CRC-32 does not match the header.
        """
        if verify:
            self.check_pieces(i, pieces)
        return b"".join(pieces) + EOI

    def check_pieces(self, i: int, pieces: Sequence[bytes | memoryview]) -> None:
        """Check image *i*'s pieces 1..len(pieces) against their lengths and CRC-32s.

        Raises
        ------
        CorruptRecordError
            Naming the file, the image and the scan group of the first mismatch.
        """
        for k, p in enumerate(pieces):
            if len(p) != int(self.piece_lengths[i, k]) or zlib.crc32(p) != int(
                self.piece_crcs[i, k]
            ):
                raise CorruptRecordError(
                    f"{self.path}: image {i} ({self.names[i]}), scan group {k + 1}: "
                    "piece checksum mismatch"
                )

    def _check_scan(self, scan: int | None) -> int:
        """*scan* checked (None: every scan group), as every scan level is checked."""
        return check_scan(scan, self.num_scans, where=self.path, full=True)


# libjpeg's JPEG_MAX_DIMENSION: a larger side cannot be decoded
MAX_SIDE = 65500
_COMPONENTS = (1, 3, 4)  # grey, YCbCr, CMYK/YCCK
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")  # a Windows drive: C:\ or C:/
# is_safe_name over every name at once: the names joined and wrapped by NUL (which no
# safe name holds) hold one of these where a part ("/"-separated) of a name is "", "."
# or "..", an empty name and a leading or trailing "/" included; and a drive after a NUL
_UNSAFE_JOINS = tuple(a + part + b for part in ("", ".", "..") for a in "\0/" for b in "\0/")
_DRIVE_JOINED = re.compile(r"\0[A-Za-z]:[\\/]")


def _check_images(path: str, *columns: np.ndarray) -> None:
    """Refuse an image table no encoder writes.

    *columns* are the labels, widths, heights, component counts and
    orientations: a label below -1, a side of 0 or past libjpeg's limit, a
    component count a JPEG cannot have, an orientation outside 1-8.
    """
    labels, widths, heights, comps, orientations = columns
    checks = (
        (labels < -1, "label", "-1 (none) or a class index"),
        ((widths < 1) | (widths > MAX_SIDE), "width", f"1..{MAX_SIDE}"),
        ((heights < 1) | (heights > MAX_SIDE), "height", f"1..{MAX_SIDE}"),
        (~np.isin(comps, _COMPONENTS), "colour component count", "1, 3 or 4"),
        ((orientations < 1) | (orientations > 8), "EXIF orientation", "1-8"),
    )
    for values, (bad, what, expected) in zip(columns, checks):
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise PCRFormatError(
                f"{path}: image {i} has {what} {int(values[i])}; expected {expected}"
            )


def is_safe_name(name: str) -> bool:
    """Whether an image's source name is a relative path that stays inside its folder.

    Examples
    --------
    >>> is_safe_name("tulips/0001.jpg"), is_safe_name("../etc/passwd"), is_safe_name("/x.jpg")
    (True, False, False)
    """
    if not name or "\0" in name or name.startswith("/") or _DRIVE.match(name):
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def _group_table(offsets: np.ndarray, lengths: np.ndarray, crcs: Sequence[int]) -> bytes:
    table = np.zeros(len(lengths), dtype=_GROUP)
    table["offset"] = offsets
    table["length"] = lengths
    table["crc32"] = np.asarray(crcs, dtype=np.uint32)
    return table.tobytes()


@public("pcr_explore.records")
def encode_record(
    images: Sequence[RecordImage], num_scans: int, scan_script: str = ""
) -> list[bytes]:
    """Lay out a record: the header, then scan group 1..num_scans.

    *scan_script* is the dataset's scan script in jpegtran ``-scans`` syntax
    (see :meth:`pcr_explore.jpeg.scan_script.ScanScript.text`), stored as given.

    Returns the chunks to write in order: the header, then every piece of
    group 1, of group 2, and so on, so a caller streams them without joining
    them into one buffer.

    Raises
    ------
    ValueError
        If an image does not have exactly *num_scans* pieces, a field does
        not fit its width, or an orientation is outside 1-8.
    """
    if not 1 <= num_scans <= MAX_SCANS:
        raise ValueError(f"num_scans must be in 1..{MAX_SCANS}, got {num_scans}")
    script = scan_script.encode("ascii")
    n = len(images)
    lengths = np.zeros((n, num_scans), dtype=np.uint64)
    crcs = np.zeros((n, num_scans), dtype=np.uint32)
    for i, im in enumerate(images):
        if len(im.pieces) != num_scans:
            raise ValueError(f"{im.name}: {len(im.pieces)} pieces, expected {num_scans}")
        if not 1 <= im.orientation <= 8:
            raise ValueError(f"{im.name}: EXIF orientation {im.orientation} is outside 1-8")
        lengths[i] = [len(p) for p in im.pieces]
        crcs[i] = im.piece_crcs()
    if lengths.size and lengths.max() > 0xFFFFFFFF:
        raise ValueError("a scan piece is larger than 4 GiB")
    names = [im.name.encode("utf-8") for im in images]
    name_offsets = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum([len(b) for b in names], out=name_offsets[1:])
    if name_offsets[-1] > 0xFFFFFFFF:
        raise ValueError("source names add up to more than 4 GiB")
    group_lengths = lengths.sum(axis=0, dtype=np.uint64)
    group_crcs = []
    for k in range(num_scans):
        crc = 0
        for im in images:
            crc = zlib.crc32(im.pieces[k], crc)
        group_crcs.append(crc)
    header_len = _header_size(VERSION, num_scans, n) + int(name_offsets[-1]) + len(script)
    offsets = header_len + np.concatenate([[0], np.cumsum(group_lengths)[:-1]]).astype(np.uint64)
    head = b"".join(
        [
            _PREAMBLE.pack(MAGIC, VERSION, num_scans, n, header_len),
            _group_table(offsets, group_lengths, group_crcs),
            np.array([im.label for im in images], dtype="<i4").tobytes(),
            np.array([im.width for im in images], dtype="<u2").tobytes(),
            np.array([im.height for im in images], dtype="<u2").tobytes(),
            np.array([im.components for im in images], dtype="u1").tobytes(),
            np.array([im.orientation for im in images], dtype="u1").tobytes(),
            lengths.astype("<u4").tobytes(),
            crcs.astype("<u4").tobytes(),
            name_offsets.astype("<u4").tobytes(),
            *names,
            struct.pack("<I", len(script)),
            script,
        ]
    )
    head += struct.pack("<I", zlib.crc32(head))
    if len(head) != header_len:  # pragma: no cover - layout bug guard
        raise RuntimeError("record header length mismatch")
    return [head, *(im.pieces[k] for k in range(num_scans) for im in images)]


@public("pcr_explore.records")
def write_record(
    path: str | os.PathLike[str],
    images: Sequence[RecordImage],
    num_scans: int,
    scan_script: str = "",
) -> RecordHeader:
    """Write a record file atomically (temporary file, fsync, rename).

    Returns
    -------
    RecordHeader
        The header as a reader will see it.
    """
    path = Path(path)
    chunks = encode_record(images, num_scans, scan_script)
    atomic_write(path, chunks)
    return parse_header(chunks[0], str(path), file_size=sum(len(c) for c in chunks))


def _header_size(version: int, num_scans: int, n: int) -> int:
    """Bytes of a header of *n* images and *num_scans* scans without its names and script."""
    per_image = _PER_IMAGE[version] + 8 * num_scans
    return _PREAMBLE.size + _GROUP.itemsize * num_scans + per_image * n + 4 + _TAIL[version]


def _preamble(buf: bytes, path: str, file_size: int | None) -> tuple[int, int, int, int]:
    if len(buf) < _PREAMBLE.size:
        raise CorruptRecordError(
            f"{path}: truncated: {len(buf)} bytes, a record header needs at least {_PREAMBLE.size}"
        )
    magic, version, num_scans, n, header_len = _PREAMBLE.unpack_from(buf)
    if magic != MAGIC:
        raise PCRFormatError(f"{path}: not a PCR record (bad magic {magic!r})")
    if version not in _READABLE:
        raise PCRFormatError(
            f"{path}: record format version {version}; this reader knows "
            f"{', '.join(map(str, _READABLE))}"
        )
    if not 1 <= num_scans <= MAX_SCANS:
        raise PCRFormatError(
            f"{path}: header claims {num_scans} scan groups (1..{MAX_SCANS} allowed)"
        )
    minimum = _header_size(version, num_scans, n)
    if header_len < minimum or header_len > _MAX_HEADER:
        raise PCRFormatError(
            f"{path}: header claims {header_len} bytes for {n} images and {num_scans} scans "
            f"(needs {minimum}..{_MAX_HEADER})"
        )
    if file_size is not None and header_len > file_size:
        raise CorruptRecordError(
            f"{path}: truncated: header claims {header_len} bytes, the file has {file_size}"
        )
    return version, num_scans, n, header_len


def _names_and_script(
    head: bytes | memoryview,
    pos: int,
    name_offsets: np.ndarray,
    end: int,
    version: int,
    path: str,
) -> tuple[tuple[str, ...], str | None]:
    """The image names (checked safe) and, from version 2, the scan script: bytes *pos*..*end*."""
    names_len = int(name_offsets[-1])
    room = end - pos  # names, then version 2's script
    if name_offsets[0] != 0 or not 0 <= names_len <= room or np.any(np.diff(name_offsets) < 0):
        raise PCRFormatError(f"{path}: name table is inconsistent with the header length")
    blob = bytes(head[pos : pos + names_len])
    script: str | None = None
    if version >= 2:
        (script_len,) = struct.unpack_from("<I", head, pos + names_len)
        if script_len != room - names_len:
            raise PCRFormatError(f"{path}: scan script length is inconsistent with the header")
        start = pos + names_len + 4
        try:
            script = bytes(head[start : start + script_len]).decode("ascii")
        except UnicodeDecodeError as exc:
            raise PCRFormatError(f"{path}: the stored scan script is not ASCII text") from exc
    elif names_len != room:
        raise PCRFormatError(f"{path}: name table is inconsistent with the header length")
    bounds = name_offsets.tolist()
    try:
        if blob.isascii():  # one decode, sliced (byte offsets are character offsets)
            text = blob.decode("ascii")
            names = tuple(text[a:b] for a, b in zip(bounds[:-1], bounds[1:]))
        else:
            names = tuple(blob[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:]))
    except UnicodeDecodeError as exc:
        raise PCRFormatError(f"{path}: a source name is not valid UTF-8") from exc
    joined = "\0" + "\0".join(names) + "\0"
    if names and (
        b"\0" in blob
        or any(j in joined for j in _UNSAFE_JOINS)
        or (":" in joined and _DRIVE_JOINED.search(joined))
    ):
        for i, name in enumerate(names):  # the first unsafe one, by name
            if not is_safe_name(name):
                raise PCRFormatError(
                    f"{path}: image {i} is named {name!r:.60}, which leaves the dataset's folder"
                )

    return names, script


@public("pcr_explore.records")
def parse_header(
    buf: bytes | memoryview,
    path: str,
    file_size: int | None = None,
    *,
    expected_len: int | None = None,
) -> RecordHeader:
    """Parse and verify a record header from the start of a record file.

    Parameters
    ----------
    buf : bytes
        At least the header's bytes (more is fine: a prefix read).
    path : str
        Name used in error messages.
    file_size : int, optional
        The record file's size, when known: checked against the header.
    expected_len : int, optional
        The header length a manifest recorded for this file: a file whose
        header declares another length is not the file the manifest means.

    Raises
    ------
    PCRFormatError
        Wrong magic or version, or sizes that cannot be right.
    CorruptRecordError
        Header checksum mismatch or truncation.
    """
    buf = memoryview(buf)
    version, s, n, header_len = _preamble(bytes(buf[: _PREAMBLE.size]), path, file_size)
    if expected_len is not None and header_len != expected_len:
        raise CorruptRecordError(
            f"{path}: header is {header_len} bytes but the manifest says {expected_len}: "
            "this file does not belong to the manifest (replaced or renamed record, or a "
            "stale manifest.json)"
        )
    if len(buf) < header_len:
        raise CorruptRecordError(
            f"{path}: truncated: header needs {header_len} bytes, got {len(buf)}"
        )
    head = buf[:header_len]
    stored_crc = struct.unpack_from("<I", head, header_len - 4)[0]
    if zlib.crc32(head[: header_len - 4]) != stored_crc:
        raise CorruptRecordError(f"{path}: header checksum mismatch (header is corrupt)")
    pos = _PREAMBLE.size
    groups = np.frombuffer(head, dtype=_GROUP, count=s, offset=pos)
    pos += _GROUP.itemsize * s

    def take(dtype: str, count: int) -> np.ndarray:
        nonlocal pos
        arr = np.frombuffer(head, dtype=dtype, count=count, offset=pos)
        pos += arr.nbytes
        return arr

    labels = take("<i4", n).astype(np.int32)
    widths = take("<u2", n).astype(np.uint16)
    heights = take("<u2", n).astype(np.uint16)
    comps = take("u1", n).copy()
    orientations = take("u1", n).copy() if version >= 2 else np.ones(n, np.uint8)
    _check_images(path, labels, widths, heights, comps, orientations)
    pieces = take("<u4", n * s).astype(np.uint32).reshape(n, s)
    piece_crcs = take("<u4", n * s).astype(np.uint32).reshape(n, s)
    name_offsets = take("<u4", n + 1).astype(np.int64)
    names, script = _names_and_script(
        head, pos, name_offsets, header_len - _TAIL[version], version, path
    )

    offsets = groups["offset"].astype(np.int64)
    lengths = groups["length"].astype(np.int64)
    expected_lengths = pieces.sum(axis=0, dtype=np.int64)
    expected_offsets = header_len + np.concatenate([[0], np.cumsum(expected_lengths)[:-1]])
    if not (
        np.array_equal(lengths, expected_lengths) and np.array_equal(offsets, expected_offsets)
    ):
        bad = int(np.flatnonzero((lengths != expected_lengths) | (offsets != expected_offsets))[0])
        raise PCRFormatError(
            f"{path}: scan group {bad + 1} offset/length disagree with the image table"
        )
    total = header_len + int(expected_lengths.sum())
    if file_size is not None and file_size != total:
        raise CorruptRecordError(
            f"{path}: file is {file_size} bytes, header describes {total} "
            f"({'truncated' if file_size < total else 'trailing data'})"
        )
    within = np.cumsum(pieces, axis=0, dtype=np.int64) - pieces
    return RecordHeader(
        path=path,
        version=version,
        num_scans=s,
        header_len=header_len,
        group_offsets=offsets.astype(np.uint64),
        group_lengths=lengths.astype(np.uint64),
        group_crcs=groups["crc32"].astype(np.uint32),
        labels=labels,
        widths=widths,
        heights=heights,
        components=comps,
        orientations=orientations,
        piece_lengths=pieces,
        piece_crcs=piece_crcs,
        names=names,
        header_crc=int(stored_crc),
        scan_script=script,
        _piece_offsets=within + offsets[None, :],
    )


@public("pcr_explore.records")
def read_header(f: BinaryIO, path: str, file_size: int | None = None) -> RecordHeader:
    """Read and parse the header from an open binary file positioned at 0."""
    pre = f.read(_PREAMBLE.size)
    _, _, _, header_len = _preamble(pre, path, file_size)
    rest = f.read(header_len - len(pre))
    return parse_header(pre + rest, path, file_size)
