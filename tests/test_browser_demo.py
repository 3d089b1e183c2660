"""The pages for sharing in a real browser, opened from ``file://`` with no kernel, no network.

Debian's ``chromium`` through Playwright (see ``tests/_lab.py``). Every
request the page makes is routed through the test: ``file:`` and ``data:``
go on, anything else is aborted and recorded, and none may be. With the
mouse and the keyboard, as a student would: dragging the level slider
changes the picture and the byte counter and moves the curve's marker, the
arrow keys step, play runs to the last level, the view buttons and the
image picker switch, and the slider tells a screen reader the level shown;
the page is titled by the dataset and draws its band. On the swap page,
dragging the sparsity redraws the bars and the readouts. The budget page
shows its chart (bytes, quality and epoch time per level) with the page's
own file the only request. Screenshots at 1440x900 and 1280x720 go to
``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import _budget
import numpy as np
import pytest
from _lab import ARTIFACTS, TWO_FRAMES, new_page
from PIL import Image
from playwright.sync_api import expect

import pcr_explore as pcr
from pcr_explore import open_source
from pcr_explore.widgets import scan_demo, swap_demo

pytestmark = pytest.mark.browser

SIZES = ({"width": 1440, "height": 900}, {"width": 1280, "height": 720})
PHOTOS = ("astronaut", "camera", "coffee")

MODEL = "name => Bokeh.documents[0].get_model_by_name(name)"
READY = """() => !!window.Bokeh && Bokeh.documents.length > 0
  && !!Bokeh.documents[0].get_model_by_name('{name}')
  && [...document.images].every(i => i.hidden || i.complete)"""


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory, sk_photo: Callable[..., np.ndarray]) -> Path:
    root = tmp_path_factory.mktemp("demo_photos")
    for name in PHOTOS:
        Image.fromarray(sk_photo(name, 384)).save(root / f"{name}.jpg", quality=90)
    return root


@pytest.fixture(scope="module")
def scan_page(photos: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scan_demo(photos, level=5).save_html(tmp_path_factory.mktemp("pages") / "scan.html")


@pytest.fixture(scope="module")
def swap_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = swap_demo("resnet50", codecs=["zvc", "csr"], sparsities=[0.1, 0.5, 0.9], sparsity=0.5)
    return page.save_html(tmp_path_factory.mktemp("pages") / "swap.html")


@pytest.fixture(scope="module")
def budget_page(
    photos: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[pcr.BudgetReport, Path]:
    report = pcr.budget(photos, sample=3, size=32, workers=1, progress=False, bandwidth="20MB/s")
    return report, report.save_html(tmp_path_factory.mktemp("pages") / "budget.html")


class Offline:
    """A page opened from a file, with every request and page error recorded."""

    def __init__(self, browser: Any, path: Path, viewport: dict[str, int], ready: str) -> None:
        self.page = new_page(browser, viewport=viewport)
        self.left: list[str] = []  # requests that would have left the page
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        self.page.goto(path.as_uri())
        self.page.wait_for_function(READY.format(name=ready), timeout=_budget.ms())
        self.page.evaluate(TWO_FRAMES)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            self.left.append(url)
            route.abort()

    def value(self, name: str) -> Any:
        return self.page.evaluate(f"({MODEL})('{name}').value")

    def data(self, name: str) -> dict[str, list[Any]]:
        """A ColumnDataSource's columns, as plain lists."""
        return self.page.evaluate(
            f"""() => {{ const d = ({MODEL})('{name}').data, out = {{}};
              for (const k of Object.keys(d)) out[k] = Array.from(d[k]); return out; }}"""
        )

    def text(self, selector: str) -> str:
        return str(self.page.inner_text(selector))

    def drag_to(self, slot: str, fraction: float) -> None:
        """Drag a Bokeh slider's handle to *fraction* of its track, with the mouse."""
        handle = self.page.locator(f"#{slot} .noUi-handle").first
        track = self.page.locator(f"#{slot} .noUi-base").first
        hb, tb = handle.bounding_box(), track.bounding_box()
        y = hb["y"] + hb["height"] / 2
        self.page.mouse.move(hb["x"] + hb["width"] / 2, y)
        self.page.mouse.down()
        for f in np.linspace(0.5, fraction, 6):
            self.page.mouse.move(tb["x"] + f * tb["width"], y)
        self.page.mouse.move(tb["x"] + fraction * tb["width"], y)
        self.page.mouse.up()
        self.page.evaluate(TWO_FRAMES)

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.evaluate(TWO_FRAMES)
        vp = self.page.viewport_size
        self.page.screenshot(path=str(ARTIFACTS / f"{name}_{vp['width']}x{vp['height']}.png"))

    def fits(self) -> None:
        """Nothing is wider than the window."""
        wide = self.page.evaluate("document.documentElement.scrollWidth")
        assert wide <= self.page.viewport_size["width"]

    def close(self) -> None:
        self.page.close()
        assert self.left == []  # no request left the page
        assert self.errors == []


