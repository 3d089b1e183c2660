"""Kernel-level widget tests: set controls as a user would, check what is shown.

No browser: widgets built outside a kernel talk to a dummy comm, and every
value the front end would receive (image bytes, readouts, Bokeh data
sources) is checked on the Python side. ScanExplorer, on anywidget, has
its own module: tests/test_scan_explorer.py.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pcr_explore import encode_dataset
from pcr_explore.plots import to_db
from pcr_explore.quality import quality_curve
from pcr_explore.quality.compare._views import encode_jpeg, jpeg_size, worst_detail
from pcr_explore.quality.tune import recommend
from pcr_explore.swap import builtin_trace, ratio_curve, simulate_many
from pcr_explore.swap.simulator.applicability import applicable_codecs
from pcr_explore.widgets import SwapExplorer, TunerDashboard
from pcr_explore.widgets._explorer import Debounced


def _is_jpeg(data: bytes) -> bool:
    return data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"


def _check_bundle(widget: object) -> None:
    """The mime bundle carries the live view and a decodable static picture."""
    bundle = widget._repr_mimebundle_()  # type: ignore[attr-defined]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    pic = base64.b64decode(bundle["image/jpeg"])
    assert _is_jpeg(pic)
    with Image.open(io.BytesIO(pic)) as im:
        assert im.width >= 300 and im.height >= 200


# -- shared data ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def photos_256(
    tmp_path_factory: pytest.TempPathFactory,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> Path:
    """Photos with a shorter side of at least 170 px: MS-SSIM uses all 5 scales."""
    root = tmp_path_factory.mktemp("photos256")
    for cls, names in {"a": ["astronaut", "chelsea"], "b": ["coffee", "camera"]}.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 256)))
    return root


@pytest.fixture(scope="module")
def dataset_path(photos_256: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pcr256") / "ds"
    encode_dataset(photos_256, out, record_size=64 * 1024, workers=1, progress=False)
    return out


# -- Plot (the Bokeh figure of TunerDashboard and SwapExplorer) -------------------------


def _bundle_sources(state: dict[str, object]) -> dict[str, dict[str, object]]:
    """The data of every named-by-column ColumnDataSource in a BokehModel's state."""
    import json

    docs = json.loads(str(state["render_bundle"]))["docs_json"]
    found: dict[str, dict[str, object]] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("name") == "ColumnDataSource":
                data = node["attributes"]["data"]
                entries = data.get("entries", []) if isinstance(data, dict) else []
                found[node["id"]] = dict(entries)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(docs)
    return found


def test_a_stream_echoed_by_the_page_is_not_applied_twice() -> None:
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    from pcr_explore.widgets._explorer import Plot

    src = ColumnDataSource({"epoch": [], "accuracy": []})
    fig = figure()
    fig.line("epoch", "accuracy", source=src)
    plot = Plot(fig)
    src.stream({"epoch": [1, 2], "accuracy": [0.5, 0.6]})
    # what BokehJS sends back after applying that stream in the page
    echo = {
        "event": "jsevent",
        "kind": "ColumnsStreamed",
        "model": {"id": src.id},
        "attr": "data",
        "data": {"type": "map", "entries": [["epoch", [1, 2]], ["accuracy", [0.5, 0.6]]]},
        "rollover": None,
    }
    plot._sync_model(plot, echo, [])
    assert list(src.data["epoch"]) == [1, 2]
    assert _bundle_sources(plot.get_state())[src.id]["epoch"] == [1, 2]


def test_a_plot_serialises_its_figure_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    # a reloaded page asks for every widget's state at once: an unchanged figure is not
    # serialised again, a change (from the kernel or from the page) is in the next state
    from bokeh.models import ColumnDataSource, Range1d
    from bokeh.plotting import figure

    from pcr_explore.widgets._explorer import Plot

    src = ColumnDataSource({"x": [1], "y": [2]})
    fig = figure(x_range=Range1d(0, 10))
    fig.scatter("x", "y", source=src)
    plot = Plot(fig)
    calls = []
    real = Plot._model_to_traits.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        Plot, "_model_to_traits", classmethod(lambda cls, m: calls.append(m) or real(cls, m))
    )
    first = plot.get_state()
    assert plot.get_state() == first and plot.get_state("render_bundle") == {
        "render_bundle": first["render_bundle"]
    }
    assert calls == []  # serialised when the plot was made, not again
    src.data = {"x": [3], "y": [4]}
    assert _bundle_sources(plot.get_state())[src.id]["x"] == [3]
    assert len(calls) == 1
    plot.get_state()
    assert len(calls) == 1
    # a zoom in the page: BokehJS sends the range's new start
    zoom = {"event": "jsevent", "kind": "ModelChanged", "model": {"id": fig.x_range.id},
            "attr": "start", "new": 4.0}  # fmt: skip
    plot._sync_model(plot, zoom, [])
    assert fig.x_range.start == 4.0
    assert '"start":4.0' in plot.get_state()["render_bundle"].replace(" ", "")
    assert len(calls) == 2
    assert set(plot.get_state()) == set(plot.keys)


