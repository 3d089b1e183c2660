"""What a scan adds, in a real browser: the ScanPanel in JupyterLab with Chromium.

Runs the lesson notebook (00) and checks that its panel draws its zig-zag
grids and follows the level slider (grids, title, caption and the picture of
what the scan adds all change), then opens notebook 01 and checks that the
explorer's "what each scan adds" toggle shows the same panel, following the
explorer's own level slider. Screenshots at 1440x900 and 1280x720 go to
``test-artifacts/``; at both sizes nothing of the panel reaches past the
notebook's width. Every wait waits on a condition in the page, for as long as the
test may take (``tests/_budget.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import _budget
import pytest
from _lab import (
    ARTIFACTS,
    KERNEL_IDLE,
    TWO_FRAMES,
    Lab,
    caption_text,
    jupyterlab,
    new_page,
    open_notebook,
    run_all,
    wait_for_plots,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SIZES = ({"width": 1440, "height": 900}, {"width": 1280, "height": 720})


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab_scan_panel")
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
            print(f"--- JupyterLab log ---\n{server.log.read_text()[-3000:]}")


# The grid figure of the panel element *el*: its title and a checksum of its painted pixels.
_GRID = """el => {
  const v = Bokeh.index.roots.find(v => el.contains(v.el) && v.model.title
    && v.model.title.text.startsWith('Known after scan'));
  if (!v) return null;
  const canvases = [];
  const walk = n => { for (const e of n.querySelectorAll('*')) {
    if (e.tagName === 'CANVAS' && e.width > 64) canvases.push(e);
    if (e.shadowRoot) walk(e.shadowRoot); } };
  walk(v.el.shadowRoot || v.el);
  let sum = 0, ink = 0;
  for (const c of canvases) {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3]) { ink++; sum = (sum * 31 + d[i] + 7 * d[i + 1] + 13 * d[i + 2]) % 1000000007; }
    }
  }
  const r = v.el.getBoundingClientRect();
  return {title: v.model.title.text, sum, ink, right: r.right, width: r.width};
}"""


class Page:
    """A page of the browser with its errors collected, and a screenshot helper."""

    def __init__(self, browser: Any, name: str) -> None:
        self.name = name
        self.page = new_page(browser, viewport=SIZES[0])
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"[{m.type}] {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def shot(self, locator: Any, name: str) -> None:
        """Scroll *locator* to the top and take a screenshot of the viewport."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.evaluate(TWO_FRAMES)
        ARTIFACTS.mkdir(exist_ok=True)
        size = self.page.viewport_size
        self.page.screenshot(path=str(ARTIFACTS / f"{name}_{size['width']}x{size['height']}.png"))

    def close(self, failed: bool) -> None:
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            self.page.screenshot(path=str(ARTIFACTS / f"{self.name}_failure.png"), full_page=True)
        print(f"--- browser console ({self.name}) ---\n" + "\n".join(self.console[-100:]))
        self.page.close()


@contextmanager
def _page(browser: Any, name: str) -> Iterator[Page]:
    """A new page, closed after (with a full-page screenshot when the block failed)."""
    p = Page(browser, name)
    failed = True
    try:
        yield p
        failed = False
    finally:
        p.close(failed)


def _grid(panel: Any) -> dict[str, Any]:
    return panel.evaluate(_GRID)


def _wait_grid(
    page: Any, panel: Any, title_part: str, old_sum: int | None = None
) -> dict[str, Any]:
    """Wait until the panel's grid is painted with a title containing *title_part*."""
    page.wait_for_function(
        f"""([el, part, old]) => {{ const g = ({_GRID})(el);
          return g && g.ink > 5000 && g.title.includes(part) && g.sum !== old; }}""",
        arg=[panel.element_handle(), title_part, old_sum],
        timeout=_budget.ms(),
        polling=100,
    )
    return _grid(panel)


def _assert_fits(page: Any, panel: Any) -> None:
    """Nothing in the panel reaches past the notebook output's right edge."""
    over = panel.evaluate(
        """el => {
          const out = el.closest('.jp-OutputArea-output');
          const right = out.getBoundingClientRect().right + 1;
          const wide = [...el.querySelectorAll('*')]
            .filter(e => e.offsetParent !== null && e.getBoundingClientRect().right > right)
            .map(e => e.className + ' ' + Math.round(e.getBoundingClientRect().right));
          return [out.scrollWidth > out.clientWidth + 1, wide.slice(0, 5)];
        }"""
    )
    assert over == [False, []], f"cut off at {page.viewport_size}: {over}"


def _caption(panel: Any) -> Any:
    return panel.locator(".pcr-scan-caption").first


