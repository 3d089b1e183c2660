"""Cost model: device profiles (link, compute, codec kernel times) and calibration.

Every default number is listed, with its source or marked as an assumption,
in ``docs/SWAP.md``. Codec kernel time is ``alpha + beta * n + gamma * nnz``
for float32 tensors (``n`` elements, ``nnz`` non-zeros); the simulator scales
``beta`` and ``gamma`` by ``itemsize / 4`` for other dtypes because the
kernels are memory-bound.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import SwapError
from ._byte_codecs import iid_sample
from ._codec_base import Codec
from .codecs import get_codec

__all__ = [
    "KernelCost",
    "CodecCost",
    "DeviceProfile",
    "PROFILES",
    "get_profile",
    "profile_names",
    "Calibration",
    "calibrate",
    "fit_kernel_cost",
]


@dataclass(frozen=True)
class KernelCost:
    """Kernel time ``alpha + beta * n + gamma * nnz`` seconds (float32 elements)."""

    alpha: float
    beta: float
    gamma: float

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "gamma"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or not np.isfinite(v):
                raise SwapError(f"kernel cost {name} must be a finite number, got {v!r}")

    def time(self, n: np.ndarray | float, nnz: np.ndarray | float) -> np.ndarray | float:
        """Predicted seconds for ``n`` elements with ``nnz`` non-zeros (never negative)."""
        return np.maximum(
            self.alpha + self.beta * np.asarray(n) + self.gamma * np.asarray(nnz), 0.0
        )


@dataclass(frozen=True)
class CodecCost:
    """Compression and decompression kernel costs of one codec."""

    compress: KernelCost
    decompress: KernelCost


def _bandwidth_cost(
    launch_s: float, hbm: float, eff: float, read_write_n: float, per_nnz: float
) -> KernelCost:
    """Memory-bound kernel: ``read_write_n`` bytes per element and ``per_nnz`` bytes per
    non-zero moved at ``eff`` of the HBM bandwidth ``hbm`` (bytes/s)."""
    bw = eff * hbm
    return KernelCost(launch_s, read_write_n / bw, per_nnz / bw)


def _gpu_codecs(hbm_gbps: float) -> dict[str, CodecCost]:
    """Default GPU codec kernel costs derived from the memory bandwidth (assumptions)."""
    hbm = hbm_gbps * 1e9
    launch = 10e-6  # two kernel launches (count/scan + compact) at ~5 us each
    compact = 0.25  # CSWAP's per-thread contiguous chunks: uncoalesced accesses
    coalesced = 0.5  # warp-cooperative bitmap/scan kernels
    streaming = 0.8  # pure elementwise kernels
    zfp = 0.15  # cuZFP fixed-rate: transform + bit-plane coding is compute-heavy
    return {
        # read 4n + write n/8 mask bits; write 4 per non-zero (decompress mirrors it)
        "zvc": CodecCost(
            _bandwidth_cost(launch, hbm, compact, 4.125, 4.0),
            _bandwidth_cost(launch, hbm, compact, 4.125, 4.0),
        ),
        "bitmap": CodecCost(
            _bandwidth_cost(launch, hbm, coalesced, 4.125, 4.0),
            _bandwidth_cost(launch, hbm, coalesced, 4.125, 4.0),
        ),
        # values + int32 index per non-zero; decompress zero-fills 4n then scatters
        "csr": CodecCost(
            _bandwidth_cost(launch, hbm, coalesced, 4.0, 8.0),
            _bandwidth_cost(launch, hbm, coalesced, 4.0, 8.0),
        ),
        "delta8": CodecCost(
            _bandwidth_cost(1.5 * launch, hbm, coalesced, 4.0, 5.0),
            _bandwidth_cost(1.5 * launch, hbm, coalesced, 4.0, 5.0),
        ),
        "rle": CodecCost(
            _bandwidth_cost(1.5 * launch, hbm, coalesced, 4.5, 4.0),
            _bandwidth_cost(1.5 * launch, hbm, coalesced, 4.5, 4.0),
        ),
        "zfp": CodecCost(
            _bandwidth_cost(launch, hbm, zfp, 6.0, 0.0),  # read 4n, write rate/8 = 2n at rate 16
            _bandwidth_cost(launch, hbm, zfp, 6.0, 0.0),
        ),
        "binarize": CodecCost(
            _bandwidth_cost(launch / 2, hbm, streaming, 4.125, 0.0),
            _bandwidth_cost(launch / 2, hbm, streaming, 4.125, 0.0),
        ),
    }


@dataclass(frozen=True)
class DeviceProfile:
    """A GPU and its host link, as the simulator prices them.

    Frozen so a profile can be shared safely; edit with :meth:`replace` or
    :meth:`with_codec`.

    Attributes
    ----------
    name : str
    link_gbps : float
        Theoretical link bandwidth per direction, GB/s (1e9 bytes/s).
    link_efficiency : float
        Fraction of ``link_gbps`` a pinned-memory copy reaches.
    link_latency_s : float
        Fixed cost per copy (launch + DMA setup), seconds.
    peak_flops : float
        FP32 peak FLOP/s (no tensor cores).
    compute_efficiency : float
        Fraction of ``peak_flops`` that convolution/GEMM layers reach.
    hbm_gbps : float
        Device memory bandwidth, GB/s; prices memory-bound layers.
    memory_efficiency : float
        Fraction of ``hbm_gbps`` that memory-bound layers reach.
    codecs : mapping of str to CodecCost
        Kernel costs of the codecs this device can run.
    notes : str
        Where the numbers come from.
    """

    name: str
    link_gbps: float
    peak_flops: float
    hbm_gbps: float
    link_efficiency: float = 0.8
    link_latency_s: float = 10e-6
    compute_efficiency: float = 0.6
    memory_efficiency: float = 0.7
    codecs: Mapping[str, CodecCost] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        for attr in ("link_gbps", "peak_flops", "hbm_gbps"):
            v = getattr(self, attr)
            if not isinstance(v, int | float) or not v > 0:
                raise SwapError(f"profile {self.name!r}: {attr} must be > 0, got {v!r}")
        for attr in ("link_efficiency", "compute_efficiency", "memory_efficiency"):
            v = getattr(self, attr)
            if not isinstance(v, int | float) or not 0 < v <= 1:
                raise SwapError(f"profile {self.name!r}: {attr} must lie in (0, 1], got {v!r}")
        if not self.link_latency_s >= 0:
            raise SwapError(f"profile {self.name!r}: link_latency_s must be >= 0")
        for key, cost in self.codecs.items():
            if not isinstance(cost, CodecCost):
                raise SwapError(f"profile {self.name!r}: codec {key!r} needs a CodecCost")
        object.__setattr__(self, "codecs", MappingProxyType(dict(self.codecs)))

    @property
    def link_bytes_per_s(self) -> float:
        """Effective link bandwidth, bytes/s (infinite stays infinite)."""
        return self.link_gbps * 1e9 * self.link_efficiency

    def transfer_time(self, nbytes: np.ndarray | float) -> np.ndarray | float:
        """Seconds to copy ``nbytes`` one way (0 bytes cost nothing)."""
        nb = np.asarray(nbytes, dtype=float)
        return np.where(nb > 0, self.link_latency_s + nb / self.link_bytes_per_s, 0.0)

    def compute_time(self, flops: np.ndarray | float, mem_bytes: np.ndarray | float = 0.0):
        """Seconds for a layer of ``flops`` FLOPs moving ``mem_bytes`` device-memory bytes."""
        return np.asarray(flops, dtype=float) / (self.peak_flops * self.compute_efficiency) + (
            np.asarray(mem_bytes, dtype=float) / (self.hbm_gbps * 1e9 * self.memory_efficiency)
        )

    def replace(self, **changes: Any) -> DeviceProfile:
        """A copy with some fields changed (``profile.replace(link_gbps=float('inf'))``)."""
        return replace(self, **changes)

    def with_codec(self, codec: str | Codec, cost: CodecCost | None) -> DeviceProfile:
        """A copy with a codec's cost set (or removed when ``cost`` is None)."""
        name = get_codec(codec).name
        codecs = dict(self.codecs)
        if cost is None:
            codecs.pop(name, None)
        else:
            codecs[name] = cost
        return replace(self, codecs=codecs)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{k}</td><td>{c.compress.alpha * 1e6:.1f}</td>"
            f"<td>{1 / (c.compress.beta * 1e9) if c.compress.beta else float('inf'):.1f}</td></tr>"
            for k, c in self.codecs.items()
        )
        return (
            f"<b>{self.name}</b>: link {self.link_gbps:g} GB/s x {self.link_efficiency:g}, "
            f"{self.peak_flops / 1e12:g} TFLOP/s x {self.compute_efficiency:g}, HBM "
            f"{self.hbm_gbps:g} GB/s<table><tr><th>codec</th><th>alpha us</th>"
            f"<th>G elem/s</th></tr>{rows}</table>"
        )


