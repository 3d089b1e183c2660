"""The record file: layout, checksums, and failing fast on bad bytes."""

from __future__ import annotations

import dataclasses
import os
import struct
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcr_explore.errors import CorruptRecordError, PCRError, PCRFormatError
from pcr_explore.records.format import (
    MAGIC,
    RecordImage,
    encode_record,
    parse_header,
    read_header,
    write_record,
)
from pcr_explore.records.prefix import parse_prefix

S = 4


def _images(rng: np.random.Generator, n: int = 5) -> list[RecordImage]:
    out = []
    for i in range(n):
        pieces = [rng.bytes(int(rng.integers(0, 50))) for _ in range(S)]
        out.append(RecordImage(f"class/é{i}.jpg", i % 3 - 1, 10 + i, 20 + i, 3, pieces))
    return out


@pytest.fixture
def record(tmp_path: Path) -> tuple[Path, list[RecordImage]]:
    images = _images(np.random.default_rng(1))
    path = tmp_path / "r.pcr"
    write_record(path, images, S)
    return path, images


def test_round_trip_of_every_field(record: tuple[Path, list[RecordImage]]) -> None:
    path, images = record
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    with path.open("rb") as f:
        h = read_header(f, str(path), file_size=len(data))
    assert h.num_images == 5 and h.num_scans == S and h.file_size == len(data)
    assert list(h.names) == [im.name for im in images]
    assert h.labels.tolist() == [im.label for im in images]
    assert h.widths.tolist() == [10, 11, 12, 13, 14] and h.heights.tolist()[0] == 20
    for k in range(1, S + 1):
        prefix = parse_prefix(data[: h.prefix_length(k)], str(path), k)
        for i, im in enumerate(images):
            assert prefix.jpeg_bytes(i) == b"".join(im.pieces[:k]) + b"\xff\xd9"
    # groups are laid out scan by scan: group 2 is piece 2 of every image
    o, n = int(h.group_offsets[1]), int(h.group_lengths[1])
    assert data[o : o + n] == b"".join(im.pieces[1] for im in images)
    assert h.cumulative_bytes()[-1] == len(data)


def test_prefix_needs_only_its_groups(record: tuple[Path, list[RecordImage]]) -> None:
    path, _ = record
    data = bytearray(path.read_bytes())
    h = parse_header(bytes(data), str(path))
    data[int(h.group_offsets[3]) + 1 if h.group_lengths[3] else -1] ^= 0xFF  # corrupt group 4
    parse_prefix(bytes(data[: h.prefix_length(3)]), str(path), 3)  # fine: group 4 not read
    with pytest.raises(CorruptRecordError, match=r"r\.pcr: scan group 4 checksum mismatch"):
        parse_prefix(bytes(data), str(path), 4)


def test_bit_flip_in_header_is_caught(record: tuple[Path, list[RecordImage]]) -> None:
    path, _ = record
    data = bytearray(path.read_bytes())
    data[40] ^= 0x01
    with pytest.raises(CorruptRecordError, match="header checksum mismatch"):
        parse_header(bytes(data), str(path))


def test_truncation_is_named(record: tuple[Path, list[RecordImage]]) -> None:
    path, _ = record
    data = path.read_bytes()
    h = parse_header(data, str(path))
    with pytest.raises(CorruptRecordError, match=r"truncated: scan groups 1..3 end at byte"):
        parse_prefix(data[: h.prefix_length(3) - 1], str(path), 3, header=h)
    with pytest.raises(CorruptRecordError, match="truncated"):
        parse_header(data, str(path), file_size=len(data) - 5)
    with pytest.raises(CorruptRecordError, match="truncated"):
        parse_header(data[:10], str(path))


def test_piece_checksums_guard_random_access(record: tuple[Path, list[RecordImage]]) -> None:
    path, images = record
    h = parse_header(path.read_bytes(), str(path))
    pieces = [bytes(p) for p in images[2].pieces[:3]]
    assert h.assemble(2, pieces) == b"".join(pieces) + b"\xff\xd9"
    pieces[1] = b"x" + pieces[1]
    with pytest.raises(CorruptRecordError, match=r"image 2 \(class/é2.jpg\), scan group 2"):
        h.assemble(2, pieces)


def test_bad_magic_and_version() -> None:
    good = encode_record(_images(np.random.default_rng(0), 1), S)[0]
    with pytest.raises(PCRFormatError, match="bad magic"):
        parse_header(b"GIF89a" + good[6:], "x.pcr")
    bumped = good[:8] + struct.pack("<H", 99) + good[10:]
    with pytest.raises(PCRFormatError, match="version 99"):
        parse_header(bumped, "x.pcr")


