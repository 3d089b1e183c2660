"""One reduced-size decode per image, and every image property measured on it.

The audit decodes each image once, small: a JPEG through libjpeg's DCT
scaling (``Image.draft``, 1/2 to 1/8 of each side while decoding), any other
format in full and then shrunk, to a longer side of :data:`ANALYSIS_SIDE`
pixels. Brightness, information, sharpness, colour and the perceptual hash
are all measured on that one small image, so the cost per image barely
depends on how large it is stored. Measuring at a fixed size also makes
sharpness comparable across images of different sizes: blur that vanishes at
256 pixels does not matter at training resolutions.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..jpeg._orient import apply_orientation
from ..jpeg._tjtransform import decode_checked
from ..jpeg.transcode import _to_8bit

__all__ = ["ANALYSIS_SIDE", "ONE_CHANNEL_MODES", "Properties", "measure", "phash", "reduced_image"]

# Longer side, in pixels, of the image every property is measured on.
ANALYSIS_SIDE = 256

# Pillow modes that hold one channel: grayscale by how they are stored.
ONE_CHANNEL_MODES = frozenset({"1", "L", "LA", "La", "I", "I;16", "I;16L", "I;16B", "I;16N", "F"})


@dataclass(frozen=True)
class Properties:
    """What one small decode of an image says about it (lower is worse in every score).

    Attributes
    ----------
    dark : float
        99th percentile of pixel brightness, 0-1 (brightness
        ``sqrt(0.241 R^2 + 0.691 G^2 + 0.068 B^2) / 255``, as cleanvision).
    light : float
        1 minus the 1st percentile of pixel brightness.
    low_information : float
        Entropy of the grey-level histogram in bits, divided by 8.
    blurry : float
        Standard deviation of the 4-neighbour Laplacian over that of the grey
        levels (capped at 1): how much of the contrast is fine detail.
    grayscale : float
        99th percentile over pixels of the spread between the largest and
        smallest channel, 0-1; 0 for an image stored with one channel.
    odd_aspect_ratio : float
        Shorter side over longer side of the stored image.
    entropy_bits : float
        The grey-level entropy itself.
    phash : int
        64-bit perceptual hash (:func:`phash`: ``imagehash.phash``'s bits).
    one_channel : bool
        True when the image is stored with one channel (mode L and kin).
    """

    dark: float
    light: float
    low_information: float
    blurry: float
    grayscale: float
    odd_aspect_ratio: float
    entropy_bits: float
    phash: int
    one_channel: bool


def _checked_decode(data: bytes, im: Image.Image, size: tuple[int, int]) -> Image.Image | None:
    """*data* decoded by TurboJPEG at *im*'s drafted size, any libjpeg warning failing; else None.

    The same pixels as Pillow's ``draft`` decode (see
    :func:`~pcr_explore.jpeg._tjtransform.decode_checked`), and the check the
    transcode would make, in one decode. None where the library is missing,
    the image is not L or RGB, or libjpeg complains (the caller then decodes
    with Pillow, whose message names the problem). *size* is the stored size.
    """
    if im.mode not in ("L", "RGB"):
        return None
    pixels = decode_checked(data, size, im.size, gray=im.mode == "L")
    return None if pixels is None else Image.fromarray(pixels)


def reduced_image(
    im: Image.Image, side: int = ANALYSIS_SIDE, data: bytes | None = None
) -> tuple[Image.Image, bool]:
    """Decode an opened image once, small: longer side at most *side*, upright, L or RGB.

    Parameters
    ----------
    im : PIL.Image.Image
        An image opened and not yet loaded. A JPEG is decoded with DCT scaling
        to the smallest scale that is still at least *side* pixels long.
    side : int
        Longer side of the result.
    data : bytes, optional
        The file's bytes: an L or RGB JPEG is then decoded by TurboJPEG with
        every libjpeg warning an error, so the decode checks the data too.

    Returns
    -------
    PIL.Image.Image
        Mode "L" or "RGB" (alpha composited on white, 16-bit reduced to 8),
        EXIF orientation applied.
    bool
        True when the decode also checked every coefficient (TurboJPEG, no
        warning); False when Pillow decoded it, which tolerates corrupt data.

    Raises
    ------
    OSError, SyntaxError, ValueError, EOFError
        Whatever Pillow raises for damaged or truncated data (the full stream
        is decoded, so a truncated file fails here).

    Examples
    --------
    >>> big = Image.new("RGB", (1024, 512), (200, 30, 30))
    >>> reduced_image(big)[0].size
    (256, 128)
    """
    orientation = 1
    if im.format in ("JPEG", "MPO", "TIFF", "WEBP", "PNG"):
        orientation = int(im.getexif().get(0x0112, 1) or 1)
    w, h = im.size
    jpeg = im.format in ("JPEG", "MPO")
    if jpeg and max(w, h) > side:
        scale = side / max(w, h)
        im.draft(None, (max(1, int(w * scale)), max(1, int(h * scale))))
    small = _checked_decode(data, im, (w, h)) if jpeg and data is not None else None
    checked = small is not None
    if small is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im.load()
        small = _to_8bit(im)
    if max(small.size) > side:
        # resize makes a new image (thumbnail would work in place on the caller's)
        scale = side / max(small.size)
        size = (max(1, round(small.width * scale)), max(1, round(small.height * scale)))
        small = small.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    elif small is im:
        small = im.copy()
    if 2 <= orientation <= 8:  # any other value is no orientation
        small = Image.fromarray(apply_orientation(np.asarray(small), orientation))
    return small, checked


# scipy.fftpack.dct's unnormalised DCT-II over 32 points, its 8 lowest frequencies: the
# perceptual hash's transform as a matrix product, without importing SciPy's FFT
_DCT8 = 2 * np.cos(np.pi * np.arange(8)[:, None] * (2 * np.arange(32)[None, :] + 1) / 64)


def phash(gray: Image.Image) -> int:
    """The 64-bit perceptual hash of a mode L image, as ``imagehash.phash`` computes it.

    The image shrunk to 32x32 (Lanczos), the 8x8 lowest frequencies of its
    2-D DCT-II, each bit set where a frequency is above their median.

    Examples
    --------
    >>> noise = np.random.default_rng(0).integers(0, 256, (64, 64), dtype=np.uint8)
    >>> f"{phash(Image.fromarray(noise)):016x}"
    '891b20a7f6f35e48'
    """
    px = np.asarray(gray.resize((32, 32), Image.Resampling.LANCZOS), np.float64)
    low = _DCT8 @ px @ _DCT8.T
    return int.from_bytes(np.packbits((low > np.median(low)).ravel()).tobytes(), "big")


def _percentile_of_counts(counts: np.ndarray, q: float) -> float:
    """The value below which *q* percent of the counted values fall (lowest such value)."""
    cum = np.cumsum(counts)
    return float(np.searchsorted(cum, q / 100 * cum[-1], side="left"))


def _entropy_bits(gray: np.ndarray) -> float:
    hist = np.bincount(gray.ravel(), minlength=256).astype(np.float64)
    p = hist[hist > 0] / gray.size
    return float(-(p * np.log2(p)).sum()) + 0.0  # + 0.0: no negative zero


def _sharpness(gray: np.ndarray) -> float:
    g = gray.astype(np.float32)
    if min(g.shape) < 3:
        return 1.0  # too small to judge: never called blurry
    lap = 4 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:]
    spread = float(g.std())
    if spread == 0.0:
        return 0.0  # no contrast at all: nothing is sharp (and it is low information)
    return min(1.0, float(lap.std()) / spread)


def measure(small: Image.Image, width: int, height: int, *, one_channel: bool) -> Properties:
    """Measure every property of one image on its reduced decode.

    Parameters
    ----------
    small : PIL.Image.Image
        The image from :func:`reduced_image` (mode L or RGB).
    width, height : int
        The stored size (for the aspect ratio).
    one_channel : bool
        Whether the image is stored with one channel (its grayscale score is 0).

    Returns
    -------
    Properties

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> flat = Image.fromarray(np.full((64, 96), 120, np.uint8))
    >>> p = measure(flat, 960, 640, one_channel=True)
    >>> p.low_information, p.grayscale, round(p.odd_aspect_ratio, 3)
    (0.0, 0.0, 0.667)
    >>> noisy = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
    >>> q = measure(noisy, 64, 64, one_channel=False)
    >>> q.low_information > 0.95, q.blurry, q.grayscale > 0.5
    (True, 1.0, True)
    """
    arr = np.asarray(small)
    if arr.ndim == 2:
        gray = arr
        brightness = arr.ravel()
        scale = 255.0
        spread = 0.0
    else:
        f = arr.reshape(-1, 3).astype(np.float32)
        # 1023 steps of brightness: percentiles by counting, not sorting
        b = np.sqrt((f * f) @ np.array([0.241, 0.691, 0.068], np.float32)) * (1023 / 255)
        brightness = (b + 0.5).astype(np.int16)
        scale = 1023.0
        gray = np.asarray(small.convert("L"))
        hi = np.maximum(np.maximum(arr[..., 0], arr[..., 1]), arr[..., 2])
        lo = np.minimum(np.minimum(arr[..., 0], arr[..., 1]), arr[..., 2])
        spread = _percentile_of_counts(np.bincount((hi - lo).ravel(), minlength=256), 99) / 255.0
    counts = np.bincount(brightness, minlength=int(scale) + 1)
    p1 = _percentile_of_counts(counts, 1) / scale
    p99 = _percentile_of_counts(counts, 99) / scale
    bits = _entropy_bits(gray)
    return Properties(
        dark=p99,
        light=1.0 - p1,
        low_information=bits / 8.0,
        blurry=_sharpness(gray),
        grayscale=0.0 if one_channel else spread,
        odd_aspect_ratio=min(width, height) / max(width, height, 1),
        entropy_bits=bits,
        phash=phash(Image.fromarray(gray)),
        one_channel=one_channel,
    )
