"""Compression ratios of codecs against sparsity, analytic and measured."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._base import Codec
from ._registry import get_codec
from .activations import synthetic_activations

__all__ = ["ratio_curve", "measure_ratios", "measured_ratio_curve"]


@public("pcr_explore.swap")
def ratio_curve(
    codecs: Iterable[str | Codec],
    *,
    sparsities: Sequence[float] | np.ndarray,
    n: int = 1 << 24,
    itemsize: int = 4,
    shape: tuple[int, ...] | None = None,
) -> dict[str, np.ndarray]:
    """Analytic compression ratio of each codec over a range of sparsities.

    Parameters
    ----------
    codecs : iterable of str or Codec
        Codec specs or codecs.
    sparsities : sequence of float
        Values in [0, 1].
    n : int
        Elements per tensor (default 16 Mi, a 64 MiB float32 tensor).
    itemsize : int
        Bytes per element.
    shape : tuple of int, optional
        For shape-dependent codecs (CSR rows, ZFP blocks).

    Returns
    -------
    dict of str to ndarray
        ``raw bytes / encoded bytes`` per codec name, one value per sparsity.

    Raises
    ------
    SwapError
        For an unknown codec, negative ``n`` or a sparsity outside [0, 1].

    Examples
    --------
    >>> ratio_curve(["zvc"], sparsities=[0.5, 0.7, 0.9])["zvc"].round(2).tolist()
    [1.88, 3.01, 7.56]
    """
    s = np.asarray(sparsities, dtype=float)
    if n < 0:
        raise SwapError(f"n must be >= 0, got {n}")
    out: dict[str, np.ndarray] = {}
    for c in codecs:
        codec = get_codec(c)
        size = np.asarray(codec.encoded_size(n, s, itemsize=itemsize, shape=shape), dtype=float)
        with np.errstate(divide="ignore"):
            out[codec.name] = np.where(size > 0, n * itemsize / np.maximum(size, 1e-300), np.inf)
    return out


@public("pcr_explore.swap")
def measure_ratios(
    codecs: Iterable[str | Codec],
    *,
    sparsity: float,
    shape: Sequence[int] = (4, 32, 32, 32),
    seed: int = 0,
    correlation: float = 2.0,
) -> dict[str, float]:
    """Measured compression ratio of each codec on one synthetic activation tensor.

    Parameters
    ----------
    codecs : iterable of str or Codec
        Codec specs or codecs.
    sparsity : float
        Fraction of exact zeros, in [0, 1].
    shape : sequence of int
        NCHW shape of the tensor (default 128 Ki float32 elements: fast).
    seed : int
        Seed of the tensor.
    correlation : float
        Blob size in pixels (see
        :func:`~pcr_explore.swap.codecs.activations.synthetic_activations`).

    Returns
    -------
    dict of str to float
        ``raw bytes / encoded bytes`` per codec name.

    Raises
    ------
    SwapError
        For an unknown codec, a bad shape or a sparsity outside [0, 1].

    Examples
    --------
    >>> r = measure_ratios(["bitmap", "binarize"], sparsity=0.5, shape=(1, 4, 32, 32))
    >>> round(r["bitmap"], 3), r["binarize"]
    (1.882, 32.0)
    """
    x = synthetic_activations(shape, sparsity=sparsity, correlation=correlation, seed=seed)
    return {codec.name: codec.encode(x).ratio for codec in map(get_codec, codecs)}


def measured_ratio_curve(
    codecs: Iterable[str | Codec],
    sparsities: Sequence[float],
    shape: Sequence[int] = (4, 32, 32, 32),
    seed: int = 0,
    *,
    correlation: float = 2.0,
) -> dict[str, np.ndarray]:
    """Measure each codec's compression ratio at several sparsities.

    One synthetic activation tensor per sparsity (same shape and seed) is
    encoded by every codec, as :func:`measure_ratios` does.

    Parameters
    ----------
    sparsities : sequence of float
        Values in [0, 1].
    codecs, shape, seed, correlation
        As for :func:`measure_ratios`.

    Returns
    -------
    dict of str to ndarray
        Measured ratio per codec name, one value per sparsity; empty when
        there are no codecs or no sparsities.

    Raises
    ------
    SwapError
        For an unknown codec, a bad shape or a sparsity outside [0, 1].

    Examples
    --------
    >>> c = measured_ratio_curve(["bitmap"], [0.5, 0.9], shape=(1, 4, 32, 32))
    >>> c["bitmap"].round(2).tolist()
    [1.88, 7.61]
    """
    codecs = list(codecs)
    rows = [
        measure_ratios(codecs, sparsity=s, shape=shape, seed=seed, correlation=correlation)
        for s in sparsities
    ]
    return {c: np.array([r[c] for r in rows]) for c in rows[0]} if rows else {}
