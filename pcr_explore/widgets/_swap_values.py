"""How SwapExplorer names what it shows: tensor sizes, policies, sparsity settings."""

from __future__ import annotations

from ..swap import SimResult

__all__ = ["codec_mix", "measure_shape", "short_policy", "size_label", "spec_text"]


def size_label(n: int) -> str:
    """Return the size of *n* float32 elements in binary units ("4 MiB").

    >>> size_label(1 << 20)
    '4 MiB'
    """
    nbytes = 4 * n
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def measure_shape(n: int) -> tuple[int, int, int, int]:
    """Return an NCHW shape of *n* float32 elements (32x32 planes, up to 16 channels).

    >>> [measure_shape(n) for n in (1 << 12, 1 << 14, 1 << 18)]
    [(1, 4, 32, 32), (1, 16, 32, 32), (16, 16, 32, 32)]
    """
    planes = max(1, n // (32 * 32))
    channels = min(16, planes)
    return (max(1, planes // channels), channels, 32, 32)


def short_policy(policy: str) -> str:
    """``cswap:zvc,csr`` -> ``cswap``: the codec list is the ticked boxes, shown elsewhere."""
    base = policy.partition(":")[0]
    return base if base in ("cswap", "oracle") else policy


def spec_text(spec: float | tuple[float, float]) -> str:
    """Describe a sparsity setting: one value for every layer, or a ramp."""
    if isinstance(spec, tuple):
        return f"{spec[0]:.0%} (shallow) to {spec[1]:.0%} (deep)"
    return f"{spec:.0%} for every ReLU and pooling output"


def codec_mix(result: SimResult) -> str:
    """List the codecs a result chose, most used first ("zvc x12, raw x9")."""
    counts = result.summary()["codec_counts"]
    return ", ".join(f"{c} x{k}" for c, k in sorted(counts.items(), key=lambda kv: -kv[1]))
