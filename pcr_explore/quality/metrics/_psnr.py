"""Peak signal-to-noise ratio."""

from __future__ import annotations

import math

import numpy as np

from ..._public import public
from ._images import pair

__all__ = ["psnr", "psnr_from_mse"]


def psnr_from_mse(mse: float, data_range: float = 255.0) -> float:
    """Return the PSNR in dB of a mean squared error (``inf`` for 0).

    Examples
    --------
    >>> psnr_from_mse(25.0)  # doctest: +ELLIPSIS
    34.15...
    """
    if mse == 0.0:
        return math.inf
    return 10.0 * math.log10(data_range * data_range / mse)


@public("pcr_explore.quality")
def psnr(a: np.ndarray, b: np.ndarray, *, data_range: float = 255.0) -> float:
    """Return the peak signal-to-noise ratio of *b* against the reference *a*, in dB.

    Parameters
    ----------
    a, b : ndarray
        Images of the same shape.
    data_range : float
        Range of the pixel values (255 for uint8).

    Returns
    -------
    float
        ``10 log10(data_range^2 / MSE)``; ``inf`` for identical images.

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> psnr(np.zeros((4, 4)), np.ones((4, 4)))  # doctest: +ELLIPSIS
    48.13...
    >>> psnr(np.zeros((4, 4)), np.zeros((4, 4)))
    inf
    """
    pa, pb = pair(a, b)
    d = pa.astype(np.float64) - pb
    return psnr_from_mse(float(np.mean(d * d)), data_range)
