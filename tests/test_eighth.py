"""Decoding at 1/8 scale from the DC scans alone gives the whole file's pixels, or is not done."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from pcr_explore.jpeg import _decoders, _eighth, decode, set_decoder, split_scans
from pcr_explore.jpeg.scan_script import SCRIPTS
from pcr_explore.jpeg.transcode import transcode


@pytest.fixture(autouse=True)
def _fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(_decoders.ENV_VAR, raising=False)
    monkeypatch.delenv(_decoders.SKIP_SCANS_VAR, raising=False)
    set_decoder(None)
    yield
    set_decoder(None)


def _whole_and_lean(
    data: bytes,
    size: int | tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
    mode: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    monkeypatch.setenv(_decoders.SKIP_SCANS_VAR, "0")
    whole = decode(data, size=size, mode=mode)
    monkeypatch.setenv(_decoders.SKIP_SCANS_VAR, "1")
    return whole, decode(data, size=size, mode=mode)


def _eighth_sizes(w: int, h: int) -> list[int | tuple[int, int]]:
    # the longer side at 1/8; an exact size that DCT-scales to 1/8 and then resizes
    return [max(w, h) // 8, (w // 9, h // 9)]


# colour 4:2:0, 4:2:2 and 4:4:4, and grey; odd sizes (partial MCUs at both edges)
PHOTOS = [
    pytest.param("astronaut", 2, 203, id="astronaut-420"),
    pytest.param("coffee", 1, 171, id="coffee-422"),
    pytest.param("chelsea", 0, 157, id="chelsea-444"),
    pytest.param("camera", 2, 149, id="camera-grey"),
]


@pytest.mark.jpegtran
@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize(("photo", "subsampling", "side"), PHOTOS)
def test_every_level_of_every_script_decodes_to_the_whole_files_pixels(
    script: str,
    photo: str,
    subsampling: int,
    side: int,
    encode_jpeg,
    sk_photo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = encode_jpeg(sk_photo(photo, side), subsampling=subsampling, quality=88)
    pj = transcode(src, scan_script=script, name=photo).jpeg
    rewritten = 0
    for k in range(1, pj.num_scans + 1):
        level = pj.level(k)
        rewritten += _eighth.at_eighth(level) is not None
        for size in _eighth_sizes(pj.width, pj.height):
            for mode in (None, "L", "RGB"):
                whole, lean = _whole_and_lean(level, size, monkeypatch, mode)
                np.testing.assert_array_equal(lean, whole, err_msg=f"level {k} {size} {mode}")
    assert rewritten >= 1  # the full level at least goes through its DC scans


@pytest.mark.parametrize(("subsampling", "first"), [(2, 2), (0, 4)])
def test_standard_levels_are_rewritten_once_low_ac_has_arrived(
    subsampling: int, first: int, encode_jpeg, sk_photo
) -> None:
    # Y gets AC 1-5 in scan 2, Cr and Cb their AC in scans 3 and 4: before a
    # full-resolution component has some, libjpeg re-estimates its DC from
    # its neighbours, which the rewrite would lose. In 4:2:0 only Y is left out.
    src = encode_jpeg(sk_photo("astronaut", 120), subsampling=subsampling)
    pj = transcode(src, name="a").jpeg
    lean = [_eighth.at_eighth(pj.level(k)) is not None for k in range(1, pj.num_scans + 1)]
    assert lean == [k >= first for k in range(1, pj.num_scans + 1)]


@pytest.mark.parametrize(("subsampling", "kept"), [(0, []), (1, [1, 2]), (2, [1, 2])])
def test_the_rewrite_keeps_dc_scans_and_subsampled_components(
    subsampling: int, kept: list[int], encode_jpeg, sk_photo
) -> None:
    # 4:4:4: every AC scan goes; 4:2:0 and 4:2:2: chroma, which libjpeg scales
    # with a larger inverse DCT at 1/8 (4:2:0) or might, stays whole
    src = encode_jpeg(sk_photo("astronaut", 120), subsampling=subsampling)
    pj = transcode(src, name="a").jpeg
    lean = _eighth.at_eighth(pj.data)
    assert lean is not None
    stored = [(s.components, s.ss, s.se, s.ah, s.al) for s in pj.scans]
    want = [s for s in stored if s[1] == 0 or s[0][0] in kept]
    want += [((c,), 1, 63, 0, 0) for c in range(3) if c not in kept]  # the zero scans
    assert [(s.components, s.ss, s.se, s.ah, s.al) for s in split_scans(lean).scans] == want


@pytest.mark.parametrize("name", ["pillow", *_decoders._PREFERENCE])
def test_over_32767_blocks_take_several_end_of_band_runs(
    name: str, encode_jpeg, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_decoder(name)
    rng = np.random.default_rng(0)
    grey = rng.integers(0, 256, (1405, 1611), np.uint8)  # 176 x 202 = 35,552 blocks
    data = transcode(encode_jpeg(grey, quality=50), name="big").jpeg.data
    assert _eighth.at_eighth(data) is not None
    whole, lean = _whole_and_lean(data, 201, monkeypatch)
    np.testing.assert_array_equal(lean, whole)


def test_zero_scan_codes_each_run_once() -> None:
    one = _eighth.zero_ac_scan(2, 5)
    assert one[-1:] == bytes([0b00111111])  # "0" (EOB2), "01" (5 - 4), ones
    two = _eighth.zero_ac_scan(2, 32767 + 3)
    # EOB1 ("0") sorts before EOB14 ("10"): "10" + 14 ones, "0" + "1", padding;
    # the all-ones byte is stuffed with a zero
    assert two[-4:] == bytes([0b10111111, 0xFF, 0x00, 0b01111111])


def test_what_is_not_rewritten(encode_jpeg, sk_photo) -> None:
    baseline = encode_jpeg(sk_photo("astronaut", 120))
    full = transcode(baseline, name="a").jpeg.data
    assert _eighth.at_eighth(full) is not None
    assert _eighth.at_eighth(baseline) is None  # one interleaved scan: nothing to leave out
    assert _eighth.at_eighth(full[:-2]) is None  # no EOI
    assert _eighth.at_eighth(full[: len(full) // 2]) is None  # truncated inside a scan
    assert _eighth.at_eighth(full + b"junk") is None  # data after EOI
    assert _eighth.at_eighth(b"\x89PNG\r\n\x1a\n") is None
    assert _eighth.at_eighth(full, lambda w, h: False) is None  # not decoded at 1/8
    # a restart interval: the zero scans would need restart markers
    dri = b"\xff\xdd\x00\x04\x00\x10"
    assert _eighth.at_eighth(full[:2] + dri + full[2:]) is None
    # an AC scan that libjpeg refuses (a component the frame lacks, or two
    # components in one AC scan) is not silently left out
    pj = split_scans(full)
    sos = full.index(b"\xff\xda", pj.scan_ends[0])  # scan 2: Y AC 1-5
    assert full[sos + 5] == 1 and _eighth.at_eighth(full) is not None
    assert _eighth.at_eighth(full[: sos + 5] + b"\x09" + full[sos + 6 :]) is None
    two = full[: sos + 2] + b"\x00\x0a\x02\x01\x00\x02\x11" + full[sos + 7 :]
    assert split_scans(two).scans[1].components == (0, 1)
    assert _eighth.at_eighth(two) is None


def test_full_size_and_half_size_decodes_are_untouched(
    encode_jpeg, sk_photo, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = transcode(encode_jpeg(sk_photo("astronaut", 160)), name="a").jpeg.data
    calls: list[int] = []
    real = _eighth.at_eighth

    def spy(data: bytes, wanted=None):  # type: ignore[no-untyped-def]
        out = real(data, wanted)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(_decoders, "eighth_rewrite", spy)
    for size in (None, 80, 40):
        decode(data, size=size)
    decode(data, size=20)
    assert calls == [False, False, False, True]
