"""Scan splitting, level rebuilding and decoding."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from PIL.JpegImagePlugin import JpegImageFile

from pcr_explore.errors import JPEGError, ScanScriptError
from pcr_explore.jpeg import (
    EOI,
    STANDARD_SCRIPT_COLOR,
    STANDARD_SCRIPT_GRAY,
    decode,
    split_scans,
)
from pcr_explore.jpeg.scan_script import STANDARD
from pcr_explore.jpeg.transcode import transcode


@pytest.fixture(scope="module")
def prog_color(encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]) -> bytes:
    return transcode(encode_jpeg(sk_photo("astronaut", 256)), backend="pillow").jpeg.data


def test_colour_progressive_has_standard_ten_scans(prog_color: bytes) -> None:
    pj = split_scans(prog_color)
    assert pj.num_scans == 10
    assert pj.scans == STANDARD_SCRIPT_COLOR
    assert pj.progressive and pj.num_components == 3
    assert (pj.width, pj.height) == (256, 256)
    STANDARD.check(pj)


def test_pieces_tile_the_file_and_full_level_is_identical(prog_color: bytes) -> None:
    pj = split_scans(prog_color)
    pieces = pj.pieces()
    assert sum(pj.piece_lengths()) + len(EOI) == len(prog_color)
    assert b"".join(pieces) + EOI == prog_color
    assert pj.level() == prog_color
    assert pj.level(3) == b"".join(pieces[:3]) + EOI
    # piece 1 holds the whole file header; a later piece carries its own tables
    assert pieces[0].startswith(b"\xff\xd8") and b"\xff\xc2" in pieces[0]
    assert any(b"\xff\xc4" in p for p in pieces[1:])
    assert all(p.count(b"\xff\xda") == 1 for p in pieces)
    assert b"\xff\x00" in prog_color  # stuffed bytes were walked over


def test_every_level_decodes_and_error_shrinks(prog_color: bytes) -> None:
    pj = split_scans(prog_color)
    full = decode(pj.level()).astype(np.int16)
    errs = [np.abs(decode(pj.level(k)).astype(np.int16) - full).mean() for k in range(1, 11)]
    assert errs[-1] == 0
    assert errs[0] > errs[1] > errs[4] > errs[5] > errs[-1]


def test_grayscale_gives_six_scans(
    encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    out = transcode(encode_jpeg(sk_photo("camera", 128)), backend="pillow").jpeg
    assert out.num_scans == 6 and out.num_components == 1
    assert out.scans == STANDARD_SCRIPT_GRAY


@pytest.mark.jpegtran
def test_restart_markers_inside_scans_are_skipped(prog_color: bytes) -> None:
    import subprocess

    from pcr_explore.jpeg.transcode import find_jpegtran

    out = subprocess.run(
        [find_jpegtran(), "-restart", "1", "-progressive"],
        input=prog_color,
        capture_output=True,
        check=True,
    ).stdout
    assert b"\xff\xdd" in out and b"\xff\xd0" in out
    pj = split_scans(out)
    assert pj.restart_interval > 0 and pj.num_scans == 10
    np.testing.assert_array_equal(decode(pj.level()), decode(prog_color))
    assert decode(pj.level(2)).shape == (256, 256, 3)


def test_markers_between_scans_stay_with_the_next_piece(prog_color: bytes) -> None:
    pj = split_scans(prog_color)
    cut = pj.scan_ends[2]
    comment = b"\xff\xfe\x00\x07hello"
    app = b"\xff\xe5\x00\x04ab"
    data = prog_color[:cut] + comment + app + prog_color[cut:]
    pj2 = split_scans(data)
    assert pj2.num_scans == 10
    assert pj2.pieces()[3].startswith(comment + app)
    np.testing.assert_array_equal(decode(pj2.level(5)), decode(pj.level(5)))


def test_baseline_jpeg_splits_but_fails_the_script_check(
    encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    base = encode_jpeg(sk_photo("coffee", 96))
    pj = split_scans(base)
    assert not pj.progressive and pj.num_scans == 1
    with pytest.raises(ScanScriptError, match="not a progressive JPEG"):
        STANDARD.check(pj, source="base.jpg")


def test_cmyk_progression_is_rejected(sk_photo: Callable[..., np.ndarray]) -> None:
    im = Image.fromarray(sk_photo("coffee", 64)).convert("CMYK")
    buf = io.BytesIO()
    im.save(buf, "JPEG", progressive=True)
    pj = split_scans(buf.getvalue())
    assert pj.num_components == 4 and pj.num_scans == 18
    with pytest.raises(ScanScriptError, match="cmyk.jpg: 4-component"):
        STANDARD.check(pj, source="cmyk.jpg")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "not a JPEG"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 20, "not a JPEG"),
        (b"\xff\xd8\xff\xdb\x10\x00", "past the end"),
        (b"\xff\xd8\xff\xd9", "no frame header"),
    ],
)
def test_malformed_input_raises(data: bytes, match: str) -> None:
    with pytest.raises(JPEGError, match=match):
        split_scans(data, source="x.jpg")


def test_truncated_file_names_the_scan(prog_color: bytes) -> None:
    pj = split_scans(prog_color)
    with pytest.raises(JPEGError, match=r"t\.jpg: truncated"):
        split_scans(prog_color[: pj.scan_ends[4] - 10], source="t.jpg")


def test_level_out_of_range(prog_color: bytes) -> None:
    pj = split_scans(prog_color)
    with pytest.raises(ValueError, match="outside 1..10"):
        pj.level(11)


def test_decode_with_size_uses_draft_and_keeps_aspect(
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pj = transcode(encode_jpeg(sk_photo("rocket")), backend="pillow").jpeg  # 640x427
    drafted: list[tuple[int, int]] = []
    real_draft = JpegImageFile.draft

    def spy(self: JpegImageFile, mode: str | None, size: tuple[int, int] | None) -> object:
        out = real_draft(self, mode, size)
        drafted.append(self.size)  # the size libjpeg will decode at
        return out

    monkeypatch.setattr(JpegImageFile, "draft", spy)
    # Pillow's own path (a faster decoder picks the same scale: test_decoders.py)
    monkeypatch.setenv("PCR_DECODER", "pillow")
    small = decode(pj.level(1), size=80)
    assert small.shape == (53, 80, 3)
    assert drafted == [(80, 54)]  # 1/8 scale in the DCT domain: 640x427 -> 80x54
    exact = decode(pj.level(), size=(64, 32))
    assert exact.shape == (32, 64, 3)
    # DCT-domain decode of level 1 agrees with a full decode shrunk afterwards
    ref = np.asarray(Image.fromarray(decode(pj.level(1))).resize((80, 53), Image.Resampling.BOX))
    assert np.abs(small.astype(int) - ref).mean() < 6


def test_decode_error_names_source() -> None:
    with pytest.raises(JPEGError, match="bad.jpg: cannot decode"):
        decode(b"\xff\xd8garbage", source="bad.jpg")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_jpegs_raise_only_jpeg_errors(prog_color: bytes, data: st.DataObject) -> None:
    buf = bytearray(prog_color[:3000])
    for _ in range(data.draw(st.integers(0, 8))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    try:
        pj = split_scans(bytes(buf[:cut]) + data.draw(st.sampled_from([b"", EOI])))
    except JPEGError:
        return
    assert sum(pj.piece_lengths()) <= cut + 2


@pytest.mark.parametrize("size", [0, -5, (0, 10), (10, -1), 2.5, True])
def test_bad_sizes_are_refused(prog_color: bytes, size: object) -> None:
    with pytest.raises(ValueError, match="size must be (a )?positive integer"):
        decode(prog_color, size=size)  # type: ignore[arg-type]


def test_a_size_bound_never_enlarges(prog_color: bytes) -> None:
    full = decode(prog_color)
    assert decode(prog_color, size=100_000).shape == full.shape
    assert decode(prog_color, size=(2 * full.shape[1], 20)).shape == (20, 2 * full.shape[1], 3)
    with pytest.raises(ValueError, match="more than"):
        decode(prog_color, size=(100_000, 100_000))


def test_a_damaged_png_is_a_named_error(sk_photo: Callable[..., np.ndarray]) -> None:
    buf = io.BytesIO()
    Image.fromarray(sk_photo("coffee", 64)).save(buf, "PNG")
    damaged = buf.getvalue()[:20]  # cut inside the IHDR chunk
    with pytest.raises(JPEGError, match=r"cat\.png: cannot decode image"):
        decode(damaged, source="cat.png")
