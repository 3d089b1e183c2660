"""Pictures of a level next to the full image: display copies, differences, zooms."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from ..._checks import check_count
from ..._public import public
from ...jpeg._orient import decode_upright

__all__ = [
    "jpeg_size",
    "encode_jpeg",
    "display_jpeg",
    "difference_map",
    "difference_scale",
    "split_view",
    "zoom_crop",
    "worst_window",
    "worst_detail",
]


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


def display_jpeg(
    data: bytes, max_side: int | None = 768, quality: int = 90, orientation: int = 1
) -> bytes:
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
    orientation : int
        EXIF orientation the image is stored with (1-8); other than 1, the
        copy is always decoded, turned upright and re-encoded.

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
    if orientation == 1 and (max_side is None or max(jpeg_size(data)) <= max_side):
        return data
    return encode_jpeg(decode_upright(data, max_side, orientation), quality)


def _channels(image: np.ndarray) -> np.ndarray:
    arr = np.asarray(image)
    return (arr[..., None] if arr.ndim == 2 else arr).astype(np.int16)


@public("pcr_explore.quality.compare")
def difference_map(level: np.ndarray, full: np.ndarray, *, gain: float = 4.0) -> np.ndarray:
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


def difference_scale(gain: float = 4.0, ticks: int = 5) -> list[tuple[float, int]]:
    """Where pixel differences land on a :func:`difference_map`'s black-to-white scale.

    A map pixel of brightness ``b`` (0-255) means the level differs from the
    full image by ``b / gain`` in its most changed channel; differences of
    ``255 / gain`` and more are white. Returns ticks for a legend.

    Parameters
    ----------
    gain : float
        The map's amplification.
    ticks : int
        Number of ticks, at least 2.

    Returns
    -------
    list of (float, int)
        ``(position, difference)``: position 0 (black) to 1 (white), and the
        pixel difference (of 255) drawn there.

    Raises
    ------
    ValueError
        If *gain* is not positive or *ticks* is below 2.

    Examples
    --------
    >>> difference_scale(4.0)
    [(0.0, 0), (0.25, 16), (0.5, 32), (0.75, 48), (1.0, 64)]
    """
    if not gain > 0:
        raise ValueError(f"gain must be positive, got {gain}")
    check_count(ticks, "ticks", minimum=2)
    top = 255.0 / gain
    return [(k / (ticks - 1), round(top * k / (ticks - 1))) for k in range(ticks)]


def split_view(level: np.ndarray, full: np.ndarray, at: float = 0.5) -> np.ndarray:
    """A before/after picture: the level left of a vertical line, the full image right of it.

    Parameters
    ----------
    level, full : ndarray of uint8
        Two images of the same shape.
    at : float
        The line's position as a fraction of the width, in [0, 1].

    Returns
    -------
    ndarray of uint8
        Same shape; the line is two white pixels wide.

    Raises
    ------
    ValueError
        If the shapes differ or *at* lies outside [0, 1].

    Examples
    --------
    >>> out = split_view(np.zeros((2, 8), np.uint8), np.full((2, 8), 9, np.uint8), 0.5)
    >>> out[0].tolist()
    [0, 0, 0, 255, 255, 9, 9, 9]
    """
    a, b = np.asarray(level), np.asarray(full)
    if a.shape != b.shape:
        raise ValueError(f"image shapes differ: {a.shape} vs {b.shape}")
    if not 0 <= at <= 1:
        raise ValueError(f"at must be a fraction in [0, 1], got {at}")
    x = round(at * a.shape[1])
    out = b.copy()
    out[:, :x] = a[:, :x]
    out[:, max(0, x - 1) : x + 1] = 255
    return out


def worst_window(level: np.ndarray, full: np.ndarray, window: float = 0.25) -> tuple[float, float]:
    """Centre of the window where a level differs most from the full image.

    The mean absolute difference (largest channel) is summed over every
    window position with an integral image, so the search costs a few array
    passes whatever the window size. Zooming there (:func:`zoom_crop`) shows
    a loss that a whole-image thumbnail hides.

    Parameters
    ----------
    level, full : ndarray of uint8
        Two images of the same height and width.
    window : float
        Window side as a fraction of each image side, in (0, 1].

    Returns
    -------
    (float, float)
        The window centre as fractions (x, y) of the width and height, ready
        for :func:`zoom_crop` with ``zoom = 1 / window``.

    Raises
    ------
    ValueError
        If the sizes differ or *window* is outside (0, 1].

    Examples
    --------
    >>> full = np.zeros((40, 40), np.uint8)
    >>> level = full.copy(); level[30:40, 0:10] = 90
    >>> worst_window(level, full, 0.25)
    (0.125, 0.875)
    """
    if not 0 < window <= 1:
        raise ValueError(f"window must be in (0, 1], got {window}")
    diff = difference_map(level, full, gain=1.0).astype(np.float64)
    h, w = diff.shape
    wh, ww = max(1, round(h * window)), max(1, round(w * window))
    ii = np.zeros((h + 1, w + 1))
    ii[1:, 1:] = diff.cumsum(0).cumsum(1)
    sums = ii[wh:, ww:] - ii[:-wh, ww:] - ii[wh:, :-ww] + ii[:-wh, :-ww]
    y0, x0 = np.unravel_index(int(np.argmax(sums)), sums.shape)
    return (round(float(x0 + ww / 2) / w, 6), round(float(y0 + wh / 2) / h, 6))


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


def worst_detail(
    level: np.ndarray,
    full: np.ndarray,
    zoom: float = 3.0,
    out_size: tuple[int, int] | None = None,
    gain: float = 4.0,
) -> dict[str, object]:
    """Zoomed crops of the full image, the level and their difference where they differ most.

    A whole-image thumbnail of a good-enough level looks like the full
    image; the same pixels magnified where the loss concentrates
    (:func:`worst_window`) show what was lost.

    Parameters
    ----------
    level, full : ndarray of uint8
        Two images of the same height and width.
    zoom : float
        Magnification, at least 1: the window is ``1 / zoom`` of each side.
    out_size : (int, int), optional
        (width, height) of each crop; the window's own size by default.
    gain : float
        Amplification of the difference crop (:func:`difference_map`).

    Returns
    -------
    dict
        ``full``, ``level``, ``difference`` (uint8 arrays) and ``center``
        (the window centre as fractions of the width and height).

    Examples
    --------
    >>> full = np.zeros((40, 40), np.uint8)
    >>> level = full.copy(); level[0:10, 30:40] = 90
    >>> d = worst_detail(level, full, zoom=4.0, out_size=(20, 20))
    >>> d["center"], d["level"].shape, int(d["difference"].max())
    ((0.875, 0.125), (20, 20), 255)
    """
    center = worst_window(level, full, 1.0 / zoom)
    diff = difference_map(level, full, gain=gain)
    if out_size is None:
        h, w = diff.shape
        out_size = (max(1, round(w / zoom)), max(1, round(h / zoom)))
    return {
        "full": zoom_crop(full, center, zoom, out_size),
        "level": zoom_crop(level, center, zoom, out_size),
        "difference": zoom_crop(diff, center, zoom, out_size),
        "center": center,
    }
