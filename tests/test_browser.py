"""A real browser: JupyterLab in Chromium at 1280x720 runs notebooks 01 and 04 and drives them.

Starts JupyterLab on a free loopback port (see ``tests/_lab.py``) and
Debian's ``chromium`` through Playwright. Per notebook: run every cell, check
that nothing sticks out of the notebook's width at 1280x720 (the file browser
open beside it) and take screenshots at 1440x900 and 1280x720 into
``test-artifacts/``. Then what a class would do:

* 01: the explorer (ScanExplorer's own module) fits one 1280x720 screen; in
  presentation mode no label runs into the next; keys and a click on the
  curve move the level, play plays to the last level; during a continuous
  drag the counter shown follows the slider in the page at every move (the
  page holds every level's picture); the saved picture follows the state;
  the page is reloaded (same kernel, nothing run) and the explorer shows the
  level and scale of now; run again, saved: no picture in the live view's
  output, nbconvert's HTML shows one picture per explorer and no widget
  text; reopened without a kernel, the picture as saved stands in for the
  widget and "model not found" is hidden.
* 02, 03, 05: tests/test_browser_02.py, test_browser_03.py, test_browser_05.py;
  ScriptExplorer (01): test_browser_scripts.py; ScanPanel (00):
  test_browser_scan_panel.py; other hosts: test_browser_hosts.py.
* 04: the reading figure (Bokeh, through ``widgets.show``) and the strip of
  levels draw.

Every wait waits on a condition in the page, for as long as the test may take
(``tests/_budget.py``), and no assertion is about time: the checks count what
the page shows and receives. The drag figures (long
tasks from a ``PerformanceObserver``, gaps between animation frames) are only
printed and written to ``test-artifacts/drag_timings.json``; the latency
targets are measured by ``bench/bench_browser_latency.py``.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _budget
import pytest
from _lab import (
    ARTIFACTS,
    SHOWN_CAPTION,
    TWO_FRAMES,
    VIEWPORT,
    DragTiming,
    Lab,
    caption_text,
    drag,
    jupyterlab,
    new_page,
    open_notebook,
    page_changes,
    run_all,
    wait_caption,
    wait_for_kernel,
    wait_for_plots,
)

pytestmark = pytest.mark.browser

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# What a drag cost the page's main thread, for the log and test-artifacts/ only: on a
# busy machine any figure can be slow, so bench/bench_browser_latency.py holds the targets.
TIMINGS: dict[str, str] = {}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab")
    # the kernels' sample and results cache are the test's own, not the user's
    env = {
        "PCR_QUICK": "1",
        "PCR_SAMPLE_DIR": str(tmp / "sample"),
        "PCR_RESULTS_CACHE": str(tmp / "results"),
    }
    with jupyterlab(tmp, env) as server:
        try:
            yield server
        finally:
            print(f"--- JupyterLab log ---\n{server.log.read_text()[-4000:]}")
    if TIMINGS:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "drag_timings.json").write_text(json.dumps(TIMINGS, indent=1))


class Session:
    """One page of the browser with its console and page errors collected."""

    def __init__(self, browser: Any, name: str) -> None:
        self.name = name
        self.page = new_page(browser, viewport=VIEWPORT)
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"[{m.type}] {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def widget_output(self, inside: str) -> Any:
        """The output area holding the element *inside* (a CSS selector)."""
        return self.page.locator(".jp-OutputArea-output", has=self.page.locator(inside)).first

    def shot(self, locator: Any, name: str) -> None:
        """Scroll *locator* to the top of the notebook and take a 1280x720 screenshot."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.evaluate(TWO_FRAMES)  # Bokeh paints in animation frames
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def shots(self, locator: Any, name: str) -> None:
        """Screenshots at 1440x900 (``NAME_1440x900.png``) and at 1280x720 (``NAME.png``)."""
        for size, file in (({"width": 1440, "height": 900}, f"{name}_1440x900"), (VIEWPORT, name)):
            self.page.set_viewport_size(size)
            for _ in range(3):  # the resize, then Bokeh's layout, then its paint
                self.page.evaluate(TWO_FRAMES)
            self.shot(locator, file)

    def assert_one_screen(self, locator: Any) -> None:
        """The widget, scrolled to the top of the notebook, fits the notebook's visible height."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.evaluate(TWO_FRAMES)
        heights = locator.evaluate(
            """out => { const sc = out.closest('.jp-WindowedPanel-outer')
                || out.closest('.jp-Notebook');
              return [out.getBoundingClientRect().height, sc.clientHeight]; }"""
        )
        assert heights[0] <= heights[1], f"{self.name}: {heights} (widget, visible) at {VIEWPORT}"

    def assert_fits(self, locator: Any) -> None:
        """Nothing in the widget reaches past the output's right edge, no text is cut short."""
        over = locator.evaluate(
            """out => {
              const right = out.getBoundingClientRect().right + 1;
              const widgets = [...out.querySelectorAll(".widget-box, .widget-html, "
                + ".widget-slider, .widget-image, .widget-toggle-buttons")];
              const plots = window.Bokeh.index.roots.map(v => v.el).filter(e => out.contains(e));
              const name = e => e.className.split(" ").slice(-2).join(".") + " " + e.textContent;
              const wide = [...widgets, ...plots]
                .filter(e => e.offsetParent !== null && e.getBoundingClientRect().right > right)
                .map(name);
              // labels and readouts that ellipsise or clip their text
              const cut = [...out.querySelectorAll(".widget-label, .widget-readout, "
                  + ".widget-checkbox label, .widget-toggle-button")]
                .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
                .map(name);
              return [out.scrollWidth > out.clientWidth + 1, wide, cut];
            }"""
        )
        assert over == [False, [], []], f"{self.name}: cut off at {VIEWPORT}: {over}"

    def cell_of(self, locator: Any) -> int:
        """The index of the notebook cell holding *locator*."""
        index = locator.evaluate(
            "el => window.jupyterapp.shell.currentWidget.content.widgets"
            ".findIndex(c => c.node.contains(el))"
        )
        assert index >= 0, index
        return int(index)

    def reveal(self, locator: Any, cell: int) -> None:
        """Scroll to cell *cell*, then to *locator* in it.

        The notebook keeps only the cells near the view in the page: after a
        reload or a run, a cell further down is not there to be found until
        the notebook is scrolled to it.
        """
        self.page.evaluate(
            "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell
        )
        locator.scroll_into_view_if_needed(timeout=_budget.ms())

    def close(self, failed: bool) -> None:
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            self.page.screenshot(path=str(ARTIFACTS / f"{self.name}_failure.png"), full_page=True)
        print(f"--- browser console ({self.name}) ---\n" + "\n".join(self.console[-200:]))
        self.page.close()


