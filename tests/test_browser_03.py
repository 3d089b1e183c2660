"""Notebook 03 in a real browser: JupyterLab in Chromium drives SwapExplorer's own module.

Starts JupyterLab on a free loopback port (see ``tests/_lab.py``) and Debian's
``chromium`` through Playwright, runs every cell of ``03_swap_simulation``
and does what a class would: the explorer draws its three charts (ratios,
bars per policy, the timeline) with one tip per bar; a continuous drag of the
sparsity moves the line and the codecs' markers in the page at every move,
the timeline first says it waits for the hand, then is redrawn for the value
the slider shows; the arrow keys step the slider; a ticked codec and another
device reach the kernel and come back drawn; presentation mode enlarges the
text with nothing cut off; a reload of the page (same kernel, nothing run)
redraws the same state. No page error and no console error, and axe-core
finds nothing serious or critical in the explorer. Screenshots at 1440x900
and 1280x720 go to ``test-artifacts/``. Every wait waits on a condition in
the page, for as long as the test may take (``tests/_budget.py``); nothing
asserts a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import _budget
import numpy as np
import pytest
from _lab import (
    ARTIFACTS,
    TWO_FRAMES,
    Lab,
    jupyterlab,
    new_page,
    open_notebook,
    page_changes,
    run_all,
    wait_for_kernel,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NAME = "03_swap_simulation"
SIZES = ({"width": 1440, "height": 900}, {"width": 1280, "height": 720})
SERIOUS = ("serious", "critical")
WAITING = "the timeline is redrawn when the sparsity stops moving"
_SWAP = ".pcr-swap"
# The explorer drawn: its three charts, the timeline's events, the readouts.
_DRAWN = """() => { const r = document.querySelector('.pcr-swap');
  return !!r && r.querySelectorAll('svg.pcr-chart-svg').length === 3
    && r.querySelectorAll('rect.pcr-event').length > 10
    && r.querySelectorAll('table.pcr-readout tr').length >= 5; }"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab03")
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
    """A page of the browser with its console errors and page errors collected."""

    def __init__(self, browser: Any) -> None:
        self.page = new_page(browser, viewport=SIZES[1])
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"[{m.type}] {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def console_errors(self) -> list[str]:
        return [m for m in self.console if m.startswith("[error]")]

    def shots(self, locator: Any, name: str) -> None:
        """Screenshots at 1440x900 and 1280x720 (``NAME_WxH.png``), *locator* at the top."""
        ARTIFACTS.mkdir(exist_ok=True)
        for size in SIZES:
            self.page.set_viewport_size(size)
            self.page.evaluate(TWO_FRAMES)
            locator.evaluate("el => el.scrollIntoView({block: 'start'})")
            self.page.evaluate(TWO_FRAMES)
            path = ARTIFACTS / f"{name}_{size['width']}x{size['height']}.png"
            self.page.screenshot(path=str(path))
            fits(locator, f"{name} at {size}")

    def close(self, failed: bool) -> None:
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            self.page.screenshot(path=str(ARTIFACTS / f"{NAME}_failure.png"), full_page=True)
        print(f"--- browser console ({NAME}) ---\n" + "\n".join(self.console[-200:]))
        self.page.close()


