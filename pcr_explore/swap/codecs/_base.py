"""Shared pieces of every tensor codec: the encoded container and the base class."""

from __future__ import annotations

import abc
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from ..._public import public
from ...errors import SwapError

__all__ = [
    "Encoded",
    "CodecError",
    "Codec",
    "as_tensor",
    "bit_view",
    "nonzero_mask",
]

SizeModel = Literal["exact", "expected", "sampled"]
#: The named buffers of an encoding.
Parts = dict[str, np.ndarray | bytes]

_ALLOWED_KINDS = "fiu"


@public("pcr_explore.swap")
@dataclass(frozen=True)
class Encoded:
    """A tensor after encoding: the buffers a GPU would send over the link.

    Attributes
    ----------
    codec : str
        Spec string of the codec that produced it (``"zvc"``, ``"zstd:3"``...).
    shape : tuple of int
        Shape of the original tensor.
    dtype : str
        Dtype of the original tensor (numpy name, e.g. ``"float32"``).
    parts : dict
        Named buffers (numpy arrays or ``bytes``). Their sizes add up to
        :attr:`nbytes`; shape and dtype are metadata a swapping runtime keeps
        on the device anyway, so they are not counted.
    """

    codec: str
    shape: tuple[int, ...]
    dtype: str
    parts: dict[str, np.ndarray | bytes] = field(repr=False)

    @property
    def n(self) -> int:
        """Number of elements of the original tensor."""
        return math.prod(self.shape)

    @property
    def raw_nbytes(self) -> int:
        """Bytes of the original tensor."""
        return self.n * np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        """Measured encoded size in bytes (sum of all parts)."""
        return sum(p.nbytes if isinstance(p, np.ndarray) else len(p) for p in self.parts.values())

    @property
    def ratio(self) -> float:
        """Compression ratio ``raw_nbytes / nbytes`` (inf for an empty encoding)."""
        return self.raw_nbytes / self.nbytes if self.nbytes else math.inf


@public("pcr_explore.swap")
@dataclass(frozen=True)
class CodecError:
    """Reconstruction error of a codec on one tensor.

    Attributes
    ----------
    max_abs : float
        Largest absolute difference between original and decoded values.
    rel_l2 : float
        ``||decoded - original||_2 / ||original||_2`` (0 when both are zero).
    """

    max_abs: float
    rel_l2: float

    @classmethod
    def between(cls, original: np.ndarray, decoded: np.ndarray) -> CodecError:
        """Measure the error of ``decoded`` against ``original`` (computed in float64).

        Parameters
        ----------
        original, decoded : ndarray
            Arrays of the same number of elements.

        Returns
        -------
        CodecError
            Largest absolute difference and relative L2 error.
        """
        a = np.asarray(original, dtype=np.float64).ravel()
        b = np.asarray(decoded, dtype=np.float64).ravel()
        if a.size == 0:
            return cls(0.0, 0.0)
        diff = b - a
        max_abs = float(np.max(np.abs(diff)))
        norm = float(np.linalg.norm(a))
        err = float(np.linalg.norm(diff))
        rel = err / norm if norm > 0 else (0.0 if err == 0 else math.inf)
        return cls(max_abs, rel)


def as_tensor(array: object, *, what: str = "tensor") -> np.ndarray:
    """Validate ``array`` as a numeric tensor and return it C-contiguous.

    Raises
    ------
    SwapError
        If it is not an array of a supported numeric dtype.
    """
    try:
        arr = np.asarray(array)
    except (TypeError, ValueError) as exc:
        raise SwapError(f"{what}: cannot be read as a numpy array ({exc})") from exc
    if arr.dtype.kind not in _ALLOWED_KINDS or arr.dtype.itemsize not in (1, 2, 4, 8):
        raise SwapError(
            f"{what}: dtype {arr.dtype} is not supported; expected a float or integer "
            "tensor (float16/32/64, int/uint 8-64)"
        )
    if not arr.dtype.isnative:
        # codecs store the dtype's name, not its byte order: work in native order
        # so that every codec gives back the values it was given
        arr = arr.astype(arr.dtype.newbyteorder("="))
    # not np.ascontiguousarray: it turns a 0-d array into a 1-d one
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def bit_view(flat: np.ndarray) -> np.ndarray:
    """View a 1-D contiguous array as unsigned integers of the same width."""
    return flat.view(f"u{flat.dtype.itemsize}")


