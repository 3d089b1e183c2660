"""Lossless sparse codecs: ZVC (CSWAP layout), bitmap, CSR, 8-bit delta index, zero RLE.

All of them treat an element as zero only when its bit pattern is all zeros
(+0.0 for floats), so -0.0, NaN payloads and denormals survive bit-exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._base import Codec, Encoded, Parts, SizeModel, bit_view, nonzero_mask, nonzero_share

__all__ = ["ZVC", "Bitmap", "CSR", "Delta8", "ZeroRLE"]

_BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount32(words: np.ndarray) -> np.ndarray:
    """Set bits of each uint32 word."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words)
    return _BYTE_POPCOUNT[words.view(np.uint8)].reshape(-1, 4).sum(axis=1)


def _scatter(n: int, idx: np.ndarray, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Dense 1-D array of ``n`` zeros of ``dtype`` with ``values`` placed at ``idx``."""
    out = np.zeros(n, dtype=f"u{dtype.itemsize}")
    out[idx] = bit_view(np.ascontiguousarray(values).reshape(-1))
    return out.view(dtype)


def _part(enc: Encoded, key: str, dtype: str | None = None) -> np.ndarray:
    try:
        part = enc.parts[key]
    except KeyError:
        raise SwapError(f"{enc.codec}: encoded data lacks its {key!r} buffer") from None
    if not isinstance(part, np.ndarray):
        raise SwapError(f"{enc.codec}: buffer {key!r} must be a numpy array")
    if dtype is not None and part.dtype != np.dtype(dtype):
        raise SwapError(f"{enc.codec}: buffer {key!r} has dtype {part.dtype}, expected {dtype}")
    return part


def _rebuild(enc: Encoded, idx: np.ndarray) -> np.ndarray:
    """The tensor whose non-zeros, the encoding's ``values``, sit at flat indices *idx*."""
    values = _part(enc, "values")
    if values.dtype != np.dtype(enc.dtype) or values.size != idx.size:
        raise SwapError(
            f"{enc.codec}: corrupt data: {values.size} {values.dtype} values for {idx.size} "
            f"non-zeros of dtype {enc.dtype}"
        )
    return _scatter(enc.n, idx, values, np.dtype(enc.dtype)).reshape(enc.shape)


def _chunk_counts(masks: np.ndarray, threads: int, words: int) -> np.ndarray:
    """Non-zeros of each thread's chunk, from ZVC's mask words."""
    return _popcount32(masks).reshape(threads, words).sum(axis=1, dtype=np.uint64)


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class ZVC(Codec):
    """Zero-value compression in the layout of the released CSWAP kernels.

    ``threads`` GPU threads (grid x block, 512 x 32 by default) each own a
    contiguous chunk of ``c = ceil(n / threads)`` elements. The output is the
    packed non-zeros in element order, one 32-bit mask word per 32 elements of
    every chunk (a partial or empty chunk still spends whole words), and one
    32-bit offset per thread (where its non-zeros start in the packed values)::

        bytes = itemsize * nnz + 4 * threads * ceil(c / 32) + 4 * threads

    For float32 (itemsize 4) this is the CSWAP formula; for float16 only the
    packed values shrink, masks and offsets stay 32-bit words.

    Parameters
    ----------
    threads : int
        Number of threads P. Default 16384.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.zeros(1 << 20, dtype=np.float32)
    >>> x[::4] = 1.0  # 75% zeros
    >>> enc = ZVC().encode(x)
    >>> enc.nbytes == 4 * (1 << 18) + 4 * 16384 * 2 + 4 * 16384
    True
    >>> round(enc.ratio, 2)
    3.37
    """

    spec: ClassVar[str] = "zvc"
    threads: int = 512 * 32

    def _layout(self, n: int) -> tuple[int, int, int]:
        chunk = -(-n // self.threads)
        words = -(-chunk // 32)
        return self.threads, chunk, words

    def _encode(self, arr: np.ndarray) -> Parts:
        flat = arr.reshape(-1)
        n = flat.size
        if n >= 2**32:
            raise SwapError(f"zvc: {n} elements overflow the 32-bit offsets")
        threads, chunk, words = self._layout(n)
        width = 32 * words
        nz = nonzero_mask(flat)
        if n == threads * width:
            padded = nz  # every chunk is whole words: the flat mask is the layout
        else:  # thread t's chunk, zero-filled past n, then to whole words
            padded = np.zeros((threads, width), dtype=bool)
            padded[:, :chunk] = np.pad(nz, (0, threads * chunk - n)).reshape(threads, chunk)
        masks = np.packbits(padded.reshape(-1), bitorder="little").view("<u4")
        offsets = np.zeros(threads, dtype="<u4")
        if words:
            np.cumsum(_chunk_counts(masks, threads, words)[:-1], out=offsets[1:], dtype=np.uint64)
        values = np.compress(nz, flat)
        return {"values": values, "masks": masks, "offsets": offsets}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        n = encoded.n
        threads, chunk, words = self._layout(n)
        masks = _part(encoded, "masks", "<u4")
        offsets = _part(encoded, "offsets", "<u4")
        if masks.size != threads * words or offsets.size != threads:
            raise SwapError(
                f"{self.name}: corrupt data: {masks.size} mask words and {offsets.size} offsets, "
                f"expected {threads * words} and {threads} for {n} elements"
            )
        bits = np.unpackbits(masks.view(np.uint8), bitorder="little").view(bool)
        if n != threads * 32 * words:
            bits = bits.reshape(threads, 32 * words)[:, :chunk].reshape(-1)[:n]
        idx = np.flatnonzero(bits)
        if words:
            counts = _chunk_counts(masks, threads, words)
            if np.any(np.cumsum(counts[:-1], dtype=np.uint64) != offsets[1:]) or offsets[0]:
                raise SwapError(f"{self.name}: corrupt data: offsets disagree with the masks")
        return _rebuild(encoded, idx)

    def _size(self, n, nnz, itemsize, shape):
        p = self.threads
        chunk = (n + p - 1) // p
        return itemsize * nnz + 4 * p * ((chunk + 31) // 32) + 4 * p


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class Bitmap(Codec):
    """One presence bit per element plus the packed non-zeros (cDMA-style).

    ``bytes = itemsize * nnz + ceil(n / 8)``; no per-thread words, so small
    tensors pay off too.
    """

    spec: ClassVar[str] = "bitmap"

    def _encode(self, arr: np.ndarray) -> Parts:
        flat = arr.reshape(-1)
        nz = nonzero_mask(flat)
        bitmap = np.packbits(nz, bitorder="little")
        return {"values": np.compress(nz, flat), "bitmap": bitmap}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        n = encoded.n
        bitmap = _part(encoded, "bitmap", "uint8")
        if bitmap.size != (n + 7) // 8:
            raise SwapError(f"bitmap: corrupt data: {bitmap.size} bitmap bytes for {n} elements")
        idx = np.flatnonzero(np.unpackbits(bitmap, count=n, bitorder="little").view(bool))
        return _rebuild(encoded, idx)

    def _size(self, n, nnz, itemsize, shape):
        return itemsize * nnz + (n + 7) // 8


def _csr_dims(shape: tuple[int, ...] | None, n: Any) -> tuple[Any, Any]:
    if shape is None:
        return 1, n
    return math.prod(shape[:-1]), shape[-1] if shape else 1  # a 0-d tensor is one 1x1 row


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class CSR(Codec):
    """Compressed sparse rows with int32 indices over the tensor's last axis.

    The tensor is viewed as ``(prod(shape[:-1]), shape[-1])``; stored are the
    non-zeros, an int32 column index for each, and ``rows + 1`` int32 row
    pointers: ``bytes = (itemsize + 4) * nnz + 4 * (rows + 1)``. It pays only
    above 50% sparsity for float32.
    """

    spec: ClassVar[str] = "csr"
    shape_dependent: ClassVar[bool] = True

    def _encode(self, arr: np.ndarray) -> Parts:
        if arr.size >= 2**31:
            raise SwapError(f"csr: {arr.size} elements overflow int32 indices")
        rows, cols = _csr_dims(arr.shape, arr.size)
        flat = arr.reshape(-1)
        idx = np.flatnonzero(nonzero_mask(flat))
        row, col = np.divmod(idx, cols)  # no elements where cols is 0: nothing divides
        row_ptr = np.zeros(int(rows) + 1, dtype=np.int32)
        np.cumsum(np.bincount(row, minlength=int(rows)), out=row_ptr[1:])
        return {"values": flat.take(idx), "col_idx": col.astype(np.int32), "row_ptr": row_ptr}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        rows, cols = _csr_dims(encoded.shape, encoded.n)
        col = _part(encoded, "col_idx", "int32")
        row_ptr = _part(encoded, "row_ptr", "int32")
        counts = np.diff(row_ptr)
        if (
            row_ptr.size != int(rows) + 1
            or row_ptr[0] != 0
            or np.any(counts < 0)
            or row_ptr[-1] != col.size
            or (col.size and (col.min() < 0 or col.max() >= int(cols)))
        ):
            raise SwapError("csr: corrupt data: row pointers or column indices out of range")
        row = np.repeat(np.arange(int(rows), dtype=np.int64), counts)
        return _rebuild(encoded, row * int(cols) + col)

    def _size(self, n, nnz, itemsize, shape):
        rows, _ = _csr_dims(shape, n)
        return (itemsize + 4) * nnz + 4 * (np.asarray(rows) + 1)


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class Delta8(Codec):
    """Sparse values with 8-bit gap indices and an escape (Gist SSDC-like).

    Each non-zero carries one byte ``g mod 255`` where ``g`` is the number of
    zeros since the previous non-zero; a gap of 255 or more first emits
    ``g // 255`` escape bytes (value 255, "skip 255 zeros"). Trailing zeros
    cost nothing. ``bytes = (itemsize + 1) * nnz + escapes``; the analytic
    size is the expectation for i.i.d. zeros: ``nnz * s^255 / (1 - s^255)``
    escapes.
    """

    spec: ClassVar[str] = "delta8"
    size_model: ClassVar[SizeModel] = "expected"

    def _encode(self, arr: np.ndarray) -> Parts:
        flat = arr.reshape(-1)
        idx = np.flatnonzero(nonzero_mask(flat))
        gaps = np.diff(idx, prepend=-1) - 1
        escapes, rest = np.divmod(gaps, 255)
        index = np.full(int(escapes.sum()) + idx.size, 255, dtype=np.uint8)
        index[np.cumsum(escapes + 1) - 1] = rest
        return {"values": flat.take(idx), "index": index}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        index = _part(encoded, "index", "uint8")
        is_value = index != 255
        steps = np.where(is_value, index.astype(np.int64) + 1, 255)
        idx = np.cumsum(steps)[is_value] - 1
        if idx.size and idx[-1] >= encoded.n:
            raise SwapError("delta8: corrupt data: indices run past the end of the tensor")
        return _rebuild(encoded, idx)

    def _size(self, n, nnz, itemsize, shape):
        n, nnz, p = nonzero_share(n, nnz)
        s255 = (1.0 - p) ** 255
        with np.errstate(divide="ignore", invalid="ignore"):
            esc = np.where(p > 0, nnz * s255 / np.where(p > 0, 1 - s255, 1), 0.0)
        return (itemsize + 1) * nnz + esc


@public("pcr_explore.swap.codecs")
@dataclass(frozen=True)
class ZeroRLE(Codec):
    """Zero run-length encoding: one pair of uint32 per run of non-zeros.

    Each run of non-zeros is stored as ``(zeros before it, its length)`` and
    its values; trailing zeros cost nothing. ``bytes = 8 * runs + itemsize *
    nnz``. The analytic size uses the expected number of runs for i.i.d.
    zeros, ``(1 - s) + (n - 1) s (1 - s)``; blobby activations have far fewer
    runs, which is where RLE wins.
    """

    spec: ClassVar[str] = "rle"
    size_model: ClassVar[SizeModel] = "expected"

    def _encode(self, arr: np.ndarray) -> Parts:
        flat = arr.reshape(-1)
        if flat.size >= 2**32:
            raise SwapError(f"rle: {flat.size} elements overflow the 32-bit run lengths")
        nz = nonzero_mask(flat)
        edges = np.diff(nz.view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts = np.flatnonzero(edges == 1)
        ends = np.flatnonzero(edges == -1)
        runs = np.empty((starts.size, 2), dtype="<u4")
        runs[:, 0] = starts - np.concatenate(([0], ends[:-1]))
        runs[:, 1] = ends - starts
        return {"values": np.compress(nz, flat), "runs": runs}

    def _decode(self, encoded: Encoded) -> np.ndarray:
        runs = _part(encoded, "runs", "<u4")
        if runs.ndim != 2 or runs.shape[1] != 2:
            raise SwapError("rle: corrupt data: runs must be an (R, 2) array")
        zeros = runs[:, 0].astype(np.int64)
        lengths = runs[:, 1].astype(np.int64)
        nnz = int(lengths.sum())
        if int(zeros.sum()) + nnz > encoded.n:
            raise SwapError("rle: corrupt data: runs cover more elements than the tensor has")
        idx = np.arange(nnz, dtype=np.int64) + np.repeat(np.cumsum(zeros), lengths)
        return _rebuild(encoded, idx)

    def _size(self, n, nnz, itemsize, shape):
        n, nnz, p = nonzero_share(n, nnz)
        runs = np.where(n > 0, p + np.maximum(n - 1, 0) * (1 - p) * p, 0.0)
        return 8 * runs + itemsize * nnz
