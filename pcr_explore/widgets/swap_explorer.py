"""SwapExplorer: change the sparsity of a step's activations; see which codecs pay."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, cast

import ipywidgets as w
import numpy as np
from bokeh.core.property.vectorization import value
from bokeh.models import FactorRange, Range1d
from bokeh.models.annotations import LegendItem, Title

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
from ._explorer import Debounced, Explorer, html_table
from ._figures import fit_range, policy_bars_figure, ratio_figure, timeline_figure, update_source
from ._static import PALETTE, bar_chart, hstack, line_chart, text_panel, to_jpeg, vstack
from ._swap_values import codec_mix as _codec_mix
from ._swap_values import measure_shape as _measure_shape
from ._swap_values import short_policy as _short
from ._swap_values import size_label as _size_label
from ._swap_values import spec_text as _spec_text

__all__ = ["SwapExplorer"]

_CURVE = np.round(np.linspace(0.0, 0.99, 45), 4)  # sparsities of the analytic lines
_MEASURED = (0.1, 0.3, 0.5, 0.7, 0.9)  # sparsities encoded for real
_MEASURE_CAP = 1 << 18  # elements; larger tensors are measured at this size (speed)
_SIZES = [1 << k for k in range(12, 27, 2)]  # tensor elements offered: 4 Ki .. 64 Mi
_ROW = w.Layout(flex_flow="row wrap", align_items="center", width="100%")


@public("pcr_explore.widgets")
class SwapExplorer(Explorer):
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
        Starting tensor size of the ratio plot, in float32 elements.
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
    trace_picker, sparsity, ramp, shape, tensor_size, profile, codec_boxes, timeline_policy
        The controls (``shape`` "as traced" keeps a measured trace's sparsity).
    readout, notes, timeline_caption : ipywidgets.HTML
    ratio_plot, bars_plot, timeline_plot : jupyter_bokeh.BokehModel
    sources : dict of str to ColumnDataSource
        ``lines``, ``measured``, ``current``, ``bars``, ``events``.
    results : dict of str to SimResult
        The simulation shown.

    Examples
    --------
    >>> from pcr_explore.widgets import SwapExplorer
    >>> ex = SwapExplorer("resnet50")
    >>> ex.sparsity.value = 0.8
    """

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
        super().__init__()
        options, chosen = self._pick_trace(trace_or_model, batch)
        self.trace_picker = w.Dropdown(
            options=options, value=chosen, description="trace", layout=w.Layout(width="320px")
        )
        self.noise, self.seed, self.measured = noise, seed, measured
        prof = get_profile(profile)
        ticked = set(applicable_codecs(self.trace, prof) if codecs is None else codecs)
        self._build_controls(sparsity, tensor_elements, prof.name, ticked)
        self.ratio_fig, src, self.span = ratio_figure()
        self.bars_fig, bars = policy_bars_figure(["vdnn"])
        self._policy_range = cast(FactorRange, self.bars_fig.y_range)
        self.timeline_fig, events = timeline_figure()
        self.sources = {**src, **bars, **events}
        self.ratio_plot = self._plot(self.ratio_fig)
        self.bars_plot = self._plot(self.bars_fig)
        self.timeline_plot = self._plot(self.timeline_fig)
        self.results: dict[str, SimResult] = {}

        self._simulate = functools.lru_cache(maxsize=128)(self._simulate_uncached)
        self._curves = functools.lru_cache(maxsize=64)(self._curves_uncached)
        self._measure = functools.lru_cache(maxsize=64)(self._measure_uncached)
        self._timeline_later = Debounced(self._guarded(self._update_timeline), timeline_delay)

        self.view = self._layout()
        self._connect()
        self._update_all()

    def _pick_trace(self, trace_or_model: Trace | str, batch: int) -> tuple[list[Any], str]:
        """The trace to start with, and the picker's options (with the given one first)."""
        listed = list_traces()
        options = [(o.label, o.name) for o in listed]
        self._measured_names = {o.name for o in listed if o.kind != "analytic"}
        chosen = "given"  # the trace passed in, or a model at another batch
        if isinstance(trace_or_model, Trace):
            self.trace = self._given = trace_or_model
            options.insert(0, (f"{trace_or_model.name} (yours)", chosen))
        elif batch == 64 and str(trace_or_model) in dict(options).values():
            self.trace = self._given = load_trace(str(trace_or_model))
            chosen = str(trace_or_model)
        else:
            self.trace = self._given = builtin_trace(str(trace_or_model), batch=batch)
            options.insert(0, (f"{trace_or_model} (analytic, batch {batch})", chosen))
        return options, chosen

    def _build_controls(
        self, sparsity: float, tensor_elements: int, profile: str, ticked: set[str]
    ) -> None:
        """The sparsity, tensor, device and codec controls, and the readouts."""
        self.sparsity = w.FloatSlider(
            value=sparsity,
            min=0.0,
            max=0.99,
            step=0.01,
            readout_format=".0%",
            description="sparsity",
            continuous_update=True,
            layout=w.Layout(width="340px"),
        )
        self.ramp = w.FloatRangeSlider(
            value=(max(0.0, sparsity - 0.25), min(0.99, sparsity + 0.25)),
            min=0.0,
            max=0.99,
            step=0.01,
            readout_format=".0%",
            description="shallow to deep",
            continuous_update=True,
            disabled=True,
            layout=w.Layout(width="380px"),
            style={"description_width": "initial"},
        )
        self.shape = w.ToggleButtons(
            options=[
                ("one value", "constant"),
                ("ramp with depth", "ramp"),
                ("as traced", "traced"),
            ],
            value="constant",
            style={"button_width": "auto"},
        )
        self.tensor_size = w.SelectionSlider(
            options=[(_size_label(n), n) for n in _SIZES],
            value=min(_SIZES, key=lambda n: abs(n - tensor_elements)),
            description="tensor",
            continuous_update=False,
            layout=w.Layout(width="260px"),
        )
        self.profile = w.Dropdown(
            options=profile_names(),
            value=profile,
            description="device",
            layout=w.Layout(width="230px"),
        )
        self.codec_boxes = {
            c: w.Checkbox(
                value=c in ticked, description=c, indent=False, layout=w.Layout(width="84px")
            )
            for c in codec_names()
        }
        self.timeline_policy = w.Dropdown(
            description="timeline of", options=[], value=None, layout=w.Layout(width="260px")
        )
        self.readout = w.HTML()
        self.notes = w.HTML()
        self.timeline_caption = w.HTML()

    def _layout(self) -> w.VBox:
        """Controls on top, the ratio and policy plots side by side, the timeline below."""
        half = {"flex": "1 1 45%", "min_width": "320px"}
        return w.VBox(
            [
                w.HBox([self.shape, self.sparsity, self.ramp], layout=_ROW),
                w.HBox(
                    [self.trace_picker, self.profile, self.tensor_size, self.presentation],
                    layout=_ROW,
                ),
                w.HBox(list(self.codec_boxes.values()), layout=_ROW),
                self.notes,
                w.HBox(
                    [
                        w.Box([self.ratio_plot], layout=w.Layout(**half)),
                        w.Box([self.bars_plot], layout=w.Layout(**half)),
                    ],
                    layout=w.Layout(flex_flow="row wrap", width="100%"),
                ),
                w.HBox([self.timeline_policy, self.timeline_caption], layout=_ROW),
                self.timeline_plot,
                self.readout,
                self.errors,
            ],
            layout=w.Layout(width="100%"),
        )

    def _connect(self) -> None:
        """Every control to what it recomputes."""
        on_step = self._guarded(self._update_step)
        on_ratios = self._guarded(self._update_all)
        self.sparsity.observe(on_step, names="value")
        self.ramp.observe(on_step, names="value")
        self.shape.observe(self._guarded(self._on_shape), names="value")
        self.profile.observe(on_ratios, names="value")
        self.trace_picker.observe(self._guarded(self._on_trace), names="value")
        self.tensor_size.observe(on_ratios, names="value")
        for box in self.codec_boxes.values():
            box.observe(on_ratios, names="value")
        self.timeline_policy.observe(self._guarded(self._update_timeline), names="value")

    # -- what is simulated ---------------------------------------------------------

    @property
    def codecs(self) -> list[str]:
        """The ticked codecs, in registry order."""
        return [c for c, box in self.codec_boxes.items() if box.value]

    def sparsity_spec(self) -> float | tuple[float, float] | None:
        """Return the sparsity to simulate: a value, a (low, high) ramp, or None (as traced)."""
        if self.shape.value == "traced":
            return None
        if self.shape.value == "ramp":
            lo, hi = self.ramp.value
            return (float(lo), float(hi))
        return float(self.sparsity.value)

    def policies(self) -> list[str]:
        """List the policies simulated.

        See :func:`~pcr_explore.swap.simulator.policies.policies_for_codecs`.

        vDNN, always-<codec> for each ticked codec the profile prices, CSWAP
        and the oracle over those codecs.
        """
        return policies_for_codecs(self.profile.value, self.codecs)

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
        return ratio_curve(codecs, sparsities=_CURVE, n=n)

    def _measure_uncached(self, codecs: tuple[str, ...], n: int) -> dict[str, np.ndarray]:
        return measured_ratio_curve(
            codecs, _MEASURED, _measure_shape(min(n, _MEASURE_CAP)), self.seed
        )

    # -- updates -------------------------------------------------------------------

    def _color(self, codec: str) -> str:
        return PALETTE[list(self.codec_boxes).index(codec) % len(PALETTE)]

    def _legend_size(self, figure: Any) -> str | None:
        return "11px"

    def _on_shape(self, change: Any = None) -> None:
        ramp = self.shape.value == "ramp"
        self.ramp.disabled = not ramp
        self.sparsity.disabled = ramp or self.shape.value == "traced"
        self._update_step()

    def _on_trace(self, change: Any = None) -> None:
        """Load the picked trace; a measured one starts with its own sparsity."""
        name = self.trace_picker.value
        self.trace = self._given if name == "given" else load_trace(name)
        traced = name in self._measured_names or (
            name == "given" and "measured" in str(self.trace.meta)
        )
        if self.shape.value != ("traced" if traced else "constant"):
            self.shape.value = "traced" if traced else "constant"  # redraws via _on_shape
        self._update_all()

    def _update_all(self, change: Any = None) -> None:
        """Redraw the ratio lines, measured points and notes, then the step."""
        codecs, n = tuple(self.codecs), int(self.tensor_size.value)
        curves = self._curves(codecs, n)
        self.sources["lines"].data = {
            "xs": [_CURVE] * len(curves),
            "ys": [np.minimum(v, 1e4) for v in curves.values()],
            "codec": list(curves),
            "color": [self._color(c) for c in curves],
        }
        meas = self._measure(codecs, n) if self.measured and codecs else {}
        self.sources["measured"].data = {
            "x": np.tile(_MEASURED, len(meas)),
            "y": np.concatenate(list(meas.values())) if meas else np.array([]),
            "codec": [c for c in meas for _ in _MEASURED],
            "color": [self._color(c) for c in meas for _ in _MEASURED],
        }
        m = int(np.prod(_measure_shape(min(n, _MEASURE_CAP))))
        cast(Title, self.ratio_fig.title).text = f"Ratio vs sparsity, {_size_label(n)} tensors"
        for item in self.ratio_fig.legend[0].items:
            if not isinstance(item, LegendItem) or not item.renderers:
                continue
            if item.renderers[0].data_source is self.sources["measured"]:
                item.label = value(f"measured on {_size_label(m)}")
        notes = codec_notes(self.trace, self.profile.value, codecs)
        self.notes.value = "".join(
            f"<div style='color:#9a6700'><b>{c}</b>: {note}</div>" for c, note in notes.items()
        )
        self._update_step()

    def _update_step(self, change: Any = None) -> None:
        """Re-simulate the step and redraw what depends on sparsity; the timeline waits."""
        spec = self.sparsity_spec()
        policies = tuple(self.policies())
        self.results = self._simulate(spec, self.profile.value, policies, self.trace_picker.value)
        sim_trace = next(iter(self.results.values())).trace
        s_mean = spec if isinstance(spec, float) else sim_trace.mean_sparsity
        self.span.location = s_mean
        codecs = tuple(self.codecs)
        now = (
            ratio_curve(codecs, sparsities=[s_mean], n=int(self.tensor_size.value))
            if codecs
            else {}
        )
        update_source(
            self.sources["current"],
            {
                "x": [s_mean] * len(now),
                "y": [float(min(v[0], 1e4)) for v in now.values()],
                "codec": list(now),
                "color": [self._color(c) for c in now],
            },
        )
        names = list(self.results)
        labels = [_short(p) for p in names]
        if list(self._policy_range.factors) != labels[::-1]:
            self._policy_range.factors = labels[::-1]
        fit_range(
            cast(Range1d, self.bars_fig.x_range),
            max(r.swap_seconds for r in self.results.values()) * 1e3,
        )
        update_source(
            self.sources["bars"],
            {
                "policy": labels,
                "swap_ms": [r.swap_seconds * 1e3 for r in self.results.values()],
                "stall_ms": [r.stall_seconds * 1e3 for r in self.results.values()],
                "label": [_codec_mix(r) for r in self.results.values()],
            },
        )
        options = list(zip(labels, names))
        if list(self.timeline_policy.options) != options:
            keep = self.timeline_policy.value
            cswap = next((p for p in names if p.startswith("cswap")), names[-1])
            self.timeline_policy.options = options
            self.timeline_policy.value = keep if keep in names else cswap
        self.readout.value = html_table(self.readout_rows())
        if self.sources["events"].data["start"] is not None and len(
            self.sources["events"].data["start"]
        ):
            self.timeline_caption.value = (
                "<i style='color:#777'>the timeline is redrawn when the sparsity stops moving</i>"
            )
        self._timeline_later()

    def _update_timeline(self, change: Any = None) -> None:
        result = self.results.get(self.timeline_policy.value)
        if result is None:
            return
        tl = result.timeline()
        # only what the bars and their tooltips need: 500 events of strings are
        # most of the message
        self.sources["events"].data = {
            "name": tl["name"],
            "phase": tl["phase"],
            "kind": tl["kind"],
            "codec": tl["codec"],
            "start": np.asarray(tl["start"]) * 1e3,
            "end": np.asarray(tl["end"]) * 1e3,
            "lane": tl["stream"],
        }
        self.timeline_caption.value = (
            f"{_short(result.policy)} at sparsity {self._sparsity_text()}: "
            f"{result.stall_seconds * 1e3:.2f} ms of stall"
        )

    def readout_rows(self) -> list[tuple[str, str]]:
        """Return the readouts as (label, value) pairs."""
        base = self.results.get("vdnn")
        best = min(self.results.values(), key=lambda r: r.stall_seconds)
        rows = [
            (
                "trace",
                f"{self.trace.name}: {len(self.trace)} tensors, "
                f"{self.trace.total_bytes / 2**20:,.0f} MiB per step",
            ),
            ("sparsity", self._sparsity_text()),
            ("device", self.profile.value),
            ("compute per step", f"{best.compute_seconds * 1e3:.2f} ms"),
        ]
        if base is not None:
            rows.append(("vDNN stall", f"{base.stall_seconds * 1e3:.2f} ms"))
            saved = 1 - best.stall_seconds / base.stall_seconds if base.stall_seconds else 0.0
            rows.append(
                (
                    "least stall",
                    f"{_short(best.policy)}: {best.stall_seconds * 1e3:.2f} ms "
                    f"({saved:.0%} less than vDNN)",
                )
            )
        return rows

    def _sparsity_text(self) -> str:
        spec = self.sparsity_spec()
        if spec is None:
            return f"as traced (mean {self.trace.mean_sparsity:.0%})"
        return _spec_text(spec)

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
            self.trace, profile=self.profile.value, codecs=self.codecs,
            sparsities=SPARSITY_GRID if sparsities is None else sparsities,
            sparsity=float(self.sparsity.value), tensor_elements=int(self.tensor_size.value),
            measured=self.measured, noise=self.noise, seed=self.seed,
        )  # fmt: skip
        return page.save_html(path)

    # -- static picture --------------------------------------------------------------

    def snapshot(self) -> bytes:
        """Draw the ratio curves, the per-policy bars and the readouts with Pillow (JPEG)."""
        return swap_picture(self)


def swap_picture(ex: SwapExplorer) -> bytes:
    """The ratio curves, the per-policy bars and the readouts."""
    lines = ex.sources["lines"].data
    series = [
        (c, np.asarray(x), np.log10(np.maximum(np.asarray(y, float), 1e-3)))
        for c, x, y in zip(lines["codec"], lines["xs"], lines["ys"])
    ]
    ratio = line_chart(
        series,
        title="log10 compression ratio vs sparsity",
        xlabel="sparsity (share of zeros)",
        ylabel="log10 ratio",
        legend_at="top_left",
        xfmt="{:.0%}",
    )
    bars = ex.sources["bars"].data
    policy = bar_chart(
        [p.replace("always:", "") for p in bars["policy"]],
        [("swap ms", np.asarray(bars["swap_ms"])), ("stall ms", np.asarray(bars["stall_ms"]))],
        title="Swap time and stall per policy (ms)",
        size=(620, 300),
    )
    text = text_panel([f"{k}: {v}" for k, v in ex.readout_rows()], 1100)
    return to_jpeg(vstack([hstack([ratio, policy]), text]))