@contextmanager
def _session(browser: Any, name: str) -> Iterator[Session]:
    s = Session(browser, name)
    failed = True
    try:
        yield s
        failed = False
    finally:
        s.close(failed)


def _note_drag(name: str, timing: DragTiming) -> None:
    TIMINGS[name] = timing.summary()
    print(f"{name}: {timing.summary()}")


def _all_canvases_drawn(page: Any, count: int) -> None:
    wait_for_plots(page, count)


def _save(page: Any) -> None:
    # started, not awaited in the page: the wait below, with its limit, waits for the save
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=_budget.ms())


def _reload_same_kernel(page: Any) -> None:
    """Save, then reload the page: the notebook reconnects to the kernel that runs."""
    _save(page)
    page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
    wait_for_kernel(page)


# The saved picture shown before each explorer's live view (a hidden output while it runs).
_PICTURES = """() => [...document.querySelectorAll('[class*="pcr-fallback-"] img')]
  .map(i => i.getAttribute('src'))"""


def _saved_pictures(notebook: Path) -> list[str]:
    """The ``src`` of each saved picture in the notebook file, in the order of the page."""
    cells = json.loads(notebook.read_text())["cells"]
    html = [
        "".join(o.get("data", {}).get("text/html", "")) for c in cells for o in c.get("outputs", [])
    ]
    return [m.group(1) for h in html if "pcr-fallback-" in h for m in _IMG_SRC.finditer(h)]