# -- TunerDashboard ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tuner(dataset_path: Path) -> TunerDashboard:
    return TunerDashboard(str(dataset_path), sample=2, worst=2, thumb_side=120, workers=1)


def test_tuner_target_slider_recommends_from_the_measured_sample(tuner: TunerDashboard) -> None:
    curve = quality_curve(tuner.source, sample=2, seed=0, workers=1)
    for target in (0.9, 0.99, 0.95):
        tuner.target.value = target
        assert tuner.last_error is None
        want = recommend(curve, target=target, seed=0)  # the 5th percentile, by default
        r = tuner.result
        assert (r.scan, r.value, r.ci) == (want.scan, want.value, want.ci)
        assert r.bandwidth_saving == pytest.approx(want.bandwidth_saving)
        assert f"<b>{want.scan}</b>" in tuner.readout.value
        assert tuner.curve_figure.recommended.data["scan"] == [want.scan]
        assert tuner.curve_figure.target.location == pytest.approx(target)
        np.testing.assert_allclose(tuner.curve_figure.source.data["mean"], curve.mean)
        np.testing.assert_allclose(tuner.curve_figure.source.data["p95"], curve.p95)


def test_tuner_gallery_shows_the_worst_images_where_they_differ_most(
    tuner: TunerDashboard,
) -> None:
    tuner.target.value = 0.97
    r = tuner.result
    rows = r.curve.per_image.worst(r.scan, n=2)
    assert [row["index"] for row in tuner.worst_images()] == [row["index"] for row in rows]
    assert rows[0]["value"] <= rows[1]["value"]
    for slot, row in enumerate(rows):
        i = row["index"]
        level, full = tuner.pictures.pixels(i, r.scan), tuner.pictures.pixels(i, None)
        h, w = full.shape[:2]
        d = worst_detail(level, full, tuner.zoom, (120, round(120 * h / w)))
        card = tuner.gallery_cards[slot]
        assert card.level == encode_jpeg(d["level"])
        assert card.full == encode_jpeg(d["full"])
        assert card.difference == encode_jpeg(d["difference"])
        assert jpeg_size(card.level)[0] == 120
        assert row["name"] in card.caption
        cx, cy = d["center"]
        assert f"window at ({cx:.0%}, {cy:.0%})" in card.caption
        # the page gets the crops themselves, in the card's order, and the caption
        shown = tuner.gallery.value
        for crop in (card.full, card.level, card.difference):
            assert base64.b64encode(crop).decode("ascii") in shown
        assert card.caption in shown
    assert len(tuner.gallery_cards) == 2
    assert tuner.gallery.value.count("<img ") == 6
    # the pictures behind the crops are big enough for a x3 zoom of 120 px crops
    assert tuner.pictures.max_side == 360
    assert f"scan {r.scan}" in tuner.gallery.value


def test_tuner_metric_statistic_and_sample(tuner: TunerDashboard) -> None:
    tuner.metric.value = "mssim"
    tuner.target.value = 0.97
    tuner.metric.value = "psnr"
    assert (tuner.target.min, tuner.target.max, tuner.target.value) == (20.0, 50.0, 35.0)
    assert tuner.target.readout_format == ".1f"
    assert tuner.result.metric == "psnr" and tuner.result.target == 35.0
    # one slider per metric: only the chosen one is on show, no range ever changes
    shown = [m for m, sl in tuner.targets.items() if sl.layout.display != "none"]
    assert shown == ["psnr"]
    assert "5th percentile PSNR &ge; 35.0 dB" in tuner.readout.value
    assert "dB" in tuner.readout.value and "psnr" not in tuner.readout.value
    tuner.statistic.value = "mean"
    mean = tuner.result
    tuner.statistic.value = "p5"
    assert mean.statistic == "mean" and tuner.result.scan >= mean.scan
    tuner.metric.value = "mssim"
    assert tuner.target.value == 0.97 and tuner.target.max == 0.999  # kept its own value
    assert tuner.sample.options == (2, 4)
    tuner.sample.value = 4
    assert tuner.result.sample_size == 4 and tuner.result.decided  # all images: exact
    assert "[" not in tuner.readout.value.split("at this scan")[1].split("</tr>")[0]
    tuner.sample.value = 2
    tuner.target.value = 0.95
    assert tuner.last_error is None


