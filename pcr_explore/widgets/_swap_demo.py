"""Compressed swapping over a sparsity grid as one HTML page that needs no kernel."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._public import public
from ..swap import Trace, builtin_trace, codec_names, get_profile, ratio_curve, simulate_many
from ..swap.codecs.ratios import measured_ratio_curve
from ..swap.simulator.applicability import applicable_codecs, codec_notes
from ..swap.simulator.policies import policies_for_codecs
from ..swap.traces.catalog import list_traces, load_trace
from ._demo import DemoPage, render_module_page
from ._static import PALETTE
from ._swap_values import (
    CURVE,
    MEASURE_CAP,
    MEASURED,
    bars_state,
    current_state,
    measure_shape,
    measured_label,
    ratio_title,
    readout_rows,
    size_label,
    spec_text,
)

__all__ = ["swap_demo", "SPARSITY_GRID"]

SPARSITY_GRID: tuple[float, ...] = (*(round(0.05 * k, 2) for k in range(20)), 0.99)
"""Sparsities a swap demo simulates by default: 0% to 95% in steps of 5%, and 99%."""


@public("pcr_explore.widgets")
def swap_demo(
    trace: Trace | str = "resnet50",
    *,
    profile: str = "v100-pcie3",
    codecs: Sequence[str] | None = None,
    sparsities: Sequence[float] = SPARSITY_GRID,
    sparsity: float = 0.65,
    tensor_elements: int = 1 << 20,
    batch: int = 64,
    measured: bool = True,
    noise: float = 0.05,
    seed: int = 0,
    title: str | None = None,
) -> DemoPage:
    """Write a training step's swapping at every sparsity of a grid into a page with no kernel.

    What :class:`~pcr_explore.widgets.SwapExplorer` shows for one sparsity
    for every layer, simulated once per grid point: each codec's compression
    ratio against sparsity (:func:`~pcr_explore.swap.ratio_curve`, and real
    encodes by :func:`~pcr_explore.swap.codecs.ratios.measured_ratio_curve`),
    the swap time and stall of the step under every policy
    (:func:`~pcr_explore.swap.simulate_many`) and the readouts. The page runs
    SwapExplorer's own front end (``static/swap_explorer.js``) on a model of
    its own that holds these steps: the sparsity slider and its play button
    move over the grid in the browser, and the page reads as the explorer
    does; it opens from a file with no network. The trace, device, codecs
    and tensor size are fixed (named above the explorer), and the timeline,
    which the explorer redraws in a kernel, is left out.

    Parameters
    ----------
    trace : Trace or str
        A trace, or a name from :func:`~pcr_explore.swap.list_traces` or a
        built-in model (``"vgg16"``, ``"resnet50"``).
    profile : str
        Device profile (see :func:`~pcr_explore.swap.profile_names`).
    codecs : sequence of str, optional
        Codecs in play (default: those that suit the trace and profile).
    sparsities : sequence of float
        The grid, values in [0, 1); each point costs one simulation of every
        policy (about a second on a laptop).
    sparsity : float
        Shown first (the nearest grid point).
    tensor_elements : int
        Tensor size of the ratio plot, in float32 elements.
    batch : int
        Batch size of a built-in model's trace.
    measured : bool
        Draw the ratios of real encodes too.
    noise, seed : float, int
        Passed to the simulator.
    title : str, optional
        Page title.

    Returns
    -------
    DemoPage

    Raises
    ------
    ValueError
        For an empty grid, a sparsity outside [0, 1), an unknown codec or none.

    Examples
    --------
    >>> page = swap_demo("resnet50", sparsities=[0.3, 0.6, 0.9])
    >>> page.save_html("swap.html")
    PosixPath('swap.html')
    """
    tr = _trace(trace, batch)
    prof = get_profile(profile)
    grid = sorted({round(float(s), 4) for s in sparsities})
    if not grid or not all(0.0 <= s < 1.0 for s in grid):
        raise ValueError(f"sparsities must be values in [0, 1), got {list(sparsities)!r}")
    if codecs is not None and set(codecs) - set(codec_names()):
        unknown = sorted(set(codecs) - set(codec_names()))
        raise ValueError(f"unknown codecs {unknown}; choose from {codec_names()}")
    chosen = (
        applicable_codecs(tr, prof)
        if codecs is None
        else [c for c in codec_names() if c in set(codecs)]  # in the explorer's order
    )
    if not chosen:
        raise ValueError(f"no codec suits {tr.name} on {prof.name}; name some with codecs=")
    policies = tuple(policies_for_codecs(prof.name, chosen))
    n = int(tensor_elements)
    steps = []
    for s in grid:
        results = simulate_many(
            tr.with_sparsity(s), profile=prof.name, policies=policies, noise=noise, seed=seed
        )
        steps.append(
            {
                "current": current_state(chosen, s, n),
                "bars": bars_state(results),
                "readouts": [list(r) for r in readout_rows(tr, spec_text(s), prof.name, results)],
            }
        )
    start = grid[int(np.argmin([abs(s - sparsity) for s in grid]))]
    first = _start(tr, prof.name, chosen, n, measured, seed) | {"grid": grid, "sparsity": start}
    data = {"grid": grid, "steps": steps, "start": first}
    name = title or f"Compressed swapping: {tr.name} on {prof.name}"
    intro = (
        f"One training step of {html.escape(tr.name)} ({len(tr)} tensors, "
        f"{tr.total_bytes / 2**20:,.0f} MiB swapped) on the {html.escape(prof.name)} profile "
        f"with {html.escape(', '.join(chosen))} in play, simulated at each sparsity of the ReLU "
        f"and pooling outputs; tensors of {size_label(n)} in the ratio plot. Move the sparsity: "
        "the codecs' ratios and the policies' swap time and stall follow."
    )
    page = render_module_page(
        name,
        intro=intro,
        module="swap_demo.js",
        data=data,
        start="window.pcrSwap = swapPage(data, host);",
    )
    return DemoPage(name, page)


def _trace(trace: Trace | str, batch: int) -> Trace:
    """The trace itself, a listed one (at batch 64) or a built-in model at *batch*."""
    if isinstance(trace, Trace):
        return trace
    listed = {o.name for o in list_traces()}
    if batch == 64 and str(trace) in listed:
        return load_trace(str(trace))
    return builtin_trace(str(trace), batch=batch)


def _start(
    trace: Trace, profile: str, codecs: list[str], n: int, measured: bool, seed: int
) -> dict[str, Any]:
    """The explorer's state that no sparsity changes: the ratio lines, measured points, notes."""
    names = codec_names()
    curves = ratio_curve(codecs, sparsities=CURVE, n=n)
    shape = measure_shape(min(n, MEASURE_CAP))
    meas = measured_ratio_curve(codecs, MEASURED, shape, seed) if measured else {}
    return {
        "has_kernel": False, "shape": "constant", "profile": profile, "tensor_size": n,
        "codecs": codecs, "all_codecs": names,
        "colors": {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(names)},
        "ratio_title": ratio_title(n),
        "lines": {
            "x": CURVE.tolist(), "codecs": list(curves),
            "y": [np.minimum(v, 1e4).tolist() for v in curves.values()],
        },
        "measured_points": {
            "x": list(MEASURED), "codecs": list(meas),
            "y": [np.asarray(v, float).tolist() for v in meas.values()],
            "label": measured_label(n),
        },
        "notes": [[c, note] for c, note in codec_notes(trace, profile, codecs).items()],
        "ramp": [0.0, 0.0], "events": {}, "timeline_caption": "", "status": "", "error": "",
        "presentation": False,
    }  # fmt: skip
