"""Transcoding every kind of source into the standard progressive script."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from pcr_explore import encode_dataset, open_dataset
from pcr_explore.errors import SourceImageError
from pcr_explore.jpeg import decode
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.quality.compare import LevelCache, level_strip
from pcr_explore.read.sources import FolderSource


def _save(im: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


@pytest.mark.jpegtran
def test_jpegtran_is_lossless_and_smaller(
    encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    src = encode_jpeg(sk_photo("astronaut", 320), quality=90)
    r = transcode(src, backend="jpegtran")
    assert r.backend == "jpegtran" and r.lossless and r.jpeg.num_scans == 10
    np.testing.assert_array_equal(decode(r.jpeg.level()), decode(src))
    assert len(r.jpeg.data) < len(src)


@pytest.mark.jpegtran
def test_auto_prefers_jpegtran_for_jpeg_sources(
    encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    assert transcode(encode_jpeg(sk_photo("coffee", 96)), backend="auto").backend == "jpegtran"


def test_pillow_backend_keeps_tables_and_subsampling(
    encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    src = encode_jpeg(sk_photo("coffee", 200), quality=75, subsampling="4:2:2")
    r = transcode(src, backend="pillow")
    out, ref = Image.open(io.BytesIO(r.jpeg.data)), Image.open(io.BytesIO(src))
    assert out.quantization == ref.quantization  # type: ignore[attr-defined]
    from PIL import JpegImagePlugin

    assert JpegImagePlugin.get_sampling(out) == JpegImagePlugin.get_sampling(ref) == 1
    assert not r.lossless
    assert np.abs(decode(r.jpeg.level()).astype(int) - decode(src)).mean() < 1.5


@pytest.mark.parametrize("fmt", ["PNG", "WEBP", "BMP", "TIFF", "GIF"])
def test_other_formats_encode_at_the_given_quality(
    fmt: str, sk_photo: Callable[..., np.ndarray]
) -> None:
    arr = sk_photo("chelsea", 120)
    kw = {"lossless": True} if fmt == "WEBP" else {}
    r = transcode(_save(Image.fromarray(arr), fmt, **kw), quality=95)
    assert r.source_format == fmt and r.backend == "pillow" and r.jpeg.num_scans == 10
    err = np.abs(
        decode(r.jpeg.level()).astype(int) - np.asarray(Image.fromarray(arr).convert("RGB"))
    )
    assert err.mean() < (12 if fmt == "GIF" else 3)  # GIF is palettised first


def test_rgba_is_composited_on_white() -> None:
    arr = np.zeros((32, 32, 4), np.uint8)
    arr[..., 0] = 255
    arr[:, 16:, 3] = 255  # left half transparent, right half opaque red
    out = decode(transcode(_save(Image.fromarray(arr, "RGBA"), "PNG")).jpeg.level())
    assert np.abs(out[:, :12].astype(int) - 255).max() < 8
    assert np.abs(out[:, 20:].astype(int) - [255, 0, 0]).max() < 12


def test_palette_with_transparency_and_la() -> None:
    p = Image.new("P", (24, 24), 0)
    p.putpalette([0, 0, 0, 0, 0, 255] + [0] * 762)
    p.paste(1, (0, 0, 12, 24))
    p.info["transparency"] = 0
    out = decode(transcode(_save(p, "PNG", transparency=0)).jpeg.level())
    assert out[12, 2, 2] > 200 and out[12, 20].min() > 240  # blue left, white right
    la = Image.merge("LA", [Image.new("L", (16, 16), 0), Image.new("L", (16, 16), 0)])
    res = transcode(_save(la, "PNG"))
    assert res.jpeg.num_scans == 6 and decode(res.jpeg.level()).min() > 245


def test_sixteen_bit_png_keeps_the_top_bits() -> None:
    ramp = np.tile(np.linspace(0, 65535, 64).astype(np.uint16), (16, 1))
    r = transcode(_save(Image.fromarray(ramp), "PNG"), quality=100)
    assert r.source_mode.startswith("I") and r.jpeg.num_components == 1
    out = decode(r.jpeg.level()).astype(int)
    np.testing.assert_allclose(out[8], ramp[8] / 257, atol=4)


def test_cmyk_jpeg_is_converted_to_rgb(sk_photo: Callable[..., np.ndarray]) -> None:
    cmyk = Image.fromarray(sk_photo("coffee", 96)).convert("CMYK")
    r = transcode(_save(cmyk, "JPEG", quality=95))
    assert r.source_mode == "CMYK" and r.jpeg.num_components == 3 and r.jpeg.num_scans == 10
    assert "CMYK" in r.note


def _oriented(arr: np.ndarray, orientation: int, encode_jpeg: Callable[..., bytes]) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encode_jpeg(arr, exif=exif.tobytes())


@pytest.mark.parametrize("orientation", [3, 6, 8])
@pytest.mark.parametrize("backend", ["auto", "pillow"])
def test_exif_orientation_is_honoured(
    orientation: int,
    backend: str,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> None:
    arr = sk_photo("rocket")[:96, :160]  # block-aligned: jpegtran rotates losslessly
    src = _oriented(arr, orientation, encode_jpeg)
    upright = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(src))))
    r = transcode(src, backend=backend)  # type: ignore[arg-type]
    out = decode(r.jpeg.level())
    assert out.shape == upright.shape
    assert np.abs(out.astype(int) - upright).mean() < 2.5


@pytest.mark.jpegtran
@pytest.mark.parametrize("orientation", [2, 3, 4, 6, 7, 8])  # 5 (transpose) is always aligned
def test_unaligned_rotation_keeps_the_coefficients_and_the_reader_turns_them(
    orientation: int,
    tmp_path: Path,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> None:
    src = _oriented(sk_photo("rocket")[:90, :150], orientation, encode_jpeg)
    stored = np.asarray(Image.open(io.BytesIO(src)))  # the pixels as the camera wrote them
    upright = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(src))))
    r = transcode(src, backend="auto")
    assert r.backend == "jpegtran" and r.lossless and "orientation stored" in r.note
    assert r.orientation == orientation
    assert np.array_equal(decode(r.jpeg.level()), stored)  # bit-exact, not re-encoded
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "turned.jpg").write_bytes(src)
    encode_dataset(tmp_path / "src", tmp_path / "ds", progress=False)
    ds = open_dataset(str(tmp_path / "ds"))
    assert int(ds.header(0).orientations[0]) == orientation
    assert np.array_equal(ds.image(0), upright)
    h, w = upright.shape[:2]
    assert ds.image(0, 3, size=(w // 2, h // 2)).shape[:2] == (h // 2, w // 2)
    assert ds.image(0, size=max(h, w) // 2).shape[:2] == (h // 2, w // 2)
    [(first, _)] = list(ds.iter(size=(w, h)))
    assert np.array_equal(first, upright)
    folder = FolderSource(tmp_path / "src")
    assert np.array_equal(folder.image(0), upright)
    assert np.array_equal(next(folder.iter())[0], upright)
    for src in (ds, folder):  # what the widgets show is upright too
        assert src.orientation(0) == orientation
        assert LevelCache(src, max_side=None).pixels(0).shape[:2] == (h, w)
        assert level_strip(src, 0, scans=[1], size=max(h, w)).size[0] == w


def test_bad_sources_name_the_file(
    tmp_path: Path, encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"hello, not an image")
    with pytest.raises(SourceImageError, match=r"broken\.jpg: not a recognised image format"):
        transcode(bad)
    trunc = tmp_path / "trunc.jpg"
    trunc.write_bytes(encode_jpeg(sk_photo("coffee", 200))[:3000])
    with pytest.raises((SourceImageError,), match=r"trunc\.jpg"):
        transcode(trunc, backend="pillow")
    with pytest.raises(SourceImageError, match="missing.png: cannot read file"):
        transcode(tmp_path / "missing.png")


@pytest.mark.jpegtran
def test_truncated_jpeg_is_rejected_by_jpegtran_too(
    tmp_path: Path, encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    from pcr_explore.errors import JPEGError

    trunc = tmp_path / "trunc.jpg"
    trunc.write_bytes(encode_jpeg(sk_photo("coffee", 200))[:3000])
    with pytest.raises(
        JPEGError, match=r"trunc\.jpg: (jpegtran|lossless transcode) failed: Premature end"
    ):
        transcode(trunc, backend="jpegtran")


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        transcode(b"", backend="magic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="quality"):
        transcode(b"", quality=0)


@pytest.mark.jpegtran
def test_large_images_stream_through_a_baseline_encode_to_the_same_bytes(
    sk_photo: Callable[..., np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pcr_explore.jpeg.transcode as tr

    buf = io.BytesIO()
    Image.fromarray(sk_photo("astronaut", 200)).save(buf, "PNG")
    direct = transcode(buf.getvalue())
    monkeypatch.setattr(tr, "STREAM_PIXELS", 0)  # every image counts as large
    streamed = transcode(buf.getvalue())
    assert streamed.jpeg.data == direct.jpeg.data and streamed.backend == "pillow"
    monkeypatch.setenv("PCR_JPEGTRAN", "/nonexistent/jpegtran")  # no jpegtran: Pillow alone
    assert transcode(buf.getvalue()).jpeg.data == direct.jpeg.data
