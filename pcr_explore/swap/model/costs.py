"""Codec kernel costs: ``alpha + beta * n + gamma * nnz`` seconds, and the GPU defaults.

A codec kernel's time is modelled as a launch cost plus a cost per element
and a cost per non-zero, for float32 tensors; the simulator scales ``beta``
and ``gamma`` by ``itemsize / 4`` for other dtypes because the kernels are
memory-bound. The default GPU costs are derived from memory traffic at a
fraction of the HBM bandwidth; every such fraction is an assumption, listed
in ``docs/SWAP.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import SwapError

__all__ = ["KernelCost", "CodecCost", "gpu_codec_costs"]


@dataclass(frozen=True)
class KernelCost:
    """Kernel time ``alpha + beta * n + gamma * nnz`` seconds for float32 elements.

    The form is the one CSWAP's predictor uses (the papers are cited in
    :mod:`pcr_explore.swap`); their fitted coefficients are not public.

    Parameters
    ----------
    alpha : float
        Fixed cost per call (kernel launches), seconds.
    beta : float
        Seconds per element.
    gamma : float
        Seconds per non-zero element.

    Raises
    ------
    SwapError
        If a coefficient is not a finite number.

    Examples
    --------
    >>> cost = KernelCost(alpha=1e-5, beta=1e-9, gamma=2e-9)
    >>> round(float(cost.time(1000, 400)) * 1e6, 3)  # microseconds
    11.8
    """

    alpha: float
    beta: float
    gamma: float

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not np.isfinite(v):
                raise SwapError(f"kernel cost {name} must be a finite number, got {v!r}")

    def time(self, n: np.ndarray | float, nnz: np.ndarray | float) -> np.ndarray | float:
        """Predict the seconds for ``n`` elements with ``nnz`` non-zeros.

        Parameters
        ----------
        n, nnz : float or ndarray
            Element and non-zero counts (broadcast together).

        Returns
        -------
        float or ndarray
            Seconds, never negative (a fit with a negative ``alpha`` is
            clipped at zero).
        """
        return np.maximum(
            self.alpha + self.beta * np.asarray(n) + self.gamma * np.asarray(nnz), 0.0
        )


@dataclass(frozen=True)
class CodecCost:
    """Compression and decompression kernel costs of one codec.

    Parameters
    ----------
    compress : KernelCost
        Cost of the encode kernel(s).
    decompress : KernelCost
        Cost of the decode kernel(s).
    """

    compress: KernelCost
    decompress: KernelCost


def gpu_codec_costs(hbm_gbps: float) -> dict[str, CodecCost]:
    """Return default GPU codec kernel costs derived from the memory bandwidth.

    Each kernel is priced as memory traffic at a fraction of the HBM
    bandwidth, plus about 5 us per kernel launch. The fractions are
    assumptions (see ``docs/SWAP.md``): 0.25 for ZVC, whose per-thread
    contiguous chunks (as in the released CSWAP kernels) make accesses
    uncoalesced; 0.5 for warp-cooperative bitmap, CSR, delta8 and RLE
    kernels; 0.15 for cuZFP at rate 16 (as CSwap+ runs it); 0.8 for binarize.

    Parameters
    ----------
    hbm_gbps : float
        Device memory bandwidth, GB/s.

    Returns
    -------
    dict of str to CodecCost
        Keyed by codec name: zvc, bitmap, csr, delta8, rle, zfp, binarize.

    Examples
    --------
    >>> zvc = gpu_codec_costs(900.0)["zvc"].compress
    >>> round(zvc.alpha * 1e6), round(1 / zvc.beta / 1e9, 1)  # us, G elements/s
    (10, 54.5)
    """
    launch = 10e-6  # two kernel launches (count/scan + compact) at ~5 us each
    compact = 0.25  # CSWAP's per-thread contiguous chunks: uncoalesced accesses
    coalesced = 0.5  # warp-cooperative bitmap/scan kernels
    streaming = 0.8  # pure elementwise kernels
    zfp = 0.15  # cuZFP fixed-rate: transform + bit-plane coding is compute-heavy
    # launch cost, share of the HBM bandwidth, bytes moved per element and per non-zero
    kernels = {
        "zvc": (launch, compact, 4.125, 4.0),  # read 4n + write n/8 mask bits; 4 per non-zero
        "bitmap": (launch, coalesced, 4.125, 4.0),
        # values + int32 index per non-zero; decompress zero-fills 4n then scatters
        "csr": (launch, coalesced, 4.0, 8.0),
        "delta8": (1.5 * launch, coalesced, 4.0, 5.0),
        "rle": (1.5 * launch, coalesced, 4.5, 4.0),
        "zfp": (launch, zfp, 6.0, 0.0),  # read 4n, write rate/8 = 2n at rate 16
        "binarize": (launch / 2, streaming, 4.125, 0.0),
    }
    out = {}
    for name, (alpha, share, per_n, per_nnz) in kernels.items():
        bw = share * (hbm_gbps * 1e9)
        cost = KernelCost(alpha, per_n / bw, per_nnz / bw)
        out[name] = CodecCost(cost, cost)  # decompression moves the same bytes the other way
    return out
