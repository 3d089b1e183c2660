"""Two scan scripts side by side in a real browser: ScriptExplorer in JupyterLab with Chromium.

Runs notebook 01 (``PCR_QUICK``) and drives its ScriptExplorer, the widget's own
ES module (``static/script_explorer.js``, on anywidget): both charts draw every
level of both scripts with their legends above the plots; picking another
script B redraws its curve, its picture and its table row; the byte budget
slider (keys, then a continuous drag) moves each script's picture and caption
in the page, with no picture sent by the kernel, and every caption it shows
reads at most the budget (or is level 1); presentation mode; a reload of the
page with the same kernel redraws the same scripts, budget and pictures. No
page or console error, and axe-core finds no serious or critical violation in
the explorer. Screenshots at 1440x900 and 1280x720 go to ``test-artifacts/``.

Every wait waits on a condition in the page, for as long as the test may take
(``tests/_budget.py``); no assertion is about time.
"""

from __future__ import annotations

import re
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
    drag,
    jupyterlab,
    new_page,
    open_notebook,
    page_changes,
    run_all,
    wait_for_kernel,
)

pytestmark = pytest.mark.browser

SIZES = ({"width": 1440, "height": 900}, {"width": 1280, "height": 720})
ROOT = ".pcr-scripts"
NOTEBOOK = "01_progressive_scans"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab_scripts")
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

    def shots(self, locator: Any, name: str) -> None:
        """Screenshots at 1440x900 and 1280x720, checking at each that the explorer fits."""
        for size in SIZES:
            self.page.set_viewport_size(size)
            self.page.evaluate(TWO_FRAMES)
            _assert_fits(self.page, locator)
            self.shot(locator, name)

    def console_errors(self) -> list[str]:
        return [m for m in self.console if m.startswith("[error]")]

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


def _assert_fits(page: Any, root: Any) -> None:
    """Nothing reaches past the output's right edge, no label runs into another, no title cut."""
    over = root.evaluate(
        """root => { const out = root.closest('.jp-OutputArea-output');
          const right = out.getBoundingClientRect().right + 1;
          const wide = [...root.querySelectorAll('*')].filter(e => e.getClientRects().length
            && e.getBoundingClientRect().right > right).map(e => e.className.baseVal
            ?? e.className ?? e.tagName);
          const els = [...root.querySelectorAll('.pcr-label, .pcr-value, .pcr-button, select')]
            .filter(e => e.offsetParent !== null);
          const r = els.map(e => e.getBoundingClientRect()); const bad = [];
          for (let i = 0; i < r.length; i++) for (let j = 0; j < r.length; j++) {
            if (i === j || r[i].left > r[j].left) continue;
            const line = r[i].top < r[j].bottom - 2 && r[j].top < r[i].bottom - 2;
            if (line && r[i].right > r[j].left + 1) bad.push(els[i].textContent + ' | '
              + els[j].textContent); }
          const cut = [...root.querySelectorAll('.pcr-chart-title, .pcr-legend span')]
            .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent);
          return [out.scrollWidth > out.clientWidth + 1, wide.slice(0, 5), bad, cut]; }"""
    )
    assert over == [False, [], [], []], f"cut off or overlapping at {page.viewport_size}: {over}"


