"""Why a policy chose each codec, in words, built only when someone reads them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["LazyReasons", "reasons"]


class LazyReasons:
    """Reason strings built on first read (most simulations never show them)."""

    def __init__(self, build: Callable[[], np.ndarray]) -> None:
        self._build = build
        self._cache: np.ndarray | None = None

    def __getitem__(self, key: Any) -> Any:
        if self._cache is None:
            self._cache = self._build()
        return self._cache[key]


def reasons(
    kind: str,
    codec: str | None,
    options: Sequence[str],
    choice: np.ndarray,
    stall: np.ndarray,
    allowed: np.ndarray,
    raw_bytes: np.ndarray,
    predicted_bytes: np.ndarray,
) -> LazyReasons:
    """Explain each choice of a policy of ``kind`` (vdnn, always, cswap, oracle).

    ``stall`` (options, iterations, tensors) is what the policy compared:
    predicted stall for cswap, true stall for the oracle; ``allowed``
    (options, tensors) masks the options it could pick.
    """
    basis = "predicted" if kind == "cswap" else "true"

    def one(k: int, t: int) -> str:
        o = int(choice[k, t])
        name = options[o]
        if kind == "vdnn":
            return "vdnn swaps every tensor raw"
        if kind == "always":
            return f"always {name}" if o else f"{codec} not applicable to this tensor; sent raw"
        st = np.where(allowed[:, t], stall[:, k, t], np.inf)
        raw = st[0]
        if o:
            return (
                f"{name}: {basis} stall {st[o] * 1e3:.3f} ms vs raw {raw * 1e3:.3f} ms, "
                f"ratio {raw_bytes[t] / predicted_bytes[o, k, t]:.2f}x"
            )
        alt = np.argsort(st)[1] if np.isfinite(st).sum() > 1 else 0
        if raw == 0:
            return "copy hidden under compute; a codec would only add kernel time"
        if alt:
            return (
                f"raw: {basis} stall {raw * 1e3:.3f} ms beats {options[alt]} {st[alt] * 1e3:.3f} ms"
            )
        return "no codec applicable"

    def build() -> np.ndarray:
        n_iter, n_tensors = choice.shape
        out = np.empty((n_iter, n_tensors), dtype=object)
        for k in range(n_iter):
            for t in range(n_tensors):
                out[k, t] = one(k, t)
        return out

    return LazyReasons(build)
