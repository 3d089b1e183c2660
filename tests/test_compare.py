"""Display copies, difference maps, zoom crops and the per-level cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pcr_explore.jpeg import decode
from pcr_explore.jpeg.scan_script import SCRIPTS
from pcr_explore.quality.compare import (
    LevelCache,
    difference_map,
    level_note,
    level_strip,
    scan_content,
)
from pcr_explore.quality.compare._views import (
    difference_scale,
    display_jpeg,
    encode_jpeg,
    jpeg_size,
    split_view,
    worst_detail,
    worst_window,
    zoom_crop,
)
from pcr_explore.read.sources import open_source


@pytest.fixture(scope="module")
def source(photo_folder: Path):
    return open_source(photo_folder)


def test_display_jpeg_returns_the_bytes_themselves_when_they_fit(source) -> None:
    data = source.jpeg_bytes(0, 3)
    assert display_jpeg(data, max_side=max(jpeg_size(data))) is data
    assert display_jpeg(data, max_side=None) is data


def test_display_jpeg_shrinks_a_large_image_to_max_side(source) -> None:
    data = source.jpeg_bytes(0)
    w, h = jpeg_size(data)
    small = display_jpeg(data, max_side=64)
    sw, sh = jpeg_size(small)
    assert max(sw, sh) == 64
    assert abs(sw / sh - w / h) < 0.05


def test_difference_map_amplifies_and_clips() -> None:
    a = np.zeros((4, 5, 3), np.uint8)
    b = a.copy()
    b[0, 0] = (10, 30, 0)  # the largest channel difference counts
    b[1, 1] = (200, 0, 0)  # 200 * 4 clips at 255
    d = difference_map(a, b, gain=4.0)
    assert d.shape == (4, 5) and d.dtype == np.uint8
    assert d[0, 0] == 120 and d[1, 1] == 255 and d.sum() == 120 + 255


def test_difference_map_compares_gray_with_rgb_and_checks_sizes() -> None:
    gray = np.full((3, 3), 100, np.uint8)
    rgb = np.full((3, 3, 3), 100, np.uint8)
    rgb[..., 2] = 110
    assert (difference_map(gray, rgb, gain=2.0) == 20).all()
    with pytest.raises(ValueError, match="sizes differ"):
        difference_map(gray, np.zeros((3, 4), np.uint8))
    with pytest.raises(ValueError, match="gain"):
        difference_map(gray, gray, gain=0)


def test_zoom_crop_magnifies_with_nearest_neighbour() -> None:
    img = np.arange(64, dtype=np.uint8).reshape(8, 8)
    out = zoom_crop(img, (0.5, 0.5), zoom=2.0)
    assert out.shape == (8, 8)
    # The centre 4x4 window (rows/cols 2..5), each pixel repeated 2x2.
    np.testing.assert_array_equal(out[::2, ::2], img[2:6, 2:6])
    np.testing.assert_array_equal(out[1::2, 1::2], img[2:6, 2:6])


def test_zoom_crop_keeps_the_window_inside_the_image() -> None:
    img = np.arange(64, dtype=np.uint8).reshape(8, 8)
    np.testing.assert_array_equal(zoom_crop(img, (1.0, 1.0), 4.0, out_size=(2, 2)), img[6:, 6:])
    np.testing.assert_array_equal(zoom_crop(img, (0.5, 0.5), 1.0), img)
    with pytest.raises(ValueError, match="zoom"):
        zoom_crop(img, zoom=0.5)
    with pytest.raises(ValueError, match="center"):
        zoom_crop(img, (1.5, 0.5))


def test_encode_jpeg_round_trips_and_rejects_bad_arrays() -> None:
    img = np.full((16, 24, 3), 128, np.uint8)
    assert np.abs(decode(encode_jpeg(img)).astype(int) - 128).max() <= 2
    with pytest.raises(ValueError, match="uint8"):
        encode_jpeg(np.zeros((4, 4), np.float32))


def test_level_cache_returns_the_source_bytes_and_caches(source) -> None:
    cache = LevelCache(source, max_side=None)
    assert cache.jpeg(1, 2) == source.jpeg_bytes(1, 2)
    assert cache.jpeg(1, 2) is cache.jpeg(1, 2)
    np.testing.assert_array_equal(cache.level_bytes(1), source.level_bytes(1))
    assert cache.display(1, 2) is cache.jpeg(1, 2)
    px = cache.pixels(1, 2)
    np.testing.assert_array_equal(px, decode(source.jpeg_bytes(1, 2)))
    assert not px.flags.writeable
    calls = []
    assert cache.per_image("q", 1, lambda: calls.append(1) or 7) == 7
    assert cache.per_image("q", 1, lambda: calls.append(1) or 8) == 7
    assert calls == [1]


def test_level_cache_of_size_zero_recomputes(source) -> None:
    cache = LevelCache(source, maxsize=0)
    a, b = cache.jpeg(0, 1), cache.jpeg(0, 1)
    assert a == b and a is not b
    calls = []
    cache.per_image("q", 0, lambda: calls.append(1))
    cache.per_image("q", 0, lambda: calls.append(1))
    assert calls == [1, 1]


def test_difference_scale_names_the_saturation() -> None:
    assert difference_scale(4.0) == [(0.0, 0), (0.25, 16), (0.5, 32), (0.75, 48), (1.0, 64)]
    assert difference_scale(1.0, ticks=2) == [(0.0, 0), (1.0, 255)]
    with pytest.raises(ValueError, match="gain"):
        difference_scale(0)
    with pytest.raises(ValueError, match="ticks"):
        difference_scale(4.0, ticks=1)


def test_worst_window_finds_the_damaged_corner() -> None:
    rng = np.random.default_rng(0)
    full = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    level = full.copy()
    level[45:60, 60:80] = 0  # the bottom-right 20x15 block lost
    assert worst_window(level, full, 0.25) == (0.875, 0.875)
    assert worst_window(full, full, 1.0) == (0.5, 0.5)
    with pytest.raises(ValueError, match="window"):
        worst_window(level, full, 0.0)
    d = worst_detail(level, full, zoom=4.0, out_size=(40, 30))
    assert d["center"] == (0.875, 0.875)
    assert d["level"].shape == (30, 40, 3) and not d["level"].any()  # all of it lost
    np.testing.assert_array_equal(d["full"], zoom_crop(full, (0.875, 0.875), 4.0, (40, 30)))
    assert d["difference"].shape == (30, 40) and d["difference"].min() > 0
    assert worst_detail(level, full, zoom=4.0)["level"].shape == (15, 20, 3)  # 1:1 by default


def test_split_view_puts_the_level_left_of_the_line() -> None:
    level = np.zeros((2, 10, 3), np.uint8)
    full = np.full((2, 10, 3), 50, np.uint8)
    out = split_view(level, full, 0.3)
    assert (out[:, :2] == 0).all() and (out[:, 2:4] == 255).all() and (out[:, 4:] == 50).all()
    with pytest.raises(ValueError, match="shapes"):
        split_view(level, full[:, :5])
    with pytest.raises(ValueError, match="at"):
        split_view(level, full, 1.5)


def test_level_notes_explain_empty_colour_scans() -> None:
    assert [scan_content(k).split(":")[0] for k in (1, 2, 3, 4)] == [
        "all channels",
        "brightness (Y)",
        "red-difference colour (Cr)",
        "blue-difference colour (Cb)",
    ]
    spectral = SCRIPTS["spectral"]
    assert scan_content(2, spectral) == "brightness (Y): frequencies 1-5 (AC), whole"
    with pytest.raises(ValueError, match="outside"):
        scan_content(11)
    with pytest.raises(ValueError, match="outside"):
        scan_content(6, spectral)
    gray = [900, 1500, 1500, 1500, 4000, 5000, 5100, 5100, 5100, 6000]
    assert level_note(gray, 1).startswith("scan 1 adds 900 bytes: all channels")
    assert "blue-difference colour (Cb) only" in level_note(gray, 4)
    assert level_note(gray, 9).endswith("looks exactly like scan 8")
    assert (
        level_note([5] * 5, 2, spectral)
        == "scan 2 adds no bytes to this image: it looks exactly like scan 1"
    )
    assert "red-difference colour (Cr) only" in level_note([5] * 5, 3, spectral)
    with pytest.raises(ValueError, match="5 levels of bytes for the standard"):
        level_note([5] * 5, 2)
    with pytest.raises(ValueError, match="outside"):
        level_note(gray, 0)


def test_level_strip_shows_what_the_model_is_fed(source) -> None:
    n = source.num_scans
    strip = level_strip(source, 0, scans=[1, n], size=64, gap=4)
    first = decode(source.jpeg_bytes(0, 1), size=64)
    assert strip.mode == "RGB"
    assert strip.size == (2 * first.shape[1] + 4, first.shape[0] + 20)
    with pytest.raises(ValueError, match=rf"scan levels \[0, {n + 1}\] are outside 1\.\.{n}"):
        level_strip(source, 0, scans=[0, n + 1])
    with pytest.raises(ValueError, match="no level to show"):
        level_strip(source, 0, scans=[])


def test_level_cache_views_for_each_mode(source) -> None:
    cache = LevelCache(source, max_side=None)
    left, right = cache.views(0, 2)
    assert left is cache.display(0, 2) and right is None
    left, right = cache.views(0, 2, mode="side")
    assert right is cache.display(0, None)
    level, full = cache.pixels(0, 2), cache.pixels(0, None)
    left, right = cache.views(0, 2, mode="diff", gain=2.0)
    assert right == encode_jpeg(difference_map(level, full, gain=2.0))
    left, right = cache.views(0, 2, mode="split", zoom=2.0, center=(0.4, 0.5))
    assert right is None
    assert left == encode_jpeg(zoom_crop(split_view(level, full, 0.4), (0.4, 0.5), 2.0))
    with pytest.raises(ValueError, match="mode"):
        cache.views(0, 2, mode="wipe")