def _gpu_profile(name: str, link: float, tflops: float, hbm: float, notes: str) -> DeviceProfile:
    return DeviceProfile(
        name=name,
        link_gbps=link,
        peak_flops=tflops * 1e12,
        hbm_gbps=hbm,
        codecs=_gpu_codecs(hbm),
        notes=notes,
    )


#: Built-in profiles; see docs/SWAP.md for the source of every number.
PROFILES: Mapping[str, DeviceProfile] = MappingProxyType(
    {
        "v100-pcie3": _gpu_profile(
            "v100-pcie3",
            15.75,
            15.7,
            900.0,
            "V100 SXM2: 15.7 TFLOP/s FP32, 900 GB/s HBM2; PCIe 3.0 x16 per direction",
        ),
        "a100-pcie4": _gpu_profile(
            "a100-pcie4",
            31.5,
            19.5,
            1555.0,
            "A100 40GB: 19.5 TFLOP/s FP32 (no TF32), 1555 GB/s HBM2; PCIe 4.0 x16",
        ),
        "h100-pcie5": _gpu_profile(
            "h100-pcie5",
            63.0,
            51.0,
            2000.0,
            "H100 PCIe: 51 TFLOP/s FP32, 2000 GB/s HBM2e; PCIe 5.0 x16",
        ),
    }
)