def fits(out: Any, when: str) -> None:
    """Nothing in the explorer reaches past the output's right edge; no label runs into another,
    no chart title or label is cut."""
    over = out.evaluate(
        """out => { const right = out.getBoundingClientRect().right + 1;
          const root = out.querySelector('.pcr-explorer');
          const wide = [...root.querySelectorAll('*')].filter(e => e.getClientRects().length
            && e.getBoundingClientRect().right > right).map(e => e.className.baseVal ?? e.className
            ?? e.tagName);
          const els = [...root.querySelectorAll('.pcr-label, .pcr-value, .pcr-button, '
            + '.pcr-row > label')].filter(e => e.offsetParent !== null);
          const r = els.map(e => e.getBoundingClientRect()); const bad = [];
          for (let i = 0; i < r.length; i++) for (let j = 0; j < r.length; j++) {
            if (i === j || r[i].left > r[j].left || els[i].contains(els[j])
                || els[j].contains(els[i])) continue;
            const line = r[i].top < r[j].bottom - 2 && r[j].top < r[i].bottom - 2;
            if (line && r[i].right > r[j].left + 1) bad.push(els[i].textContent + ' | '
              + els[j].textContent); }
          const cut = [...root.querySelectorAll('.pcr-chart-title, .pcr-legend span')]
            .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent);
          // every text of the charts inside its own drawing
          const outside = [...root.querySelectorAll('svg.pcr-chart-svg')].flatMap(svg => {
            const b = svg.getBoundingClientRect();
            return [...svg.querySelectorAll('text')].filter(t => { const q =
              t.getBoundingClientRect(); return q.left < b.left - 1 || q.right > b.right + 1; })
              .map(t => t.textContent); });
          return [root.scrollWidth > root.clientWidth + 1, wide.slice(0, 5), bad, cut,
                  outside]; }"""
    )
    assert over == [False, [], [], [], []], f"{when}: cut off or overlapping: {over}"


