"""Compressed swapping over a sparsity grid as one HTML page that needs no kernel."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .._public import public
from ..swap import SimResult, Trace, builtin_trace, get_profile, ratio_curve, simulate_many
from ..swap.codecs.ratios import measured_ratio_curve
from ..swap.simulator.applicability import applicable_codecs, codec_notes
from ..swap.simulator.policies import policies_for_codecs
from ..swap.traces.catalog import list_traces, load_trace
from ._demo import DemoPage, readout_table, render_page
from ._static import PALETTE
from ._swap_values import codec_mix, measure_shape, short_policy, size_label, spec_text

__all__ = ["swap_demo", "SPARSITY_GRID"]

SPARSITY_GRID: tuple[float, ...] = (*(round(0.05 * k, 2) for k in range(20)), 0.99)
"""Sparsities a swap demo simulates by default: 0% to 95% in steps of 5%, and 99%."""

_CURVE = np.round(np.linspace(0.0, 0.99, 45), 4)  # sparsities of the analytic lines
_MEASURED = (0.1, 0.3, 0.5, 0.7, 0.9)  # sparsities encoded for real
_MEASURE_CAP = 1 << 18  # elements; larger tensors are measured at this size (speed)


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
    (:func:`~pcr_explore.swap.simulate_many`) and the readouts. The sparsity
    slider and its play button move over the grid in the browser (Bokeh
    ``CustomJS``; BokehJS inlined, no network).

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
        For an empty grid, a sparsity outside [0, 1), or no codec.

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
    chosen = list(codecs) if codecs is not None else applicable_codecs(tr, prof)
    if not chosen:
        raise ValueError(f"no codec suits {tr.name} on {prof.name}; name some with codecs=")
    policies = tuple(policies_for_codecs(prof.name, chosen))
    steps = [
        simulate_many(
            tr.with_sparsity(s), profile=prof.name, policies=policies, noise=noise, seed=seed
        )
        for s in grid
    ]
    n = int(tensor_elements)
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(chosen)}
    now = ratio_curve(chosen, sparsities=grid, n=n)
    start = int(np.argmin([abs(s - sparsity) for s in grid]))
    data = {
        "grid": grid,
        "start": start,
        "steps": [
            _step(tr, prof.name, s, r, now, colors, k) for k, (s, r) in enumerate(zip(grid, steps))
        ],
    }
    roots = _models(
        chosen, n, colors, measured, seed, [short_policy(p) for p in policies], data, prof.name
    )
    notes = "".join(
        f"<div class='pcr-warn'><b>{html.escape(c)}</b>: {html.escape(note)}</div>"
        for c, note in codec_notes(tr, prof.name, chosen).items()
    )
    name = title or f"Compressed swapping: {tr.name} on {prof.name}"
    intro = (
        f"One training step of {html.escape(tr.name)} ({len(tr)} tensors, "
        f"{tr.total_bytes / 2**20:,.0f} MiB swapped) on the {html.escape(prof.name)} profile, "
        "simulated at each sparsity of the ReLU and pooling outputs. Move the sparsity: the "
        "codecs' ratios and the policies' swap time and stall follow."
    )
    page = render_page(
        name,
        page="swap_demo",
        intro=intro,
        roots=roots,
        data=data,
        start="window.pcrSwap = swapPage(data);",
        fill={"notes": notes},
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


def _step(
    trace: Trace,
    profile: str,
    s: float,
    results: dict[str, SimResult],
    ratios: dict[str, np.ndarray],
    colors: dict[str, str],
    k: int,
) -> dict[str, Any]:
    """What the page shows at grid point *k* (sparsity *s*): bars, ratio points, readouts."""
    values = list(results.values())
    base = results.get("vdnn")
    best = min(values, key=lambda r: r.stall_seconds)
    rows = [
        (
            "trace",
            f"{html.escape(trace.name)}: {len(trace)} tensors, "
            f"{trace.total_bytes / 2**20:,.0f} MiB per step",
        ),
        ("sparsity", spec_text(s)),
        ("device", html.escape(profile)),
        ("compute per step", f"{best.compute_seconds * 1e3:.2f} ms"),
    ]
    if base is not None:
        saved = 1 - best.stall_seconds / base.stall_seconds if base.stall_seconds else 0.0
        rows += [
            ("vDNN stall", f"{base.stall_seconds * 1e3:.2f} ms"),
            (
                "least stall",
                f"{short_policy(best.policy)}: {best.stall_seconds * 1e3:.2f} ms "
                f"({saved:.0%} less than vDNN)",
            ),
        ]
    return {
        "bars": {
            "policy": [short_policy(p) for p in results],
            "swap_ms": [r.swap_seconds * 1e3 for r in values],
            "stall_ms": [r.stall_seconds * 1e3 for r in values],
            "label": [codec_mix(r) for r in values],
        },
        "current": {
            "x": [s] * len(ratios),
            "y": [float(min(v[k], 1e4)) for v in ratios.values()],
            "codec": list(ratios),
            "color": [colors[c] for c in ratios],
        },
        "readout": readout_table(rows),
    }


def _models(
    codecs: list[str],
    n: int,
    colors: dict[str, str],
    measured: bool,
    seed: int,
    policies: list[str],
    data: dict[str, Any],
    profile: str,
) -> dict[str, Any]:
    """The ratio and policy figures and the sparsity controls, wired by CustomJS."""
    from bokeh.models import CustomJS, Range1d
    from bokeh.models.annotations import Title
    from bokeh.models.widgets import Button, CategoricalSlider

    from ._figures import policy_bars_figure, ratio_figure

    ratio_fig, src, span = ratio_figure()
    bars_fig, bars = policy_bars_figure(policies)
    src["current"].name, bars["bars"].name = "pcr-current", "pcr-bars"
    curves = ratio_curve(codecs, sparsities=_CURVE, n=n)
    src["lines"].data = {
        "xs": [_CURVE] * len(curves),
        "ys": [np.minimum(v, 1e4) for v in curves.values()],
        "codec": list(curves),
        "color": [colors[c] for c in curves],
    }
    if measured:
        shape = measure_shape(min(n, _MEASURE_CAP))
        meas = measured_ratio_curve(codecs, _MEASURED, shape, seed)
        src["measured"].data = {
            "x": np.tile(_MEASURED, len(meas)),
            "y": np.concatenate(list(meas.values())),
            "codec": [c for c in meas for _ in _MEASURED],
            "color": [colors[c] for c in meas for _ in _MEASURED],
        }
    cast(Title, ratio_fig.title).text = f"Ratio vs sparsity, {size_label(n)} tensors"
    cast(Title, bars_fig.title).text = "Swap time and stall per step"
    bars_fig.xaxis.axis_label = f"milliseconds per step (simulated, {profile})"
    first = data["steps"][data["start"]]
    src["current"].data = first["current"]
    bars["bars"].data = first["bars"]
    span.location = data["grid"][data["start"]]
    top = max(max(st["bars"]["swap_ms"]) for st in data["steps"])
    cast(Range1d, bars_fig.x_range).end = top * 1.08  # one axis for the whole grid
    for fig in (ratio_fig, bars_fig):
        for r in fig.renderers:  # see scan_demo: overlay repaints blank the legends
            if r.level == "overlay":
                r.level = "glyph"
    labels = [f"{s:.0%}" for s in data["grid"]]
    slider = CategoricalSlider(
        categories=labels, value=labels[data["start"]], title="sparsity", width=420,
        name="pcr-sparsity",
    )  # fmt: skip
    play = Button(label="\u25b6 play", width=90, name="pcr-play")
    args = {"slider": slider, "play": play, "current": src["current"], "bars": bars["bars"]}
    args["span"] = span
    slider.js_on_change(
        "value", CustomJS(args=args, code="window.pcrSwap.show(slider, {current, bars, span})")
    )
    play.js_on_event("button_click", CustomJS(args=args, code="window.pcrSwap.play(slider, play)"))
    return {"play": play, "slider": slider, "ratio": ratio_fig, "bars": bars_fig}
