"""SwapExplorer in the kernel: set its traits as the page does, check the state the page draws.

The front end (``static/swap_explorer.js``, on anywidget) draws the controls,
the ratio lines, the bars per policy and the timeline from the traits checked
here, with no browser (tests/test_browser_03.py and test_browser_demo.py drive
the page). Outside a kernel the widget talks to a dummy comm and no event loop
runs: what waits for the slider to stop (the timeline, the saved picture)
runs at once.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import traitlets
from PIL import Image

from pcr_explore.swap import builtin_trace, load_trace, ratio_curve, simulate_many
from pcr_explore.swap.codecs.ratios import measured_ratio_curve
from pcr_explore.swap.simulator.applicability import applicable_codecs
from pcr_explore.widgets import SwapExplorer
from pcr_explore.widgets._module_widget import module_text
from pcr_explore.widgets.swap_explorer import WAITING


def _expected(sparsity: float, policies: list[str]) -> dict[str, Any]:
    return simulate_many(
        builtin_trace("vgg16", batch=8).with_sparsity(sparsity),
        profile="v100-pcie3",
        policies=policies,
        noise=0.0,
    )


@pytest.fixture(scope="module")
def explorer() -> SwapExplorer:
    return SwapExplorer("vgg16", profile="v100-pcie3", sparsity=0.5, batch=8, noise=0.0)


@pytest.fixture
def swap(explorer: SwapExplorer) -> Iterator[SwapExplorer]:
    """The module's explorer at one sparsity of 50%; put back afterwards."""
    ticked = list(explorer.codecs)

    def reset() -> None:
        explorer.shape, explorer.sparsity, explorer.profile = "constant", 0.5, "v100-pcie3"
        explorer.codecs, explorer.tensor_size, explorer.presentation = ticked, 1 << 20, False

    reset()
    yield explorer
    reset()


def test_the_sparsity_resimulates_the_step(swap: SwapExplorer) -> None:
    swap.sparsity = 0.8
    assert swap.last_error is None and swap.error == ""
    expected = _expected(0.8, swap.policies())
    bars = swap.bars
    assert bars["policy"][0] == "vdnn" and "cswap" in bars["policy"]
    assert bars["names"] == list(expected)
    np.testing.assert_allclose(
        bars["stall_ms"], [r.stall_seconds * 1e3 for r in expected.values()], rtol=1e-12
    )
    np.testing.assert_allclose(
        bars["swap_ms"], [r.swap_seconds * 1e3 for r in expected.values()], rtol=1e-12
    )
    # each ticked codec's marker sits on its analytic ratio at the new sparsity
    assert swap.current["x"] == pytest.approx(0.8)
    want = ratio_curve(swap.codecs, sparsities=[0.8], n=int(swap.tensor_size))
    assert swap.current["codecs"] == list(want)
    np.testing.assert_allclose(swap.current["y"], [min(v[0], 1e4) for v in want.values()])
    rows = dict(swap.readouts)
    assert rows["least stall"].endswith("less than vDNN)")
    assert rows == dict(swap.readout_rows())  # what the page shows is what Python reads


def test_default_codecs_are_the_lossless_ones_that_apply(swap: SwapExplorer) -> None:
    assert swap.codecs == applicable_codecs(swap.trace, "v100-pcie3")
    assert "zfp" not in swap.codecs
    assert swap.policies()[0] == "vdnn"
    assert swap.policies()[-2].startswith("cswap:") and swap.policies()[-1].startswith("oracle:")
    resnet = SwapExplorer("resnet50", batch=8, measured=False)
    # ResNet-50 has no ReLU feeding a max-pool here: binarize is not ticked
    assert "binarize" not in resnet.codecs and "zvc" in resnet.codecs
    assert resnet.notes == []
    resnet.codecs = [*resnet.codecs, "binarize"]
    notes = dict(resnet.notes)
    assert notes["binarize"].startswith("binarize needs a ReLU output that feeds a max-pool")
    assert "as vDNN does" in notes["binarize"]
    resnet.codecs = [*resnet.codecs, "lz4"]
    assert "prices no GPU kernel for lz4" in dict(resnet.notes)["lz4"]
    assert "always:lz4" not in resnet.policies()
    assert resnet.measured_points["codecs"] == []  # measured=False: no real encodes


def test_stall_falls_as_sparsity_rises_under_cswap(swap: SwapExplorer) -> None:
    stalls = []
    for s in (0.2, 0.9):
        swap.sparsity = s
        stalls.append(swap.bars["stall_ms"][swap.bars["policy"].index("cswap")])
    assert stalls[1] < stalls[0]


