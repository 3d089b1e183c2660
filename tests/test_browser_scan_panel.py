"""What a scan adds, in a real browser: the ScanPanel in JupyterLab with Chromium.

Runs the lesson notebook (00) and checks that its panel (its own ES module,
``static/scan_panel.js``, on anywidget) draws its zig-zag grids as SVG and
follows the level slider in the page (grids, title, caption, readouts and the
picture of what the scan adds all change, with no picture sent by the kernel),
that presentation mode enlarges it, that a reload of the page with the same
kernel redraws the level shown, that axe-core finds no serious or critical
violation and that no page or console error shows. Then it opens notebook 01
and checks that the explorer's "what each scan adds" toggle shows the same
panel, following the explorer's own level slider. Screenshots at 1440x900 and
1280x720 go to ``test-artifacts/``; at both sizes nothing of the panel reaches
past the notebook's width. Every wait waits on a condition in the page, for as
long as the test may take (``tests/_budget.py``).
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
    page_changes,
    run_all,
    wait_for_kernel,
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


# The panel's grids (SVG drawn by its module): the title, a checksum of the cells' fills and
# outlines, and how many cells there are.
_GRID = """el => {
  const svg = el.querySelector('svg.pcr-grids');
  const title = el.querySelector('.pcr-chart-title');
  if (!svg || !title || svg.closest('[hidden]')) return null;
  let sum = 0; const rects = svg.querySelectorAll('rect');
  for (const r of rects) for (const ch of (r.getAttribute('fill') + r.getAttribute('stroke')
      + r.getAttribute('stroke-width'))) sum = (sum * 31 + ch.charCodeAt(0)) % 1000000007;
  return {title: title.textContent, sum, cells: rects.length,
          label: svg.getAttribute('aria-label')};
}"""

PANEL = ".pcr-step-panel"


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
          return g && g.cells >= 64 && g.title.includes(part) && g.sum !== old; }}""",
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
    return panel.locator(".pcr-step-caption").first


def _axe(page: Any, when: str) -> None:
    """axe-core (as axe-playwright-python bundles it): nothing serious or critical."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context=PANEL).response["violations"]
    for v in found:
        targets = [n["target"] for n in v["nodes"]][:4]
        print(f"axe {when}: {v['impact']} {v['id']}: {v['help']} {targets}")
    bad = [v["id"] for v in found if v["impact"] in ("serious", "critical")]
    assert bad == [], f"{when}: {bad}"


def test_lesson_panel_draws_and_follows_its_level(lab: Lab, browser: Any) -> None:
    with _page(browser, "00_how_progressive_jpeg_works") as s:
        _lesson(lab, s)


def _lesson(lab: Lab, s: Page) -> None:
    page = s.page
    open_notebook(page, lab, s.name, "wsp00")
    run_all(page)
    panel = page.locator(PANEL).first
    panel.wait_for(state="attached", timeout=_budget.ms())
    panel.evaluate("el => el.scrollIntoView({block: 'start'})")  # off-screen cells are not drawn
    g2 = _wait_grid(page, panel, "Known after scan 2 of 10: Y AC 1-5")
    assert g2["cells"] == 3 * 64 and g2["label"] == g2["title"]
    caption = _caption(panel)
    assert "scan 2 of 10" in caption.text_content()
    readout = panel.locator(".pcr-readout").first
    assert "AC coefficients 1-5" in readout.text_content()
    pictures = panel.locator("figure img")
    assert pictures.count() == 2
    assert pictures.nth(0).get_attribute("alt") == "the image at scan 2"
    assert pictures.nth(1).get_attribute("alt").startswith("what scan 2 adds to the image")
    page.wait_for_function(
        "el => [...el.querySelectorAll('figure img')].every(i => i.complete && i.naturalWidth)",
        arg=panel.element_handle(),
        timeout=_budget.ms(),
    )
    added = pictures.nth(1)
    src2 = added.get_attribute("src")
    _assert_fits(page, panel)
    _axe(page, "lesson, level 2")
    s.shot(panel, "scan_panel_lesson_level2")

    # the level slider: grids, title, caption, readouts and the picture of what it adds
    # change in the page (every level's picture is there already: none is sent)
    slider = panel.get_by_role("slider", name="scan level")
    assert slider.get_attribute("aria-valuetext") == "scan 2 of 10"
    page_changes.start(page, panel.element_handle())
    slider.focus()
    slider.press("ArrowRight")
    g3 = _wait_grid(page, panel, "Known after scan 3 of 10: Cr AC 1-63", g2["sum"])
    expect(caption).to_contain_text("scan 3 of 10", timeout=_budget.ms())
    assert added.get_attribute("src") != src2
    assert "AC coefficients 1-63" in readout.text_content() and "Cr" in readout.text_content()
    assert slider.get_attribute("aria-valuetext") == "scan 3 of 10"
    slider.press("End")
    _wait_grid(page, panel, "Known after scan 10 of 10: Y AC 1-63, bit 0", g3["sum"])
    changed = page_changes.stop(page)
    assert changed["pictures"] == 4, changed  # two levels shown, two pictures each
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
    s.shot(panel, "scan_panel_lesson_level10")

    # presentation mode: larger text, still inside the notebook
    present = panel.get_by_role("button", name="presentation")
    size = caption.evaluate("el => parseFloat(getComputedStyle(el).fontSize)")
    present.click()
    page.wait_for_selector(f"{PANEL}.pcr-present", timeout=_budget.ms())
    assert caption.evaluate("el => parseFloat(getComputedStyle(el).fontSize)") > size
    _assert_fits(page, panel)
    s.shot(panel, "scan_panel_lesson_presentation")
    present.click()
    page.wait_for_selector(f"{PANEL}:not(.pcr-present)", timeout=_budget.ms())

    # the smaller screen: the same panel, still inside the notebook
    page.set_viewport_size(SIZES[1])
    page.evaluate(TWO_FRAMES)
    _assert_fits(page, panel)
    s.shot(panel, "scan_panel_lesson_level10")
    slider.press("Home")
    _wait_grid(page, panel, "Known after scan 1 of 10: Y,Cb,Cr DC")
    for _ in range(3):
        slider.press("ArrowRight")
    _wait_grid(page, panel, "Known after scan 4 of 10: Cb AC 1-63")
    s.shot(panel, "scan_panel_lesson_level4")
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())

    # reload the page (same kernel, nothing run): the panel shows level 4 again
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=_budget.ms())
    page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
    wait_for_kernel(page)
    page.wait_for_function(
        """code => { const nb = window.jupyterapp.shell.currentWidget.content;
          const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes(code));
          if (i >= 0) nb.scrollToItem(i, 'start');
          return !!document.querySelector('.pcr-step-panel'); }""",
        arg="panel = ScanPanel(source",
        timeout=_budget.ms(),
        polling=250,
    )
    panel = page.locator(PANEL).first
    panel.scroll_into_view_if_needed(timeout=_budget.ms())
    _wait_grid(page, panel, "Known after scan 4 of 10: Cb AC 1-63")
    reloaded = panel.get_by_role("slider", name="scan level")
    assert reloaded.get_attribute("aria-valuetext") == "scan 4 of 10"
    s.shot(panel, "scan_panel_lesson_reloaded")
    assert not s.errors, s.errors
    errors = [m for m in s.console if m.startswith("[error]")]
    assert errors == [], errors


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
