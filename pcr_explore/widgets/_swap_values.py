"""What SwapExplorer shows, and how it names it: one text for the explorer and its page.

The explorer (in a kernel) and :func:`~pcr_explore.widgets.swap_demo` (a
page with no kernel) fill the same front end's state with these functions,
so a readout, a bar or a caption reads the same in both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..swap import SimResult, Trace, ratio_curve

__all__ = [
    "CURVE",
    "MEASURED",
    "MEASURE_CAP",
    "bars_state",
    "codec_mix",
    "current_state",
    "measure_shape",
    "measured_label",
    "ratio_title",
    "readout_rows",
    "short_policy",
    "size_label",
    "spec_text",
]

CURVE = np.round(np.linspace(0.0, 0.99, 45), 4)
"""Sparsities of the analytic ratio lines."""
MEASURED = (0.1, 0.3, 0.5, 0.7, 0.9)
"""Sparsities encoded for real (the measured points)."""
MEASURE_CAP = 1 << 18
"""Elements: larger tensors are measured at this size (speed)."""


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


def ratio_title(n: int) -> str:
    """The ratio chart's title for tensors of *n* elements."""
    return f"Compression ratio vs sparsity, {size_label(n)} tensors"


def measured_label(n: int) -> str:
    """The measured points' legend entry: the size actually encoded (capped for speed)."""
    return f"measured on {size_label(int(np.prod(measure_shape(min(n, MEASURE_CAP)))))}"


def current_state(codecs: list[str], s: float, n: int) -> dict[str, Any]:
    """Each codec's analytic ratio at sparsity *s* (the markers on the lines)."""
    now = ratio_curve(codecs, sparsities=[s], n=n) if codecs else {}
    return {"x": float(s), "codecs": list(now), "y": [float(min(v[0], 1e4)) for v in now.values()]}


def bars_state(results: dict[str, SimResult]) -> dict[str, Any]:
    """Swap time and stall per policy in milliseconds, with the codecs each policy chose."""
    values = list(results.values())
    return {
        "names": list(results),
        "policy": [short_policy(p) for p in results],
        "swap_ms": [r.swap_seconds * 1e3 for r in values],
        "stall_ms": [r.stall_seconds * 1e3 for r in values],
        "label": [codec_mix(r) for r in values],
    }


def readout_rows(
    trace: Trace, sparsity: str, profile: str, results: dict[str, SimResult]
) -> list[tuple[str, str]]:
    """The readouts (plain text) of one simulated step: trace, sparsity, compute and stalls."""
    base = results.get("vdnn")
    best = min(results.values(), key=lambda r: r.stall_seconds)
    rows = [
        (
            "trace",
            f"{trace.name}: {len(trace)} tensors, {trace.total_bytes / 2**20:,.0f} MiB per step",
        ),
        ("sparsity", sparsity),
        ("device", profile),
        ("compute per step", f"{best.compute_seconds * 1e3:.2f} ms"),
    ]
    if base is not None:
        saved = 1 - best.stall_seconds / base.stall_seconds if base.stall_seconds else 0.0
        rows.append(("vDNN stall", f"{base.stall_seconds * 1e3:.2f} ms"))
        rows.append(
            (
                "least stall",
                f"{short_policy(best.policy)}: {best.stall_seconds * 1e3:.2f} ms "
                f"({saved:.0%} less than vDNN)",
            )
        )
    return rows
