"""Notebook 05 in a real browser: the TrainingExplorer's own module in JupyterLab with Chromium.

Runs notebook 05 with ``PCR_QUICK`` (a generated stand-in, tiny runs) and checks what a
class would see and do:

* both explorers (the shapes task and the sharp-or-soft task) open with the notebook's
  runs drawn, nothing pressed: every level's line in each of the three plots, one legend
  above the plots (it covers no line), titles whole, the table's column heads apart,
  the storage speed written one way (the picker's "kB/s" in the table's caption too);
  the first explorer's similarity bars and the tuners' two answers;
* presentation mode: larger text, nothing cut off;
* the epochs slider follows a drag and the keys in the page; ticking levels and pressing
  Train trains them: the plots redraw with the new lines, Train is enabled again;
* a reload of the page (same kernel, nothing run) draws the same state: levels, epochs,
  lines, table;
* no console error, no page error, and axe-core finds no serious or critical violation
  in either explorer.

Screenshots at 1440x900 and 1280x720 go to ``test-artifacts/``. Every wait waits on a
condition in the page, for as long as the test may take (``tests/_budget.py``); no
assertion is about time.
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
    VIEWPORT,
    Lab,
    drag,
    jupyterlab,
    new_page,
    open_notebook,
    run_all,
    wait_for_kernel,
)

pytestmark = pytest.mark.browser

_EX = ".pcr-training"
SIZES = (({"width": 1440, "height": 900}, "_1440x900"), (VIEWPORT, ""))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab05")
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
    """One page of the browser with its console messages and page errors collected."""

    def __init__(self, browser: Any, name: str) -> None:
        self.name = name
        self.page = new_page(browser, viewport=VIEWPORT)
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"[{m.type}] {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def console_errors(self) -> list[str]:
        return [m for m in self.console if m.startswith("[error]")]

    def shot(self, locator: Any, name: str) -> None:
        """Scroll *locator* to the top of the notebook and take a screenshot."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.evaluate(TWO_FRAMES)
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))

    def shots(self, locator: Any, name: str) -> None:
        """Screenshots at 1440x900 (``NAME_1440x900.png``) and at 1280x720 (``NAME.png``)."""
        for size, suffix in SIZES:
            self.page.set_viewport_size(size)
            self.page.evaluate(TWO_FRAMES)
            self.shot(locator, f"{name}{suffix}")

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


def _save(page: Any) -> None:
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=_budget.ms())


def _reload_same_kernel(page: Any) -> None:
    """Save, then reload the page: the notebook reconnects to the kernel that runs."""
    _save(page)
    page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
    wait_for_kernel(page)


def _reveal(page: Any, cell: int, locator: Any) -> None:
    """Scroll to cell *cell* (the notebook keeps only the cells near the view), then *locator*."""
    page.evaluate(
        "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell
    )
    locator.scroll_into_view_if_needed(timeout=_budget.ms())


def _cell_with(page: Any, code: str, name: str) -> tuple[int, Any, Any]:
    """The index of the cell whose code holds *code*, locators of its explorer and its output.

    The notebook keeps only the cells near the view in the page: the cell is scrolled
    to and its node marked *name*, so that its explorer is found by its cell, not by
    its place among the explorers the page holds at the time.
    """
    index = page.evaluate(
        "t => window.jupyterapp.shell.currentWidget.content.widgets"
        ".findIndex(c => c.model.sharedModel.getSource().includes(t))",
        code,
    )
    assert index >= 0, code
    page.evaluate(
        "([i, name]) => { const nb = window.jupyterapp.shell.currentWidget.content;"
        " nb.scrollToItem(i, 'start'); nb.widgets[i].node.dataset.pcrCell = name; }",
        [index, name],
    )
    cell = f"[data-pcr-cell={name}]"
    out = page.locator(f"{cell} .jp-OutputArea-output", has=page.locator(_EX)).first
    return int(index), page.locator(f"{cell} {_EX}").first, out


