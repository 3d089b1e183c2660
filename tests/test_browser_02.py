"""Notebook 02 in a real browser: the TunerDashboard and the BudgetExplorer on their own modules.

JupyterLab in Chromium (``tests/_lab.py``) runs every cell of
``02_tune_and_audit`` (``PCR_QUICK``: a small sample), then checks what a
class would see and do:

* one recommendation: the dashboard, ``tune()`` and the budget name the same
  level, the budget states it once, and each chart's legend sits above its plot;
* the dashboard draws its curve (a point per level), its readout and the
  gallery's crops; the budget its epoch chart, verdict and table;
* switching the metric brings that metric's target back, the statistic's
  toggle moves the marker; the target slider's keys move the target line and
  the marker in the page and the kernel's readout follows to the same level;
* a drag of the bandwidth slider redraws the reading line in the page, and the
  kernel's verdict names the bandwidth as the slider's readout writes it;
* presentation mode; nothing reaches past the notebook's width, no label runs
  into another; axe-core finds no serious or critical violation in either;
* a reload with the same kernel redraws the same state (target, statistic,
  marker, bandwidth); no page error and no console error all along.

Screenshots at 1440x900 and 1280x720 go to ``test-artifacts/``. Every wait waits on
a condition in the page, for as long as the test may take (``tests/_budget.py``); no
assertion is about time.
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
    VIEWPORT,
    Lab,
    jupyterlab,
    new_page,
    open_notebook,
    run_all,
    wait_for_kernel,
)

pytestmark = pytest.mark.browser

NAME = "02_tune_and_audit"
TUNER = ".pcr-tuner"
BUDGET = ".pcr-budget"
_RECOMMENDED = re.compile(r"recommended scan\s+(\d+)")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab02")
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


class Session:
    """One page of the browser with its console and page errors collected."""

    def __init__(self, browser: Any, name: str) -> None:
        self.name = name
        self.page = new_page(browser, viewport=VIEWPORT)
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"[{m.type}] {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def output(self, inside: str) -> Any:
        """The output area holding the element *inside* (a CSS selector)."""
        return self.page.locator(".jp-OutputArea-output", has=self.page.locator(inside)).first

    def shot(self, locator: Any, name: str) -> None:
        """Scroll *locator* to the top of the notebook and take a screenshot."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.evaluate(TWO_FRAMES)
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def shots(self, locator: Any, name: str) -> None:
        """Screenshots at 1440x900 (``NAME_1440x900.png``) and at 1280x720 (``NAME.png``)."""
        for size, file in (({"width": 1440, "height": 900}, f"{name}_1440x900"), (VIEWPORT, name)):
            self.page.set_viewport_size(size)
            self.page.evaluate(TWO_FRAMES)
            fits(locator, f"{file}")
            self.shot(locator, file)

    def cell_of(self, locator: Any) -> int:
        """The index of the notebook cell holding *locator*."""
        index = locator.evaluate(
            "el => window.jupyterapp.shell.currentWidget.content.widgets"
            ".findIndex(c => c.node.contains(el))"
        )
        assert index >= 0, index
        return int(index)

    def reveal(self, cell: int, inside: str) -> Any:
        """Scroll to cell *cell* (the notebook keeps only the cells near the view in the
        page) and return the output holding *inside*, once it is there."""
        self.page.evaluate(
            "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell
        )
        out = self.output(inside)
        out.wait_for(state="attached", timeout=_budget.ms())
        out.scroll_into_view_if_needed(timeout=_budget.ms())
        return out

    def console_errors(self) -> list[str]:
        # a missing favicon or settings file is the server's answer, not the widgets'
        return [
            m
            for m in self.console
            if m.startswith("[error]") and "the server responded with a status of 404" not in m
        ]

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


