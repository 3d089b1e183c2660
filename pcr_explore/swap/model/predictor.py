"""Online prediction of codec kernel times from the times observed so far.

CSWAP fits its predictor of codec time during the first iterations and
refits it as sparsity drifts. :class:`KernelTimePredictor` keeps, per codec,
every observed (elements, non-zeros, seconds) triple and fits
``alpha + beta * n + gamma * nnz`` to them by non-negative least squares
(:func:`~pcr_explore.swap.model.calibration.fit_kernel_cost`). It never reads the
device profile's coefficients.
"""

from __future__ import annotations

import numpy as np

from ...errors import SwapError
from .calibration import fit_kernel_cost
from .costs import KernelCost

__all__ = ["KernelTimePredictor"]


class KernelTimePredictor:
    """Per-option predictors of compress and decompress time, fitted online.

    Options are indexed ``0 .. n_options - 1``; option 0 is "raw" (no
    kernel), predicted at 0 s. An option never observed is predicted at
    infinity, so a policy never picks it.

    Parameters
    ----------
    n_options : int
        Number of options, raw included.
    n : ndarray, shape (tensors,)
        Element counts, in float32 equivalents (``n * itemsize / 4``).
    nnz : ndarray, shape (iterations, tensors)
        Non-zero counts per iteration, in float32 equivalents.

    Raises
    ------
    SwapError
        If the shapes disagree.

    Examples
    --------
    >>> n = np.array([1e5, 1e6])
    >>> nnz = np.array([[3e4, 4e5]])
    >>> p = KernelTimePredictor(2, n, nnz)
    >>> times = np.array([[0.0, 0.0], [1e-5 + 1e-9 * 1e5, 1e-5 + 1e-9 * 1e6]])
    >>> p.observe(0, np.array([1, 1]), times, times)
    >>> p.refit()
    >>> tc, td = p.predict(0)
    >>> (tc[1] * 1e6).round(3).tolist(), tc[0].tolist()
    ([110.0, 1010.0], [0.0, 0.0])
    """

    def __init__(self, n_options: int, n: np.ndarray, nnz: np.ndarray) -> None:
        self.n = np.asarray(n, dtype=float)
        self.nnz = np.asarray(nnz, dtype=float)
        if self.nnz.ndim != 2 or self.nnz.shape[1] != self.n.size or n_options < 1:
            raise SwapError(
                f"predictor needs nnz of shape (iterations, {self.n.size}), "
                f"got {self.nnz.shape}, and at least one option"
            )
        self.n_options = int(n_options)
        self._obs: dict[int, list[np.ndarray]] = {}
        self.fits: dict[int, tuple[KernelCost, KernelCost]] = {}

    def observe(
        self, k: int, choice: np.ndarray, compress_s: np.ndarray, decompress_s: np.ndarray
    ) -> None:
        """Record the times of the options chosen at iteration ``k``.

        Parameters
        ----------
        k : int
            Iteration whose non-zero counts apply.
        choice : ndarray of int, shape (tensors,)
            Option chosen per tensor; raw (0) records nothing.
        compress_s, decompress_s : ndarray, shape (n_options, tensors)
            Observed seconds of every option for every tensor; only the
            chosen entries are read.
        """
        for o in np.unique(choice):
            if o == 0:
                continue
            t = np.flatnonzero(choice == o)
            rows = np.column_stack(
                [self.n[t], self.nnz[k, t], compress_s[o, t], decompress_s[o, t]]
            )
            self._obs.setdefault(int(o), []).append(rows)

    def refit(self) -> None:
        """Fit every observed option's compress and decompress cost to all its observations."""
        for o, chunks in self._obs.items():
            rows = np.concatenate(chunks)
            self.fits[o] = (
                fit_kernel_cost(rows[:, 0], rows[:, 1], rows[:, 2]),
                fit_kernel_cost(rows[:, 0], rows[:, 1], rows[:, 3]),
            )

    def predict(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Predict every option's times for every tensor at iteration ``k``.

        Parameters
        ----------
        k : int
            Iteration whose non-zero counts to use.

        Returns
        -------
        compress, decompress : ndarray, shape (n_options, tensors)
            Seconds; 0 for raw, infinity for options not fitted yet.
        """
        shape = (self.n_options, self.n.size)
        tc = np.full(shape, np.inf)
        td = np.full(shape, np.inf)
        tc[0] = td[0] = 0.0
        for o, (fc, fd) in self.fits.items():
            tc[o] = fc.time(self.n, self.nnz[k])
            td[o] = fd.time(self.n, self.nnz[k])
        return tc, td