def test_tuner_star_follows_the_statistic(tuner: TunerDashboard) -> None:
    tuner.statistic.value = "mean"
    try:
        r = tuner.result
        star = tuner.curve_figure.recommended.data
        assert star["scan"] == [r.scan]
        assert star["value"] == [pytest.approx(r.curve.mean[r.scan - 1])]
    finally:
        tuner.statistic.value = "p5"
    r = tuner.result
    star = tuner.curve_figure.recommended.data
    assert star["scan"] == [r.scan]
    assert star["value"] == [pytest.approx(r.curve.p5[r.scan - 1])]
    assert star["value"] == [pytest.approx(r.value)]  # the star sits where the readout says
    assert len(tuner.curve_figure.source.data["p5"]) == r.curve.num_scans  # the p5 line


def test_tuner_db_scale(tuner: TunerDashboard) -> None:
    tuner.scale.value = "db"
    try:
        src = tuner.curve_figure.source.data
        np.testing.assert_allclose(src["mean"][:-1], to_db(tuner.result.curve.mean[:-1]))
        assert tuner.curve_figure.target.location == pytest.approx(float(to_db([0.95])[0]))
        assert "dB" in tuner.curve_figure.figure.yaxis[0].axis_label
    finally:
        tuner.scale.value = "value"


def test_tuner_says_it_is_busy_while_measuring(tuner: TunerDashboard) -> None:
    seen: list[str] = []
    tuner.status.observe(lambda c: seen.append(c.new), names="value")
    tuner._curves.cache_clear()
    tuner._measured.clear()
    tuner.sample.value = 4
    tuner.sample.value = 2
    notes = [v for v in seen if v]
    assert "measuring 4 images" in notes[0] and "drawing scan" in notes[1]  # then new lines
    assert "measuring 2 images" in notes[2] and "drawing scan" in notes[3]
    assert seen[-1] == "" and "pcr-busy" not in tuner.view._dom_classes
    # a target step that keeps the level moves the rule alone: no note
    seen.clear()
    scan = tuner.result.scan
    tuner.target.value = tuner.target.value + tuner.target.step
    assert tuner.result.scan != scan or seen == []


def test_tuner_rejects_bad_arguments(dataset_path: Path) -> None:
    with pytest.raises(ValueError, match="metric"):
        TunerDashboard(str(dataset_path), metric="lpips")
    with pytest.raises(ValueError, match="statistic"):
        TunerDashboard(str(dataset_path), statistic="max")


def test_tuner_static_picture(tuner: TunerDashboard) -> None:
    _check_bundle(tuner)


# -- SwapExplorer ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def swap() -> SwapExplorer:
    return SwapExplorer("vgg16", profile="v100-pcie3", sparsity=0.5, batch=8, noise=0.0)


def test_swap_sparsity_slider_resimulates_the_step(swap: SwapExplorer) -> None:
    swap.sparsity.value = 0.8
    assert swap.last_error is None
    policies = swap.policies()
    expected = simulate_many(
        builtin_trace("vgg16", batch=8).with_sparsity(0.8),
        profile="v100-pcie3",
        policies=policies,
        noise=0.0,
    )
    bars = swap.sources["bars"].data
    assert bars["policy"][0] == "vdnn" and "cswap" in bars["policy"]
    np.testing.assert_allclose(
        bars["stall_ms"], [r.stall_seconds * 1e3 for r in expected.values()], rtol=1e-12
    )
    np.testing.assert_allclose(
        bars["swap_ms"], [r.swap_seconds * 1e3 for r in expected.values()], rtol=1e-12
    )
    assert swap.span.location == pytest.approx(0.8)
    # Each ticked codec's marker sits on its analytic ratio at the new sparsity.
    cur = swap.sources["current"].data
    want = ratio_curve(swap.codecs, sparsities=[0.8], n=int(swap.tensor_size.value))
    assert cur["codec"] == list(want)
    np.testing.assert_allclose(cur["y"], [min(v[0], 1e4) for v in want.values()])
    assert "less than vDNN" in swap.readout.value