def fits(out: Any, name: str) -> None:
    """Nothing in the explorer reaches past the output's right edge, no label runs into
    another on its line, no chart title is cut."""
    over = out.evaluate(
        """out => { const right = out.getBoundingClientRect().right + 1;
          const root = out.querySelector('.pcr-explorer');
          const wide = [...root.querySelectorAll('*')].filter(e => e.getClientRects().length
            && !e.closest('.pcr-table-box') && e.getBoundingClientRect().right > right)
            .map(e => e.className.baseVal ?? e.className ?? e.tagName);
          const els = [...root.querySelectorAll('.pcr-label, .pcr-value, .pcr-button, select')]
            .filter(e => e.offsetParent !== null);
          const r = els.map(e => e.getBoundingClientRect()); const bad = [];
          for (let i = 0; i < r.length; i++) for (let j = 0; j < r.length; j++) {
            if (i === j || r[i].left > r[j].left) continue;
            const line = r[i].top < r[j].bottom - 2 && r[j].top < r[i].bottom - 2;
            if (line && r[i].right > r[j].left + 1) bad.push(els[i].textContent + ' | '
              + els[j].textContent); }
          const cut = [...root.querySelectorAll('.pcr-chart-title')]
            .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent);
          for (const svg of root.querySelectorAll('svg.pcr-chart-svg')) {
            const [, , w, h] = svg.getAttribute('viewBox').split(' ').map(Number);
            for (const t of svg.querySelectorAll('text')) { const b = t.getBBox();
              const turned = t.getAttribute('transform'), y = Number(t.getAttribute('y'));
              const out = turned ? y - b.width / 2 < -1 || y + b.width / 2 > h + 1
                : b.x < -1 || b.y < -1 || b.x + b.width > w + 1 || b.y + b.height > h + 1;
              if (out) cut.push(t.textContent); } }
          return [root.scrollWidth > root.clientWidth + 1, wide.slice(0, 5), bad, cut]; }"""
    )
    assert over == [False, [], [], []], f"{name}: cut off or overlapping: {over}"


def no_serious_axe_violations(page: Any, selector: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context=selector).response["violations"]
    serious = [
        (v["id"], v["impact"], [n["html"][:120] for n in v["nodes"]][:3])
        for v in found
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == [], serious


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text())


def wait_text(page: Any, selector: str, want: str) -> None:
    """Wait until the first *selector* shows *want*."""
    page.wait_for_function(
        "([sel, want]) => { const e = document.querySelector(sel);"
        " return !!e && e.innerText.includes(want); }",
        arg=[selector, want],
        timeout=_budget.ms(),
    )


def marked_scan(page: Any) -> int:
    """The level the dashboard's chart marks (its legend names it)."""
    legend = text(page, f"{TUNER} .pcr-legend")
    m = re.search(r"recommended scan (\d+)", legend)
    assert m, legend
    return int(m.group(1))


def readout_scan(page: Any) -> int:
    m = _RECOMMENDED.search(text(page, f"{TUNER} .pcr-tune-readout"))
    assert m
    return int(m.group(1))


def settled(page: Any) -> None:
    """The kernel is idle and the dashboard's readout names the level its chart marks."""
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
    page.wait_for_function(
        f"""() => {{ const r = document.querySelector('{TUNER} .pcr-tune-readout');
          const l = document.querySelector('{TUNER} .pcr-legend');
          const a = r && /recommended scan\\s+(\\d+)/.exec(r.innerText);
          const b = l && /recommended scan (\\d+)/.exec(l.innerText);
          return !!a && !!b && a[1] === b[1]; }}""",
        timeout=_budget.ms(),
    )


def cell_text(page: Any, code: str, want: str) -> str:
    """The text of the first cell whose code holds *code*, once it shows *want*."""
    found = page.wait_for_function(
        """([code, want]) => { const nb = window.jupyterapp.shell.currentWidget.content;
          const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes(code));
          if (i < 0) return null;
          nb.scrollToItem(i, 'start');
          const text = nb.widgets[i].node.innerText;
          return text.includes(want) ? text : null; }""",
        arg=[code, want],
        timeout=_budget.ms(),
        polling=250,
    )
    return str(found.json_value())


def reading_path(page: Any) -> str:
    """The reading line of the budget's chart (its second line)."""
    return str(page.locator(f"{BUDGET} .pcr-chart-svg path").nth(1).get_attribute("d"))