@pytest.mark.parametrize("viewport", SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_scan_demo_from_a_file(
    browser: Any, scan_page: Path, photos: Path, viewport: dict[str, int]
) -> None:
    src = open_source(photos)
    nbytes = src.level_bytes(0)
    s = Offline(browser, scan_page, viewport, "pcr-level")
    try:
        assert s.value("pcr-level") == "5"
        assert f"scan 5 of 10 · {nbytes[4]:,} of {nbytes[-1]:,} bytes" in s.text("#pcr-caption")
        _announces(s, 5)
        assert s.page.title() == f"Scan levels of {photos.name}"
        assert len(s.data("pcr-dataset")["x"]) == 10  # the dataset's band, as in notebook 01
        s.shot("demo_scan")
        s.fits()
        before = s.page.get_attribute("#pcr-level-img", "src")

        s.drag_to("pcr-slot-level", 0.0)  # the slider, with the mouse
        assert s.value("pcr-level") == "1"
        assert s.page.get_attribute("#pcr-level-img", "src") != before
        caption = s.text("#pcr-caption")
        assert f"scan 1 of 10 · {nbytes[0]:,} of {nbytes[-1]:,} bytes" in caption
        assert s.data("pcr-current")["x"] == pytest.approx([nbytes[0] / nbytes[-1]])
        assert f"{nbytes[0]:,} of {nbytes[-1]:,}" in s.text("#pcr-readout")

        _announces(s, 1)
        s.page.keyboard.press("ArrowRight")  # the arrow keys step
        assert s.value("pcr-level") == "2"
        assert s.data("pcr-current")["scan"] == [2]
        _announces(s, 2)

        _views_switch(s)
        _play_runs_to_the_last_level(s)
        _announces(s, 10)

        s.page.locator("#pcr-slot-picker select").select_option(label="coffee.jpg")
        s.page.evaluate(TWO_FRAMES)
        coffee = src.level_bytes(src.names.index("coffee.jpg"))
        assert f"{coffee[-1]:,} of {coffee[-1]:,} bytes" in s.text("#pcr-caption")
        assert s.data("pcr-image")["bytes"] == [int(b) for b in coffee]
        s.shot("demo_scan_played")
    finally:
        s.close()


def _announces(s: Offline, level: int) -> None:
    """The slider's handle tells a screen reader the level shown, not its position from 0."""
    handle = s.page.locator("#pcr-slot-level .noUi-handle").first
    expect(handle).to_have_attribute("aria-valuenow", str(level), timeout=_budget.ms())
    expect(handle).to_have_attribute("aria-valuetext", f"scan {level} of 10", timeout=_budget.ms())
    assert (handle.get_attribute("aria-valuemin"), handle.get_attribute("aria-valuemax")) == (
        "1",
        "10",
    )


def _views_switch(s: Offline) -> None:
    """Side by side shows the full image, difference the map, split the line."""
    mode = s.page.locator("#pcr-slot-mode .bk-btn")
    level = s.page.get_attribute("#pcr-level-img", "src")
    mode.filter(has_text="side by side").click()
    assert s.page.is_visible("#pcr-other") and "full image" in s.text("#pcr-right-caption")
    full = s.page.get_attribute("#pcr-other", "src")
    assert full != level
    mode.filter(has_text="difference").click()
    assert s.page.get_attribute("#pcr-other", "src") not in (level, full)
    assert "|level - full| x 4" in s.text("#pcr-right-caption")
    mode.filter(has_text="split").click()
    assert not s.page.is_visible("#pcr-other")
    assert "left of the line: this level, right: full image" in s.text("#pcr-caption")
    assert s.page.is_visible("#pcr-over") and s.page.is_visible("#pcr-split-line")
    assert s.page.get_attribute("#pcr-over", "src") == full
    s.shot("demo_scan_split")
    mode.filter(has_text="level").first.click()
    assert not s.page.is_visible("#pcr-over")


def _play_runs_to_the_last_level(s: Offline) -> None:
    s.page.evaluate(
        """() => { window.__seen = []; const cap = document.getElementById('pcr-caption');
          new MutationObserver(() => window.__seen.push(cap.textContent.split(' ')[1]))
            .observe(cap, {childList: true, subtree: true, characterData: true}); }"""
    )
    s.page.locator("#pcr-slot-play button").click()
    s.page.wait_for_function(
        f"() => ({MODEL})('pcr-level').value === '10' "
        f"&& ({MODEL})('pcr-play').label.includes('play')",
        timeout=_budget.ms(),
    )
    seen = [int(k) for k in dict.fromkeys(s.page.evaluate("window.__seen"))]
    assert seen == list(range(3, 11))  # from level 2, one level at a time
    assert "scan 10 of 10" in s.text("#pcr-caption")


@pytest.mark.parametrize("viewport", SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_swap_demo_from_a_file(browser: Any, swap_page: Path, viewport: dict[str, int]) -> None:
    s = Offline(browser, swap_page, viewport, "pcr-sparsity")
    try:
        assert s.value("pcr-sparsity") == "50%"
        assert "50% for every ReLU" in s.text("#pcr-readout")
        s.shot("demo_swap")
        s.fits()
        bars = s.data("pcr-bars")
        s.drag_to("pcr-slot-sparsity", 1.0)
        assert s.value("pcr-sparsity") == "90%"
        assert "90% for every ReLU" in s.text("#pcr-readout")
        after = s.data("pcr-bars")
        assert after["policy"] == bars["policy"]
        assert after["swap_ms"] != bars["swap_ms"]
        assert s.data("pcr-current")["x"] == [0.9, 0.9]
        s.shot("demo_swap_90")
    finally:
        s.close()


# Each panel of the budget page: its SVG's size, the gap from it down to its legend, the legend.
_PANELS = """() => [...document.querySelectorAll('.budget-charts figure')].map(f => {
  const svg = f.querySelector(':scope > svg').getBoundingClientRect();
  const legend = f.querySelector('figcaption');
  return [svg.width, svg.height, legend.getBoundingClientRect().top - svg.bottom,
          legend.innerText]; })"""


@pytest.mark.parametrize("viewport", SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_budget_page_shows_its_chart_offline(
    browser: Any, budget_page: tuple[pcr.BudgetReport, Path], viewport: dict[str, int]
) -> None:
    report, path = budget_page
    page = new_page(browser, viewport=viewport)
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    try:
        page.goto(path.as_uri(), wait_until="load")
        panels = page.evaluate(_PANELS)
        assert len(panels) == 3
        # drawn at a readable size, each legend under its panel, never on the data
        assert all(w > 250 and h > 120 and gap >= 0 for w, h, gap, _ in panels), panels
        assert page.locator(".chart-title").all_inner_texts() == [
            "Bytes read (share of the full level)",
            "MS-SSIM against the full image",
            "Epoch input time at 20 MB/s, in s",
        ]
        bars = page.locator(".budget-charts figure").first.locator("rect > title")
        assert bars.all_text_contents() == [
            f"level {x.scan}: {x.bytes:,} bytes, {x.bytes_fraction:.1%} of the full level"
            for x in report.levels
        ]
        marked = page.locator(".budget-charts svg text[font-weight='700']").all_text_contents()
        assert marked == [str(report.recommended)] * 3  # the recommended level, in each panel
        assert "target 0.95 (5th percentile)" in panels[1][3]
        assert "reading at 20 MB/s" in panels[2][3]
        assert "decoding on 1 core (measured)" in panels[2][3]
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(
            path=str(ARTIFACTS / f"budget_page_{viewport['width']}x{viewport['height']}.png")
        )
    finally:
        page.close()
    assert requests == [path.as_uri()]  # the page itself, and nothing else
    assert errors == []