def test_absurd_sizes_fail_fast_without_allocating() -> None:
    head = struct.pack("<8sHHIQ", MAGIC, 1, 10, 0xFFFFFFFF, 1 << 20)
    tracemalloc.start()
    with pytest.raises(PCRFormatError, match="header claims"):
        parse_header(head + b"\0" * 100, "huge.pcr")
    head2 = struct.pack("<8sHHIQ", MAGIC, 1, 10, 1000, 1 << 40)
    with pytest.raises(PCRFormatError, match="header claims"):
        parse_header(head2, "huge.pcr")
    head3 = struct.pack("<8sHHIQ", MAGIC, 1, 10, 1, 10_000)
    with pytest.raises(CorruptRecordError, match="the file has 500"):
        parse_header(head3, "huge.pcr", file_size=500)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20


def test_empty_pieces_are_allowed(tmp_path: Path) -> None:
    im = RecordImage("g.jpg", -1, 8, 8, 1, [b"abc", b"", b"", b"de"])
    h = write_record(tmp_path / "g.pcr", [im], S)
    data = (tmp_path / "g.pcr").read_bytes()
    assert parse_prefix(data, "g", None, h).jpeg_bytes(0) == b"abcde\xff\xd9"
    assert h.cumulative_bytes()[1] == h.cumulative_bytes()[2]


def test_write_is_atomic_on_error(tmp_path: Path) -> None:
    bad = RecordImage("x", 0, 1, 1, 3, [b"a"])  # wrong piece count
    with pytest.raises(ValueError, match="1 pieces, expected 4"):
        write_record(tmp_path / "x.pcr", [bad], S)
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_fuzzed_headers_raise_only_format_errors(data: st.DataObject) -> None:
    images = _images(
        np.random.default_rng(data.draw(st.integers(0, 5))), data.draw(st.integers(0, 4))
    )
    buf = bytearray(b"".join(encode_record(images, S)))
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    try:
        h = parse_header(bytes(buf[:cut]), "fuzz.pcr", file_size=cut)
        parse_prefix(bytes(buf[:cut]), "fuzz.pcr", None, h)
    except PCRError:
        return
    # anything that parses must be self-consistent and pass its checksums
    assert h.file_size == cut
    assert zlib.crc32(bytes(buf[: h.header_len - 4])) == h.header_crc


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_are_rejected(blob: bytes) -> None:
    with pytest.raises(PCRError):
        parse_header(blob, "random.pcr")


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_files_get_ordinary_permissions(tmp_path: Path, umask: int, mode: int) -> None:
    # The umask is set after the package was imported: it must be read per write.
    old = os.umask(umask)
    try:
        write_record(tmp_path / "p.pcr", _images(np.random.default_rng(0), 2), S)
    finally:
        os.umask(old)
    assert (tmp_path / "p.pcr").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("label", -7, "image 0 has label -7; expected -1"),
        ("label", -(2**31), "image 0 has label -2147483648"),
        ("width", 0, "image 0 has width 0; expected 1..65500"),
        ("width", 65535, "image 0 has width 65535"),
        ("height", 0, "image 0 has height 0"),
        ("components", 7, "image 0 has colour component count 7; expected 1, 3 or 4"),
        ("name", "../outside.jpg", "image 0 is named '../outside.jpg', which leaves"),
        ("name", "/etc/passwd", "which leaves the dataset's folder"),
        ("name", "a/../../b.jpg", "which leaves the dataset's folder"),
    ],
)
def test_a_crafted_header_is_refused(field: str, value: object, match: str) -> None:
    import dataclasses

    good = RecordImage("fine.jpg", 0, 8, 8, 3, [b"ab"] * S)
    data = b"".join(encode_record([dataclasses.replace(good, **{field: value})], S))
    with pytest.raises(PCRFormatError, match=match):
        parse_header(data, "crafted.pcr")


def test_headers_compare_and_hash_by_their_fields(tmp_path: Path) -> None:
    images = _images(np.random.default_rng(2))
    a = write_record(tmp_path / "a.pcr", images, S)
    with open(tmp_path / "a.pcr", "rb") as f:
        same = read_header(f, a.path)
    assert a is not same and a == same and not (a != same) and hash(a) == hash(same)
    relabelled = [dataclasses.replace(images[0], label=images[0].label + 1), *images[1:]]
    differs = [
        write_record(tmp_path / "b.pcr", images, S),  # another path
        write_record(tmp_path / "a.pcr", images[:4], S),  # an image fewer
        write_record(tmp_path / "a.pcr", relabelled, S),  # one label (an array field) differs
    ]
    for h in differs:
        assert h != a and not (h == a)
    assert len({a, same, *differs}) == 1 + len(differs)
    assert {a: "first"}[same] == "first"
    assert a != a.path and a.__eq__(a.path) is NotImplemented