_IMG_SRC = re.compile(r"<img src='(data:image/jpeg;base64,[^']+)'")


def _wait_picture_changes(page: Any, before: list[str]) -> list[str]:
    """Wait until the saved picture of the first explorer is drawn again; return them all."""
    page.wait_for_function(
        f"old => {{ const now = ({_PICTURES})(); return now.length && now[0] !== old[0]; }}",
        arg=before,
        timeout=_budget.ms(),
    )
    return page.evaluate(_PICTURES)  # type: ignore[no-any-return]


# The explorer's pieces in the page (ScanExplorer's own module: native controls, SVG chart).
_SCAN = ".pcr-scan"
_LEVEL = ".pcr-scan input[type=range][aria-valuetext]"


def _scan_fits(page: Any, out: Any, name: str) -> None:
    """Nothing in the explorer reaches past the output's right edge, no label runs into another."""
    over = out.evaluate(
        """out => { const right = out.getBoundingClientRect().right + 1;
          const root = out.querySelector('.pcr-explorer');
          const wide = [...root.querySelectorAll('*')].filter(e => e.offsetParent !== null
            && e.getBoundingClientRect().right > right).map(e => e.className || e.tagName);
          const els = [...root.querySelectorAll('.pcr-label, .pcr-value, .pcr-button')]
            .filter(e => e.offsetParent !== null);
          const r = els.map(e => e.getBoundingClientRect()); const bad = [];
          for (let i = 0; i < r.length; i++) for (let j = 0; j < r.length; j++) {
            if (i === j || r[i].left > r[j].left) continue;
            const line = r[i].top < r[j].bottom - 2 && r[j].top < r[i].bottom - 2;
            if (line && r[i].right > r[j].left + 1) bad.push(els[i].textContent + ' | '
              + els[j].textContent); }
          return [root.scrollWidth > root.clientWidth + 1, wide.slice(0, 5), bad]; }"""
    )
    assert over == [False, [], []], f"{name}: cut off or overlapping at {VIEWPORT}: {over}"


def _y_label(page: Any) -> str:
    return str(page.locator(f"{_SCAN} .pcr-axis-label").nth(1).text_content())