def test_the_codecs_change_lines_and_policies(swap: SwapExplorer) -> None:
    swap.codecs = [c for c in swap.codecs if c != "csr"]
    assert "csr" not in swap.lines["codecs"]
    assert "always:csr" not in swap.bars["policy"]
    swap.codecs = ["zstd", *swap.codecs]  # not priced by the profile: a line, no policy
    assert swap.codecs.index("zstd") > swap.codecs.index("zvc")  # kept in registry order
    assert "zstd" in swap.lines["codecs"]
    assert "always:zstd" not in swap.bars["policy"]
    meas = swap.measured_points
    assert meas["codecs"] == swap.lines["codecs"] and meas["x"] == [0.1, 0.3, 0.5, 0.7, 0.9]
    assert [len(y) for y in meas["y"]] == [5] * len(meas["codecs"])
    want = measured_ratio_curve(meas["codecs"], meas["x"], (16, 16, 32, 32), 0)
    np.testing.assert_allclose(meas["y"], [want[c] for c in meas["codecs"]])
    assert swap.last_error is None


def test_unknown_settings_are_refused(swap: SwapExplorer) -> None:
    with pytest.raises(traitlets.TraitError, match="unknown codecs"):
        swap.codecs = ["zvc", "nope"]
    with pytest.raises(traitlets.TraitError, match="no device profile"):
        swap.profile = "abacus"
    with pytest.raises(traitlets.TraitError, match="tensor_size must be one of"):
        swap.tensor_size = 1000
    with pytest.raises(traitlets.TraitError):
        swap.sparsity = 1.0
    with pytest.raises(traitlets.TraitError, match="no trace"):
        swap.trace_name = "alexnet"
    assert swap.sparsity == 0.5 and swap.profile == "v100-pcie3"


def test_the_tensor_size_moves_the_zvc_line(swap: SwapExplorer) -> None:
    swap.tensor_size = 1 << 12
    small = swap.lines["y"][swap.lines["codecs"].index("zvc")]
    swap.tensor_size = 1 << 24
    large = swap.lines["y"][swap.lines["codecs"].index("zvc")]
    # ZVC's fixed 128 KiB of masks and offsets sinks small tensors.
    assert np.all(np.asarray(small) < np.asarray(large))
    np.testing.assert_allclose(
        large, ratio_curve(["zvc"], sparsities=swap.lines["x"], n=1 << 24)["zvc"]
    )
    assert [n for n, _ in swap.tensor_sizes] == [1 << k for k in range(12, 27, 2)]
    assert dict(swap.tensor_sizes)[1 << 24] == "64 MiB"


def test_the_measured_points_name_the_size_measured(swap: SwapExplorer) -> None:
    swap.tensor_size = 1 << 12  # a 16 KiB tensor is measured at its own size
    assert swap.measured_points["label"] == "measured on 16 KiB"
    assert swap.ratio_title == "Compression ratio vs sparsity, 16 KiB tensors"
    swap.tensor_size = 1 << 20  # 4 MiB: measured on 1 MiB (the cap), and it says so
    assert swap.measured_points["label"] == "measured on 1 MiB"


def test_a_ramp_and_the_timeline(swap: SwapExplorer) -> None:
    swap.shape = "ramp"
    swap.ramp = [0.9, 0.3]  # the page may send them either way round
    assert swap.ramp == [0.3, 0.9] and swap.sparsity_spec() == (0.3, 0.9)
    trace = next(iter(swap.results.values())).trace
    assert swap.current["x"] == pytest.approx(trace.mean_sparsity)
    assert dict(swap.readouts)["sparsity"] == "30% (shallow) to 90% (deep)"
    assert dict(swap.policy_options)["vdnn"] == "vdnn"
    swap.timeline_policy = "vdnn"
    ev = swap.events
    assert set(ev["lane"]) == {"compute", "copy"}
    assert "compress" not in ev["kind"]  # vDNN copies raw tensors
    expected_ms = np.asarray(swap.results["vdnn"].timeline()["end"]) * 1e3
    np.testing.assert_allclose(ev["end"], expected_ms)
    assert swap.timeline_caption.startswith("vdnn at sparsity 30% (shallow) to 90% (deep): ")
    assert swap.last_error is None


def test_the_timeline_waits_for_the_slider_to_stop() -> None:
    ex = SwapExplorer("vgg16", batch=8, noise=0.0, measured=False, timeline_delay=0.05)
    first = ex.timeline_caption
    captions: list[str] = []
    ex.observe(lambda c: captions.append(c["new"]), names="timeline_caption")

    async def drag() -> None:  # in a kernel an event loop runs: the timeline waits
        for s in (0.6, 0.7, 0.8):
            ex.sparsity = s
            assert ex._timeline_later.pending
        assert ex.timeline_caption == WAITING and captions == [WAITING]
        await asyncio.sleep(0.2)

    asyncio.run(drag())
    assert captions == [
        WAITING,
        "cswap at sparsity 80% for every ReLU and pooling output: "
        f"{ex.results[ex.timeline_policy].stall_seconds * 1e3:.2f} ms of stall",
    ]
    assert captions[-1] != first and ex.last_error is None