def _axe(page: Any, when: str) -> None:
    """axe-core (as axe-playwright-python bundles it): nothing serious or critical."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context=ROOT).response["violations"]
    for v in found:
        targets = [n["target"] for n in v["nodes"]][:4]
        print(f"axe {when}: {v['impact']} {v['id']}: {v['help']} {targets}")
    bad = [v["id"] for v in found if v["impact"] in ("serious", "critical")]
    assert bad == [], f"{when}: {bad}"


# What the explorer shows: the budget's readout, each caption, each picture and legend.
_SHOWN = """root => ({
  budget: root.querySelector('input[type=range]').value,
  out: root.querySelector('.pcr-value').textContent,
  captions: [...root.querySelectorAll('.pcr-script-fig figcaption')].map(c => c.innerText),
  srcs: [...root.querySelectorAll('.pcr-script-fig img')].map(i => i.getAttribute('src')),
  drawn: [...root.querySelectorAll('.pcr-script-fig img')]
    .filter(i => i.offsetParent && i.complete && i.naturalWidth > 0).length,
  alts: [...root.querySelectorAll('.pcr-script-fig img')].map(i => i.alt),
  legend: [...root.querySelector('.pcr-legend').querySelectorAll('span')].map(s => s.textContent),
  points: root.querySelectorAll('circle.pcr-point').length,
  rows: [...root.querySelectorAll('.pcr-script-table th')].map(t => t.textContent),
  picks: [...root.querySelectorAll('select')].map(s => s.value),
})"""

_CAPTION = re.compile(r"level (\d+) of (\d+): ([\d.]+)% of the bytes, MS-SSIM ([\d.]+)")


def _shown(root: Any) -> dict[str, Any]:
    return dict(root.evaluate(_SHOWN))


def _wait(page: Any, root: Any, condition: str) -> dict[str, Any]:
    """Wait until the JavaScript *condition* on ``s`` (what the explorer shows) holds."""
    page.wait_for_function(
        f"root => {{ const s = ({_SHOWN})(root); return {condition}; }}",
        arg=root.element_handle(),
        timeout=_budget.ms(),
        polling=100,
    )
    return _shown(root)


def _within_budget(shown: dict[str, Any]) -> list[tuple[int, float]]:
    """Each caption's level and share; each share is at most the budget (or its level is 1)."""
    budget = float(shown["budget"]) * 100
    assert shown["out"] == f"{round(budget)}%", shown
    got = []
    for caption in shown["captions"]:
        m = _CAPTION.search(caption)
        assert m, caption
        level, share = int(m.group(1)), float(m.group(3))
        assert level == 1 or share <= budget + 0.05, (budget, caption)
        got.append((level, share))
    return got


def test_script_explorer_picks_scripts_and_moves_the_budget(lab: Lab, browser: Any) -> None:
    with _page(browser, "01_scripts") as s:
        _scripts(lab, s)


