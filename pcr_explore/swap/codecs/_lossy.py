"""Lossy codecs: ZFP fixed-rate (optional ``zfpy``) and 1-bit binarize."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._base import Codec, Encoded, Parts

__all__ = ["ZFP", "Binarize", "zfp_available"]

# zfp stream header written by zfpy: 32-bit magic + 52-bit field meta + 12-bit mode.
_ZFP_HEADER_BITS = 96


@public("pcr_explore.swap.codecs")
def zfp_available() -> bool:
    """Tell whether ``zfpy`` can be imported (the ``[zfp]`` extra).

    Returns
    -------
    bool
        True when the ``zfp`` codec can run.
    """
    try:
        import zfpy  # noqa: F401
    except ImportError:
        return False
    return True


def _zfp_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shape handed to zfp: at most 3-D (cuZFP's limit), keeping the last two axes."""
    if len(shape) <= 1:
        return (math.prod(shape),)
    if len(shape) == 2:
        return tuple(shape)
    return (math.prod(shape[:-2]), shape[-2], shape[-1])


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class ZFP(Codec):
    """ZFP fixed-rate compression (lossy), as in the CSWAP journal version.

    The tensor is viewed as at most 3-D (``(N*C, H, W)`` for NCHW) and coded
    in 4^d blocks at ``rate`` bits per value; float16 is coded as float32.
    ``bytes = 8 * ceil((96 + blocks * 4^d * rate) / 64)``. Non-finite values
    are rejected (zfp does not preserve them).

    Parameters
    ----------
    rate : int
        Bits per value, 4 to 32 (float32) or 64 (float64). Default 16.
        zfpy 1.0 corrupts memory below 3 bits per value for 1-D arrays, and
        the CSWAP authors report training diverging at rate 4 anyway.

    References
    ----------
    .. [1] P. Chen et al., "Accelerating tensor swapping in GPUs with
       self-tuning compression," IEEE Transactions on Parallel and
       Distributed Systems 33(12), 2022 (adds fixed-rate ZFP for dense
       tensors to CSWAP, IEEE CLUSTER 2021).
    """

    spec: ClassVar[str] = "zfp"
    param_range: ClassVar[tuple[int, int | None]] = (4, 64)
    lossless: ClassVar[bool] = False
    shape_dependent: ClassVar[bool] = True
    rate: int = 16

    def _encode(self, arr: np.ndarray) -> Parts:
        if arr.dtype.kind != "f":
            raise SwapError(f"{self.name}: takes float tensors, got {arr.dtype}")
        work = arr.astype(np.float32) if arr.dtype.itemsize < 4 else arr
        if self.rate > 8 * work.dtype.itemsize:
            raise SwapError(f"{self.name}: rate {self.rate} exceeds the bits of {arr.dtype}")
        if arr.size == 0:
            return {"stream": b""}  # zfpy crashes on empty arrays
        if not np.all(np.isfinite(work)):
            raise SwapError(f"{self.name}: cannot encode NaN or infinite values")
        import zfpy  # a missing one raises MissingExtraError naming the [zfp] extra

        stream = zfpy.compress_numpy(work.reshape(_zfp_shape(arr.shape)), rate=self.rate)
        return {"stream": bytes(stream)}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        stream = self._stream(encoded)
        if encoded.n == 0:
            return np.zeros(encoded.shape, dtype=encoded.dtype)
        import zfpy

        if len(stream) * 8 < _ZFP_HEADER_BITS:
            raise SwapError(f"{self.name}: corrupt stream ({len(stream)} bytes)")
        out = zfpy.decompress_numpy(stream)
        if out.size != encoded.n:
            raise SwapError(f"{self.name}: corrupt stream: {out.size} values, expected {encoded.n}")
        return out.reshape(encoded.shape).astype(encoded.dtype, copy=False)

    def _size(self, n, nnz, itemsize, shape):
        n = np.asarray(n)
        if shape is not None:
            zshape = _zfp_shape(tuple(shape))
            blocks = math.prod(-(-d // 4) for d in zshape)
            values = blocks * 4 ** len(zshape)
            bits = _ZFP_HEADER_BITS + values * self.rate
            size = 0 if math.prod(shape) == 0 else 8 * (-(-bits // 64))
            return np.full(np.shape(n), size)
        bits = _ZFP_HEADER_BITS + 4 * ((n + 3) // 4) * self.rate
        return np.where(n > 0, 8 * ((bits + 63) // 64), 0)


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class Binarize(Codec):
    """One bit per element: ``x > 0``.

    For a ReLU whose output feeds only a max-pool, the backward pass needs
    only where the ReLU was positive (Gist's Binarize), so this loses nothing
    that training uses even though the decoded values (1 where positive, 0
    elsewhere) differ from the activations. ``bytes = ceil(n / 8)``.
    """

    spec: ClassVar[str] = "binarize"
    lossless: ClassVar[bool] = False

    def _encode(self, arr: np.ndarray) -> Parts:
        bits = np.packbits(arr.reshape(-1) > 0, bitorder="little")
        return {"bits": bits}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        bits = encoded.parts.get("bits")
        if not isinstance(bits, np.ndarray) or bits.size != (encoded.n + 7) // 8:
            raise SwapError(f"binarize: corrupt data for {encoded.n} elements")
        mask = np.unpackbits(bits, count=encoded.n, bitorder="little")
        return mask.astype(encoded.dtype).reshape(encoded.shape)

    def _size(self, n, nnz, itemsize, shape):
        return (np.asarray(n) + 7) // 8
