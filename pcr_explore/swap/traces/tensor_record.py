"""One tensor a training step swaps: shape, dtype, the op that made it, its FLOPs.

A :class:`TensorRecord` is one entry of a :class:`~pcr_explore.swap.traces.Trace`;
it carries the forward FLOPs and memory traffic of the op that produced the
tensor, so the simulator can price the compute a swap overlaps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._public import public
from ...errors import SwapError

__all__ = ["TensorRecord", "MAX_ELEMENTS"]

# 2**48 elements (1 PiB of float32): far above any real activation, and low
# enough that byte counts stay exact in int64 and float64 arithmetic.
MAX_ELEMENTS = 1 << 48

_KINDS = ("input", "relu", "pool", "activation")


@public("pcr_explore.swap")
@dataclass(frozen=True)
class TensorRecord:
    """One saved tensor of a training step.

    Parameters
    ----------
    name : str
        Layer-style name (``"conv1_1"``, ``"layer2.0.relu2"``).
    shape : tuple of int
        Tensor shape (NCHW for feature maps).
    dtype : str
        numpy dtype name; float32 by default.
    fwd_flops : float
        FLOPs of the op that produces this tensor (a multiply-add counts 2).
    fwd_mem_bytes : float
        Bytes that op reads and writes (prices memory-bound ops such as pooling).
    bwd_factor : float
        Backward cost of that op relative to its forward (2 by default:
        gradients for input and for weights).
    kind : str
        ``"input"``, ``"relu"``, ``"pool"`` or ``"activation"``.
    binarizable : bool
        A ReLU output read only by a max-pool's backward, so 1 bit per element
        suffices (Gist's Binarize).
    measured_bytes : dict, optional
        Encoded sizes measured on the real tensor, by codec name, for the
        first iteration; the simulator prefers them over analytic sizes.
    op : str
        The op that produced the tensor in a captured run (``"conv"``,
        ``"bn"``, ``"relu"``, ``"maxpool"``, ``"linear"``, ``"input"``, ...);
        empty for architecture traces, where ``kind`` says enough.

    Raises
    ------
    SwapError
        For a negative dimension, a non-numeric dtype, a negative or
        non-finite FLOP or byte count, or an unknown kind.

    Examples
    --------
    >>> rec = TensorRecord("conv1_1", (8, 64, 224, 224), kind="relu")
    >>> rec.n, rec.nbytes
    (25690112, 102760448)
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    fwd_flops: float = 0.0
    fwd_mem_bytes: float = 0.0
    bwd_factor: float = 2.0
    kind: str = "activation"
    binarizable: bool = False
    measured_bytes: Mapping[str, int] | None = None
    op: str = ""

    def __post_init__(self) -> None:
        dims = tuple(self.shape)
        if not all(isinstance(d, int | np.integer) and not isinstance(d, bool) for d in dims):
            raise SwapError(f"tensor {self.name!r}: shape must be integers, got {dims!r:.80}")
        shape = tuple(int(d) for d in dims)
        if any(d < 0 for d in shape):
            raise SwapError(f"tensor {self.name!r}: negative dimension in shape {shape}")
        if math.prod(shape) > MAX_ELEMENTS:
            raise SwapError(
                f"tensor {self.name!r}: shape {shape!r:.80} has more than {MAX_ELEMENTS:,} elements"
            )
        object.__setattr__(self, "shape", shape)
        try:
            dt = np.dtype(self.dtype)
        except TypeError:
            raise SwapError(f"tensor {self.name!r}: unknown dtype {self.dtype!r}") from None
        if dt.kind not in "fiu":
            raise SwapError(f"tensor {self.name!r}: dtype {dt} is not numeric")
        object.__setattr__(self, "dtype", dt.name)
        for attr in ("fwd_flops", "fwd_mem_bytes", "bwd_factor"):
            value = getattr(self, attr)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise SwapError(f"tensor {self.name!r}: {attr} must be >= 0, got {value!r}")
        if self.kind not in _KINDS:
            raise SwapError(
                f"tensor {self.name!r}: kind must be one of {_KINDS}, got {self.kind!r}"
            )

    @property
    def n(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes."""
        return self.n * self.itemsize

    def to_json(self) -> dict[str, Any]:
        """Return the record as a plain-JSON dict (the inverse of :meth:`from_json`).

        Returns
        -------
        dict
            Every field; ``measured_bytes`` and ``op`` only when set.
        """
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["shape"] = list(self.shape)
        if self.measured_bytes is None:
            del out["measured_bytes"]
        else:
            out["measured_bytes"] = {k: int(v) for k, v in self.measured_bytes.items()}
        if not self.op:
            del out["op"]
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TensorRecord:
        """Build a record from the dict :meth:`to_json` wrote.

        Parameters
        ----------
        obj : mapping
            ``name`` and ``shape`` are required; other fields take their defaults.

        Returns
        -------
        TensorRecord
            The record.

        Raises
        ------
        SwapError
            If a field is missing or invalid.
        """
        try:
            return cls(
                name=str(obj["name"]),
                shape=tuple(obj["shape"]),
                dtype=str(obj.get("dtype", "float32")),
                fwd_flops=float(obj.get("fwd_flops", 0.0)),
                fwd_mem_bytes=float(obj.get("fwd_mem_bytes", 0.0)),
                bwd_factor=float(obj.get("bwd_factor", 2.0)),
                kind=str(obj.get("kind", "activation")),
                binarizable=bool(obj.get("binarizable", False)),
                measured_bytes=obj.get("measured_bytes"),
                op=str(obj.get("op", "")),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise SwapError(f"bad tensor record {obj!r:.120}: {exc}") from exc