# What an explorer shows: its legend, the points of each plot, the controls' values, the
# tables and the bars; and where its legend, plots and titles are.
_SHOWN = """root => {
  const text = e => e ? e.textContent.trim() : null;
  const svgs = [...root.querySelectorAll('.pcr-charts .pcr-chart-svg')];
  const legend = root.querySelector('.pcr-run-legend').getBoundingClientRect();
  const tops = svgs.map(s => s.getBoundingClientRect().top);
  const storage = root.querySelectorAll('select')[1];
  const heads = [...root.querySelectorAll('.pcr-result thead th')]
    .map(e => e.getBoundingClientRect());
  const apart = heads.every((r, i) => i === 0 || r.left >= heads[i - 1].right - 0.5);
  const cut = [...root.querySelectorAll('.pcr-chart-title')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
    .map(text);
  return {
    legend: [...root.querySelectorAll('.pcr-run-legend > span')].map(text),
    points: svgs.map(s => s.querySelectorAll('circle.pcr-point').length),
    legendAbove: svgs.length > 0 && tops.every(t => legend.bottom <= t + 0.5),
    titles: [...root.querySelectorAll('.pcr-charts .pcr-chart-title')].map(text),
    cut,
    scans: [...root.querySelectorAll('.pcr-boxes input:checked')].map(b => Number(b.value)),
    epochs: root.querySelector('input[type=range]').value,
    storage: storage.options[storage.selectedIndex].textContent,
    caption: text(root.querySelector('.pcr-result caption')),
    columns: [...root.querySelectorAll('.pcr-result thead th')].map(text),
    rows: [...root.querySelectorAll('.pcr-result tbody th')].map(text),
    headsApart: apart,
    bars: root.querySelectorAll('.pcr-bars rect.pcr-bar').length,
    tuners: !root.querySelector('.pcr-tuners').hidden,
    comparison: text(root.querySelector('.pcr-tuners .pcr-readout')),
    progress: text(root.querySelector('.pcr-readout')),
    train: [text(root.querySelector('.pcr-primary')), root.querySelector('.pcr-primary').disabled],
    present: root.classList.contains('pcr-present'),
  };
}"""

# Nothing reaches past the output's right edge; no label, value or button runs into another.
_FITS = """out => { const right = out.getBoundingClientRect().right + 1;
  const bad = [];
  for (const root of out.querySelectorAll('.pcr-explorer')) {
    if (root.scrollWidth > root.clientWidth + 1) bad.push('explorer scrolls');
    for (const e of root.querySelectorAll('*'))
      if (e.offsetParent !== null && e.getBoundingClientRect().right > right
          && !e.closest('.pcr-table-box')) bad.push(e.className || e.tagName);
    const els = [...root.querySelectorAll('.pcr-label, .pcr-value, .pcr-button, .pcr-check')]
      .filter(e => e.offsetParent !== null);
    const r = els.map(e => e.getBoundingClientRect());
    for (let i = 0; i < r.length; i++) for (let j = 0; j < r.length; j++) {
      if (i === j || r[i].left > r[j].left) continue;
      const line = r[i].top < r[j].bottom - 2 && r[j].top < r[i].bottom - 2;
      if (line && r[i].right > r[j].left + 1) bad.push(els[i].textContent + ' | '
        + els[j].textContent);
    }
  }
  return bad.slice(0, 8); }"""

LEVELS = ["scan 1", "scan 2", "scan 5", "scan 10"]
FIRST = "tune_batches=2 if QUICK"  # code of the cell showing the first explorer
SHARP = "sharp_explorer.show_result"  # and of the sharp-or-soft task's


def _shown(explorer: Any) -> dict[str, Any]:
    return dict(explorer.evaluate(_SHOWN))


def _drawn(page: Any, explorer: Any, lines: int, epochs: int) -> None:
    """Wait until *explorer* (a locator) draws *lines* runs of *epochs* points in each plot."""
    page.wait_for_function(
        """([root, n]) => { const svgs = [...root.querySelectorAll('.pcr-charts .pcr-chart-svg')];
          return svgs.length === 3
            && svgs.every(s => s.querySelectorAll('circle.pcr-point').length === n); }""",
        arg=[explorer.element_handle(), lines * epochs],
        timeout=_budget.ms(),
    )


def _check_drawn(got: dict[str, Any], legend: list[str], epochs: int, name: str) -> None:
    assert got["legend"] == legend, (name, got)
    assert got["points"] == [len(legend) * epochs] * 3, (name, got)
    assert got["legendAbove"], f"{name}: the legend covers a plot"
    assert got["cut"] == [], f"{name}: titles cut: {got['cut']}"
    assert got["titles"][0] == "Validation accuracy per epoch", got["titles"]
    assert got["rows"] == legend and got["headsApart"], (name, got["columns"])
    assert got["columns"][0] == "run" and "speed-up" in got["columns"], got["columns"]
    # one figure one way: the caption gives the storage speed as the picker does
    assert f"storage {got['storage']};" in got["caption"], (got["storage"], got["caption"])