def test_01_scans(lab: Lab, browser: Any) -> None:
    with _session(browser, "01_progressive_scans") as s:
        page = s.page
        open_notebook(page, lab, s.name, "w01")
        run_all(page)
        image = page.locator(f"{_SCAN} .pcr-stage img").first
        image.wait_for(state="visible", timeout=_budget.ms())
        page.wait_for_function(
            f"() => document.querySelectorAll('{_SCAN} circle.pcr-point').length === 10",
            timeout=_budget.ms(),
        )
        out = s.widget_output(_SCAN)
        cell = s.cell_of(out)
        _scan_fits(page, out, s.name)
        s.assert_one_screen(out)  # the file browser is open beside the notebook
        s.shots(out, s.name)
        # presentation mode: larger text, and no readout runs into the next label
        present = page.get_by_role("button", name="presentation").first
        present.click()
        page.wait_for_selector(f"{_SCAN}.pcr-present", timeout=_budget.ms())
        _scan_fits(page, out, s.name)
        s.shot(out, "01_progressive_scans_presentation")
        present.click()

        # keys move the level: the picture and the byte counter change together, in the page
        assert caption_text(page).startswith("scan 5 of 10")  # the "from code" cell's level
        before = image.evaluate("el => el.src")
        slider = page.locator(_LEVEL).first
        slider.focus()
        slider.press("ArrowRight")
        wait_caption(page, "scan 6 of 10")
        assert image.evaluate("el => el.src") != before
        assert image.evaluate("el => el.complete && el.naturalWidth > 0")
        assert slider.get_attribute("aria-valuetext") == "scan 6 of 10"

        # a click on the curve shows that level
        page.locator(f"{_SCAN} circle.pcr-point").nth(9).click()
        wait_caption(page, "scan 10 of 10")

        # a continuous drag: at every move the counter shown is the slider's level (picked
        # in the page, not waiting for the kernel), no picture arrives from the kernel
        moves = [0.97 - 0.94 * i / 19 for i in range(20)] + [
            0.03 + 0.94 * i / 19 for i in range(20)
        ]
        root = page.locator(_SCAN).first
        page_changes.start(page, root.element_handle())
        timing = drag(
            page, slider, slider, moves,
            f"sl => {{ const c = {SHOWN_CAPTION}(); return !!c && "
            "c.innerText.startsWith(sl.getAttribute('aria-valuetext')); }",
            slider.element_handle(),
            probe="sl => [sl.getAttribute('aria-valuetext'),"
            f" ({SHOWN_CAPTION})()?.innerText ?? '']",
        )  # fmt: skip
        changed = page_changes.stop(page)
        _note_drag("01 level slider", timing)
        levels_seen = [level for level, _ in timing.probes]
        print(f"01 levels after each move: {levels_seen}")
        assert len(set(levels_seen)) >= 6, levels_seen  # the drag went through the levels
        off = [(level, c) for level, c in timing.probes if not c.startswith(level)]
        assert off == [], off
        # every picture shown was in the page already: each move only picks one
        assert changed["pictures"] <= len(moves) + 1, changed

        # play to the last level (from level 8: two steps of the player)
        slider.focus()
        slider.press("End")
        slider.press("ArrowLeft")
        slider.press("ArrowLeft")
        wait_caption(page, "scan 8 of")
        page.get_by_role("button", name="play the levels").first.click()
        wait_caption(page, "scan 10 of")
        s.shot(out, "01_progressive_scans_level10")

        # the difference map with its scale, the curve in dB
        page.get_by_role("button", name="difference x4").first.click()
        page.get_by_role("button", name="MS-SSIM in dB").first.click()
        page.wait_for_function(
            f"() => document.querySelector('{_SCAN} figcaption')?.innerText.includes('of 255')",
            timeout=_budget.ms(),
        )
        page.wait_for_function(  # the level and its difference map, both drawn
            f"() => [...document.querySelectorAll('{_SCAN} .pcr-pair img')]"
            ".filter(i => i.offsetParent && i.naturalWidth > 0).length === 2",
            timeout=_budget.ms(),
        )
        assert _y_label(page).startswith("MS-SSIM in dB"), _y_label(page)
        _scan_fits(page, out, s.name)
        s.shot(out, "01_progressive_scans_difference_db")

        # the picture for renderers without widgets follows the state (hidden while live)
        pictures = page.evaluate(_PICTURES)
        assert len(pictures) == 2, len(pictures)  # the scan and the script explorers
        slider.focus()
        slider.press("Home")
        for _ in range(6):
            slider.press("ArrowRight")
        wait_caption(page, "scan 7 of")
        _wait_picture_changes(page, pictures)
        assert page.locator('[class*="pcr-fallback-"]').first.is_hidden()

        # reload the page (same kernel, no cell run): the explorer shows the state of now
        _reload_same_kernel(page)
        s.reveal(out, cell)
        wait_caption(page, "scan 7 of 10")
        assert page.locator(_LEVEL).first.get_attribute("aria-valuetext") == "scan 7 of 10"
        page.wait_for_function(  # in dB: level 10, the full image itself, is not drawn
            f"() => document.querySelectorAll('{_SCAN} circle.pcr-point').length === 9",
            timeout=_budget.ms(),
        )
        assert _y_label(page).startswith("MS-SSIM in dB"), _y_label(page)
        s.shot(s.widget_output(_SCAN), "01_progressive_scans_reloaded")

        # run again and save: no second picture per explorer, no picture in a live output
        run_all(page)
        s.reveal(out, cell)
        wait_caption(page, "scan 5 of 10")
        slider = page.locator(_LEVEL).first
        pictures = page.evaluate(_PICTURES)
        slider.focus()
        for _ in range(4):  # from level 5, where the notebook's "from code" cell put it
            slider.press("ArrowRight")
        wait_caption(page, "scan 9 of")
        _wait_picture_changes(page, pictures)
        _save(page)
        notebook = lab.root / "notebooks" / f"{s.name}.ipynb"
        saved = json.loads(notebook.read_text())
        outputs = [o for c in saved["cells"] for o in c.get("outputs", [])]
        live = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
        assert len(live) == 2 and not any("image/jpeg" in o["data"] for o in live)
        assert not s.errors, s.errors
        _check_nbconvert(browser, notebook, pictures=2)

        # end the kernel, reopen: the picture as saved stands in for the widget, no error text
        _end_sessions(lab)
        page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
        wait_for_kernel(page)
        picture = page.locator('[class*="pcr-fallback-"] img').first
        picture.wait_for(state="visible", timeout=_budget.ms())
        # the pictures of the last save (the kernel redraws them a moment after the level
        # stops, which may come after the save above, and JupyterLab may save again)
        at_save = _saved_pictures(notebook)
        assert len(at_save) == 2 and at_save[0] != pictures[0]  # they followed the level
        assert page.evaluate(_PICTURES) == at_save
        assert picture.evaluate("img => img.naturalWidth") > 300
        failed = page.locator(".jp-OutputArea-output.jupyter-widgets").first
        failed.wait_for(state="attached", timeout=_budget.ms())
        assert failed.is_hidden()
        assert "model not found" not in page.locator(".jp-Notebook").inner_text()
        s.shot(picture, "01_progressive_scans_saved_without_kernel")


