"""The pages for sharing in a real browser, opened from ``file://`` with no kernel, no network.

Debian's ``chromium`` through Playwright (see ``tests/_lab.py``). Every
request the page makes is routed through the test: ``file:`` and ``data:``
go on, anything else is aborted and recorded, and none may be; no page
error and no console error either. The scan page runs ScanExplorer's own
front end on the page's model (``window.pcrScan``); with the mouse and the
keyboard, as a student would: dragging the level slider changes the picture
and the byte counter and moves the curve's marker, the arrow keys step,
play runs to the last level, clicking a point of the curve shows its level,
the view buttons switch (the split line follows a drag), the zoom magnifies
about the point pressed, the image picker and its buttons switch images,
and the slider tells a screen reader the level shown; the page is titled by
the dataset, draws its band and axe-core finds nothing serious in it. The
swap page runs SwapExplorer's own front end on the page's model
(``window.pcrSwap``): dragging the sparsity, its keys and its play button
move the line, the codecs' markers, the bars and the readouts together, and
axe-core finds nothing serious in it. The
budget page shows its chart (bytes, quality and epoch time per level) with
the page's own file the only request. Screenshots at 1440x900 and 1280x720
go to ``test-artifacts/``.
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

# The swap page: its model, and its charts drawn.
SWAP_READY = """() => !!window.pcrSwap
  && document.querySelectorAll('.pcr-swap svg.pcr-chart-svg').length === 2"""
DATA = "() => JSON.parse(document.getElementById('pcr-demo-data').textContent)"
# The scan page: its model, and the picture of the level shown drawn.
SCAN_READY = """() => !!window.pcrScan && !!document.querySelector('.pcr-scan img[src]')
  && [...document.images].every(i => i.hidden || i.complete)"""
# What the page embedded for the image and level shown (data.images[i], at position p).
EMBEDDED = """() => { const d = JSON.parse(document.getElementById('pcr-demo-data').textContent);
  const m = window.pcrScan, p = m.get('levels').indexOf(m.get('level'));
  const im = d.images[m.get('image')];
  return {readouts: im.readouts[p], picture: d.pics[im.pictures[p]],
          full: d.pics[im.pictures[im.pictures.length - 1]], diff: d.pics[im.diffs[p]]}; }"""
SERIOUS = ("serious", "critical")


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
    """A page opened from a file, with every request, page error and console error recorded."""

    def __init__(self, browser: Any, path: Path, viewport: dict[str, int], ready: str) -> None:
        self.page = new_page(browser, viewport=viewport)
        self.left: list[str] = []  # requests that would have left the page
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.route("**/*", self._route)
        self.page.goto(path.as_uri())
        self.page.wait_for_function(ready, timeout=_budget.ms())
        self.page.evaluate(TWO_FRAMES)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            self.left.append(url)
            route.abort()

    def swap(self, key: str) -> Any:
        """The swap page's model: ``pcrSwap.get(key)``."""
        return self.page.evaluate("k => window.pcrSwap.get(k)", key)

    def get(self, key: str) -> Any:
        """The scan page's model: ``pcrScan.get(key)``."""
        return self.page.evaluate("k => window.pcrScan.get(k)", key)

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).first.inner_text())

    def drag_to(self, handle: Any, track: Any, fraction: float) -> None:
        """Drag *handle* to *fraction* of *track* (locators) with the mouse."""
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


