"""Sparsity profiles: how the fraction of zeros of ReLU and pool outputs varies with depth.

A profile spec is a constant, a ``(shallow, deep)`` ramp, a list of any
length (resampled by relative depth), or a captured trace whose ReLU and
pool sparsities are reused. :meth:`Trace.with_sparsity
<pcr_explore.swap.traces.Trace.with_sparsity>` applies one to a trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...errors import SwapError

__all__ = ["SPARSE_KINDS", "SparsitySource", "SparsitySpec", "sparsity_profile", "spec_to_json"]

#: Tensor kinds whose sparsity a profile sets; the others (the dense input) keep theirs.
SPARSE_KINDS = ("relu", "pool")


class _Kinded(Protocol):
    @property
    def kind(self) -> str: ...


@runtime_checkable
class SparsitySource(Protocol):
    """Anything that carries per-tensor kinds and sparsities, as a captured trace does.

    :class:`~pcr_explore.swap.traces.Trace` satisfies it; the profile reads
    the first iteration's sparsities of its ReLU and pool outputs.
    """

    @property
    def name(self) -> str:
        """Name recorded in the trace metadata."""
        ...

    @property
    def tensors(self) -> Sequence[_Kinded]:
        """Records in forward order; only their ``kind`` is read."""
        ...

    @property
    def sparsity(self) -> np.ndarray:
        """Sparsity per iteration and tensor, shape ``(iterations, tensors)``."""
        ...


SparsitySpec = float | tuple[float, float] | Sequence[float] | SparsitySource


def sparsity_profile(spec: SparsitySpec, layers: int) -> np.ndarray:
    """Per-layer sparsity for ``layers`` sparse tensors, shallow to deep.

    Parameters
    ----------
    spec : float, (float, float), sequence of float, or Trace
        A constant; a ``(first, last)`` pair ramped linearly with depth; a
        sequence of any length (resampled by relative depth); or a captured
        :class:`~pcr_explore.swap.traces.Trace` whose ReLU/pool sparsities
        (first iteration) are resampled by relative depth.
    layers : int
        Number of sparse tensors to give a value.

    Returns
    -------
    ndarray of float, shape (layers,)
        Sparsity of each sparse tensor, shallow first.

    Raises
    ------
    SwapError
        If a value is outside [0, 1] or the spec is empty.

    Examples
    --------
    >>> sparsity_profile((0.4, 0.8), 5).round(2).tolist()
    [0.4, 0.5, 0.6, 0.7, 0.8]
    >>> sparsity_profile([0.1, 0.9], 3).round(2).tolist()
    [0.1, 0.5, 0.9]
    """
    if isinstance(spec, SparsitySource):
        sparse = [i for i, t in enumerate(spec.tensors) if t.kind in SPARSE_KINDS]
        values = spec.sparsity[0, sparse] if sparse else spec.sparsity[0]
    elif isinstance(spec, int | float | np.floating):
        values = np.array([float(spec)])
    else:
        values = np.asarray(spec, dtype=float).ravel()
        if values.size == 0:
            raise SwapError("sparsity profile is empty")
        if isinstance(spec, tuple) and len(spec) == 2:
            values = np.linspace(values[0], values[1], max(layers, 1))
    if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values > 1):
        raise SwapError(f"sparsity values must lie in [0, 1], got {values.tolist()}")
    if values.size == 1:
        return np.full(layers, values[0])
    src = np.linspace(0.0, 1.0, values.size)
    return np.interp(np.linspace(0.0, 1.0, layers), src, values)


def spec_to_json(spec: SparsitySpec) -> Any:
    """Describe a sparsity spec in plain JSON, for a trace's metadata.

    Parameters
    ----------
    spec : SparsitySpec
        See :func:`sparsity_profile`.

    Returns
    -------
    float, list of float, or dict
        The number, the list of numbers, or ``{"from_trace": name}``.

    Examples
    --------
    >>> spec_to_json((0.3, 0.9))
    [0.3, 0.9]
    """
    if isinstance(spec, SparsitySource):
        return {"from_trace": spec.name}
    if isinstance(spec, int | float):
        return float(spec)
    return [float(v) for v in spec]
