"""EXIF orientation applied to decoded pixels, for images stored as their camera wrote them.

A JPEG whose EXIF orientation needs a rotation that is not aligned to its
8x8 (or 16x16) blocks cannot be turned losslessly. Such an image is stored
unturned, with its orientation in the record header, and turned here after
decoding, so every image a reader returns is upright and exactly the source's
pixels.
"""

from __future__ import annotations

import numpy as np

from ._progressive import Size, decode

__all__ = ["apply_orientation", "decode_upright", "stored_size", "TRANSPOSED"]

# Orientations whose upright image has width and height swapped.
TRANSPOSED = frozenset({5, 6, 7, 8})
# Whether the rows and the columns are reversed (after the transpose, where there is one)
_FLIPS = {
    1: (False, False),
    2: (False, True),
    3: (True, True),
    4: (True, False),
    5: (False, False),
    6: (False, True),
    7: (True, True),
    8: (True, False),
}


def apply_orientation(arr: np.ndarray, orientation: int) -> np.ndarray:
    """Turn a decoded (H, W[, C]) image upright, as EXIF *orientation* (1-8) says.

    Examples
    --------
    >>> a = np.arange(6).reshape(2, 3)
    >>> apply_orientation(a, 6).tolist()  # stored turned left: turn right
    [[3, 0], [4, 1], [5, 2]]
    >>> apply_orientation(a, 1) is a
    True
    """
    if orientation == 1:
        return arr
    if orientation not in _FLIPS:
        raise ValueError(f"EXIF orientation must be 1-8, got {orientation!r}")
    rows, cols = _FLIPS[orientation]
    out = arr.swapaxes(0, 1) if orientation in TRANSPOSED else arr
    out = out[:: -1 if rows else 1, :: -1 if cols else 1]
    return np.ascontiguousarray(out)


def stored_size(size: Size | None, orientation: int) -> Size | None:
    """The decode size that gives *size* once the image is turned upright.

    A longer-side bound is the same either way; an exact (width, height)
    swaps for the orientations that transpose.
    """
    if isinstance(size, tuple) and orientation in TRANSPOSED:
        return (size[1], size[0])
    return size


def decode_upright(
    data: bytes,
    size: Size | None,
    orientation: int,
    *,
    mode: str | None = None,
    source: str = "<bytes>",
) -> np.ndarray:
    """:func:`~pcr_explore.jpeg.decode` an image stored with *orientation*, and turn it upright.

    *size* is the upright image's size; the DCT-domain scaling happens on the
    stored image.
    """
    arr = decode(data, size=stored_size(size, orientation), mode=mode, source=source)
    return apply_orientation(arr, orientation)