class Scan:
    """The scan page's parts, found as a user finds them: by role, name and label."""

    def __init__(self, s: Offline) -> None:
        page = s.page
        self.s, self.page = s, page
        self.level = page.get_by_role("slider", name="scan level")
        self.zoom = page.get_by_role("slider", name="zoom")
        self.x = page.get_by_role("slider", name="x", exact=True)
        self.picker = page.get_by_role("combobox", name="image")
        self.caption = page.locator(".pcr-caption").first
        self.picture = page.locator(".pcr-stage img").first
        self.stage = page.locator(".pcr-stage").first
        self.right = page.locator(".pcr-pair > figure").nth(1)
        self.over = page.locator("img.pcr-over")
        self.line = page.locator(".pcr-split-line")
        self.points = page.locator("svg.pcr-chart-svg circle.pcr-point")
        self.marker = page.locator("svg.pcr-chart-svg circle.pcr-marker")
        self.readout = page.locator("table.pcr-readout").first

    def button(self, name: str) -> Any:
        return self.page.get_by_role("button", name=name, exact=True)

    def shows(self, level: int) -> None:
        """Level *level* is shown: model, slider, counter, marker, picture and readouts agree."""
        expect(self.caption).to_contain_text(f"scan {level} of 10 ·", timeout=_budget.ms())
        assert self.s.get("level") == level
        p = self.s.get("levels").index(level)
        # the slider tells a screen reader the level shown, not its position from 0
        expect(self.level).to_have_value(str(p))
        expect(self.level).to_have_attribute("aria-valuetext", f"scan {level} of 10")
        assert (self.level.get_attribute("min"), self.level.get_attribute("max")) == ("0", "9")
        want = self.page.evaluate(EMBEDDED)
        assert self.picture.get_attribute("src") == want["picture"]
        cells = self.readout.locator("tr").evaluate_all(
            "rows => rows.map(r => [...r.cells].map(c => c.innerHTML.replace(/^<b>|<\\/b>$/g, '')))"
        )
        assert cells == want["readouts"]
        # the marker sits on this level's point of the curve
        point = self.points.nth(p)
        spot = [float(point.get_attribute(a)) for a in ("cx", "cy")]
        assert [float(self.marker.get_attribute(a)) for a in ("cx", "cy")] == pytest.approx(spot)


