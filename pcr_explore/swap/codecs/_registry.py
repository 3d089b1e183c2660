"""Tensor codecs for compressed swapping, and the registry that names them.

Codec spec strings are ``name`` or ``name:param``: ``zvc`` (``zvc:1024``
for 1024 threads), ``bitmap``, ``csr``, ``delta8``, ``rle``, ``lz4``
(``lz4:8`` for acceleration 8), ``zstd`` (``zstd:19`` for level 19),
``zfp`` (``zfp:8`` for 8 bits per value), ``binarize``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._public import public
from ...errors import SwapError
from ._base import Codec, CodecError, as_tensor
from ._byte import LZ4, Zstd
from ._lossy import ZFP, Binarize, zfp_available
from ._sparse import CSR, ZVC, Bitmap, Delta8, ZeroRLE

_CODECS: tuple[type[Codec], ...] = (ZVC, Bitmap, CSR, Delta8, ZeroRLE, LZ4, Zstd, ZFP, Binarize)
_FACTORIES: dict[str, Callable[..., Codec]] = {c.spec: c for c in _CODECS}


@public("pcr_explore.swap")
def codec_names(*, include_unavailable: bool = False) -> list[str]:
    """Names of the codecs, in a stable order.

    Parameters
    ----------
    include_unavailable : bool
        Also list ``zfp`` when ``zfpy`` is not installed.

    Returns
    -------
    list of str
    """
    return [n for n in _FACTORIES if include_unavailable or n != "zfp" or zfp_available()]


@public("pcr_explore.swap")
def get_codec(spec: str | Codec) -> Codec:
    """Build a codec from its spec string (``"zvc"``, ``"zstd:9"``, ``"zfp:8"``...).

    Parameters
    ----------
    spec : str or Codec
        A spec string, or a codec (returned unchanged).

    Returns
    -------
    Codec

    Raises
    ------
    SwapError
        For an unknown name or a bad parameter.

    Examples
    --------
    >>> get_codec("zstd:9").level
    9
    >>> get_codec("zvc").encoded_size(1 << 24, 0.7)
    22295348
    """
    if isinstance(spec, Codec):
        return spec
    if not isinstance(spec, str):
        raise SwapError(f"codec spec must be a string, got {type(spec).__name__}")
    name, _, param = spec.strip().lower().partition(":")
    factory = _FACTORIES.get(name)
    if factory is None:
        raise SwapError(f"unknown codec {spec!r}; known: {', '.join(_FACTORIES)}")
    if not param:
        return factory()
    if not dataclasses.fields(factory):  # type: ignore[arg-type]
        raise SwapError(f"codec {name!r} takes no parameter (got {spec!r})")
    try:
        value = int(param)
    except ValueError:
        raise SwapError(f"codec parameter in {spec!r} must be an integer") from None
    return factory(value)


def applies(codec: str | Codec, record: object) -> bool:
    """Return whether *codec* can encode the tensor *record* (a ``TensorRecord``).

    The rule of the simulator and of the sizes a capture measures: binarize
    needs a ReLU output that feeds a max-pool (``record.binarizable``), ZFP a
    floating-point tensor; every other codec takes any tensor.

    Examples
    --------
    >>> from pcr_explore.swap import TensorRecord
    >>> relu = TensorRecord("r", (4, 8), kind="relu")
    >>> applies("zvc", relu), applies("binarize", relu)
    (True, False)
    """
    c = get_codec(codec)
    if isinstance(c, Binarize):
        return bool(getattr(record, "binarizable", False))
    if isinstance(c, ZFP):
        return str(getattr(record, "dtype", "float32")).startswith("float")
    return True


@public("pcr_explore.swap")
@dataclass(frozen=True)
class Measurement:
    """One codec measured on one tensor.

    Attributes
    ----------
    codec : str
    raw_bytes, encoded_bytes : int
    ratio : float
        ``raw_bytes / encoded_bytes``.
    encode_seconds, decode_seconds : float
        Best wall time over the repeats, this machine, one core.
    error : CodecError
        Zero for lossless codecs.
    """

    codec: str
    raw_bytes: int
    encoded_bytes: int
    ratio: float
    encode_seconds: float
    decode_seconds: float
    error: CodecError

    @property
    def encode_gbps(self) -> float:
        """Encode throughput in GB/s of uncompressed input."""
        return self.raw_bytes / self.encode_seconds / 1e9 if self.encode_seconds else float("inf")

    @property
    def decode_gbps(self) -> float:
        """Decode throughput in GB/s of uncompressed output."""
        return self.raw_bytes / self.decode_seconds / 1e9 if self.decode_seconds else float("inf")


def _bit_exact(original: np.ndarray, decoded: np.ndarray) -> bool:
    """The same values, bit for bit (NaN payloads and -0.0 too), whatever either's byte order."""
    if decoded.shape != original.shape or decoded.dtype.name != original.dtype.name:
        return False
    a = original.astype(original.dtype.newbyteorder("="), copy=False)
    b = decoded.astype(decoded.dtype.newbyteorder("="), copy=False)
    u = f"u{a.dtype.itemsize}"
    return bool(np.array_equal(np.ascontiguousarray(a).view(u), np.ascontiguousarray(b).view(u)))


@public("pcr_explore.swap")
def measure(codec: str | Codec, array: np.ndarray, *, repeats: int = 1) -> Measurement:
    """Encode and decode ``array``, time both, and check the round trip.

    Parameters
    ----------
    codec : str or Codec
    array : ndarray
    repeats : int
        Timed repetitions; the best is kept.

    Returns
    -------
    Measurement

    Raises
    ------
    SwapError
        If a lossless codec fails to round-trip bit-exactly (a bug), or the
        input is not numeric.
    """
    c = get_codec(codec)
    arr = as_tensor(array)
    if repeats < 1:
        raise SwapError(f"repeats must be >= 1, got {repeats}")
    enc_t = dec_t = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        enc = c.encode(arr)
        t1 = time.perf_counter()
        out = c.decode(enc)
        t2 = time.perf_counter()
        enc_t, dec_t = min(enc_t, t1 - t0), min(dec_t, t2 - t1)
    if c.lossless and not _bit_exact(arr, out):
        raise SwapError(f"{c.name}: round trip is not bit-exact")
    return Measurement(c.name, arr.nbytes, enc.nbytes, enc.ratio, enc_t, dec_t, c.error(arr, out))
