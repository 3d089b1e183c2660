"""Small real photographs for tests: scikit-image's photos, as arrays or JPEG bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from skimage import data

from pcr_explore.jpeg.transcode import find_jpegtran

needs_jpegtran = pytest.mark.skipif(
    find_jpegtran() is None, reason="jpegtran not installed (Debian: libjpeg-turbo-progs)"
)


def jpeg_bytes(arr: np.ndarray | Image.Image, **save_kw: object) -> bytes:
    """Encode an array or image as a baseline JPEG (quality 90 by default)."""
    im = arr if isinstance(arr, Image.Image) else Image.fromarray(arr)
    save_kw.setdefault("quality", 90)
    buf = io.BytesIO()
    im.save(buf, "JPEG", **save_kw)
    return buf.getvalue()


def photo(name: str, size: int | None = None) -> np.ndarray:
    """A scikit-image photo, optionally shrunk so its longer side is *size*."""
    arr = getattr(data, name)()
    if size is not None:
        im = Image.fromarray(arr)
        im.thumbnail((size, size))
        arr = np.asarray(im)
    return arr
