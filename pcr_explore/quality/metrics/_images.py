"""Images as channel planes, and the shape check every pairwise metric makes."""

from __future__ import annotations

import numpy as np

__all__ = ["as_planes", "pair"]


def as_planes(a: np.ndarray) -> np.ndarray:
    """Return an (H, W) or (H, W, C) image as a (C, H, W) view.

    Raises
    ------
    ValueError
        If *a* has neither 2 nor 3 dimensions.
    """
    a = np.asarray(a)
    if a.ndim == 2:
        return a[None]
    if a.ndim == 3:
        return np.moveaxis(a, -1, 0)
    raise ValueError(f"expected an (H, W) or (H, W, C) image, got shape {a.shape}")


def pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return two images as (C, H, W) planes, checking that their shapes agree.

    Raises
    ------
    ValueError
        If the shapes differ.
    """
    pa, pb = as_planes(a), as_planes(b)
    if pa.shape != pb.shape:
        raise ValueError(f"images differ in shape: {np.shape(a)} vs {np.shape(b)}")
    return pa, pb