def test_errors_show_under_the_explorer(swap: SwapExplorer) -> None:
    swap.profile = "a100-pcie4"
    assert swap.last_error is None
    swap.trace, good = None, swap.trace  # type: ignore[assignment]
    try:
        swap.sparsity = 0.41
        assert swap.last_error is not None
        assert "Error" in swap.error
    finally:
        swap.trace = good
        swap.profile = "v100-pcie3"
    assert swap.last_error is None and swap.error == ""


def test_the_readouts_in_percent_and_the_timeline_caption(swap: SwapExplorer) -> None:
    swap.sparsity = 0.8
    rows = dict(swap.readout_rows())
    assert rows["sparsity"] == "80% for every ReLU and pooling output"
    assert "at sparsity 80% for every" in swap.timeline_caption
    assert swap.timeline_caption.endswith(" ms of stall")
    # one figure one way: the stall in the caption is the one in the bars, as "N.NN ms"
    stall = swap.bars["stall_ms"][swap.bars["names"].index(swap.timeline_policy)]
    assert f"{stall:.2f} ms of stall" in swap.timeline_caption


def test_the_trace_picker_loads_a_measured_trace_with_its_own_sparsity() -> None:
    ex = SwapExplorer("resnet50", measured=False, timeline_delay=0.0)
    values = [v for v, _ in ex.trace_options]
    assert values[:2] == ["vgg16", "resnet50"] and "measured:small-cnn-flowers5" in values
    ex.trace_name = "measured:small-cnn-flowers5"
    want = load_trace("measured:small-cnn-flowers5")
    assert ex.trace.name == want.name and ex.shape == "traced"
    assert ex.sparsity_spec() is None
    sim = next(iter(ex.results.values())).trace
    np.testing.assert_array_equal(sim.sparsity, want.sparsity)  # as measured, not the slider's
    assert dict(ex.readouts)["sparsity"] == f"as traced (mean {want.mean_sparsity:.0%})"
    ex.trace_name = "vgg16"
    assert ex.shape == "constant"
    sim = next(iter(ex.results.values())).trace
    assert np.allclose(sim.sparsity[sim.sparsity > 0], ex.sparsity)


def test_a_given_trace_is_offered_first() -> None:
    trace = builtin_trace("vgg16", batch=4)
    ex = SwapExplorer(trace, measured=False)
    assert ex.trace_options[0] == ["given", f"{trace.name} (yours)"]
    assert ex.trace_name == "given" and ex.trace is trace
    other = SwapExplorer("vgg16", batch=8, measured=False)
    assert other.trace_options[0] == ["given", "vgg16 (analytic, batch 8)"]


# -- what the page gets ------------------------------------------------------------------


def test_the_state_is_json_and_the_module_is_the_packaged_file(swap: SwapExplorer) -> None:
    state = swap.get_state()
    json.dumps({k: v for k, v in state.items() if not k.startswith("_")}, allow_nan=False)
    for key in ("lines", "measured_points", "current", "bars", "events", "readouts", "notes"):
        assert state[key], key
    assert SwapExplorer._esm == module_text("swap_explorer.js")
    assert not re.search(r"^\s*import\b", swap._esm, re.M)  # chart.js inlined, not imported
    assert swap._esm.count("export function ticks(") == 1
    assert "bokeh" not in swap._esm.lower()


def test_the_picture_draws_the_state(swap: SwapExplorer) -> None:
    first = swap.snapshot()
    with Image.open(io.BytesIO(first)) as im:
        assert im.format == "JPEG" and im.width >= 300 and im.height >= 200
    swap.sparsity = 0.9
    assert swap.snapshot() != first
    swap.sparsity = 0.5
    assert swap.snapshot() == first  # the same state, the same picture


@pytest.fixture
def display_pub() -> Iterator[Any]:
    """An IPython shell whose display publisher keeps what is displayed (the real one prints)."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    had = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    real, shell.display_pub = shell.display_pub, CapturingDisplayPublisher()
    try:
        yield shell.display_pub
    finally:
        shell.display_pub = real
        if not had:
            InteractiveShell.clear_instance()


def _picture_in(html: str) -> bytes:
    return base64.b64decode(html.split("data:image/jpeg;base64,")[1].split("'")[0])


def test_the_saved_picture_follows_the_state(swap: SwapExplorer, display_pub: Any) -> None:
    from IPython.display import display

    display(swap)
    picture, live = display_pub.outputs
    key = picture["transient"]["display_id"]
    assert _picture_in(picture["data"]["text/html"]) == swap.snapshot()
    assert set(live["data"]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    first = swap.snapshot()
    for name, value in (("sparsity", 0.85), ("codecs", ["zvc"])):
        del display_pub.outputs[:]
        swap.set_trait(name, value)  # no event loop: drawn again at once
        updates = [o for o in display_pub.outputs if o["update"]]
        assert updates and all(o["transient"]["display_id"] == key for o in updates)
        now = _picture_in(updates[-1]["data"]["text/html"])
        assert now != first and now == swap.snapshot(), name
        first = now