def _check_nbconvert(browser: Any, notebook: Path, pictures: int) -> None:
    """The notebook as nbconvert's HTML (what nbviewer shows): one picture per explorer, no
    widget text, no error, nothing else drawn from the pictures."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_filename(str(notebook))
    assert "model not found" not in body
    out = notebook.with_suffix(".html")
    out.write_text(body)
    page = new_page(browser, viewport=VIEWPORT)
    try:
        page.route(
            "**/*", lambda r: r.abort() if r.request.url.startswith("http") else r.continue_()
        )
        page.goto(out.as_uri(), wait_until="load", timeout=_budget.ms())
        seen = page.evaluate(
            """() => {
              const visible = e => e.getClientRects().length > 0
                && getComputedStyle(e).visibility !== 'hidden';
              const imgs = [...document.querySelectorAll('img')].filter(visible)
                .filter(i => i.src.startsWith('data:image/jpeg') && i.naturalWidth > 300);
              const painted = [...document.querySelectorAll('.jp-OutputArea-output')]
                .filter(e => getComputedStyle(e).backgroundImage !== 'none').length;
              const text = [...document.querySelectorAll('.jp-OutputArea-output')]
                .filter(visible).map(e => e.innerText).join('\\n');
              return [imgs.length, painted, text.includes('live widget'),
                      text.includes('model not found')];
            }"""
        )
        assert seen == [pictures, 0, False, False], seen
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("img[src^='data:image/jpeg']").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"{notebook.stem}_nbconvert.png"))
    finally:
        page.close()


def _end_sessions(lab: Lab) -> None:
    """Shut down every kernel session through the server's REST API."""
    url = f"{lab.base}/api/sessions?token={lab.token}"
    with urllib.request.urlopen(url, timeout=_budget.seconds_left()) as r:
        sessions = json.loads(r.read())
    for sess in sessions:
        req = urllib.request.Request(
            f"{lab.base}/api/sessions/{sess['id']}?token={lab.token}", method="DELETE"
        )
        with urllib.request.urlopen(req, timeout=_budget.seconds_left()):
            pass


def test_04_reading(lab: Lab, browser: Any) -> None:
    with _session(browser, "04_read_pcr_for_training") as s:
        page = s.page
        open_notebook(page, lab, s.name, "w04")
        run_all(page)
        _all_canvases_drawn(page, 2)
        strip = page.locator(".jp-OutputArea-output[data-mime-type='image/png'] img").first
        strip.wait_for(state="visible", timeout=_budget.ms())
        assert strip.evaluate("img => img.naturalWidth") > 5 * 224
        out = page.locator(".jp-OutputArea-output", has=page.locator(".bk-Canvas")).first
        s.assert_fits(out)
        s.shot(strip, s.name)
        s.shot(out, "04_read_pcr_for_training_figure")
        assert not s.errors, s.errors
