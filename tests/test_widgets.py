"""Kernel-level widget tests: set controls as a user would, check what is shown.

No browser: widgets built outside a kernel talk to a dummy comm, and every
value the front end would receive (image bytes, readouts, Bokeh data
sources) is checked on the Python side. ScanExplorer, on anywidget, has
its own module: tests/test_scan_explorer.py.
"""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

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


# -- Plot (the Bokeh figure of TunerDashboard) -------------------------


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
