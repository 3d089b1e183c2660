"""The Gaussian window as banded matrix products, evaluated only where it fits.

SSIM averages its local statistics over the positions where the whole window
lies inside the image (the "valid" region), so the filter computes only those.
A separable Gaussian is applied to each plane of a (P, H, W) stack as small
matrix products with a banded matrix, in float32, with no border work that
would be cropped anyway: 2.4 to 4.8x faster than ``scipy.ndimage``'s
separable filter on the same float32 planes (four runs on a busy 2-core
machine; ``bench/bench_quality.py`` prints the ratio of each run).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = ["BLOCK", "filter_valid", "one_blas_thread", "pool2x2"]

# Block width of the banded products: 32 measured best on the largest scale,
# where most of the time goes (bench/bench_quality.py compares 16, 32 and 64).
BLOCK = 32


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the enclosed code with one BLAS thread, restoring the setting after.

    The window is applied with many small matrix products. A multi-threaded
    BLAS gains little on them and, next to worker processes or other busy
    programs, its spinning threads made a 10-level comparison up to 4x
    slower (measured on 2 cores).

    Yields
    ------
    None

    Examples
    --------
    >>> with one_blas_thread():
    ...     pass
    """
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@lru_cache(maxsize=16)
def _band(radius: int, sigma: float) -> np.ndarray:
    """Return a (BLOCK + 2r, BLOCK) banded matrix: column i holds the window at rows i..i+2r."""
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (x / sigma) ** 2)
    w /= w.sum()
    m = np.zeros((BLOCK + 2 * radius, BLOCK), np.float64)
    for i in range(BLOCK):
        m[i : i + 2 * radius + 1, i] = w
    return m.astype(np.float32)


def filter_valid(stack: np.ndarray, radius: int, sigma: float) -> np.ndarray:
    """Return the Gaussian-weighted local means of each plane of a (P, H, W) stack.

    Parameters
    ----------
    stack : (P, H, W) ndarray of float32
        The planes to filter.
    radius : int
        Half-width of the window (the window is ``2 * radius + 1`` wide); 0
        returns *stack* itself.
    sigma : float
        Standard deviation of the Gaussian, in pixels.

    Returns
    -------
    (P, H - 2r, W - 2r) ndarray of float32
        The means at the positions where the whole window lies inside the plane.

    Examples
    --------
    >>> flat = np.full((1, 16, 16), 3.0, np.float32)
    >>> out = filter_valid(flat, 5, 1.5)
    >>> out.shape, bool(np.allclose(out, 3.0))
    ((1, 6, 6), True)
    """
    if radius == 0:
        return stack
    p, h, w = stack.shape
    hv, wv = h - 2 * radius, w - 2 * radius
    band = _band(radius, sigma)
    rows = np.empty((p, h, wv), np.float32)
    for j in range(0, wv, BLOCK):
        b = min(BLOCK, wv - j)
        np.matmul(
            stack[:, :, j : j + b + 2 * radius],
            band[: b + 2 * radius, :b],
            out=rows[:, :, j : j + b],
        )
    out = np.empty((p, hv, wv), np.float32)
    for i in range(0, hv, BLOCK):
        b = min(BLOCK, hv - i)
        np.matmul(
            band[: b + 2 * radius, :b].T,
            rows[:, i : i + b + 2 * radius, :],
            out=out[:, i : i + b, :],
        )
    return out


def pool2x2(x: np.ndarray) -> np.ndarray:
    """Return the 2x2 block means of a (P, H, W) stack, repeating an odd last row/column.

    Repeating the edge is what the MS-SSIM reference MATLAB code's symmetric
    padding does before it keeps every second pixel.

    Parameters
    ----------
    x : (P, H, W) ndarray

    Returns
    -------
    (P, ceil(H / 2), ceil(W / 2)) ndarray

    Examples
    --------
    >>> pool2x2(np.arange(9.0).reshape(1, 3, 3))
    array([[[2. , 3.5],
            [6.5, 8. ]]])
    """
    if x.shape[1] % 2:
        x = np.concatenate([x, x[:, -1:, :]], axis=1)
    if x.shape[2] % 2:
        x = np.concatenate([x, x[:, :, -1:]], axis=2)
    return 0.25 * (x[:, 0::2, 0::2] + x[:, 1::2, 0::2] + x[:, 0::2, 1::2] + x[:, 1::2, 1::2])