def test_swap_default_codecs_are_the_lossless_ones_that_apply(swap: SwapExplorer) -> None:
    assert swap.codecs == applicable_codecs(swap.trace, "v100-pcie3")
    assert "zfp" not in swap.codecs
    assert swap.policies()[0] == "vdnn"
    assert swap.policies()[-2].startswith("cswap:") and swap.policies()[-1].startswith("oracle:")
    resnet = SwapExplorer("resnet50", batch=8, measured=False)
    # ResNet-50 has no ReLU feeding a max-pool here: binarize is not ticked
    assert "binarize" not in resnet.codecs and "zvc" in resnet.codecs
    assert resnet.notes.value == ""
    resnet.codec_boxes["binarize"].value = True
    assert "binarize</b>: binarize needs a ReLU output that feeds a max-pool" in resnet.notes.value
    assert "as vDNN does" in resnet.notes.value
    resnet.codec_boxes["lz4"].value = True
    assert "prices no GPU kernel for lz4" in resnet.notes.value
    assert "always:lz4" not in resnet.policies()


def test_swap_stall_falls_as_sparsity_rises_under_cswap(swap: SwapExplorer) -> None:
    stalls = []
    for s in (0.2, 0.9):
        swap.sparsity.value = s
        bars = swap.sources["bars"].data
        stalls.append(bars["stall_ms"][bars["policy"].index("cswap")])
    assert stalls[1] < stalls[0]


def test_swap_codec_boxes_change_lines_and_policies(swap: SwapExplorer) -> None:
    swap.codec_boxes["csr"].value = False
    try:
        assert "csr" not in swap.sources["lines"].data["codec"]
        assert "always:csr" not in swap.sources["bars"].data["policy"]
        swap.codec_boxes["zstd"].value = True  # not priced by the profile: a line, no policy
        lines = swap.sources["lines"].data
        assert "zstd" in lines["codec"]
        assert "always:zstd" not in swap.sources["bars"].data["policy"]
        measured = swap.sources["measured"].data
        assert set(measured["codec"]) == set(lines["codec"])
        assert len(measured["x"]) == len(measured["y"]) == 5 * len(lines["codec"])
    finally:
        swap.codec_boxes["csr"].value = True
        swap.codec_boxes["zstd"].value = False
    assert swap.last_error is None


def test_swap_tensor_size_moves_the_zvc_line(swap: SwapExplorer) -> None:
    swap.tensor_size.value = 1 << 12
    lines = swap.sources["lines"].data
    small = lines["ys"][lines["codec"].index("zvc")]
    swap.tensor_size.value = 1 << 24
    lines = swap.sources["lines"].data
    large = lines["ys"][lines["codec"].index("zvc")]
    # ZVC's fixed 128 KiB of masks and offsets sinks small tensors.
    assert np.all(np.asarray(small) < np.asarray(large))
    np.testing.assert_allclose(
        large, ratio_curve(["zvc"], sparsities=lines["xs"][0], n=1 << 24)["zvc"]
    )


def test_swap_ramp_and_timeline(swap: SwapExplorer) -> None:
    swap.shape.value = "ramp"
    swap.ramp.value = (0.3, 0.9)
    assert swap.sparsity.disabled and not swap.ramp.disabled
    assert swap.sparsity_spec() == (0.3, 0.9)
    trace = next(iter(swap.results.values())).trace
    assert swap.span.location == pytest.approx(trace.mean_sparsity)
    swap.timeline_policy.value = "vdnn"
    ev = swap.sources["events"].data
    assert set(ev["lane"]) == {"compute", "copy"}
    assert "compress" not in ev["kind"]  # vDNN copies raw tensors
    expected_ms = np.asarray(swap.results["vdnn"].timeline()["end"]) * 1e3
    np.testing.assert_allclose(ev["end"], expected_ms)
    swap.shape.value = "constant"
    assert swap.last_error is None


def test_swap_errors_show_in_the_output_pane(swap: SwapExplorer) -> None:
    swap.profile.value = "a100-pcie4"
    assert swap.last_error is None
    swap.trace, good = None, swap.trace  # type: ignore[assignment]
    try:
        swap.sparsity.value = 0.41
        assert swap.last_error is not None
        assert swap.errors.outputs and "Error" in swap.errors.outputs[0]["text"]
    finally:
        swap.trace = good
        swap.profile.value = "v100-pcie3"
    assert swap.last_error is None and not swap.errors.outputs


