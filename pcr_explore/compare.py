"""Look at a scan level next to the full image: display copies, differences, zooms.

The pieces an interactive viewer needs, as plain functions a Python user can
call too: a display-sized copy of a level's JPEG (the bytes themselves when
the image is small enough), an amplified difference map, a zoom crop that
keeps pixel blocks visible, and :class:`LevelCache`, a per-image, per-level
cache over any :class:`~pcr_explore.sources.LevelSource`.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import numpy as np
from PIL import Image

from .jpeg import decode
from .sources import LevelSource

__all__ = [
    "jpeg_size",
    "encode_jpeg",
    "display_jpeg",
    "difference_map",
    "zoom_crop",
    "LevelCache",
]

_V = TypeVar("_V")


def jpeg_size(data: bytes) -> tuple[int, int]:
    """The (width, height) of a JPEG, read from its header without decoding.

    Parameters
    ----------
    data : bytes
        A JPEG file (any level of a progressive JPEG).

    Returns
    -------
    (int, int)
        Width and height in pixels.

    Raises
    ------
    PIL.UnidentifiedImageError
        If *data* is not an image.

    Examples
    --------
    >>> jpeg_size(encode_jpeg(np.zeros((30, 40), np.uint8)))
    (40, 30)
    """
    with Image.open(io.BytesIO(data)) as im:
        return im.size


def encode_jpeg(pixels: np.ndarray, quality: int = 90) -> bytes:
    """Encode a uint8 array (H, W) or (H, W, 3) as a baseline JPEG.

    Parameters
    ----------
    pixels : ndarray of uint8
        Grayscale or RGB pixels.
    quality : int
        JPEG quality, 1-95.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        If *pixels* is not a 2-D or 3-channel uint8 array.

    Examples
    --------
    >>> data = encode_jpeg(np.full((8, 8, 3), 200, np.uint8))
    >>> data[:2].hex(), data[-2:].hex()  # SOI ... EOI
    ('ffd8', 'ffd9')
    """
    arr = np.asarray(pixels)
    if arr.dtype != np.uint8 or not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
        raise ValueError(
            f"expected uint8 pixels of shape (H, W) or (H, W, 3), got {arr.dtype} {arr.shape}"
        )
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def display_jpeg(data: bytes, max_side: int | None = 768, quality: int = 90) -> bytes:
    """A JPEG no larger than *max_side*: the bytes themselves when they fit.

    Browsers render a level's own JPEG bytes fastest, so an image whose longer
    side is at most *max_side* is returned unchanged (no decode, no re-encode).
    A larger one is decoded in the DCT domain at a reduced size and
    re-encoded as a baseline JPEG.

    Parameters
    ----------
    data : bytes
        A JPEG file, e.g. ``source.jpeg_bytes(i, scan)``.
    max_side : int or None
        Longest side allowed, in pixels; None keeps every size.
    quality : int
        JPEG quality of a re-encoded copy.

    Returns
    -------
    bytes

    Examples
    --------
    >>> data = encode_jpeg(np.zeros((300, 600, 3), np.uint8))
    >>> display_jpeg(data, max_side=600) is data
    True
    >>> jpeg_size(display_jpeg(data, max_side=150))
    (150, 75)
    """
    if max_side is None or max(jpeg_size(data)) <= max_side:
        return data
    return encode_jpeg(decode(data, max_side), quality)


def _channels(image: np.ndarray) -> np.ndarray:
    arr = np.asarray(image)
    return (arr[..., None] if arr.ndim == 2 else arr).astype(np.int16)


def difference_map(level: np.ndarray, full: np.ndarray, gain: float = 4.0) -> np.ndarray:
    """The amplified absolute difference between a level and the full image.

    Each pixel is the largest per-channel absolute difference times *gain*,
    clipped to 255, so dark means "unchanged" and bright shows where the
    level lost detail.

    Parameters
    ----------
    level, full : ndarray of uint8
        Two images of the same height and width, grayscale or RGB (a
        grayscale one is compared with every channel of an RGB one).
    gain : float
        Amplification; 1 shows the raw difference.

    Returns
    -------
    ndarray of uint8, shape (H, W)

    Raises
    ------
    ValueError
        If the sizes differ or *gain* is not positive.

    Examples
    --------
    >>> a = np.zeros((2, 2), np.uint8); b = np.full((2, 2), 10, np.uint8)
    >>> int(difference_map(a, b, gain=4.0)[0, 0])
    40
    """
    a, b = _channels(level), _channels(full)
    if a.shape[:2] != b.shape[:2]:
        raise ValueError(f"image sizes differ: {a.shape[:2]} vs {b.shape[:2]}")
    if not gain > 0:
        raise ValueError(f"gain must be positive, got {gain}")
    diff = np.abs(a - b).max(axis=2).astype(np.float32) * np.float32(gain)
    return np.minimum(diff, 255).astype(np.uint8)


def zoom_crop(
    image: np.ndarray,
    center: tuple[float, float] = (0.5, 0.5),
    zoom: float = 4.0,
    out_size: tuple[int, int] | None = None,
) -> np.ndarray:
    """A window of *image* magnified with nearest-neighbour sampling.

    Nearest-neighbour keeps JPEG block artefacts and ringing visible, which
    is the point of zooming into a low scan level.

    Parameters
    ----------
    image : ndarray of uint8
        (H, W) or (H, W, 3) pixels.
    center : (float, float)
        Window centre as fractions (x, y) of the width and height; the window
        is moved inside the image when it would cross an edge.
    zoom : float
        Magnification, at least 1: the window is ``W/zoom`` by ``H/zoom``.
    out_size : (int, int), optional
        Output (width, height); the input size by default.

    Returns
    -------
    ndarray of uint8

    Raises
    ------
    ValueError
        If *zoom* is below 1 or *center* lies outside [0, 1].

    Examples
    --------
    >>> img = np.arange(16, dtype=np.uint8).reshape(4, 4)
    >>> zoom_crop(img, (0.0, 0.0), zoom=2.0)[:2, :2]
    array([[0, 0],
           [0, 0]], dtype=uint8)
    """
    if not zoom >= 1:
        raise ValueError(f"zoom must be at least 1, got {zoom}")
    cx, cy = center
    if not (0 <= cx <= 1 and 0 <= cy <= 1):
        raise ValueError(f"center must be fractions in [0, 1], got {center}")
    arr = np.asarray(image)
    h, w = arr.shape[:2]
    cw, ch = max(1, round(w / zoom)), max(1, round(h / zoom))
    x0 = min(max(0, round(cx * w - cw / 2)), w - cw)
    y0 = min(max(0, round(cy * h - ch / 2)), h - ch)
    ow, oh = out_size if out_size is not None else (w, h)
    # Integer source coordinates for every output pixel: nearest neighbour.
    xs = x0 + (np.arange(ow) * cw // ow)
    ys = y0 + (np.arange(oh) * ch // oh)
    return arr[ys[:, None], xs[None, :]]


class _LRU(Generic[_V]):
    """A small least-recently-used map; ``maxsize=0`` stores nothing."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, _V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, make: Callable[[], _V]) -> _V:
        if key in self._data:
            self._data.move_to_end(key)
            self.hits += 1
            return self._data[key]
        self.misses += 1
        value = make()
        if self.maxsize > 0:
            self._data[key] = value
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return value

    def peek(self, key: Hashable) -> _V | None:
        """The value cached under *key*, or None (not counted as a hit or miss)."""
        return self._data.get(key)

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()


