"""Display copies, difference maps, zoom crops and the per-level cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pcr_explore.compare import (
    LevelCache,
    difference_map,
    display_jpeg,
    encode_jpeg,
    jpeg_size,
    zoom_crop,
)
from pcr_explore.jpeg import decode
from pcr_explore.sources import open_source


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