def test_swap_static_picture(swap: SwapExplorer) -> None:
    _check_bundle(swap)


def test_swap_measured_points_name_the_size_measured(swap: SwapExplorer) -> None:
    swap.tensor_size.value = 1 << 12  # a 16 KiB tensor is measured at its own size
    labels = [str(getattr(item.label, "value", "")) for item in swap.ratio_fig.legend[0].items]
    assert "measured on 16 KiB" in labels
    assert "16 KiB tensors" in swap.ratio_fig.title.text
    swap.tensor_size.value = 1 << 20  # 4 MiB: measured on 1 MiB (the cap), and it says so
    labels = [str(getattr(item.label, "value", "")) for item in swap.ratio_fig.legend[0].items]
    assert "measured on 1 MiB" in labels


def test_swap_bars_update_in_place_while_dragging(swap: SwapExplorer) -> None:
    from bokeh.document.events import ColumnsPatchedEvent, ModelChangedEvent

    swap.sparsity.value = 0.5
    bars = swap.sources["bars"]
    events: list[object] = []
    bars.document.on_change(events.append)
    try:
        swap.sparsity.value = 0.55
    finally:
        bars.document.remove_on_change(events.append)
    mine = [e for e in events if getattr(e, "model", None) is bars]
    # what crosses to the page for the bars: a patch of the numbers, not new data
    assert mine and all(isinstance(e, ColumnsPatchedEvent) for e in mine)
    assert not [e for e in mine if isinstance(e, ModelChangedEvent)]
    patched = {c for e in mine for c in e.patches}  # type: ignore[attr-defined]
    assert patched <= {"swap_ms", "stall_ms", "label"}
    expected = simulate_many(
        builtin_trace("vgg16", batch=8).with_sparsity(0.55),
        profile="v100-pcie3",
        policies=swap.policies(),
        noise=0.0,
    )
    np.testing.assert_allclose(
        bars.data["stall_ms"], [r.stall_seconds * 1e3 for r in expected.values()], rtol=1e-12
    )


def test_swap_one_tooltip_per_bar(swap: SwapExplorer) -> None:
    hovers = [t for t in swap.bars_fig.tools if type(t).__name__ == "HoverTool"]
    assert len(hovers) == 1 and len(hovers[0].renderers) == 1


def test_swap_readouts_in_percent_and_timeline_caption(swap: SwapExplorer) -> None:
    swap.sparsity.value = 0.8
    assert swap.sparsity.readout_format == ".0%"
    rows = dict(swap.readout_rows())
    assert rows["sparsity"] == "80% for every ReLU and pooling output"
    assert "at sparsity 80% for every" in swap.timeline_caption.value
    assert "ms of stall" in swap.timeline_caption.value


def test_debounced_runs_once_after_the_calls_stop() -> None:
    import asyncio

    calls: list[int] = []
    d = Debounced(lambda: calls.append(1), delay=0.05)
    d()  # no running loop: at once
    assert calls == [1]

    async def drag() -> None:
        for _ in range(5):
            d()
            assert d.pending
            await asyncio.sleep(0.01)
        assert calls == [1]  # still moving
        await asyncio.sleep(0.1)
        assert calls == [1, 1] and not d.pending
        d()
        d.flush()
        assert calls == [1, 1, 1] and not d.pending

    asyncio.run(drag())


def test_swap_trace_picker_loads_a_measured_trace_with_its_own_sparsity() -> None:
    from pcr_explore.swap import load_trace

    ex = SwapExplorer("resnet50", measured=False, timeline_delay=0.0)
    values = [v for _, v in ex.trace_picker.options]
    assert values[:2] == ["vgg16", "resnet50"] and "measured:small-cnn-flowers5" in values
    ex.trace_picker.value = "measured:small-cnn-flowers5"
    want = load_trace("measured:small-cnn-flowers5")
    assert ex.trace.name == want.name and ex.shape.value == "traced" and ex.sparsity.disabled
    assert ex.sparsity_spec() is None
    sim = next(iter(ex.results.values())).trace
    np.testing.assert_array_equal(sim.sparsity, want.sparsity)  # as measured, not the slider's
    assert dict(ex.readout_rows())["sparsity"] == f"as traced (mean {want.mean_sparsity:.0%})"
    ex.trace_picker.value = "vgg16"
    assert ex.shape.value == "constant" and not ex.sparsity.disabled
    sim = next(iter(ex.results.values())).trace
    assert np.allclose(sim.sparsity[sim.sparsity > 0], ex.sparsity.value)
