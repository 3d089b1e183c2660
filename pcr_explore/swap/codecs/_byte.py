"""General-purpose byte codecs (LZ4, Zstandard) as the CPU-side reference."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._base import Codec, Encoded, Parts, SizeModel, nonzero_share

__all__ = ["LZ4", "Zstd", "iid_sample"]

_SAMPLE = 1 << 16


def iid_sample(n: int, sparsity: float, dtype: np.dtype | str = "float32", seed: int = 0):
    """ReLU-like values with exactly ``round(n * sparsity)`` zeros at i.i.d. positions."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = np.abs(rng.standard_normal(n)).astype(dt) + dt.type(np.finfo(dt).tiny)
    else:
        x = rng.integers(1, min(np.iinfo(dt).max, 1 << 30), size=n).astype(dt)
    zeros = rng.permutation(n)[: int(round(n * sparsity))]
    x[zeros] = 0
    return x


@functools.lru_cache(maxsize=4096)
def _sampled_cost(codec: Codec, sparsity: float, itemsize: int) -> tuple[float, float]:
    """(fixed bytes, bytes per element) of ``codec`` on an i.i.d. sample."""
    dtype = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}[itemsize]
    fixed = codec.encode(np.zeros(0, dtype=dtype)).nbytes
    enc = codec.encode(iid_sample(_SAMPLE, sparsity, dtype))
    return float(fixed), (enc.nbytes - fixed) / _SAMPLE


class _ByteCodec(Codec):
    size_model: ClassVar[SizeModel] = "sampled"

    def _compress(self, data: memoryview) -> bytes:
        raise NotImplementedError

    def _decompress(self, data: bytes, size: int) -> bytes:
        raise NotImplementedError

    def _encode(self, arr: np.ndarray) -> Parts:
        data = memoryview(arr.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
        return {"stream": self._compress(data)}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        stream = self._stream(encoded)
        try:
            raw = self._decompress(stream, encoded.raw_nbytes)
        except Exception as exc:  # the C libraries raise their own error types
            raise SwapError(f"{self.name}: corrupt stream ({exc})") from exc
        if len(raw) != encoded.raw_nbytes:
            raise SwapError(
                f"{self.name}: corrupt stream: {len(raw)} bytes, expected {encoded.raw_nbytes}"
            )
        return np.frombuffer(raw, dtype=encoded.dtype).reshape(encoded.shape).copy()

    def _size(self, n, nnz, itemsize, shape):
        n, _, p = nonzero_share(n, nnz)
        flat_s, flat_n = np.broadcast_arrays(np.where(n > 0, 1.0 - p, 0.0), n)
        keys, where = np.unique(np.round(flat_s, 3), return_inverse=True)
        cost = np.array([_sampled_cost(self, float(v), itemsize) for v in keys]).reshape(-1, 2)
        fixed, per = np.moveaxis(cost[where.reshape(flat_s.shape)], -1, 0)
        return np.where(flat_n > 0, fixed + per * flat_n, fixed)


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class LZ4(_ByteCodec):
    """LZ4 block compression of the tensor's bytes (``lz4.block``).

    Parameters
    ----------
    acceleration : int
        LZ4 fast-mode acceleration (1 = default ratio, higher = faster).
    """

    spec: ClassVar[str] = "lz4"
    acceleration: int = 1

    def _compress(self, data: memoryview) -> bytes:
        import lz4.block

        return lz4.block.compress(
            data, mode="fast", acceleration=self.acceleration, store_size=False
        )

    def _decompress(self, data: bytes, size: int) -> bytes:
        import lz4.block

        if size == 0:
            return b""
        return lz4.block.decompress(data, uncompressed_size=size)


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class Zstd(_ByteCodec):
    """Zstandard compression of the tensor's bytes, single-threaded.

    Parameters
    ----------
    level : int
        Compression level, 1 (fast) to 22 (small); default 3.
    """

    spec: ClassVar[str] = "zstd"
    param_range: ClassVar[tuple[int, int | None]] = (-7, 22)
    level: int = 3

    def _compress(self, data: memoryview) -> bytes:
        import zstandard

        return zstandard.ZstdCompressor(level=self.level).compress(data)

    def _decompress(self, data: bytes, size: int) -> bytes:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