def test_02_tuner_and_budget(lab: Lab, browser: Any) -> None:
    with _session(browser, NAME) as s:
        page = s.page
        open_notebook(page, lab, NAME, "w02m")
        run_all(page)

        # -- one recommendation, said once --------------------------------------------
        tuner = cell_text(page, "TunerDashboard(source, curve=curve", "recommended scan")
        tuned = cell_text(page, "result = tune(curve", "recommended scan")
        budget = cell_text(page, "BudgetExplorer(report=report)", "Level ")
        levels = [int(m.group(1)) for t in (tuner, tuned) if (m := _RECOMMENDED.search(t))]
        verdicts = re.findall(r"Level (\d+) of 10", budget)
        assert len(verdicts) == 1, budget  # its table does not repeat the readout's verdict
        assert levels == [int(verdicts[0])] * 2, (levels, verdicts)
        assert "5th percentile" in tuner and "p5 quality >= 0.95" in budget  # one statistic

        # -- the budget: chart, verdict, table; a drag of the bandwidth -----------------
        b_out = s.output(BUDGET)
        b_cell = s.cell_of(b_out)
        b_out.scroll_into_view_if_needed()
        assert page.locator(f"{BUDGET} .pcr-chart-svg circle.pcr-point").count() == 20
        legend = text(page, f"{BUDGET} .pcr-legend")
        assert "reading at the bandwidth" in legend and "recommended level" in legend
        assert page.locator(f"{BUDGET} table.budget").count() == 1
        bw_out = page.locator(f"{BUDGET} output").first
        assert bw_out.inner_text() == "20 MB/s"
        assert "at 20 MB/s:" in text(page, f"{BUDGET} .pcr-budget-readout")
        s.shots(b_out, f"{NAME}_budget")
        no_serious_axe_violations(page, BUDGET)

        slider = page.get_by_role("slider", name="storage bandwidth")
        before = reading_path(page)
        box = slider.bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.3, y)
        page.mouse.down()
        shown = []
        for f in (0.25, 0.2, 0.15, 0.1):
            page.mouse.move(box["x"] + box["width"] * f, y)
            shown.append(bw_out.inner_text())
        page.mouse.up()
        assert len(set(shown)) == 4, shown  # the readout follows the hand in the page
        assert reading_path(page) != before  # and the reading line, drawn in the page
        wait_text(page, f"{BUDGET} .pcr-budget-readout", f"at {shown[-1]}:")
        slider.focus()
        slider.press("End")  # 10 GB/s
        assert bw_out.inner_text() == "10 GB/s"
        wait_text(page, f"{BUDGET} .pcr-budget-readout", "at 10 GB/s:")
        for _ in range(50):
            slider.press("ArrowLeft")  # 10 ** 3.5 MB/s
        assert bw_out.inner_text() == "3.16 GB/s"
        wait_text(page, f"{BUDGET} .pcr-budget-readout", "at 3.16 GB/s:")
        page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
        present = page.locator(f"{BUDGET} button", has_text="presentation").first
        present.click()
        page.wait_for_selector(f"{BUDGET}.pcr-present", timeout=_budget.ms())
        fits(b_out, f"{NAME}_budget presentation")
        s.shot(b_out, f"{NAME}_budget_presentation")
        present.click()

        # -- the dashboard: curve, readout, gallery -------------------------------------
        cell = page.evaluate(
            "code => window.jupyterapp.shell.currentWidget.content.widgets"
            ".findIndex(c => c.model.sharedModel.getSource().includes(code))",
            "TunerDashboard(source, curve=curve",
        )
        out = s.reveal(cell, TUNER)
        page.wait_for_function(
            f"""() => document.querySelectorAll('{TUNER} circle.pcr-point').length === 10
              && [...document.querySelectorAll('{TUNER} .pcr-crops img')]
                .filter(i => i.complete && i.naturalWidth > 0).length === 12""",
            timeout=_budget.ms(),
        )
        settled(page)
        assert marked_scan(page) == levels[0]
        chart = page.locator(f"{TUNER} .pcr-chart").first
        assert chart.locator(".pcr-chart-title").inner_text().startswith("Quality per scan")
        legend = chart.locator(".pcr-legend").inner_text()
        for name in ("p5 to p95 of images", "5th percentile", "mean", "target"):
            assert name in legend, legend
        s.shots(out, NAME)
        no_serious_axe_violations(page, TUNER)

        # switching the metric brings its own target back; the kernel agrees
        metric = page.get_by_label("metric").first
        target_out = page.locator(f"{TUNER} output").first
        for label, shown_t, want in [
            ("PSNR (dB)", "35.0", "5th percentile PSNR ≥ 35.0 dB"),
            ("MS-SSIM", "0.95", "5th percentile MS-SSIM ≥ 0.95"),
            ("SSIM", "0.9", "5th percentile SSIM ≥ 0.9"),
            ("MS-SSIM", "0.95", "5th percentile MS-SSIM ≥ 0.95"),
        ]:
            metric.select_option(label=label)
            wait_text(page, f"{TUNER} .pcr-tune-readout", want)
            settled(page)
            assert target_out.inner_text() == shown_t, label
            # one figure, one way: the slider writes the target as the readout does
            assert f"≥ {shown_t}" in text(page, f"{TUNER} .pcr-tune-readout"), label
            assert (
                page.locator(f"{TUNER} input[type=range]").get_attribute("aria-valuetext")
                == shown_t
            )

        page.get_by_role("button", name="mean of images").first.click()
        wait_text(page, f"{TUNER} .pcr-tune-readout", "mean MS-SSIM")
        settled(page)
        assert "on the mean" in text(page, f"{TUNER} .pcr-legend")

        # the target's keys: the line and the marker move in the page, the readout follows
        target = page.get_by_role("slider", name="target")
        rule = f"{TUNER} line.pcr-rule"
        y0 = page.locator(rule).first.get_attribute("y1")
        target.focus()
        for _ in range(30):
            target.press("ArrowRight")
        assert target_out.inner_text() == "0.98"
        assert page.locator(rule).first.get_attribute("y1") != y0
        wait_text(page, f"{TUNER} .pcr-tune-readout", "≥ 0.98")
        settled(page)
        scan = marked_scan(page)
        s.shot(out, f"{NAME}_target_0.98")

        # the dB axis, drawn in the page
        page.get_by_role("button", name="in dB").first.click()
        page.wait_for_function(
            f"() => [...document.querySelectorAll('{TUNER} .pcr-axis-label')]"
            ".some(t => t.textContent.includes('in dB'))",
            timeout=_budget.ms(),
        )

        # presentation mode
        present = page.locator(f"{TUNER} button", has_text="presentation").first
        present.click()
        page.wait_for_selector(f"{TUNER}.pcr-present", timeout=_budget.ms())
        fits(out, f"{NAME} presentation")
        s.shots(out, f"{NAME}_presentation")
        present.click()
        page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())

        # -- a reload with the same kernel: the state of now, drawn again ----------------
        page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
        page.wait_for_function(
            "() => !document.querySelector('.jp-mod-dirty')", timeout=_budget.ms()
        )
        page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
        wait_for_kernel(page)
        out = s.reveal(cell, TUNER)
        page.wait_for_function(  # in dB, the full level (identical images) is off the axis
            f"() => document.querySelectorAll('{TUNER} circle.pcr-point').length === 9"
            f" && document.querySelector('{TUNER} circle.pcr-marker')",
            timeout=_budget.ms(),
        )
        settled(page)
        assert page.locator(f"{TUNER} output").first.inner_text() == "0.98"
        assert "mean MS-SSIM" in text(page, f"{TUNER} .pcr-tune-readout")
        assert marked_scan(page) == readout_scan(page) == scan
        assert page.get_by_role("button", name="in dB").first.get_attribute("aria-pressed") == (
            "true"
        )
        s.shot(out, f"{NAME}_reloaded")
        s.reveal(b_cell, BUDGET)
        wait_text(page, f"{BUDGET} .pcr-budget-readout", "at 3.16 GB/s:")
        assert page.locator(f"{BUDGET} output").first.inner_text() == "3.16 GB/s"

        assert not s.errors, s.errors
        assert s.console_errors() == [], s.console_errors()