def _scripts(lab: Lab, s: Page) -> None:
    page = s.page
    open_notebook(page, lab, NOTEBOOK, "wscripts01")
    run_all(page)
    root = page.locator(ROOT).first
    root.wait_for(state="attached", timeout=_budget.ms())
    root.evaluate("el => el.scrollIntoView({block: 'start'})")  # off-screen cells are not drawn
    # standard (10 levels) and spectral (5): every level a point on both charts
    shown = _wait(page, root, "s.drawn === 2 && s.points === 30")
    assert shown["picks"][:2] == ["standard", "spectral"]
    assert shown["legend"] == ["A: standard", "B: spectral", "byte budget"]
    assert shown["rows"] == ["standard", "spectral"]
    assert shown["captions"][0].startswith("standard level ")
    assert shown["captions"][1].startswith("spectral level ")
    assert all(a.endswith("of the bytes") for a in shown["alts"]), shown["alts"]
    _within_budget(shown)
    titles = root.locator(".pcr-chart-title").all_text_contents()
    assert titles == [
        "Bytes read vs mean MS-SSIM (sample)",
        "Decode time per level (measured on this machine)",
    ]
    assert root.locator("svg.pcr-chart-svg[role=img][aria-label]").count() == 2
    _axe(page, "first draw")
    s.shots(root, "scripts_explorer")

    # pick another script B: its curve, picture, caption and table row
    root.locator("label", has_text="script B").locator("select").select_option("lean")
    shown = _wait(page, root, "s.points === 38 && s.rows[1] === 'lean'")
    assert shown["legend"] == ["A: standard", "B: lean", "byte budget"]
    assert shown["captions"][1].startswith("lean level ") and "of 9:" in shown["captions"][1]

    # the budget slider's keys: the pictures and captions follow in the page
    slider = root.get_by_role("slider", name="byte budget")
    slider.focus()
    slider.press("End")
    shown = _wait(page, root, "s.out === '105%'")
    assert [lv for lv, _ in _within_budget(shown)] == [10, 9]
    end = shown["srcs"]
    slider.press("Home")
    shown = _wait(page, root, "s.out === '5%'")
    assert [lv for lv, _ in _within_budget(shown)] == [1, 1] and shown["srcs"] != end
    for _ in range(25):
        slider.press("ArrowRight")
    shown = _wait(page, root, "s.out === '30%'")
    _within_budget(shown)
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())

    # a continuous drag: after every move the captions shown fit the budget shown; every
    # picture was in the page already (each move only picks one)
    moves = [0.05 + 0.9 * i / 19 for i in range(20)] + [0.95 - 0.9 * i / 19 for i in range(20)]
    page_changes.start(page, root.element_handle())
    timing = drag(
        page, slider, slider, moves,
        "sl => sl.closest('.pcr-scripts').querySelector('.pcr-value').textContent"
        " === Math.round(sl.value * 100) + '%'",
        slider.element_handle(),
        probe=f"sl => ({_SHOWN})(sl.closest('.pcr-scripts'))",
    )  # fmt: skip
    changed = page_changes.stop(page)
    print(f"01 byte budget drag: {timing.summary()}")
    levels = [tuple(lv for lv, _ in _within_budget(p)) for p in timing.probes]
    assert len(set(levels)) >= 4, levels  # the drag went through the levels
    assert changed["pictures"] <= 2 * len(moves) + 2, changed
    assert not s.errors, s.errors

    # presentation mode: larger text, still inside the notebook, nothing cut
    present = root.get_by_role("button", name="presentation")
    present.click()
    page.wait_for_selector(f"{ROOT}.pcr-present", timeout=_budget.ms())
    assert present.get_attribute("aria-pressed") == "true"
    s.shots(root, "scripts_explorer_presentation")
    _axe(page, "presentation")
    present.click()
    page.wait_for_selector(f"{ROOT}:not(.pcr-present)", timeout=_budget.ms())

    # a budget and an image of our own, then reload the page (same kernel, nothing run)
    slider.focus()
    slider.press("Home")
    for _ in range(45):
        slider.press("ArrowRight")
    _wait(page, root, "s.out === '50%'")
    images = root.locator("label", has_text="image").locator("select")
    names = images.locator("option").all_text_contents()
    images.select_option(index=1)
    before = _wait(page, root, f"s.alts[0].startsWith({names[1]!r})")
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
    _reload_same_kernel(page)
    root = page.locator(ROOT).first
    _reveal(page, root)
    after = _wait(page, root, "s.drawn === 2 && s.points === 38")
    for key in ("budget", "out", "captions", "alts", "legend", "rows", "picks"):
        assert after[key] == before[key], key
    s.shot(root, "scripts_explorer_reloaded")
    assert not s.errors, s.errors
    assert s.console_errors() == [], s.console_errors()


def _save(page: Any) -> None:
    # started, not awaited in the page: the wait below, with its limit, waits for the save
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=_budget.ms())


def _reload_same_kernel(page: Any) -> None:
    """Save, then reload the page: the notebook reconnects to the kernel that runs."""
    _save(page)
    page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
    wait_for_kernel(page)


# Scroll the notebook to the cell that makes the explorer: after a reload the cells far
# from the view are not in the page until the notebook is scrolled to them.
_SCROLL_TO = """code => { const nb = window.jupyterapp.shell.currentWidget.content;
  const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes(code));
  if (i >= 0) nb.scrollToItem(i, 'start');
  return !!document.querySelector('.pcr-scripts'); }"""


def _reveal(page: Any, root: Any) -> None:
    page.wait_for_function(
        _SCROLL_TO, arg="ScriptExplorer(images", timeout=_budget.ms(), polling=250
    )
    root.scroll_into_view_if_needed(timeout=_budget.ms())
