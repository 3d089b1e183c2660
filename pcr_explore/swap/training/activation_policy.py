"""Per-tensor decisions for :func:`~pcr_explore.swap.training.compressed.compressed_activations`.

A policy is any callable ``policy(info) -> codec or None``. Two are built
in: :func:`smallest_encoding` compresses a tensor only when a codec makes it
smaller (exact sizes from the tensor's non-zero count), and
:func:`least_stall` picks, like CSWAP, the option with the least stall that
a device profile's cost model predicts (codec kernel times plus the copy
that is not hidden).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..codecs import Codec, get_codec
from ..model.profiles import DeviceProfile, get_profile
from .compressed import ActivationPolicy, SavedTensorInfo

__all__ = ["smallest_encoding", "least_stall"]


def _cheapest(
    info: SavedTensorInfo,
    codecs: Sequence[Codec],
    raw_cost: float,
    cost: Callable[[Codec, float, float, float], float],
) -> str | None:
    """The codec of least ``cost(codec, n, nnz, encoded bytes)`` if below *raw_cost*, else None.

    ``n`` and ``nnz`` are in float32 equivalents (the cost model's unit); binarize is
    considered only where backward reads just the mask.
    """
    n = int(np.prod(info.shape))
    nnz, width = int(round(n * (1.0 - info.sparsity))), np.dtype(info.dtype).itemsize
    w = width / 4.0
    best, least = None, raw_cost
    for c in codecs:
        if c.name == "binarize" and not info.mask_only:
            continue
        size = c.size_for_nnz(n, nnz, itemsize=width, shape=info.shape)
        spent = cost(c, n * w, nnz * w, size)
        if spent < least:
            best, least = c.name, spent
    return best


@public("pcr_explore.swap")
def smallest_encoding(codecs: Sequence[str] = ("zvc",)) -> ActivationPolicy:
    """A policy that encodes with the codec giving the fewest bytes, if fewer than raw.

    Sizes are each codec's analytic size for the tensor's shape and
    non-zero count (exact for ZVC, bitmap, CSR, ZFP and binarize).

    Parameters
    ----------
    codecs : sequence of str
        Codecs to choose among; binarize only where it keeps all backward
        reads.

    Returns
    -------
    callable
        ``policy(info) -> codec name or None``.

    Raises
    ------
    SwapError
        For an unknown codec or none given.

    Examples
    --------
    >>> pick = smallest_encoding(["zvc", "csr"])
    >>> shape, nbytes = (64, 64, 32, 32), 4 * 64 * 64 * 1024
    >>> dense = SavedTensorInfo(shape, "float32", nbytes, 0.0, "conv", "bn")
    >>> sparse = SavedTensorInfo(shape, "float32", nbytes, 0.8, "relu", "conv")
    >>> pick(dense), pick(sparse)
    (None, 'zvc')
    """
    cs = {get_codec(c).name: get_codec(c) for c in codecs}
    if not cs:
        raise SwapError("smallest_encoding needs at least one codec")

    def policy(info: SavedTensorInfo) -> str | None:
        return _cheapest(info, list(cs.values()), float(info.nbytes), lambda c, n, nnz, b: b)

    return policy


@public("pcr_explore.swap")
def least_stall(
    profile: DeviceProfile | str, *, codecs: Sequence[str] = ("zvc",), overlap_s: float = 0.0
) -> ActivationPolicy:
    """A CSWAP-style policy: the option with the least predicted stall on *profile*.

    For each option (raw, or a codec the profile prices) the predicted stall
    is ``t_compress + t_decompress + 2 * max(0, t_copy - overlap_s)``, from
    the profile's kernel model and link; the copy of the encoded size goes
    out after the forward pass and back before backward. Ties go to raw.

    Parameters
    ----------
    profile : DeviceProfile or str
        Cost model, e.g. ``get_profile("v100-pcie3")`` or one with this
        machine's calibrated CPU codecs (``profile.with_codec(...)``).
    codecs : sequence of str
        Codecs to consider (``("zvc",)`` is CSWAP's; ``("zvc", "zfp")``
        CSwap+'s).
    overlap_s : float
        Compute time each copy can hide behind (the next layer's), seconds.

    Returns
    -------
    callable
        ``policy(info) -> codec name or None``.

    Raises
    ------
    SwapError
        If the profile prices none of *codecs*, or *overlap_s* < 0.

    Examples
    --------
    >>> pick = least_stall("v100-pcie3", codecs=["zvc"])
    >>> big = SavedTensorInfo((64, 64, 56, 56), "float32", 4 * 64 * 64 * 3136, 0.7, "relu", "conv")
    >>> small = SavedTensorInfo((8, 64), "float32", 4 * 8 * 64, 0.7, "relu", "linear")
    >>> pick(big), pick(small)
    ('zvc', None)
    """
    prof = get_profile(profile)
    names = [get_codec(c).name for c in codecs]
    priced = [get_codec(c) for c in names if c in prof.codecs]
    if not priced:
        raise SwapError(
            f"profile {prof.name!r} prices none of {', '.join(names)}; "
            f"it has: {', '.join(prof.codecs)}"
        )
    if overlap_s < 0:
        raise SwapError(f"overlap_s must be >= 0, got {overlap_s}")

    def hidden(nbytes: float) -> float:
        return max(0.0, float(prof.transfer_time(nbytes)) - overlap_s)

    def stall(c: Codec, n: float, nnz: float, nbytes: float) -> float:
        cost = prof.codecs[c.name]
        compress, decompress = cost.compress.time(n, nnz), cost.decompress.time(n, nnz)
        return float(compress) + float(decompress) + 2 * hidden(nbytes)

    def policy(info: SavedTensorInfo) -> str | None:
        return _cheapest(info, priced, 2 * hidden(info.nbytes), stall)

    return policy