def _axe(page: Any) -> list[str]:
    """axe-core's serious and critical violations in the explorers the page holds now."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context=".pcr-explorer").response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {[n['html'][:120] for n in v['nodes']]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.timeout(900)  # its notebook trains (PCR_QUICK: tiny runs), slowly on a busy machine
def test_05_training(lab: Lab, browser: Any) -> None:
    with _session(browser, "05_train_at_levels") as s:
        page = s.page
        open_notebook(page, lab, s.name, "w05")
        run_all(page)  # PCR_QUICK: a generated stand-in, tiny runs (2 epochs)
        cell, explorer, out = _cell_with(page, FIRST, "shapes")
        _reveal(page, cell, explorer)
        _drawn(page, explorer, 4, 2)
        page.wait_for_function(
            "root => root.querySelector('.pcr-bars rect.pcr-bar')",
            arg=explorer.element_handle(),
            timeout=_budget.ms(),
        )
        got = _shown(explorer)
        _check_drawn(got, LEVELS, 2, "shapes")
        violations = _axe(page)
        assert violations == [], violations
        assert got["scans"] == [1, 2, 5, 10] and got["epochs"] == "2"
        assert got["storage"].endswith(("kB/s", "MB/s")), got["storage"]
        assert got["tuners"] and got["bars"] >= 4, got
        assert "MS-SSIM tuner" in got["comparison"], got["comparison"]
        assert "scan 1, scan 2, scan 5, scan 10: 2 epochs each, done" in got["progress"]
        assert got["train"] == ["Train", False]
        assert out.evaluate(_FITS) == [], f"cut off or overlapping at {VIEWPORT}"
        s.shots(out, s.name)

        # the sharp-or-soft task: its own explorer, every level's line, no tuners yet
        sharp_cell, sharp, sharp_out = _cell_with(page, SHARP, "sharp")
        _reveal(page, sharp_cell, sharp)
        _drawn(page, sharp, 4, 2)
        got_sharp = _shown(sharp)
        _check_drawn(got_sharp, LEVELS, 2, "sharp or soft")
        assert not got_sharp["tuners"]
        assert sharp_out.evaluate(_FITS) == []
        s.shots(sharp_out, "05_train_at_levels_sharp")

        violations = _axe(page)
        assert violations == [], violations

        # presentation mode: larger text, nothing cut off or overlapping
        _reveal(page, cell, explorer)
        present = explorer.get_by_role("button", name="presentation")
        present.click()
        page.wait_for_selector(f"{_EX}.pcr-present", timeout=_budget.ms())
        assert out.evaluate(_FITS) == []
        assert _shown(explorer)["cut"] == []
        s.shots(out, "05_train_at_levels_presentation")
        present.click()
        page.wait_for_function(
            "root => !root.classList.contains('pcr-present')",
            arg=explorer.element_handle(),
            timeout=_budget.ms(),
        )

        # the epochs slider: its value shown follows a drag in the page, at every move
        slider = explorer.locator("input[type=range]")
        moves = [0.1 + 0.8 * i / 9 for i in range(10)]
        timing = drag(
            page, slider, slider, moves,
            "sl => sl.parentElement.querySelector('output').textContent === sl.value",
            slider.element_handle(),
            probe="sl => [sl.value, sl.parentElement.querySelector('output').textContent]",
        )  # fmt: skip
        assert all(value == shown for value, shown in timing.probes), timing.probes
        assert len({value for value, _ in timing.probes}) >= 5, timing.probes
        # keys: Home to one epoch (the explorer's keys, not the notebook's)
        slider.focus()
        slider.press("Home")
        slider.press("ArrowRight")
        slider.press("ArrowLeft")
        page.wait_for_function(
            "sl => sl.value === '1' && sl.getAttribute('aria-valuetext') === '1 epochs per level'",
            arg=slider.element_handle(),
            timeout=_budget.ms(),
        )

        # tick two levels only (1 and 3), press Train: the plots redraw with their lines
        for k in (2, 5, 10):
            explorer.get_by_role("checkbox", name=f"scan level {k}", exact=True).uncheck()
        explorer.get_by_role("checkbox", name="scan level 3", exact=True).check()
        page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
        explorer.get_by_role("button", name="Train", exact=True).click()
        page.wait_for_function(
            "root => root.querySelector('.pcr-readout').textContent"
            ".includes('scan 1, scan 3: 1 epoch each, done')"
            " && !root.querySelector('.pcr-primary').disabled"
            " && !root.querySelector('.pcr-status').textContent",
            arg=explorer.element_handle(),
            timeout=_budget.ms(),
        )
        _drawn(page, explorer, 2, 1)
        trained = _shown(explorer)
        _check_drawn(trained, ["scan 1", "scan 3"], 1, "after Train")
        assert trained["scans"] == [1, 3] and trained["tuners"], trained
        assert not s.console_errors(), s.console_errors()
        s.shots(out, "05_train_at_levels_trained")

        # reload with the same kernel: the explorers draw the state the kernel holds
        _reload_same_kernel(page)
        cell, explorer, out = _cell_with(page, FIRST, "shapes")
        _reveal(page, cell, explorer)
        _drawn(page, explorer, 2, 1)
        again = _shown(explorer)
        for key in ("legend", "points", "scans", "epochs", "storage", "caption", "rows", "bars"):
            assert again[key] == trained[key], (key, again[key], trained[key])
        s.shot(out, "05_train_at_levels_reloaded")
        assert not s.errors, s.errors
        assert not s.console_errors(), s.console_errors()