def nonzero_mask(flat: np.ndarray) -> np.ndarray:
    """True where an element's bit pattern is not all zeros.

    Only +0.0 counts as zero: -0.0 (sign bit set) is kept as a value, so every
    lossless sparse codec round-trips it bit-exactly.
    """
    return bit_view(flat) != 0


def nonzero_share(n: Any, nnz: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """*n* and *nnz* as float arrays, and the share of non-zeros (0 for no elements)."""
    n, nnz = np.asarray(n, dtype=float), np.asarray(nnz, dtype=float)
    return n, nnz, np.where(n > 0, nnz / np.where(n > 0, n, 1), 0.0)


def _check_n(n: object) -> None:
    arr = np.asarray(n)
    if arr.dtype.kind not in "iuf" or np.any(arr < 0):
        raise SwapError(f"element count must be a non-negative number, got {n!r}")


def _check_sparsity(s: object) -> None:
    arr = np.asarray(s, dtype=float)
    if np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise SwapError(f"sparsity must lie in [0, 1], got {s!r}")


@public("pcr_explore.swap")
class Codec(abc.ABC):
    """Base class of the tensor codecs.

    Subclasses are small frozen dataclasses whose one field, if any, is the
    parameter of the spec string (``zstd:9``): :attr:`name` and the check of
    that parameter come from :attr:`spec` and :attr:`param_range`, which
    :func:`pcr_explore.swap.get_codec` parses back.
    """

    #: Name in spec strings (``"zvc"``); the parameter, if any, follows a colon.
    spec: ClassVar[str]
    #: Smallest and largest value of the parameter (``None``: no largest).
    param_range: ClassVar[tuple[int, int | None]] = (1, None)
    #: ``True`` when ``decode(encode(x))`` is bit-identical to ``x``.
    lossless: ClassVar[bool] = True
    #: How :meth:`encoded_size` relates to the measured size: ``"exact"``
    #: (equal for any tensor with that many non-zeros), ``"expected"``
    #: (expectation when zeros are i.i.d.), or ``"sampled"`` (measured on an
    #: i.i.d. sample and scaled).
    size_model: ClassVar[SizeModel] = "exact"
    #: ``True`` when the size depends on the shape, not only on ``n``.
    shape_dependent: ClassVar[bool] = False

    def __post_init__(self) -> None:
        low, high = self.param_range
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if not isinstance(v, int | np.integer) or v < low or (high is not None and v > high):
                bound = f">= {low}" if high is None else f"in [{low}, {high}]"
                raise SwapError(f"{self.spec}: {f.name} must be an integer {bound}, got {v!r}")

    @property
    def name(self) -> str:
        """Spec string, e.g. ``"zvc"`` or ``"zstd:9"`` (the parameter where not the default)."""
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if getattr(self, f.name) != f.default:
                return f"{self.spec}:{getattr(self, f.name)}"
        return self.spec

    def encode(self, array: np.ndarray) -> Encoded:
        """Encode a tensor.

        Parameters
        ----------
        array : ndarray
            Numeric tensor of any shape (float16/32/64 or integer).

        Returns
        -------
        Encoded
            The buffers and the metadata needed by :meth:`decode`.

        Raises
        ------
        SwapError
            If the array is not numeric or the codec cannot take it.
        """
        arr = as_tensor(array)
        return Encoded(self.name, tuple(arr.shape), arr.dtype.name, self._encode(arr))

    def decode(self, encoded: Encoded) -> np.ndarray:
        """Decode an :class:`Encoded` back to an array of the original shape and dtype.

        Parameters
        ----------
        encoded : Encoded
            What :meth:`encode` of the same codec returned.

        Returns
        -------
        ndarray
            Bit-identical to the input for lossless codecs.

        Raises
        ------
        SwapError
            If the data was encoded by another codec, or is damaged in its
            structure: a part missing, a count, length or index out of range,
            a stream the compression library rejects.

        Notes
        -----
        The encodings carry no checksum, as a swapping runtime's buffers (the
        simulated CSWAP ones included) carry none: a flipped bit inside a
        value, a bitmap or a delta decodes to a wrong value without an error.
        Where that matters, checksum ``Encoded.parts`` yourself.
        """
        if not isinstance(encoded, Encoded):
            raise SwapError(f"{self.name}: expected an Encoded, got {type(encoded).__name__}")
        if encoded.codec != self.name:
            raise SwapError(f"{self.name}: cannot decode data encoded by {encoded.codec!r}")
        return self._decode(encoded)

    @abc.abstractmethod
    def _encode(self, arr: np.ndarray) -> Parts:
        """The buffers of a tensor :func:`as_tensor` checked."""

    @abc.abstractmethod
    def _decode(self, encoded: Encoded) -> np.ndarray:
        """The tensor of an encoding made by this codec (:meth:`decode` checked whose)."""

    @abc.abstractmethod
    def _size(self, n: Any, nnz: Any, itemsize: int, shape: tuple[int, ...] | None) -> Any:
        """Analytic size for element counts ``n`` and non-zero counts ``nnz``."""

    def encoded_size(
        self,
        n: int | np.ndarray,
        sparsity: float | np.ndarray,
        *,
        itemsize: int = 4,
        shape: tuple[int, ...] | None = None,
    ) -> float | np.ndarray:
        """Analytic encoded size in bytes.

        Parameters
        ----------
        n : int or ndarray
            Number of elements.
        sparsity : float or ndarray
            Fraction of elements whose bit pattern is zero; ``nnz`` is taken
            as ``round(n * (1 - sparsity))``. Broadcasts with ``n``.
        itemsize : int, optional
            Bytes per element (4 for float32, 2 for float16).
        shape : tuple of int, optional
            Tensor shape, for codecs whose layout depends on it (CSR rows,
            ZFP blocks). Defaults to a 1-D tensor of ``n`` elements.

        Returns
        -------
        float or ndarray
            Bytes; see :attr:`size_model` for how exact it is.

        Raises
        ------
        SwapError
            If ``n`` is negative or ``sparsity`` is outside [0, 1].
        """
        _check_n(n)
        _check_sparsity(sparsity)
        n_arr = np.asarray(n, dtype=np.int64)
        nnz = np.rint(n_arr * (1.0 - np.asarray(sparsity, dtype=float))).astype(np.int64)
        out = np.broadcast_to(self._size(n_arr, nnz, int(itemsize), shape), nnz.shape)
        return out.item() if out.ndim == 0 else out

    def size_for_nnz(
        self, n: int, nnz: int, *, itemsize: int = 4, shape: tuple[int, ...] | None = None
    ) -> float:
        """Return the analytic size for an exact non-zero count (see :meth:`encoded_size`).

        Parameters
        ----------
        n, nnz : int
            Elements and non-zero elements.
        itemsize : int, optional
            Bytes per element.
        shape : tuple of int, optional
            Tensor shape, for shape-dependent codecs.

        Returns
        -------
        float
            Bytes.

        Raises
        ------
        SwapError
            If a count is negative or ``nnz > n``.
        """
        _check_n(n)
        _check_n(nnz)
        if nnz > n:
            raise SwapError(f"nnz={nnz} exceeds n={n}")
        out = np.asarray(self._size(np.int64(n), np.int64(nnz), int(itemsize), shape))
        return out.item()

    def error(self, original: np.ndarray, decoded: np.ndarray) -> CodecError:
        """Measure the reconstruction error (zero for lossless codecs).

        Parameters
        ----------
        original, decoded : ndarray
            The tensor and its round trip through this codec.

        Returns
        -------
        CodecError
            Zero for lossless codecs, else see :meth:`CodecError.between`.
        """
        if self.lossless:
            return CodecError(0.0, 0.0)
        return CodecError.between(original, decoded)

    def _stream(self, enc: Encoded) -> bytes:
        """The byte stream of a codec that stores one, checked."""
        stream = enc.parts.get("stream")
        if not isinstance(stream, bytes):
            raise SwapError(f"{self.name}: encoded data lacks its byte stream")
        return stream

    def __str__(self) -> str:
        return self.name