def no_serious_violations(page: Any, when: str) -> None:
    """axe-core (as axe-playwright-python bundles it) on the explorer: nothing serious."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context=".pcr-explorer").response["violations"]
    for v in found:
        targets = [n["target"] for n in v["nodes"]][:4]
        print(f"axe {when}: {v['impact']} {v['id']}: {v['help']} {targets}")
    assert [v["id"] for v in found if v["impact"] in SERIOUS] == [], when


def readout(page: Any, label: str) -> str:
    row = page.locator(f"{_SWAP} table.pcr-readout tr", has=page.locator(f"th:text-is('{label}')"))
    return str(row.locator("td").inner_text())


def wait_sparsity(page: Any, pct: int) -> None:
    """The kernel has answered for *pct*%: readouts, markers and caption say so."""
    expect(page.locator(f"{_SWAP} table.pcr-readout")).to_contain_text(
        f"{pct}% for every ReLU and pooling output", timeout=_budget.ms()
    )
    expect(page.locator(f"{_SWAP} circle.pcr-marker title").first).to_contain_text(
        f" at {pct}%: ", timeout=_budget.ms()
    )


def test_03_swap(lab: Lab, browser: Any) -> None:
    s = Page(browser)
    failed = True
    try:
        _explore(lab, s)
        failed = False
    finally:
        s.close(failed)


def _explore(lab: Lab, s: Page) -> None:
    page = s.page
    open_notebook(page, lab, NAME, "w03m")
    run_all(page)
    page.wait_for_function(_DRAWN, timeout=_budget.ms())
    out = page.locator(".jp-OutputArea-output", has=page.locator(_SWAP)).first
    cell = int(
        out.evaluate(
            "el => window.jupyterapp.shell.currentWidget.content.widgets"
            ".findIndex(c => c.node.contains(el))"
        )
    )
    slider = page.get_by_role("slider", name="sparsity")
    expect(slider).to_have_attribute("aria-valuetext", "65%")  # the notebook's SPARSITY
    wait_sparsity(page, 65)
    s.shots(out, NAME)
    no_serious_violations(page, "at first")
    # one tip per bar, naming the policy, its swap and stall in ms
    bars = page.locator(f"{_SWAP} rect.pcr-bar")
    assert bars.count() >= 2 * 4
    for i in range(bars.count()):
        tips = bars.nth(i).locator("title").all_text_contents()
        assert len(tips) == 1 and " ms, stall " in tips[0], tips
    legend = page.locator(f"{_SWAP} .pcr-legend").first.inner_text()
    assert "zvc" in legend and "measured on 1 MiB" in legend

    # a continuous drag of the sparsity: the line follows the hand in the page at every move,
    # the timeline waits (and says so), then is redrawn for the value the slider shows
    caption = page.locator(f"{_SWAP} .pcr-timeline .pcr-hint").first
    before = caption.inner_text()
    assert before.startswith("cswap at sparsity 65% for every") and "ms of stall" in before
    page_changes.start(page, out.element_handle(), caption.element_handle())
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 0.65 * box["width"], y)
    page.mouse.down()
    lag = []
    for f in np.linspace(0.66, 0.85, 12):
        page.mouse.move(box["x"] + f * box["width"], y)
        lag.append(
            page.evaluate(
                """() => { const r = document.querySelector('.pcr-swap')
                  , sl = r.querySelector('input[type=range]'), rule = r.querySelector('.pcr-rule');
                  const dot = r.querySelector('circle.pcr-marker title').textContent;
                  return [sl.getAttribute('aria-valuetext'), dot.split(' at ')[1].split(':')[0],
                          Number(rule.getAttribute('x1'))]; }"""
            )
        )
    page.mouse.up()
    # at every move the markers sit at the slider's value, drawn in the page
    assert [shown for shown, at, _ in lag if shown != at] == [], lag
    assert len({x for *_, x in lag}) >= 6, lag  # and the line moved with the hand
    final = int(slider.get_attribute("aria-valuetext").rstrip("%"))
    assert final >= 75, final
    want = f"at sparsity {final}% for every"
    expect(caption).to_contain_text(want, timeout=_budget.ms())
    texts = page_changes.stop(page)["texts"]
    assert texts[0] == WAITING and want in texts[-1], texts
    wait_sparsity(page, final)
    s.shots(out, f"{NAME}_dragged")

    # the keys step the slider by 1%
    slider.focus()
    slider.press("ArrowRight")
    expect(slider).to_have_attribute("aria-valuetext", f"{final + 1}%")
    wait_sparsity(page, final + 1)
    final += 1

    # a codec ticked and another device: the kernel answers, the page draws it
    page.get_by_role("checkbox", name="zstd").check()
    expect(page.locator(f"{_SWAP} .pcr-legend").first).to_contain_text("zstd")
    page.get_by_role("combobox", name="device").select_option("a100-pcie4")
    expect(page.locator(f"{_SWAP} table.pcr-readout")).to_contain_text("a100-pcie4")
    assert readout(page, "device") == "a100-pcie4"
    expect(page.locator(f"{_SWAP} svg.pcr-chart-svg").nth(1)).to_contain_text("a100-pcie4")
    expect(caption).to_contain_text(f"at sparsity {final}% for every")  # its timeline too

    # presentation mode: larger text, still nothing cut off
    present = page.get_by_role("button", name="presentation", exact=True)
    present.click()
    expect(present).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".pcr-swap.pcr-explorer")).to_have_css("font-size", "18px")
    s.shots(out, f"{NAME}_presentation")
    no_serious_violations(page, "in presentation mode")
    present.click()
    expect(page.locator(".pcr-swap.pcr-explorer")).to_have_css("font-size", "13px")

    # reload with the same kernel (nothing run): the same state is drawn again
    shown = readout(page, "least stall")
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=_budget.ms())
    page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
    wait_for_kernel(page)
    page.evaluate(
        "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell
    )
    page.wait_for_function(_DRAWN, timeout=_budget.ms())
    slider = page.get_by_role("slider", name="sparsity")
    expect(slider).to_have_attribute("aria-valuetext", f"{final}%")
    wait_sparsity(page, final)
    assert readout(page, "device") == "a100-pcie4" and readout(page, "least stall") == shown
    expect(page.get_by_role("checkbox", name="zstd")).to_be_checked()
    expect(caption.first).to_contain_text(f"at sparsity {final}% for every")
    s.shots(
        page.locator(".jp-OutputArea-output", has=page.locator(_SWAP)).first, f"{NAME}_reloaded"
    )
    assert not s.errors, s.errors
    assert s.console_errors() == [], s.console_errors()