class LevelCache:
    """Cached per-level views of the images of a :class:`LevelSource`.

    Everything an explorer shows when a slider moves, computed once per
    (image, level) and kept in least-recently-used order: the level's JPEG
    bytes, a display copy no larger than *max_side*, its decoded pixels, the
    byte count of every level, and any per-image value such as a quality
    table (:meth:`per_image`).

    Parameters
    ----------
    source : LevelSource
        A PCR dataset, a folder or an image file (see
        :func:`~pcr_explore.sources.open_source`).
    max_side : int or None
        Longer side of display copies (None: full size).
    maxsize : int
        Entries kept per kind; 0 disables caching (every call recomputes),
        which is the baseline the widget benchmark compares against.

    Examples
    --------
    >>> cache = LevelCache(open_source("data/sample/pcr"))  # doctest: +SKIP
    >>> cache.jpeg(0, 3) == cache.source.jpeg_bytes(0, 3)  # doctest: +SKIP
    True
    """

    def __init__(self, source: LevelSource, max_side: int | None = 768, maxsize: int = 256) -> None:
        self.source = source
        self.max_side = max_side
        self._jpeg: _LRU[bytes] = _LRU(maxsize)
        self._display: _LRU[bytes] = _LRU(maxsize)
        self._pixels: _LRU[np.ndarray] = _LRU(maxsize)
        self._level_bytes: _LRU[np.ndarray] = _LRU(maxsize)
        self._per_image: _LRU[object] = _LRU(maxsize)

    @property
    def num_scans(self) -> int:
        """Scan levels of the source."""
        return int(self.source.num_scans)

    def jpeg(self, i: int, scan: int | None = None) -> bytes:
        """Image *i* at level *scan* (None: all scans), as the source's JPEG bytes."""
        return self._jpeg.get((i, scan), lambda: self.source.jpeg_bytes(i, scan))

    def display(self, i: int, scan: int | None = None) -> bytes:
        """The display copy of image *i* at level *scan* (see :func:`display_jpeg`)."""
        return self._display.get((i, scan), lambda: display_jpeg(self.jpeg(i, scan), self.max_side))

    def pixels(self, i: int, scan: int | None = None) -> np.ndarray:
        """The display copy of image *i* at level *scan*, decoded (read-only array)."""

        def make() -> np.ndarray:
            arr = decode(self.display(i, scan))
            arr.flags.writeable = False
            return arr

        return self._pixels.get((i, scan), make)

    def level_bytes(self, i: int) -> np.ndarray:
        """Bytes of image *i* at levels 1..num_scans."""
        return self._level_bytes.get(i, lambda: np.asarray(self.source.level_bytes(i)))

    def per_image(self, key: Hashable, i: int, make: Callable[[], _V]) -> _V:
        """A cached per-image value: ``make()`` on the first call for (*key*, *i*).

        Parameters
        ----------
        key : hashable
            What the value is, e.g. ``"quality"``.
        i : int
            Image index.
        make : callable
            Computes the value.
        """
        return self._per_image.get((key, i), make)  # type: ignore[return-value]

    def cached(self, key: Hashable, i: int) -> object | None:
        """The per-image value for (*key*, *i*) if it is cached, else None."""
        return self._per_image.peek((key, i))

    def clear(self) -> None:
        """Drop every cached entry."""
        for lru in (self._jpeg, self._display, self._pixels, self._level_bytes, self._per_image):
            lru.clear()
