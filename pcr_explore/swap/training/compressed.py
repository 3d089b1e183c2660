"""Compress a model's saved activations during real training (needs ``[torch]``).

:func:`compressed_activations` is a context manager on
``torch.autograd.graph.saved_tensors_hooks``: every activation autograd
saves for backward is encoded with one of the package's codecs when it is
saved and decoded when backward uses it, so training reads back exactly what
the codec gives. A lossless codec must leave training unchanged, loss for
loss; a lossy one (ZFP) changes what backward reads, and its effect on
accuracy can be measured. The yielded :class:`ActivationLog` records, per
saved tensor, the decision, the bytes before and after and the encode and
decode times, measured on this machine's CPU.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._json import json_safe
from ..._public import public
from ...errors import SwapError
from ..capture._torch_ops import (
    MASK_SAVERS,
    is_weight,
    numpy_dtype,
    op_label,
    require_torch,
    track_modules,
    weight_pointers,
    zero_count,
)
from ..codecs import get_codec
from ..codecs._base import Codec, Encoded

__all__ = ["SavedTensorInfo", "SavedActivation", "ActivationLog", "compressed_activations"]


@public("pcr_explore.swap")
@dataclass(frozen=True)
class SavedTensorInfo:
    """What a policy sees of a tensor being saved.

    Attributes
    ----------
    shape : tuple of int
    dtype : str
        numpy dtype name.
    nbytes : int
    sparsity : float
        Fraction of +0.0 elements.
    op : str
        The op that produced it (``"relu"``, ``"conv"``, ``"input"``, ...).
    saver : str
        The op whose backward will read it (the leaf module running when it
        is saved; ``"functional"`` outside any module).
    """

    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    sparsity: float
    op: str
    saver: str

    @property
    def mask_only(self) -> bool:
        """Backward reads only where this ReLU output is positive, so binarize keeps it all."""
        return self.op == "relu" and self.saver in MASK_SAVERS


#: A policy: the codec to encode a tensor with, or None to keep it raw.
ActivationPolicy = Callable[[SavedTensorInfo], "str | Codec | None"]


@dataclass
class SavedActivation:
    """One saved tensor and what became of it.

    Attributes
    ----------
    index : int
        Order of saving within the ``with`` block.
    info : SavedTensorInfo
    codec : str
        ``"raw"`` or the codec name.
    reason : str
        Why (policy decision, too small, not floating point, codec refused).
    raw_bytes, stored_bytes : int
        Bytes before and after encoding (equal when raw).
    encode_s, decode_s : float
        Seconds spent encoding, and decoding (summed over every use).
    shared : bool
        The same tensor was saved again by another op and the first
        encoding was reused: no bytes are added.
    same_as : int or None
        Index of the first record of the same tensor, when this is not the
        first: its uncompressed bytes count once.
    """

    index: int
    info: SavedTensorInfo
    codec: str
    reason: str
    raw_bytes: int
    stored_bytes: int
    encode_s: float = 0.0
    decode_s: float = 0.0
    shared: bool = False
    same_as: int | None = None


@public("pcr_explore.swap")
@dataclass
class ActivationLog:
    """Everything :func:`compressed_activations` did, measured on this machine.

    Attributes
    ----------
    records : list of SavedActivation
        One per saved activation, in saving order.
    """

    records: list[SavedActivation] = field(default_factory=list)

    def _distinct(self) -> list[SavedActivation]:
        return [r for r in self.records if r.same_as is None]

    @property
    def raw_bytes(self) -> int:
        """Bytes of the distinct saved activations, uncompressed."""
        return sum(r.raw_bytes for r in self._distinct())

    @property
    def stored_bytes(self) -> int:
        """Bytes held for them after encoding (a second copy for another saver counts)."""
        return sum(r.stored_bytes for r in self.records if not r.shared)

    @property
    def saved_fraction(self) -> float:
        """``1 - stored / raw`` (0 when nothing was saved)."""
        return 1.0 - self.stored_bytes / self.raw_bytes if self.raw_bytes else 0.0

    @property
    def encode_seconds(self) -> float:
        """Total encode time."""
        return sum(r.encode_s for r in self.records)

    @property
    def decode_seconds(self) -> float:
        """Total decode time."""
        return sum(r.decode_s for r in self.records)

    def by_codec(self) -> dict[str, dict[str, float]]:
        """Count, bytes before and after, per decision (``"raw"`` or codec name).

        Returns
        -------
        dict of str to dict
            ``tensors``, ``raw_bytes``, ``stored_bytes`` per codec.
        """
        out: dict[str, dict[str, float]] = {}
        for r in self.records:
            if r.shared:
                continue
            d = out.setdefault(r.codec, {"tensors": 0, "raw_bytes": 0, "stored_bytes": 0})
            d["tensors"] += 1
            d["raw_bytes"] += r.raw_bytes if r.same_as is None else 0
            d["stored_bytes"] += r.stored_bytes
        return out

    def summary(self) -> dict[str, Any]:
        """Totals as JSON-ready data (``measured on this machine``).

        Returns
        -------
        dict
            ``tensors``, ``raw_bytes``, ``stored_bytes``, ``saved_fraction``,
            ``encode_seconds``, ``decode_seconds``, ``by_codec``.
        """
        return json_safe(
            {
                "measured": "on this machine (CPU codecs)",
                "tensors": len(self._distinct()),
                "raw_bytes": self.raw_bytes,
                "stored_bytes": self.stored_bytes,
                "saved_fraction": self.saved_fraction,
                "encode_seconds": self.encode_seconds,
                "decode_seconds": self.decode_seconds,
                "by_codec": self.by_codec(),
            }
        )

    def __repr__(self) -> str:
        return (
            f"<ActivationLog: {len(self._distinct())} activations, "
            f"{self.raw_bytes / 2**20:.1f} -> {self.stored_bytes / 2**20:.1f} MiB, "
            f"encode {self.encode_seconds * 1e3:.0f} ms, decode {self.decode_seconds * 1e3:.0f} ms>"
        )


class _Packed:
    """What autograd holds instead of a saved tensor: the encoding and how to rebuild."""

    __slots__ = ("enc", "codec", "record", "dtype", "shape", "stride", "device", "__weakref__")

    def __init__(self, enc: Encoded, codec: Codec, record: SavedActivation, t: Any) -> None:
        self.enc, self.codec, self.record = enc, codec, record
        self.dtype, self.shape, self.stride = t.dtype, tuple(t.shape), tuple(t.stride())
        self.device = t.device


@public("pcr_explore.swap")
@contextlib.contextmanager
def compressed_activations(
    codec: str | Codec | None = "zvc",
    *,
    policy: ActivationPolicy | None = None,
    model: Any = None,
    min_bytes: int = 4096,
) -> Iterator[ActivationLog]:
    """Encode every activation autograd saves inside the ``with`` block; decode it on use.

    Built on ``torch.autograd.graph.saved_tensors_hooks``. Each floating
    point tensor of at least *min_bytes* bytes that is not a parameter is
    encoded on the CPU with *codec* (or the codec *policy* picks for it) when
    saved, and decoded back to a tensor of the same shape, dtype, strides and
    device when backward needs it. A tensor saved by two ops (a ReLU output
    read by the ReLU and by a max-pool) is encoded once.

    ``binarize`` is applied only where it loses nothing backward reads: a
    ReLU output saved by the ReLU itself (its backward reads where the output
    is positive) or by a max-pool (which reads its indices, not the values);
    elsewhere the tensor stays raw. So binarize, like the lossless codecs,
    leaves training unchanged. ZFP changes the values backward reads.

    Parameters
    ----------
    codec : str or Codec or None
        Codec for every eligible tensor (``"zvc"``, ``"zfp:8"``, ...); None
        keeps them raw (only measures).
    policy : callable, optional
        ``policy(info: SavedTensorInfo) -> codec or None`` decides per tensor
        instead of *codec*; each decision is recorded.
    model : torch.nn.Module, optional
        Skips its buffers as well as its parameters, and names the saving
        modules by their path.
    min_bytes : int
        Smaller tensors stay raw (not worth swapping).

    Yields
    ------
    ActivationLog
        Filled as tensors are saved and used.

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).
    SwapError
        For an unknown codec.

    Examples
    --------
    >>> import torch
    >>> from pcr_explore.swap import build_net
    >>> model = build_net("vgg-small", num_classes=3)
    >>> x, y = torch.rand(4, 3, 48, 48), torch.tensor([0, 1, 2, 0])
    >>> with compressed_activations("bitmap") as log:  # lossless: training is unchanged
    ...     loss = torch.nn.functional.cross_entropy(model(x), y)
    ...     loss.backward()
    >>> log
    <ActivationLog: 11 activations, 2.3 -> ... MiB, encode ... ms, decode ... ms>
    >>> log.saved_fraction > 0.25  # ReLU outputs are about half zeros
    True
    """
    torch = require_torch("compressed_activations")
    fixed = None if codec is None else get_codec(codec)
    skip = weight_pointers(model)
    with track_modules(torch, model) as tr:
        hooks = _Hooks(torch, tr, codec=fixed, policy=policy, skip=skip, min_bytes=min_bytes)
        with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
            yield hooks.log


class _Hooks:
    """The pack and unpack hooks of :func:`compressed_activations`, and what they share."""

    def __init__(
        self,
        torch: Any,
        tracker: Any,
        *,
        codec: Codec | None,
        policy: ActivationPolicy | None,
        skip: Any,
        min_bytes: int,
    ) -> None:
        self.torch, self.tr = torch, tracker
        self.fixed, self.policy, self.skip, self.min_bytes = codec, policy, skip, min_bytes
        self.log = ActivationLog()
        # the same tensor saved twice (ReLU and max-pool) -> one decision and encoding,
        # while it lives
        self.seen: dict[
            int, tuple[weakref.ref[Any], int, weakref.ref[_Packed] | None, SavedActivation]
        ] = {}

    def again(self, t: Any) -> tuple[Any, SavedActivation | None]:
        """For a tensor saved before: what autograd gets (None: decide anew), first record."""
        hit = self.seen.get(id(t))
        if hit is None or hit[1] != t._version or hit[0]() is not t:
            return None, None
        first = hit[3]
        packed = hit[2]() if hit[2] is not None else None
        if hit[2] is not None and (packed is None or not _reusable(packed, self.tr.saver)):
            return None, first
        self.log.records.append(
            SavedActivation(
                len(self.log.records),
                first.info,
                first.codec,
                "same tensor saved again",
                first.raw_bytes,
                first.stored_bytes,
                shared=True,
                same_as=first.index,
            )
        )
        return (t if packed is None else packed), first

    def pack(self, t: Any) -> Any:
        torch = self.torch
        if is_weight(torch, t, self.skip):
            return t
        nbytes = int(t.numel() * t.element_size())
        earlier, first = self.again(t)
        if earlier is not None:
            return earlier
        if not t.is_floating_point() or nbytes < self.min_bytes or t.device.type == "meta":
            return t
        d = t.detach()
        info = SavedTensorInfo(
            tuple(int(s) for s in t.shape),
            numpy_dtype(d),
            nbytes,
            zero_count(torch, d) / max(1, d.numel()),
            op_label(t),
            self.tr.saver,
        )
        chosen, why = self.fixed, "codec given"
        if self.policy is not None:
            pick = self.policy(info)
            chosen = None if pick is None else get_codec(pick)
            why = f"policy: {'raw' if chosen is None else chosen.name}"
        rec = SavedActivation(len(self.log.records), info, "raw", why, nbytes, nbytes)
        if first is not None:  # a second copy for a saver the first encoding cannot serve
            rec.same_as = first.index
        self.log.records.append(rec)
        if first is None:
            self.seen[id(t)] = (weakref.ref(t), t._version, None, rec)
        if chosen is None:
            return t
        packed = self.encode(t, d, chosen, rec)
        if packed is not None and first is None:
            self.seen[id(t)] = (weakref.ref(t), t._version, weakref.ref(packed), rec)
        return t if packed is None else packed

    def encode(self, t: Any, d: Any, chosen: Codec, rec: SavedActivation) -> _Packed | None:
        """*t* encoded with *chosen*, or None (raw) with the reason in *rec*."""
        if chosen.name == "binarize" and not rec.info.mask_only:
            rec.reason = "binarize needs a ReLU output saved by a ReLU or max-pool: raw"
            return None
        if d.dtype == self.torch.bfloat16:
            rec.reason = "bfloat16 has no numpy type: raw"
            return None
        t0 = time.perf_counter()
        try:
            enc = chosen.encode(d.to("cpu").contiguous().numpy())
        except SwapError as exc:
            rec.reason = f"{chosen.name} refused ({exc}): raw"
            return None
        rec.encode_s = time.perf_counter() - t0
        rec.codec, rec.stored_bytes = chosen.name, int(enc.nbytes)
        return _Packed(enc, chosen, rec, t)

    def unpack(self, p: Any) -> Any:
        if not isinstance(p, _Packed):
            return p
        torch = self.torch
        t0 = time.perf_counter()
        arr = p.codec.decode(p.enc)
        out = torch.from_numpy(np.ascontiguousarray(arr)).to(p.dtype).reshape(p.shape)
        if out.stride() != p.stride:
            out = torch.empty_strided(out.shape, p.stride, dtype=p.dtype).copy_(out)
        out = out.to(p.device)
        p.record.decode_s += time.perf_counter() - t0
        return out


def _reusable(packed: _Packed, saver: str) -> bool:
    """A binarized tensor may serve a second saver only if that one also reads just the mask."""
    return packed.codec.name != "binarize" or saver in MASK_SAVERS