def test_lesson_panel_draws_and_follows_its_level(lab: Lab, browser: Any) -> None:
    with _page(browser, "00_how_progressive_jpeg_works") as s:
        _lesson(lab, s)


def _lesson(lab: Lab, s: Page) -> None:
    page = s.page
    open_notebook(page, lab, s.name, "wsp00")
    run_all(page)
    wait_for_plots(page, 1)
    panel = page.locator(".pcr-scan-panel").first
    panel.wait_for(state="attached", timeout=_budget.ms())
    panel.evaluate("el => el.scrollIntoView({block: 'start'})")  # off-screen cells are not drawn
    g2 = _wait_grid(page, panel, "Known after scan 2 of 10: Y AC 1-5")
    caption = _caption(panel)
    assert "scan 2 of 10" in caption.text_content()
    readout = panel.locator(".pcr-readout").first
    assert "AC coefficients 1-5" in readout.text_content()
    added = panel.locator(".widget-image").nth(1)
    src2 = added.get_attribute("src")
    _assert_fits(page, panel)
    s.shot(panel, "scan_panel_lesson_level2")

    # the level slider: grids, title, caption, readouts and the picture of what it adds change
    handle = panel.locator(".widget-slider", has_text="scan level").locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    g3 = _wait_grid(page, panel, "Known after scan 3 of 10: Cr AC 1-63", g2["sum"])
    page.wait_for_function(
        "el => el.textContent.includes('scan 3 of 10')",
        arg=caption.element_handle(),
        timeout=_budget.ms(),
    )
    page.wait_for_function(
        "([el, old]) => el.getAttribute('src') !== old",
        arg=[added.element_handle(), src2],
        timeout=_budget.ms(),
    )
    assert "AC coefficients 1-63" in readout.text_content() and "Cr" in readout.text_content()
    handle.press("End")
    _wait_grid(page, panel, "Known after scan 10 of 10: Y AC 1-63, bit 0", g3["sum"])
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
    s.shot(panel, "scan_panel_lesson_level10")

    # the smaller screen: the same panel, still inside the notebook
    page.set_viewport_size(SIZES[1])
    page.evaluate(TWO_FRAMES)
    _assert_fits(page, panel)
    s.shot(panel, "scan_panel_lesson_level10")
    handle.press("Home")
    _wait_grid(page, panel, "Known after scan 1 of 10: Y,Cb,Cr DC")
    s.shot(panel, "scan_panel_lesson_level1")
    assert not s.errors, s.errors


def test_explorer_toggle_shows_the_panel_following_the_level(lab: Lab, browser: Any) -> None:
    with _page(browser, "01_progressive_scans") as s:
        _explorer(lab, s)


def _explorer(lab: Lab, s: Page) -> None:
    page = s.page
    open_notebook(page, lab, s.name, "wsp01")
    run_all(page)
    out = page.locator(".jp-OutputArea-output", has=page.locator(".pcr-scan")).first
    out.locator(".pcr-scan .pcr-stage img").first.wait_for(state="visible", timeout=_budget.ms())
    toggle = out.get_by_role("button", name="what each scan adds").first
    toggle.click()
    panel = out.locator(".pcr-scan-panel").first
    panel.wait_for(state="visible", timeout=_budget.ms())
    level = caption_text(page).split(" of ")[0].split()[-1]
    title = panel.locator(".pcr-chart-title").first
    expect(title).to_contain_text(f"Known after scan {level} of 10", timeout=_budget.ms())
    assert panel.locator("svg.pcr-grids rect").count() >= 64  # one grid of 8x8 at least
    assert panel.locator("img").count() == 2  # the image at this level, what the scan adds
    # the panel has no slider of its own: the explorer's moves it
    assert panel.locator("input[type=range]").count() == 0
    slider = out.locator(".pcr-scan input[type=range][aria-valuetext]").first
    slider.focus()
    slider.press("ArrowRight")
    nxt = int(level) + 1
    expect(title).to_contain_text(f"Known after scan {nxt} of 10", timeout=_budget.ms())
    expect(panel.locator(".pcr-caption").first).to_contain_text(
        f"scan {nxt} of 10", timeout=_budget.ms()
    )
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
    panel.evaluate("el => el.scrollIntoView({block: 'start'})")
    s.shot(panel, "scan_panel_in_explorer")
    page.set_viewport_size(SIZES[1])
    page.evaluate(TWO_FRAMES)
    s.shot(out, "scan_panel_in_explorer_top")
    s.shot(panel, "scan_panel_in_explorer")
    # hidden again by the same toggle
    toggle.click()
    panel.wait_for(state="hidden", timeout=_budget.ms())
    assert not s.errors, s.errors
