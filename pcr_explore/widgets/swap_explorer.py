"""SwapExplorer: change the sparsity of a step's activations; see which codecs pay."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import traitlets as t

from .._public import public
from ..swap import (
    SimResult,
    Trace,
    builtin_trace,
    codec_names,
    get_profile,
    profile_names,
    ratio_curve,
    simulate_many,
)
from ..swap.codecs.ratios import measured_ratio_curve
from ..swap.simulator.applicability import applicable_codecs, codec_notes
from ..swap.simulator.policies import policies_for_codecs
from ..swap.traces.catalog import list_traces, load_trace
from ._module_widget import Debounced, ModuleWidget, module_text
from ._static import PALETTE, bar_chart, hstack, line_chart, text_panel, to_jpeg, vstack
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
    short_policy,
    size_label,
    spec_text,
)

__all__ = ["SwapExplorer"]

_SIZES = [1 << k for k in range(12, 27, 2)]  # tensor elements offered: 4 Ki .. 64 Mi
WAITING = "the timeline is redrawn when the sparsity stops moving"
"""The timeline's caption while the sparsity moves (the page says it at once, too)."""


@public("pcr_explore.widgets")
class SwapExplorer(ModuleWidget):
    """Compressed activation swapping for one training step, live.

    Controls: the sparsity of the ReLU and pooling outputs (one value for
    every layer, or a ramp from shallow to deep layers), the tensor size of
    the ratio plot, the device profile, and the codecs in play. Views: each
    codec's compression ratio against sparsity (analytic lines from
    :func:`~pcr_explore.swap.ratio_curve`, triangles from real encodes by
    :func:`~pcr_explore.swap.codecs.ratios.measured_ratio_curve`), swap time and stall of the
    step under every policy (:func:`~pcr_explore.swap.simulate_many`), and
    the timeline of the step under one policy, redrawn when the sparsity
    slider stops. A ticked codec that cannot act (the device prices no
    kernel for it, or no tensor of the trace suits it) is explained under
    the boxes (:func:`~pcr_explore.swap.simulator.applicability.codec_notes`).

    The front end is one ES module (``static/swap_explorer.js``, on
    anywidget) that draws the controls and the three charts itself: it runs
    in JupyterLab, Notebook 7, VS Code, Colab and marimo, and the
    kernel-free page of :func:`swap_demo` runs the same file.

    Parameters
    ----------
    trace_or_model : Trace or str
        A trace, or a name from :func:`~pcr_explore.swap.list_traces` (analytic
        ``"vgg16"``, ``"resnet50"``; shipped ``"measured:..."``); the picker offers them all.
    profile : str
        Device profile name (see :func:`~pcr_explore.swap.profile_names`).
    codecs : sequence of str, optional
        Codecs ticked at first (default: those that suit the trace, see ``applicable_codecs``).
    sparsity : float
        Starting sparsity of ReLU and pooling outputs.
    tensor_elements : int
        Starting tensor size of the ratio plot, in float32 elements (the
        nearest size offered).
    batch : int
        Batch size of a built-in model's trace.
    measured : bool
        Draw measured ratios (real encodes, cached per size and codec set).
    noise, seed : float, int
        Passed to the simulator.
    timeline_delay : float
        Seconds the sparsity must rest before the timeline is redrawn.

    Attributes
    ----------
    sparsity : float
        The sparsity of every ReLU and pooling output (0-0.99; traitlets:
        set ``explorer.sparsity = 0.8`` from code, or observe it).
    ramp : list of float
        ``[shallow, deep]``: the sparsity of the first and last layers when
        ``shape`` is ``"ramp"``.
    shape : {"constant", "ramp", "traced"}
        One value for every layer, a ramp with depth, or the trace's own
        sparsity ("as traced", for a measured trace).
    trace_name : str
        The trace picked: a name of :func:`~pcr_explore.swap.list_traces`, or
        ``"given"`` for the trace passed in; ``trace_options`` lists them.
    profile : str
        The device profile.
    tensor_size : int
        Tensor size of the ratio plot, in float32 elements (one of ``tensor_sizes``).
    codecs : list of str
        The ticked codecs, in registry order (set it to tick others).
    timeline_policy : str
        The policy whose timeline is drawn (one of ``policy_options``).
    presentation : bool
        Larger text for a projector.
    lines, measured_points, current, bars, events : dict
        What the charts draw: analytic ratios, ratios of real encodes, each
        codec's ratio at the sparsity shown, the bars per policy, the
        timeline's events.
    measured : bool
        Whether real encodes are measured and drawn.
    readouts, notes : list of [str, str]
        The readouts and, per ticked codec that cannot act, why.
    timeline_caption : str
    results : dict of str to SimResult
        The simulation shown.

    Examples
    --------
    >>> from pcr_explore.widgets import SwapExplorer
    >>> ex = SwapExplorer("resnet50")
    >>> ex.sparsity = 0.8
    """

    _esm = module_text("swap_explorer.js")

    sparsity = t.Float(0.65, min=0.0, max=0.99).tag(sync=True)
    ramp = t.List(t.Float(), [0.4, 0.9], minlen=2, maxlen=2).tag(sync=True)
    shape = t.Enum(["constant", "ramp", "traced"], "constant").tag(sync=True)
    trace_name = t.Unicode("given").tag(sync=True)
    trace_options: t.List[Any] = t.List().tag(sync=True)
    profile = t.Unicode("v100-pcie3").tag(sync=True)
    profiles = t.List(t.Unicode()).tag(sync=True)
    tensor_size = t.Int(1 << 20).tag(sync=True)
    tensor_sizes: t.List[Any] = t.List().tag(sync=True)
    codecs = t.List(t.Unicode()).tag(sync=True)
    all_codecs = t.List(t.Unicode()).tag(sync=True)
    colors = t.Dict().tag(sync=True)
    ratio_title = t.Unicode("").tag(sync=True)
    lines = t.Dict().tag(sync=True)
    measured_points = t.Dict().tag(sync=True)
    current = t.Dict().tag(sync=True)
    bars = t.Dict().tag(sync=True)
    readouts: t.List[Any] = t.List().tag(sync=True)
    notes: t.List[Any] = t.List().tag(sync=True)
    timeline_policy = t.Unicode("").tag(sync=True)
    policy_options: t.List[Any] = t.List().tag(sync=True)
    events = t.Dict().tag(sync=True)
    timeline_caption = t.Unicode("").tag(sync=True)

    def __init__(
        self,
        trace_or_model: Trace | str = "resnet50",
        *,
        profile: str = "v100-pcie3",
        codecs: list[str] | None = None,
        sparsity: float = 0.65,
        tensor_elements: int = 1 << 20,
        batch: int = 64,
        measured: bool = True,
        noise: float = 0.05,
        seed: int = 0,
        timeline_delay: float = 0.5,
    ) -> None:
        options, chosen = self._pick_trace(trace_or_model, batch)
        self.noise, self.seed, self.measured = noise, seed, measured
        prof = get_profile(profile)
        ticked = applicable_codecs(self.trace, prof) if codecs is None else list(codecs)
        self.results: dict[str, SimResult] = {}
        self._simulate = functools.lru_cache(maxsize=128)(self._simulate_uncached)
        self._curves = functools.lru_cache(maxsize=64)(self._curves_uncached)
        self._measure = functools.lru_cache(maxsize=64)(self._measure_uncached)
        names = codec_names()
        super().__init__(
            trace_options=options, trace_name=chosen, profiles=profile_names(),
            profile=prof.name, all_codecs=names, codecs=ticked,
            colors={c: PALETTE[i % len(PALETTE)] for i, c in enumerate(names)},
            tensor_sizes=[[n, size_label(n)] for n in _SIZES],
            tensor_size=min(_SIZES, key=lambda n: abs(n - tensor_elements)),
            sparsity=sparsity,
            ramp=[max(0.0, sparsity - 0.25), min(0.99, sparsity + 0.25)],
        )  # fmt: skip
        self._timeline_later = Debounced(self._guarded(self._update_timeline), timeline_delay)
        on_step, on_ratios = self._guarded(self._update_step), self._guarded(self._update_all)
        self.observe(on_step, names=["sparsity", "ramp", "shape"])
        self.observe(on_ratios, names=["profile", "tensor_size", "codecs"])
        self.observe(self._guarded(self._on_trace), names="trace_name")
        self.observe(self._guarded(self._update_timeline), names="timeline_policy")
        self.observe(lambda _: self._changed(), names="presentation")
        self._update_all()

    def _pick_trace(self, trace_or_model: Trace | str, batch: int) -> tuple[list[Any], str]:
        """The trace to start with, and the picker's options (with the given one first)."""
        listed = list_traces()
        options = [[o.name, o.label] for o in listed]
        self._measured_names = {o.name for o in listed if o.kind != "analytic"}
        chosen = "given"  # the trace passed in, or a model at another batch
        if isinstance(trace_or_model, Trace):
            self.trace = self._given = trace_or_model
            options.insert(0, [chosen, f"{trace_or_model.name} (yours)"])
        elif batch == 64 and str(trace_or_model) in {o.name for o in listed}:
            self.trace = self._given = load_trace(str(trace_or_model))
            chosen = str(trace_or_model)
        else:
            self.trace = self._given = builtin_trace(str(trace_or_model), batch=batch)
            options.insert(0, [chosen, f"{trace_or_model} (analytic, batch {batch})"])
        return options, chosen

    # -- what may be set -------------------------------------------------------------

    @t.validate("ramp")
    def _valid_ramp(self, proposal: Any) -> list[float]:
        lo, hi = sorted(float(v) for v in proposal["value"])
        if not 0.0 <= lo <= hi <= 0.99:
            raise t.TraitError(f"ramp must be two sparsities in [0, 0.99], got {[lo, hi]}")
        return [lo, hi]

    @t.validate("profile")
    def _valid_profile(self, proposal: Any) -> str:
        name = str(proposal["value"])
        if name not in profile_names():
            raise t.TraitError(f"no device profile {name!r}; choose from {profile_names()}")
        return name

    @t.validate("tensor_size")
    def _valid_size(self, proposal: Any) -> int:
        n = int(proposal["value"])
        if n not in _SIZES:
            raise t.TraitError(f"tensor_size must be one of {_SIZES}, got {n}")
        return n

    @t.validate("codecs")
    def _valid_codecs(self, proposal: Any) -> list[str]:
        known = codec_names()
        unknown = sorted(set(proposal["value"]) - set(known))
        if unknown:
            raise t.TraitError(f"unknown codecs {unknown}; choose from {known}")
        return [c for c in known if c in proposal["value"]]

    @t.validate("trace_name")
    def _valid_trace(self, proposal: Any) -> str:
        name = str(proposal["value"])
        if name not in [value for value, _ in self.trace_options]:
            raise t.TraitError(f"no trace {name!r} to pick; see list_traces()")
        return name

    # -- what is simulated ---------------------------------------------------------

    def sparsity_spec(self) -> float | tuple[float, float] | None:
        """Return the sparsity to simulate: a value, a (low, high) ramp, or None (as traced)."""
        if self.shape == "traced":
            return None
        if self.shape == "ramp":
            lo, hi = self.ramp
            return (float(lo), float(hi))
        return float(self.sparsity)

    def policies(self) -> list[str]:
        """List the policies simulated.

        See :func:`~pcr_explore.swap.simulator.policies.policies_for_codecs`.

        vDNN, always-<codec> for each ticked codec the profile prices, CSWAP
        and the oracle over those codecs.
        """
        return policies_for_codecs(self.profile, list(self.codecs))

    def _simulate_uncached(
        self,
        spec: float | tuple[float, float] | None,
        profile: str,
        policies: tuple[str, ...],
        trace_name: str,
    ) -> dict[str, SimResult]:
        trace = self.trace if spec is None else self.trace.with_sparsity(spec)
        return simulate_many(
            trace, profile=profile, policies=policies, noise=self.noise, seed=self.seed
        )

    def _curves_uncached(self, codecs: tuple[str, ...], n: int) -> dict[str, np.ndarray]:
        return ratio_curve(codecs, sparsities=CURVE, n=n)

    def _measure_uncached(self, codecs: tuple[str, ...], n: int) -> dict[str, np.ndarray]:
        return measured_ratio_curve(codecs, MEASURED, measure_shape(min(n, MEASURE_CAP)), self.seed)

    # -- updates -------------------------------------------------------------------

    def _on_trace(self, change: Any = None) -> None:
        """Load the picked trace; a measured one starts with its own sparsity."""
        name = self.trace_name
        self.trace = self._given if name == "given" else load_trace(name)
        traced = name in self._measured_names or (
            name == "given" and "measured" in str(self.trace.meta)
        )
        self.shape = "traced" if traced else "constant"  # re-simulates when it changes
        self._update_all()

    def _update_all(self, change: Any = None) -> None:
        """Redraw the ratio lines, measured points and notes, then the step."""
        codecs, n = tuple(self.codecs), int(self.tensor_size)
        curves = self._curves(codecs, n)
        lines = {"x": CURVE.tolist(), "codecs": list(curves)}
        lines["y"] = [np.minimum(v, 1e4).tolist() for v in curves.values()]
        meas: dict[str, np.ndarray] = {}
        if self.measured and codecs:
            with self.busy(f"encoding {size_label(min(n, MEASURE_CAP))} tensors to measure..."):
                meas = self._measure(codecs, n)
        notes = codec_notes(self.trace, self.profile, list(codecs))
        with self.hold_sync():
            self.lines = lines
            self.measured_points = {
                "x": list(MEASURED),
                "codecs": list(meas),
                "y": [np.asarray(v, float).tolist() for v in meas.values()],
                "label": measured_label(n),
            }
            self.ratio_title = ratio_title(n)
            self.notes = [[c, note] for c, note in notes.items()]
            self._update_step()

    def _update_step(self, change: Any = None) -> None:
        """Re-simulate the step and redraw what depends on sparsity; the timeline waits."""
        spec = self.sparsity_spec()
        policies = tuple(self.policies())
        self.results = self._simulate(spec, self.profile, policies, self.trace_name)
        sim_trace = next(iter(self.results.values())).trace
        s_mean = spec if isinstance(spec, float) else float(sim_trace.mean_sparsity)
        names = list(self.results)
        with self.hold_sync():
            self.current = current_state(list(self.codecs), s_mean, int(self.tensor_size))
            self.bars = bars_state(self.results)
            self.readouts = [list(r) for r in self.readout_rows()]
            options = [[p, short_policy(p)] for p in names]
            if self.policy_options != options:
                keep = self.timeline_policy
                cswap = next((p for p in names if p.startswith("cswap")), names[-1])
                self.policy_options = options
                self.timeline_policy = keep if keep in names else cswap
            if self.events.get("start"):
                self.timeline_caption = WAITING
        self._timeline_later()

    def _update_timeline(self, change: Any = None) -> None:
        result = self.results.get(self.timeline_policy)
        if result is None:
            return
        tl = result.timeline()
        # only what the bars and their tips need: 500 events of strings are most of the message
        with self.hold_sync():
            self.events = {
                "name": list(tl["name"]),
                "phase": list(tl["phase"]),
                "kind": list(tl["kind"]),
                "codec": [str(c) for c in tl["codec"]],
                "start": [float(v) * 1e3 for v in tl["start"]],
                "end": [float(v) * 1e3 for v in tl["end"]],
                "lane": list(tl["stream"]),
            }
            self.timeline_caption = (
                f"{short_policy(result.policy)} at sparsity {self._sparsity_text()}: "
                f"{result.stall_seconds * 1e3:.2f} ms of stall"
            )

    def readout_rows(self) -> list[tuple[str, str]]:
        """Return the readouts as (label, value) pairs: what the page shows."""
        return readout_rows(self.trace, self._sparsity_text(), self.profile, self.results)

    def _sparsity_text(self) -> str:
        spec = self.sparsity_spec()
        if spec is None:
            return f"as traced (mean {self.trace.mean_sparsity:.0%})"
        return spec_text(spec)

    def save_html(
        self, path: str | os.PathLike[str], *, sparsities: list[float] | None = None
    ) -> Path:
        """Write this explorer as one HTML page that runs with no kernel; return its path.

        The trace, device, codecs and tensor size shown, simulated at each of
        *sparsities* (default: 0% to 95% by 5%, and 99%) for one value in every
        layer; see :func:`~pcr_explore.widgets.swap_demo`.
        """
        from ._swap_demo import SPARSITY_GRID, swap_demo

        page = swap_demo(
            self.trace, profile=self.profile, codecs=list(self.codecs),
            sparsities=SPARSITY_GRID if sparsities is None else sparsities,
            sparsity=float(self.sparsity), tensor_elements=int(self.tensor_size),
            measured=self.measured, noise=self.noise, seed=self.seed,
        )  # fmt: skip
        return page.save_html(path)

    # -- static picture --------------------------------------------------------------

    def snapshot(self) -> bytes:
        """Draw the ratio curves, the per-policy bars and the readouts with Pillow.

        Returns
        -------
        bytes
            A JPEG, for places where widgets cannot run.
        """
        return swap_picture(self)


def swap_picture(ex: SwapExplorer) -> bytes:
    """The ratio curves, the per-policy bars and the readouts."""
    lines = ex.lines
    x = np.asarray(lines.get("x", []), float)
    series = [
        (c, x, np.log10(np.maximum(np.asarray(y, float), 1e-3)))
        for c, y in zip(lines.get("codecs", []), lines.get("y", []))
    ]
    ratio = line_chart(
        series,
        title=f"log10 {ex.ratio_title.lower()}",
        xlabel="sparsity (share of zeros)",
        ylabel="log10 ratio",
        legend_at="top_left",
        xfmt="{:.0%}",
    )
    bars = ex.bars
    policy = bar_chart(
        [p.replace("always:", "") for p in bars.get("policy", [])],
        [
            ("swap ms", np.asarray(bars.get("swap_ms", []), float)),
            ("stall ms", np.asarray(bars.get("stall_ms", []), float)),
        ],
        title="Swap time and stall per policy (ms)",
        size=(620, 300),
    )
    text = text_panel([f"{k}: {v}" for k, v in ex.readout_rows()], 1100)
    return to_jpeg(vstack([hstack([ratio, policy]), text]))
