"""Calibration: fit ``alpha + beta * n + gamma * nnz`` to measured codec times.

:func:`fit_kernel_cost` is the non-negative least-squares fit behind both
:func:`calibrate` (this machine's codecs, timed here) and the simulator's
online predictor. :meth:`Calibration.from_times` fits times measured
elsewhere, for example codec kernels timed on a GPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..codecs import get_codec, measure
from ..codecs._base import Codec, _check_sparsity, nonzero_mask
from ..codecs._byte import iid_sample
from .costs import CodecCost, KernelCost

__all__ = ["fit_kernel_cost", "Calibration", "calibrate", "time_codec"]


def fit_kernel_cost(
    n: np.ndarray | Sequence[float],
    nnz: np.ndarray | Sequence[float],
    seconds: np.ndarray | Sequence[float],
    *,
    nonnegative: bool = True,
) -> KernelCost:
    """Fit ``seconds ~ alpha + beta * n + gamma * nnz`` by least squares.

    With ``nonnegative`` (the default) the coefficients are constrained to
    be >= 0 (``scipy.optimize.nnls``). The constraint is physical (no kernel
    gets faster with more data) and it is what keeps the fit sane when ``n``
    and ``nnz`` are nearly collinear (one sparsity plus noise): an
    unconstrained fit then trades a huge positive ``beta`` against a huge
    negative ``gamma`` and extrapolates wildly as soon as sparsity drifts.
    Columns and times are scaled to at most 1 before solving.

    CSWAP predicts codec time from the tensor size and its sparsity (the
    papers are cited in :mod:`pcr_explore.swap`); their exact predictor is
    not public, and this linear form is ours.

    Parameters
    ----------
    n, nnz, seconds : array_like
        Element counts, non-zero counts and measured seconds (same length,
        at least 1).
    nonnegative : bool
        Constrain ``alpha, beta, gamma >= 0``; otherwise plain least squares.

    Returns
    -------
    KernelCost
        The fitted coefficients.

    Raises
    ------
    SwapError
        If there are no observations, the lengths differ, or a value is
        not finite.

    Examples
    --------
    >>> n = np.array([1e4, 1e5, 1e6, 1e6])
    >>> nnz = np.array([5e3, 2e4, 3e5, 9e5])
    >>> k = fit_kernel_cost(n, nnz, 2e-5 + 1e-10 * n + 3e-10 * nnz)
    >>> round(k.alpha * 1e6, 6), round(k.beta * 1e10, 6), round(k.gamma * 1e10, 6)
    (20.0, 1.0, 3.0)
    """
    n = np.asarray(n, dtype=float).ravel()
    nnz = np.asarray(nnz, dtype=float).ravel()
    y = np.asarray(seconds, dtype=float).ravel()
    if not (n.size == nnz.size == y.size) or n.size == 0:
        raise SwapError("fit_kernel_cost needs equally long, non-empty n, nnz and seconds")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(nnz)) and np.all(np.isfinite(y))):
        raise SwapError("fit_kernel_cost needs finite n, nnz and seconds")
    scale = np.array([1.0, max(n.max(), 1.0), max(nnz.max(), 1.0)])
    a = np.column_stack([np.ones_like(n), n, nnz]) / scale
    y_scale = float(np.abs(y).max()) or 1.0
    if nonnegative:
        from scipy.optimize import nnls  # a 0.6 s import: only when fitting

        coef, _ = nnls(a, y / y_scale)
    else:
        coef, *_ = np.linalg.lstsq(a, y / y_scale, rcond=None)
    coef = coef * y_scale / scale
    return KernelCost(float(coef[0]), float(coef[1]), float(coef[2]))


def _r2(cost: KernelCost, n: np.ndarray, nnz: np.ndarray, y: np.ndarray) -> float:
    pred = cost.alpha + cost.beta * n + cost.gamma * nnz
    ss = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - pred) ** 2).sum()) / ss if ss > 0 else 1.0


@public("pcr_explore.swap")
@dataclass(frozen=True)
class Calibration:
    """Codec times measured on tensors of known size and sparsity, and the fitted cost.

    Parameters
    ----------
    codec : str
        Codec name.
    cost : CodecCost
        Fitted compress and decompress costs; put it in a profile with
        ``profile.with_codec(codec, calibration.cost)``.
    n, nnz : ndarray
        Element and non-zero counts of the measured tensors.
    compress_s, decompress_s : ndarray
        Seconds per tensor (best of the repeats for :func:`calibrate`).
    r2 : tuple of float
        Coefficient of determination of the compress and decompress fits.
    """

    codec: str
    cost: CodecCost
    n: np.ndarray
    nnz: np.ndarray
    compress_s: np.ndarray
    decompress_s: np.ndarray
    r2: tuple[float, float]

    @classmethod
    def from_times(
        cls,
        codec: str | Codec,
        n: np.ndarray | Sequence[float],
        nnz: np.ndarray | Sequence[float],
        compress_s: np.ndarray | Sequence[float],
        decompress_s: np.ndarray | Sequence[float],
    ) -> Calibration:
        """Fit a calibration to times measured elsewhere (a GPU, another machine).

        Parameters
        ----------
        codec : str or Codec
            The codec that was timed.
        n, nnz : array_like
            Element and non-zero counts of the timed tensors (float32).
        compress_s, decompress_s : array_like
            Encode and decode seconds per tensor.

        Returns
        -------
        Calibration
            Both fits by :func:`fit_kernel_cost` and their ``r2``.

        Raises
        ------
        SwapError
            For an unknown codec, or times that do not match the counts.

        Examples
        --------
        >>> n = np.array([1e5, 1e6, 1e6, 4e6])
        >>> nnz = np.array([1e4, 1e5, 7e5, 2e6])
        >>> cal = Calibration.from_times("zvc", n, nnz, 1e-5 + 2e-10 * n, 1e-5 + 1e-10 * nnz)
        >>> round(cal.cost.compress.beta * 1e10, 6), round(cal.cost.decompress.gamma * 1e10, 6)
        (2.0, 1.0)
        >>> [round(r, 9) for r in cal.r2]
        [1.0, 1.0]
        """
        name = get_codec(codec).name
        n_a, nnz_a = np.asarray(n, dtype=float), np.asarray(nnz, dtype=float)
        ce, de = np.asarray(compress_s, dtype=float), np.asarray(decompress_s, dtype=float)
        comp = fit_kernel_cost(n_a, nnz_a, ce)
        dec = fit_kernel_cost(n_a, nnz_a, de)
        r2 = (_r2(comp, n_a, nnz_a, ce), _r2(dec, n_a, nnz_a, de))
        return cls(name, CodecCost(comp, dec), n_a, nnz_a, ce, de, r2)


@public("pcr_explore.swap")
def calibrate(
    codec: str | Codec,
    *,
    sizes: Iterable[int] = (1 << 14, 1 << 16, 1 << 18, 1 << 20),
    sparsities: Sequence[float] = (0.0, 0.3, 0.6, 0.9),
    repeats: int = 3,
    seed: int = 0,
    tensors: Sequence[np.ndarray] | None = None,
) -> Calibration:
    """Time a codec on this machine and fit ``alpha + beta * n + gamma * nnz``.

    By default the tensors are float32 with i.i.d. zeros over ``sizes`` x
    ``sparsities``; with ``tensors`` (real activations, e.g. from
    :func:`~pcr_explore.swap.capture.train_capture.capture_training` with
    ``keep_tensors``) those are timed instead. The result's ``cost`` can go
    into a profile (``profile.with_codec(codec, cal.cost)``) to model a CPU
    offload path with real numbers.

    Parameters
    ----------
    codec : str or Codec
        The codec to time.
    sizes : iterable of int
        Element counts to measure.
    sparsities : sequence of float
        Sparsities to measure at each size, in [0, 1].
    repeats : int
        Repetitions per tensor; the fastest is kept.
    seed : int
        Seed of the tensors.
    tensors : sequence of ndarray, optional
        Time these tensors instead (``sizes`` and ``sparsities`` are then
        ignored); ``n`` and ``nnz`` are counted in float32 equivalents
        (``count * itemsize / 4``), as the cost model reads them.

    Returns
    -------
    Calibration
        One timing per tensor (``len(sizes) * len(sparsities)`` of them by
        default) and their fits.

    Raises
    ------
    SwapError
        For an unknown codec, empty sizes, ``repeats`` < 1 or a sparsity
        outside [0, 1].

    Examples
    --------
    >>> cal = calibrate("bitmap", sizes=(1 << 12, 1 << 14), sparsities=(0.0, 0.5))
    >>> cal.n.tolist(), cal.nnz.tolist()
    ([4096.0, 4096.0, 16384.0, 16384.0], [4096.0, 2048.0, 16384.0, 8192.0])
    """
    c = get_codec(codec)
    if repeats < 1:
        raise SwapError("calibrate needs repeats >= 1")
    if tensors is not None:
        arrays = [np.asarray(t) for t in tensors]
        if not arrays:
            raise SwapError("calibrate was given no tensors")
    else:
        sizes = [int(s) for s in sizes]
        if not sizes or min(sizes) < 1:
            raise SwapError("calibrate needs positive sizes and repeats >= 1")
        _check_sparsity(list(sparsities))
        arrays = [iid_sample(n, s, "float32", seed) for n in sizes for s in sparsities]
    timed = [measure(c, x, repeats=repeats) for x in arrays]
    n_a, nnz_a = np.array([_counts(x) for x in arrays], dtype=float).T
    ce, de = [m.encode_seconds for m in timed], [m.decode_seconds for m in timed]
    return Calibration.from_times(c, n_a, nnz_a, ce, de)


def _counts(x: np.ndarray) -> tuple[float, float]:
    """Elements and bit-pattern non-zeros of *x*, in float32 equivalents."""
    w = x.dtype.itemsize / 4.0
    return x.size * w, int(np.count_nonzero(nonzero_mask(x.reshape(-1)))) * w


def time_codec(codec: str | Codec, x: np.ndarray, repeats: int = 3) -> tuple[float, float]:
    """Best-of-*repeats* encode and decode seconds of *codec* on *x*, on this machine.

    Parameters
    ----------
    codec : str or Codec
    x : ndarray
    repeats : int

    Returns
    -------
    encode_s, decode_s : float

    Examples
    --------
    >>> enc, dec = time_codec("zvc", np.zeros(4096, np.float32))
    >>> enc > 0 and dec > 0
    True
    """
    m = measure(codec, x, repeats=max(1, repeats))
    return m.encode_seconds, m.decode_seconds
