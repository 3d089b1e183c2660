"""One 8x8 block the way JPEG sees it: DCT, quantisation, and what a partial decode knows.

The arithmetic of baseline and progressive JPEG for a single block, small
enough to print: the orthonormal 8x8 DCT-II (JPEG's FDCT), libjpeg's
quality-scaled quantisation tables, and the block a decoder rebuilds from
the coefficients and bits that the first scans have sent
(:func:`partial_block`, following :func:`~pcr_explore.jpeg.scan_coverage`).
For teaching and checking: decoders use fast integer versions of the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .._public import public
from ._coverage import ZIGZAG

__all__ = [
    "dct_basis",
    "block_dct",
    "block_idct",
    "quant_table",
    "quantize",
    "to_zigzag",
    "from_zigzag",
    "partial_block",
    "tile_blocks",
]

# ITU-T T.81 Annex K: the example tables libjpeg scales by its quality setting.
_LUMA = np.array(
    [
        [16, 11, 10, 16, 24, 40, 51, 61],
        [12, 12, 14, 19, 26, 58, 60, 55],
        [14, 13, 16, 24, 40, 57, 69, 56],
        [14, 17, 22, 29, 51, 87, 80, 62],
        [18, 22, 37, 56, 68, 109, 103, 77],
        [24, 35, 55, 64, 81, 104, 113, 92],
        [49, 64, 78, 87, 103, 121, 120, 101],
        [72, 92, 95, 98, 112, 100, 103, 99],
    ]
)
_CHROMA = np.full((8, 8), 99)
_CHROMA[:4, :4] = [[17, 18, 24, 47], [18, 21, 26, 66], [24, 26, 56, 99], [47, 66, 99, 99]]


def _dct_matrix() -> np.ndarray:
    """The orthonormal DCT-II matrix: ``coefficients = M @ block @ M.T``."""
    n = np.arange(8)
    m = np.cos((2 * n[None, :] + 1) * n[:, None] * np.pi / 16) * np.sqrt(2 / 8)
    m[0] /= np.sqrt(2)
    return m


_M = _dct_matrix()


@public("pcr_explore.jpeg")
def dct_basis() -> np.ndarray:
    """The 64 patterns an 8x8 block is a weighted sum of.

    Returns
    -------
    ndarray of float, shape (8, 8, 8, 8)
        ``basis[u, v]`` is the 8x8 pattern of vertical frequency *u* and
        horizontal frequency *v*; ``basis[0, 0]`` is flat (DC).

    Examples
    --------
    >>> b = dct_basis()
    >>> float(b[0, 0].std()) < 1e-12, round(float(b[0, 1, 0, 0] - b[0, 1, 0, 7]), 3)
    (True, 0.347)
    """
    return np.einsum("ui,vj->uvij", _M, _M)


@public("pcr_explore.jpeg")
def block_dct(block: np.ndarray) -> np.ndarray:
    """The DCT coefficients of an 8x8 block of pixel values (0-255), level-shifted by 128.

    Coefficient ``[0, 0]`` (DC) is 8 times the block's mean minus 128; the
    others weigh the patterns of :func:`dct_basis`.

    Raises
    ------
    ValueError
        If *block* is not 8x8.

    Examples
    --------
    >>> round(float(block_dct(np.full((8, 8), 138))[0, 0]), 9)
    80.0
    """
    b = np.asarray(block, np.float64)
    if b.shape != (8, 8):
        raise ValueError(f"a block is 8x8 pixels, got shape {b.shape}")
    return _M @ (b - 128.0) @ _M.T


@public("pcr_explore.jpeg")
def block_idct(coefficients: np.ndarray) -> np.ndarray:
    """Pixels (float, not clipped) from 8x8 DCT coefficients: the inverse of :func:`block_dct`.

    Examples
    --------
    >>> b = np.arange(64.0).reshape(8, 8)
    >>> bool(np.allclose(block_idct(block_dct(b)), b))
    True
    """
    c = np.asarray(coefficients, np.float64)
    if c.shape != (8, 8):
        raise ValueError(f"coefficients come 8x8, got shape {c.shape}")
    return _M.T @ c @ _M + 128.0


@public("pcr_explore.jpeg")
def quant_table(quality: int = 75, *, chroma: bool = False) -> np.ndarray:
    """The quantisation table libjpeg uses at *quality* (``cjpeg -quality``, Pillow's ``quality=``).

    Parameters
    ----------
    quality : int
        1-100; 50 is the standard's example table, higher divides by less.
    chroma : bool
        The table for Cb and Cr instead of luminance.

    Returns
    -------
    ndarray of int, shape (8, 8)

    Raises
    ------
    ValueError
        If *quality* is outside 1-100.

    Examples
    --------
    >>> quant_table(50)[0, :4].tolist(), quant_table(90)[0, :4].tolist()
    ([16, 11, 10, 16], [3, 2, 2, 3])
    """
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must be 1-100, got {quality}")
    q = int(quality)
    scale = 5000 // q if q < 50 else 200 - 2 * q
    base = _CHROMA if chroma else _LUMA
    return np.clip((base * scale + 50) // 100, 1, 255)


@public("pcr_explore.jpeg")
def quantize(coefficients: np.ndarray, *, table: np.ndarray) -> np.ndarray:
    """Coefficients divided by the table and rounded (halves away from 0, as libjpeg does).

    Examples
    --------
    >>> int(quantize(np.full((8, 8), 25.0), table=np.full((8, 8), 10))[0, 0])
    3
    """
    x = np.asarray(coefficients, np.float64) / np.asarray(table, np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


@public("pcr_explore.jpeg")
def to_zigzag(block: np.ndarray) -> np.ndarray:
    """An 8x8 block's 64 values in zig-zag order (low frequencies first).

    Examples
    --------
    >>> to_zigzag(np.arange(64).reshape(8, 8))[:6].tolist()
    [0, 1, 8, 16, 9, 2]
    """
    return np.asarray(block).reshape(64)[ZIGZAG]


@public("pcr_explore.jpeg")
def from_zigzag(values: np.ndarray) -> np.ndarray:
    """64 values in zig-zag order laid out as the 8x8 block (the inverse of :func:`to_zigzag`).

    Examples
    --------
    >>> b = np.arange(64).reshape(8, 8)
    >>> bool((from_zigzag(to_zigzag(b)) == b).all())
    True
    """
    v = np.asarray(values)
    out = np.empty(64, v.dtype)
    out[ZIGZAG] = v.reshape(64)
    return out.reshape(8, 8)


@public("pcr_explore.jpeg")
def partial_block(quantized: np.ndarray, *, table: np.ndarray, low_bit: np.ndarray) -> np.ndarray:
    """The pixels a decoder shows for a block when only some coefficient bits have arrived.

    Each coefficient keeps the bits from its top down to ``low_bit`` (one
    component's row of :attr:`ScanCoverage.low_bit`, zig-zag order) and
    reads 0 for the rest, the way libjpeg's progressive scans send them: DC
    by an arithmetic shift, AC by shifting the magnitude. Not-yet-sent
    coefficients (``-1``) are 0.

    Parameters
    ----------
    quantized : ndarray of int, shape (8, 8)
        The stored coefficients (:func:`quantize`).
    table : ndarray, shape (8, 8)
        The quantisation table.
    low_bit : ndarray of int, shape (64,)
        Lowest bit known of each zig-zag coefficient; -1: not sent.

    Returns
    -------
    ndarray of float, shape (8, 8)
        Pixels, not clipped or rounded.

    Examples
    --------
    >>> q = np.zeros((8, 8), np.int64); q[0, 0] = 5; q[0, 1] = -7
    >>> low = np.full(64, -1); low[:3] = [1, 2, 2]
    >>> kept = block_dct(partial_block(q, table=np.ones((8, 8)), low_bit=low))
    >>> round(float(kept[0, 0])), round(float(kept[0, 1]))
    (4, -4)
    """
    q = to_zigzag(np.asarray(quantized, np.int64))
    low = np.asarray(low_bit, np.int64).reshape(64)
    shift = np.maximum(low, 0)
    kept = np.sign(q) * ((np.abs(q) >> shift) << shift)
    kept[0] = (q[0] >> shift[0]) << shift[0]  # DC: arithmetic shift (floor), as libjpeg sends it
    kept[low < 0] = 0
    return block_idct(from_zigzag(kept) * table)


@public("pcr_explore.jpeg")
def tile_blocks(
    blocks: Sequence[np.ndarray],
    *,
    captions: Sequence[str] | None = None,
    scale: int = 12,
    columns: int | None = None,
    signed: bool = False,
) -> Image.Image:
    """8x8 blocks (pixels, coefficients or basis patterns) side by side, enlarged, as a picture.

    Parameters
    ----------
    blocks : sequence of ndarray, shape (8, 8)
        Pixel values (0-255), or signed values with *signed*.
    captions : sequence of str, optional
        One line under each block.
    scale : int
        Screen pixels per block pixel (nearest neighbour: the pixels stay visible).
    columns : int, optional
        Blocks per row (default: all in one row).
    signed : bool
        Draw 0 as mid-grey and each block's largest magnitude as black or
        white (for DCT coefficients and basis patterns).

    Returns
    -------
    PIL.Image.Image
        RGB; a notebook shows it as a picture.

    Examples
    --------
    >>> tile_blocks([np.zeros((8, 8))] * 3, captions=["a", "b", "c"], scale=4).size
    (104, 50)
    """
    cols = columns or max(1, len(blocks))
    rows = -(-len(blocks) // cols)
    side, gap, cap = 8 * scale, 4, 18 if captions else 0
    out = Image.new("RGB", (cols * (side + gap) - gap, rows * (side + gap + cap) - gap), "white")
    draw = ImageDraw.Draw(out)
    font = ImageFont.load_default(size=12)
    for n, b in enumerate(blocks):
        v = np.asarray(b, np.float64)
        if signed:
            top = float(np.abs(v).max()) or 1.0
            v = 127.5 + 127.5 * v / top
        tile = Image.fromarray(np.clip(np.rint(v), 0, 255).astype(np.uint8))
        x, y = (n % cols) * (side + gap), (n // cols) * (side + gap + cap)
        out.paste(tile.resize((side, side), Image.Resampling.NEAREST).convert("RGB"), (x, y))
        if captions:
            draw.text((x + 1, y + side + 2), captions[n], fill="#222222", font=font)
    return out