def profile_names() -> list[str]:
    """Names of the built-in profiles."""
    return list(PROFILES)


def get_profile(name: str | DeviceProfile) -> DeviceProfile:
    """A built-in profile by name (a profile is returned unchanged).

    Raises
    ------
    SwapError
        For an unknown name.
    """
    if isinstance(name, DeviceProfile):
        return name
    try:
        return PROFILES[str(name).lower()]
    except KeyError:
        raise SwapError(f"unknown profile {name!r}; built-in: {', '.join(PROFILES)}") from None


def fit_kernel_cost(
    n: np.ndarray, nnz: np.ndarray, seconds: np.ndarray, *, nonnegative: bool = True
) -> KernelCost:
    """Least-squares fit of ``seconds ~ alpha + beta * n + gamma * nnz``.

    With ``nonnegative`` (the default) the coefficients are constrained to be
    >= 0, solved exactly by trying every subset of the three terms. The
    constraint is physical (no kernel gets faster with more data) and it is
    what keeps the fit sane when ``n`` and ``nnz`` are nearly collinear (one
    sparsity plus noise): an unconstrained fit then trades a huge positive
    ``beta`` against a huge negative ``gamma`` and extrapolates wildly as
    soon as sparsity drifts. Columns are scaled before solving.

    Parameters
    ----------
    n, nnz, seconds : array_like
        Observations (same length, at least 1).
    nonnegative : bool
        Constrain ``alpha, beta, gamma >= 0``.

    Returns
    -------
    KernelCost

    Raises
    ------
    SwapError
        If there are no observations or the lengths differ.
    """
    n = np.asarray(n, dtype=float).ravel()
    nnz = np.asarray(nnz, dtype=float).ravel()
    y = np.asarray(seconds, dtype=float).ravel()
    if not (n.size == nnz.size == y.size) or n.size == 0:
        raise SwapError("fit_kernel_cost needs equally long, non-empty n, nnz and seconds")
    scale = np.array([1.0, max(n.max(), 1.0), max(nnz.max(), 1.0)])
    a = np.column_stack([np.ones_like(n), n, nnz]) / scale
    if not nonnegative:
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    else:
        # 3 unknowns: solve the normal equations of every support subset in plain
        # floats (microseconds each; the simulator refits often) and keep the best
        # feasible one, which is the exact non-negative least-squares solution.
        gram = (a.T @ a).tolist()
        rhs = (a.T @ y).tolist()
        coef, best = np.zeros(3), float(y @ y)
        for cols in _SUBSETS:
            c = _solve_small([[gram[i][j] for j in cols] for i in cols], [rhs[i] for i in cols])
            if c is None or min(c) < 0:
                continue
            # residual = y.y - 2 c.b + c.G.c = y.y - c.b at the subset's normal solution
            r = float(y @ y) - sum(ci * rhs[i] for ci, i in zip(c, cols, strict=True))
            if r < best - 1e-12 * abs(best):
                best, coef = r, np.zeros(3)
                coef[list(cols)] = c
    coef = coef / scale
    return KernelCost(float(coef[0]), float(coef[1]), float(coef[2]))


