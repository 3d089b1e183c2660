"""Synthetic ReLU-like activations with an exact sparsity, and the sparsity of a tensor."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._base import _check_sparsity, nonzero_mask

__all__ = ["bit_sparsity", "synthetic_activations"]


@public("pcr_explore.swap")
def bit_sparsity(array: np.ndarray) -> float:
    """Return the fraction of elements whose bit pattern is all zeros (-0.0 is not zero).

    This is the sparsity every sparse codec sees: a GPU kernel compares bits.

    Parameters
    ----------
    array : ndarray
        A numeric tensor.

    Returns
    -------
    float
        Zeros over elements; 0.0 for an empty tensor.

    Examples
    --------
    >>> bit_sparsity(np.array([0.0, -0.0, 1.0, 0.0], dtype=np.float32))
    0.5
    """
    flat = np.ascontiguousarray(array).reshape(-1)
    return 1.0 - float(np.count_nonzero(nonzero_mask(flat))) / flat.size if flat.size else 0.0


@public("pcr_explore.swap")
def synthetic_activations(
    shape: Sequence[int] = (8, 64, 56, 56),
    *,
    sparsity: float = 0.65,
    correlation: float = 2.0,
    seed: int = 0,
    dtype: str | np.dtype = "float32",
) -> np.ndarray:
    """ReLU-like activations with an exact sparsity and zeros in blobs.

    White noise is smoothed with a Gaussian of ``correlation`` pixels over
    the last two axes (an FFT filter, periodic borders), then the smallest
    ``round(sparsity * n)`` values are set to zero and the rest shifted to
    be positive, as a ReLU after a biased convolution would.

    Parameters
    ----------
    shape : sequence of int
        Tensor shape, NCHW by convention.
    sparsity : float
        Fraction of exact (+0.0) zeros, in [0, 1].
    correlation : float
        Gaussian sigma in pixels; 0 gives i.i.d. zeros.
    seed : int
        Seed of the noise.
    dtype : str or dtype
        A float dtype.

    Returns
    -------
    ndarray
        Non-negative values of ``shape`` and ``dtype``, exactly
        ``round(sparsity * n)`` of them +0.0.

    Raises
    ------
    SwapError
        For a negative dimension, a sparsity outside [0, 1], a negative
        correlation, or a non-float dtype.

    Examples
    --------
    >>> x = synthetic_activations((2, 4, 16, 16), sparsity=0.7)
    >>> round(bit_sparsity(x), 3)
    0.7
    """
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise SwapError(f"shape must have non-negative dimensions, got {shape}")
    _check_sparsity(sparsity)
    if not correlation >= 0:
        raise SwapError(f"correlation must be >= 0, got {correlation}")
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise SwapError(f"dtype must be a float dtype, got {dt}")
    rng = np.random.default_rng(seed)
    field_ = rng.standard_normal(shape, dtype=np.float32)
    n = field_.size
    if n and correlation > 0 and len(shape) >= 1:
        axes = tuple(range(-min(2, len(shape)), 0))
        freqs = [np.fft.fftfreq(shape[a]) for a in axes[:-1]] + [np.fft.rfftfreq(shape[-1])]
        gains = [np.exp(-2.0 * (np.pi * correlation * f) ** 2).astype(np.float32) for f in freqs]
        gain = math.prod(np.ix_(*gains))  # broadcast over the filtered axes
        spec = np.fft.rfftn(field_, axes=axes) * gain
        field_ = np.fft.irfftn(spec, s=[shape[a] for a in axes], axes=axes).astype(np.float32)
        std = field_.std()
        if std > 0:
            field_ /= std
    flat = field_.reshape(-1)
    k = int(round(float(sparsity) * n))
    zero_idx = np.argpartition(flat, k - 1)[:k] if k else np.zeros(0, dtype=np.intp)
    # the k smallest become the zeros; without any, the smallest value sits at the threshold
    thr = flat[zero_idx].max() if k else flat.min(initial=np.inf)
    out = (flat - thr).astype(dt)
    out[out <= 0] = np.finfo(dt).tiny  # ties at the threshold stay non-zero
    out[zero_idx] = 0.0
    return out.reshape(shape)