@pytest.mark.parametrize("viewport", SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_scan_demo_from_a_file(
    browser: Any, scan_page: Path, photos: Path, viewport: dict[str, int]
) -> None:
    src = open_source(photos)
    nbytes = src.level_bytes(0)
    s = Offline(browser, scan_page, viewport, SCAN_READY)
    v = Scan(s)
    try:
        assert s.page.title() == f"Scan levels of {photos.name}"
        v.shows(5)
        assert f"scan 5 of 10 · {nbytes[4]:,} of {nbytes[-1]:,} bytes" in v.caption.inner_text()
        assert v.points.count() == 10 and v.marker.count() == 1
        legend = s.text(".pcr-legend")
        assert "dataset mean" in legend and "dataset p5-p95" in legend  # as in notebook 01
        assert s.page.locator("svg.pcr-chart-svg polygon").count() == 1  # the band
        assert v.button("what each scan adds").count() == 0  # hidden: no kernel to draw it
        _no_serious_violations(s, "at first")
        s.shot("demo_scan")
        s.fits()

        s.drag_to(v.level, v.level, 0.0)  # the slider, with the mouse
        v.shows(1)
        assert f"scan 1 of 10 · {nbytes[0]:,} of {nbytes[-1]:,} bytes" in v.caption.inner_text()
        assert f"{nbytes[0]:,} of {nbytes[-1]:,}" in v.readout.inner_text()
        v.level.press("ArrowRight")  # the arrow keys step the slider
        v.shows(2)
        v.button("play the levels").focus()  # and step the levels anywhere in the explorer
        s.page.keyboard.press("ArrowRight")
        v.shows(3)
        s.page.keyboard.press("ArrowLeft")
        v.shows(2)

        _views_switch(s, v)
        _zoom_follows_the_pointer(s, v)
        v.points.nth(0).click()  # a point of the curve shows its level
        v.shows(1)
        v.level.press("ArrowRight")
        _play_runs_to_the_last_level(s, v, 2)

        v.picker.select_option(label="coffee.jpg")
        coffee = src.level_bytes(src.names.index("coffee.jpg"))
        expect(v.caption).to_contain_text(f"{coffee[-1]:,} of {coffee[-1]:,} bytes")
        assert s.get("image") == src.names.index("coffee.jpg")
        v.shows(10)
        tips = v.points.locator("title").all_text_contents()
        assert tips == [f"scan {k}: {b} bytes" for k, b in enumerate(coffee, 1)]
        v.button("next image").click()  # round to the first
        expect(v.picker).to_have_value("0")
        v.shows(10)
        assert f"{nbytes[-1]:,} of {nbytes[-1]:,} bytes" in v.caption.inner_text()
        v.button("previous image").click()
        expect(v.picker).to_have_value(str(src.names.index("coffee.jpg")))
        s.shot("demo_scan_played")

        present = v.button("presentation")
        present.click()
        expect(present).to_have_attribute("aria-pressed", "true")
        root = s.page.locator(".pcr-explorer")
        expect(root).to_have_css("font-size", "18px")
        s.shot("demo_scan_presentation")
        s.fits()
        _no_serious_violations(s, "in presentation mode")
        present.click()
        expect(root).to_have_css("font-size", "13px")
    finally:
        s.close()


def test_scan_demo_presentation_enlarges_the_readouts(browser: Any, scan_page: Path) -> None:
    s = Offline(browser, scan_page, SIZES[1], SCAN_READY)
    try:
        Scan(s).button("presentation").click()
        sizes = s.page.evaluate(
            """() => [".pcr-explorer", ".pcr-caption", "table.pcr-readout th",
                      "table.pcr-readout td"].map(q =>
              getComputedStyle(document.querySelector(q)).fontSize)"""
        )
        assert sizes == ["18px"] * 4  # every text of the explorer, as in a notebook
    finally:
        s.close()


def _no_serious_violations(s: Offline, when: str) -> None:
    """axe-core (as axe-playwright-python bundles it): nothing serious or critical."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(s.page).response["violations"]
    for v in found:
        targets = [n["target"] for n in v["nodes"]][:4]
        print(f"axe {when}: {v['impact']} {v['id']}: {v['help']} {targets}")
    assert [v["id"] for v in found if v["impact"] in SERIOUS] == [], when


def _views_switch(s: Offline, v: Scan) -> None:
    """Side by side shows the full image, difference the map, split the line (dragged)."""
    shown = s.page.evaluate(EMBEDDED)
    v.button("side by side").click()
    expect(v.right).to_be_visible()
    expect(v.button("side by side")).to_have_attribute("aria-pressed", "true")
    assert v.right.locator("img").get_attribute("src") == shown["full"] != shown["picture"]
    assert "full image" in v.right.locator("figcaption").inner_text()
    assert v.picture.get_attribute("src") == shown["picture"]  # the level stays on the left
    v.button("difference x4").click()
    expect(v.right.locator("img")).to_have_attribute("src", shown["diff"])
    assert "|level - full| x 4" in v.right.locator("figcaption").inner_text()
    s.shot("demo_scan_diff")

    v.button("split").click()
    expect(v.right).to_be_hidden()
    expect(v.over).to_be_visible()
    expect(v.line).to_be_visible()
    assert v.over.get_attribute("src") == shown["full"]
    assert "left of the line: this level, right: full image" in v.caption.inner_text()
    box = v.stage.bounding_box()
    y = box["y"] + box["height"] / 2
    s.page.mouse.move(box["x"] + 0.3 * box["width"], y)
    s.page.mouse.down()
    for f in np.linspace(0.3, 0.75, 6):
        s.page.mouse.move(box["x"] + f * box["width"], y)
    s.page.mouse.up()
    s.page.evaluate(TWO_FRAMES)
    x = s.get("zoom_x")
    assert x == pytest.approx(0.75, abs=0.011) and s.get("zoom_y") == 0.5  # the line moved
    line = v.line.bounding_box()
    assert line["x"] + line["width"] / 2 == pytest.approx(box["x"] + x * box["width"], abs=2)
    clip = v.over.evaluate("e => e.style.clipPath")
    assert clip.startswith("inset(0") and clip.endswith(f" {x * 100:g}%)"), clip
    expect(v.x).to_have_value(f"{x:g}")
    expect(v.x).to_be_enabled()
    s.shot("demo_scan_split")
    v.button("level").click()
    expect(v.over).to_be_hidden()
    expect(v.line).to_be_hidden()


def _zoom_follows_the_pointer(s: Offline, v: Scan) -> None:
    """The zoom magnifies the picture about its centre; a press on the picture moves it."""
    box = v.stage.bounding_box()
    v.zoom.press("ArrowRight")
    v.zoom.press("ArrowRight")  # 1 -> 2 in steps of 0.5
    assert s.get("zoom") == 2
    x = s.get("zoom_x")
    expect(v.caption).to_contain_text(f"zoom x2 at ({round(x * 100)}%, 50%)")
    wide = v.picture.bounding_box()
    assert wide["width"] == pytest.approx(2 * box["width"], abs=2)  # twice as large
    assert v.stage.bounding_box() == pytest.approx(box)  # in the same frame
    s.page.mouse.click(box["x"] + 0.5 * box["width"], box["y"] + 0.25 * box["height"])
    # the point pressed (on the magnified picture) becomes the centre
    assert s.get("zoom_x") == pytest.approx(x + (0.5 - x) / 2, abs=0.011)
    assert s.get("zoom_y") == pytest.approx(0.5 + (0.25 - 0.5) / 2, abs=0.011)
    s.shot("demo_scan_zoom")
    v.zoom.press("Home")
    assert s.get("zoom") == 1
    expect(v.caption).not_to_contain_text("zoom")
    assert v.picture.bounding_box()["width"] == pytest.approx(box["width"], abs=1)


def _play_runs_to_the_last_level(s: Offline, v: Scan, start: int) -> None:
    v.shows(start)
    s.page.evaluate(
        """() => { window.__seen = []; const cap = document.querySelector('.pcr-caption');
          new MutationObserver(() => window.__seen.push(cap.textContent.split(' ')[1]))
            .observe(cap, {childList: true, subtree: true, characterData: true}); }"""
    )
    play = v.button("play the levels")
    play.click()
    expect(v.button("pause")).to_be_visible()
    expect(play).to_be_visible(timeout=_budget.ms())  # it stops by itself at the last level
    seen = [int(k) for k in dict.fromkeys(s.page.evaluate("window.__seen"))]
    assert seen == list(range(start + 1, 11))  # one level at a time
    v.shows(10)


@pytest.mark.parametrize("viewport", SIZES, ids=lambda v: f"{v['width']}x{v['height']}")
def test_swap_demo_from_a_file(browser: Any, swap_page: Path, viewport: dict[str, int]) -> None:
    s = Offline(browser, swap_page, viewport, SWAP_READY)
    page = s.page
    slider = page.get_by_role("slider", name="sparsity")
    readout = page.locator("table.pcr-readout")
    bars = page.locator(".pcr-swap rect.pcr-bar")
    markers = page.locator(".pcr-swap circle.pcr-marker")
    embedded = page.evaluate(DATA)  # what the page was written with

    def shows(pct: int) -> None:
        """Sparsity *pct*% is shown: slider, readouts, markers, line and bars agree."""
        expect(slider).to_have_attribute("aria-valuetext", f"{pct}%", timeout=_budget.ms())
        expect(readout).to_contain_text(f"{pct}% for every ReLU and pooling output")
        assert s.swap("sparsity") == pytest.approx(pct / 100)
        assert s.swap("current")["x"] == pytest.approx(pct / 100)
        step = embedded["steps"][[round(g * 100) for g in embedded["grid"]].index(pct)]["bars"]
        want = [f"{p}: swap {a:.2f} ms, stall {b:.2f} ms"
                for p, a, b in zip(step["policy"], step["swap_ms"], step["stall_ms"])]  # fmt: skip
        tips = bars.locator("title").all_text_contents()
        assert [t.split(";")[0] for t in tips[::2]] == want  # one tip per bar, both bars of it
        assert tips[::2] == tips[1::2]
        for i, codec in enumerate(["zvc", "csr"]):
            assert markers.nth(i).locator("title").text_content().startswith(f"{codec} at {pct}%:")

    try:
        assert page.title() == "Compressed swapping: resnet50-b64-r224 on v100-pcie3"
        shows(50)
        # two bars for each of vdnn, always:zvc, always:csr, cswap and oracle; a marker per codec
        assert bars.count() == 2 * 5 and markers.count() == 2
        legend = s.text(".pcr-legend")
        assert "zvc" in legend and "measured on 1 MiB" in legend and "sparsity shown" in legend
        # no kernel: the trace, device, codecs and the timeline are fixed, not offered
        assert page.get_by_role("combobox").count() == 0
        assert page.get_by_role("checkbox").count() == 0
        _no_serious_violations(s, "at first")
        s.shot("demo_swap")
        s.fits()

        s.drag_to(slider, slider, 1.0)  # the slider, with the mouse
        shows(90)
        slider.press("ArrowLeft")  # and the keys
        shows(50)
        slider.press("Home")
        shows(10)
        page.get_by_role("button", name="play").click()  # plays to the last sparsity
        shows(90)
        expect(page.get_by_role("button", name="play")).to_be_visible()
        s.shot("demo_swap_90")

        present = page.get_by_role("button", name="presentation", exact=True)
        present.click()
        expect(present).to_have_attribute("aria-pressed", "true")
        expect(page.locator(".pcr-explorer")).to_have_css("font-size", "18px")
        s.fits()
        _no_serious_violations(s, "in presentation mode")
        s.shot("demo_swap_presentation")
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