def _solve_small(g: list[list[float]], b: list[float]) -> list[float] | None:
    """Solve a 1x1, 2x2 or 3x3 symmetric system by Cramer's rule; None if near-singular."""
    k = len(b)
    diag = 1.0
    for i in range(k):
        diag *= g[i][i]
    if k == 1:
        return [b[0] / g[0][0]] if g[0][0] > 0 else None
    if k == 2:
        det = g[0][0] * g[1][1] - g[0][1] * g[1][0]
        if not abs(det) > 1e-10 * abs(diag):
            return None
        return [(b[0] * g[1][1] - g[0][1] * b[1]) / det, (g[0][0] * b[1] - b[0] * g[1][0]) / det]

    def det3(m: list[list[float]]) -> float:
        return (
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        )

    det = det3(g)
    if not abs(det) > 1e-10 * abs(diag):
        return None
    out = []
    for col in range(3):
        m = [[b[r] if c == col else g[r][c] for c in range(3)] for r in range(3)]
        out.append(det3(m) / det)
    return out


_SUBSETS = [(0, 1, 2), (0, 1), (0, 2), (1, 2), (0,), (1,), (2,)]


@dataclass(frozen=True)
class Calibration:
    """Codec times measured on this machine and the fitted cost.

    Attributes
    ----------
    codec : str
    cost : CodecCost
    n, nnz : ndarray
        Element and non-zero counts of the measured tensors.
    compress_s, decompress_s : ndarray
        Best-of-repeats seconds per tensor.
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


def _r2(cost: KernelCost, n, nnz, y) -> float:
    pred = cost.alpha + cost.beta * n + cost.gamma * nnz
    ss = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - pred) ** 2).sum()) / ss if ss > 0 else 1.0


def calibrate(
    codec: str | Codec,
    *,
    sizes: Iterable[int] = (1 << 14, 1 << 16, 1 << 18, 1 << 20),
    sparsities: Sequence[float] = (0.0, 0.3, 0.6, 0.9),
    repeats: int = 3,
    seed: int = 0,
) -> Calibration:
    """Measure a codec on this machine and fit ``alpha + beta * n + gamma * nnz``.

    Tensors are float32 with i.i.d. zeros. The result's ``cost`` can go into
    a profile (``profile.with_codec(codec, cal.cost)``) to model a CPU
    offload path with real numbers.

    Parameters
    ----------
    codec : str or Codec
    sizes : iterable of int
        Element counts to measure.
    sparsities : sequence of float
    repeats : int
        Repetitions per tensor; the fastest is kept.
    seed : int

    Returns
    -------
    Calibration

    Raises
    ------
    SwapError
        For an unknown codec, empty sizes, or bad sparsities.
    """
    c = get_codec(codec)
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 1 or repeats < 1:
        raise SwapError("calibrate needs positive sizes and repeats >= 1")
    rows = []
    for n in sizes:
        for s in sparsities:
            if not 0 <= s <= 1:
                raise SwapError(f"sparsity must lie in [0, 1], got {s}")
            x = iid_sample(n, s, "float32", seed)
            nnz = int(np.count_nonzero(x))
            enc_t = dec_t = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                enc = c.encode(x)
                t1 = time.perf_counter()
                c.decode(enc)
                t2 = time.perf_counter()
                enc_t, dec_t = min(enc_t, t1 - t0), min(dec_t, t2 - t1)
            rows.append((n, nnz, enc_t, dec_t))
    arr = np.array(rows, dtype=float)
    n_a, nnz_a, ce, de = arr.T
    comp = fit_kernel_cost(n_a, nnz_a, ce)
    dec = fit_kernel_cost(n_a, nnz_a, de)
    return Calibration(
        c.name,
        CodecCost(comp, dec),
        n_a,
        nnz_a,
        ce,
        de,
        (_r2(comp, n_a, nnz_a, ce), _r2(dec, n_a, nnz_a, de)),
    )
