"""ScanExplorer (anywidget) in three real hosts: JupyterLab 4, Notebook 7 and marimo, in Chromium.

Each host's server runs on loopback (``tests/_lab.py``, ``tests/_hosts.py``) and
shows ``ScanExplorer(<the bundled sample>, dataset_sample=2, level=2)``; at
1440x900 and at 1280x720, as a student would use it:

* the picture draws (an ``img`` with a source and pixels) and so does the chart
  (one point per level);
* keyboard: the "scan level" slider focused, ArrowRight shows the next level (the
  caption says so, the chart's marker moves) and the kernel gets it (Jupyter: the
  kernel's ``ex.level``, asked without running a cell; marimo: a cell that reads the
  widget's level runs again);
* a click on a point of the chart shows that level; "side by side" shows two
  pictures;
* the page reloaded (Jupyter: same kernel, nothing run): the explorer draws again
  at the level and in the view it had;
* no console error and no page error but those the host shows on a page without
  the explorer; axe-core on the explorer finds no "serious" or "critical" violation
  (the others are printed);
* marimo: the explorer shown as a cell's last expression and through
  ``mo.ui.anywidget`` both draw and both follow the keyboard.

Every other explorer (ScriptExplorer, ScanPanel, TunerDashboard, SwapExplorer and,
with torch, BudgetExplorer and TrainingExplorer, each built as cheaply as the
kernel tests build it) is shown once in Notebook 7 and once in marimo, each in its
own cell of one notebook or app: it draws (an SVG chart or a loaded picture), its
first range slider takes ArrowRight and the kernel's trait follows (Notebook 7: asked
without running a cell; marimo: a cell writing the trait runs again), no error but
the host's own, and axe-core finds nothing serious or critical in it; that at
1280x720, then the page is reloaded at 1440x900 and every explorer draws again
with each first slider where ArrowRight left it (Notebook 7: saved, same kernel;
marimo: ``marimo edit`` keeps the session). JupyterLab
shows them in their own tests (``test_browser_02``, ``_03``, ``_05``, ``_scripts``,
``_scan_panel``).

Screenshots go to ``test-artifacts/hosts_<host>_<width>x<height>*.png``. Every
wait waits on a condition in the page, for as long as the test may take
(``tests/_budget.py``); nothing asserts a time.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _budget
import pytest
from _hosts import (
    Marimo,
    Notebook7,
    axe_violations,
    kernel_value,
    marimo,
    notebook7,
    write_notebook,
)
from _lab import ARTIFACTS, KERNEL_IDLE, TWO_FRAMES, Lab, jupyterlab, new_page, run_all
from playwright.sync_api import expect

import pcr_explore as pcr
from pcr_explore import open_dataset
from pcr_explore.train import SplitDatasets

pytestmark = pytest.mark.browser

SIZES = ({"width": 1440, "height": 900}, {"width": 1280, "height": 720})
SIZE_IDS = [f"{s['width']}x{s['height']}" for s in SIZES]
EXPLORER = ".pcr-explorer.pcr-scan"
SERIOUS = ("serious", "critical")

# An explorer has drawn: its picture has a source and pixels, its chart *points* points.
DRAWN = """([root, points]) => {
  const img = root.querySelector('.pcr-stage img:not(.pcr-over)');
  return !!img && !!img.getAttribute('src') && img.complete && img.naturalWidth > 0
    && root.querySelectorAll('svg.pcr-chart-svg circle.pcr-point').length === points; }"""

# The pictures shown side by side, loaded: their count.
PICTURES_SHOWN = """root => [...root.querySelectorAll('.pcr-pair img')]
  .filter(i => i.offsetParent !== null && i.getAttribute('src') && i.complete
    && i.naturalWidth > 0).length"""

MARKER = """root => { const m = root.querySelector('circle.pcr-marker');
  return m ? [m.getAttribute('cx'), m.getAttribute('cy')] : null; }"""

# The key events that reach the element, each noting whether its default was prevented by then.
KEYS_SEEN = """el => { el.__keysSeen = [];
  for (const type of ['keydown', 'keyup']) el.addEventListener(type, e => el.__keysSeen.push(
    `${type} ${e.key}${e.defaultPrevented ? ' prevented' : ''}`)); }"""

CAPTION_SAYS = """([root, text]) => {
  const c = root.querySelector('.pcr-pics > .pcr-caption');
  return !!c && c.textContent.startsWith(text); }"""


@pytest.fixture(scope="module", autouse=True)
def _axe() -> None:
    """axe-core comes with the test extra (axe-playwright-python); skip where it is missing."""
    pytest.importorskip("axe_playwright_python", reason="pip install pcr-explore[test]")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample dataset, built into a folder of the test's own."""
    return pcr.build_sample(tmp_path_factory.mktemp("sample"), progress=False, workers=1)


@pytest.fixture(scope="module")
def num_scans(sample: Path) -> int:
    return int(open_dataset(sample).num_scans)


def explorer_code(sample: Path) -> str:
    return f"ScanExplorer({str(sample)!r}, dataset_sample=2, level=2, workers=1)"


def kernel_env(tmp: Path) -> dict[str, str]:
    """The kernels' results cache is the test's own, not the user's."""
    return {"PCR_RESULTS_CACHE": str(tmp / "results")}


class Session:
    """One page of the browser, its console errors and page errors collected."""

    def __init__(self, browser: Any, name: str, viewport: dict[str, int]) -> None:
        self.name = f"hosts_{name}_{viewport['width']}x{viewport['height']}"
        self.page = new_page(browser, viewport=viewport)
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))

    def _console(self, message: Any) -> None:
        self.console.append(f"[{message.type}] {message.text}")
        if message.type == "error":
            self.errors.append(f"console error: {message.text}")

    def shot(self, locator: Any, suffix: str = "") -> None:
        """Scroll *locator* into view and take a screenshot of the window."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.evaluate(TWO_FRAMES)
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{self.name}{suffix}.png"))

    def close(self, failed: bool) -> None:
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            self.page.screenshot(path=str(ARTIFACTS / f"{self.name}_failure.png"), full_page=True)
        print(f"--- browser console ({self.name}) ---\n" + "\n".join(self.console[-100:]))
        self.page.close()


@contextmanager
def session(browser: Any, name: str, viewport: dict[str, int]) -> Iterator[Session]:
    s = Session(browser, name, viewport)
    failed = True
    try:
        yield s
        failed = False
    finally:
        s.close(failed)


# -- what every host must do ---------------------------------------------------------


def wait_drawn(page: Any, root: Any, points: int) -> None:
    """Wait until the explorer *root* shows its picture and a chart of *points* points."""
    page.wait_for_function(DRAWN, arg=[root.element_handle(), points], timeout=_budget.ms())


def wait_caption(page: Any, root: Any, text: str) -> None:
    """Wait until the caption over the picture starts with *text* ("scan 3 of 10")."""
    page.wait_for_function(CAPTION_SAYS, arg=[root.element_handle(), text], timeout=_budget.ms())


def check_axe(page: Any, root: Any, name: str) -> None:
    """No serious or critical axe-core violation inside the explorer; the others are printed."""
    found = axe_violations(page, root.element_handle())
    for v in found:
        print(f"axe ({name}): {v['impact']} {v['id']}: {v['help']} {v['nodes'][:3]}")
    serious = [v for v in found if v["impact"] in SERIOUS]
    assert serious == [], f"{name}: axe-core: {json.dumps(serious, indent=1)}"


def step_with_keyboard(page: Any, root: Any, num_scans: int) -> None:
    """Focus the level slider at level 2, press ArrowRight: level 3 shows, the marker moves."""
    wait_caption(page, root, f"scan 2 of {num_scans}")
    before = root.evaluate(MARKER)
    assert before is not None, "no marker on the chart"
    slider = root.get_by_role("slider", name="scan level")
    slider.evaluate(KEYS_SEEN)
    slider.focus()
    assert slider.evaluate("el => el === el.getRootNode().activeElement")
    page.keyboard.press("ArrowRight")  # returns once the key's events were dispatched
    seen = slider.evaluate("el => el.__keysSeen")
    # the host passed the key on to the slider and left its default (stepping) alone
    assert seen == ["keydown ArrowRight", "keyup ArrowRight"], f"the slider saw {seen}"
    wait_caption(page, root, f"scan 3 of {num_scans}")
    after = root.evaluate(MARKER)
    assert after is not None and after != before, (before, after)
    assert slider.get_attribute("aria-valuetext") == f"scan 3 of {num_scans}"


def click_point_and_side(page: Any, root: Any, num_scans: int, level: int) -> None:
    """Click the chart's point of *level*: it shows; then "side by side": two pictures."""
    before = root.evaluate(MARKER)
    root.locator("svg.pcr-chart-svg circle.pcr-point").nth(level - 1).click()
    wait_caption(page, root, f"scan {level} of {num_scans}")
    assert root.evaluate(MARKER) != before
    side = root.locator("button", has_text="side by side")
    side.click()
    page.wait_for_function(f"root => ({PICTURES_SHOWN})(root) === 2", arg=root.element_handle())
    assert side.get_attribute("aria-pressed") == "true"


def after_reload(page: Any, root: Any, num_scans: int, level: int) -> None:
    """The explorer drawn again after a reload: the same level, still side by side."""
    wait_drawn(page, root, num_scans)
    wait_caption(page, root, f"scan {level} of {num_scans}")
    page.wait_for_function(f"root => ({PICTURES_SHOWN})(root) === 2", arg=root.element_handle())


def new_errors(s: Session, host_own: list[str]) -> list[str]:
    """The errors of the page that the host does not show without the explorer too."""
    return [e for e in s.errors if e not in host_own]


# -- Jupyter (JupyterLab 4 and Notebook 7) ---------------------------------------------


def _jupyter_open(page: Any, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded", timeout=_budget.ms())
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=_budget.ms())
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())


def _jupyter_save_and_reload(page: Any) -> None:
    """Save (the outputs, so that the page shows them again), then reload: same kernel."""
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=_budget.ms()
    )
    page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=_budget.ms())
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())


def _shut_kernel(page: Any) -> None:
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")


def _wait_kernel_level(page: Any, level: int) -> None:
    """Wait until the kernel's ``ex.level`` is *level* (asked without running a cell)."""
    page.wait_for_function(
        """async want => { const k = window.jupyterapp.shell.currentWidget.sessionContext
            .session.kernel;
          const r = await k.requestExecute({code: '', silent: true, store_history: false,
            user_expressions: {v: 'ex.level'}}).done;
          const v = r.content.user_expressions.v;
          return v.status === 'ok' && v.data['text/plain'] === String(want); }""",
        arg=level,
        timeout=_budget.ms(),
        polling=250,
    )


def _host_errors_jupyter(browser: Any, url: str) -> list[str]:
    """What the host's page shows as errors with a notebook and no explorer."""
    with session(browser, "baseline", SIZES[0]) as s:
        _jupyter_open(s.page, url)
        run_all(s.page)
        _shut_kernel(s.page)
        print(f"errors of the host's own page, excused below: {s.errors}")
        return list(s.errors)


def _drive_jupyter(
    browser: Any,
    name: str,
    url: str,
    viewport: dict[str, int],
    num_scans: int,
    own: list[str],
    *,
    keys: bool = True,
) -> None:
    """Run the notebook at *url* and drive its explorer; *keys* False leaves the keyboard out."""
    with session(browser, name, viewport) as s:
        page = s.page
        _jupyter_open(page, url)
        run_all(page)
        root = page.locator(EXPLORER).first
        wait_drawn(page, root, num_scans)
        s.shot(root)
        check_axe(page, root, s.name)
        if keys:
            step_with_keyboard(page, root, num_scans)
            _wait_kernel_level(page, 3)
        click_point_and_side(page, root, num_scans, 5)
        _wait_kernel_level(page, 5)
        s.shot(root, "_side")
        _jupyter_save_and_reload(page)
        root = page.locator(EXPLORER).first
        after_reload(page, root, num_scans, 5)
        assert kernel_value(page, "ex.mode") == "'side'"
        s.shot(root, "_reloaded")
        _shut_kernel(page)
        assert new_errors(s, own) == [], s.errors


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, sample: Path) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab")
    with jupyterlab(tmp, kernel_env(tmp)) as server:
        try:
            yield server
        finally:
            print(f"--- JupyterLab log ---\n{server.log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab_own_errors(browser: Any, lab: Lab) -> list[str]:
    write_notebook(lab.root / "hosts" / "baseline.ipynb", ["1 + 1"])
    return _host_errors_jupyter(browser, lab.url("hosts/baseline.ipynb", "baseline"))


@pytest.mark.parametrize("viewport", SIZES, ids=SIZE_IDS)
def test_jupyterlab(
    browser: Any,
    lab: Lab,
    sample: Path,
    num_scans: int,
    lab_own_errors: list[str],
    viewport: dict[str, int],
) -> None:
    """JupyterLab 4: draws, keys, clicks, the kernel follows, a reload redraws; axe-core."""
    size = f"{viewport['width']}x{viewport['height']}"
    code = f"from pcr_explore.widgets import ScanExplorer\nex = {explorer_code(sample)}\nex"
    write_notebook(lab.root / "hosts" / f"lab_{size}.ipynb", [code])
    url = lab.url(f"hosts/lab_{size}.ipynb", f"w{size}")
    _drive_jupyter(browser, "lab", url, viewport, num_scans, lab_own_errors)


@pytest.fixture(scope="module")
def nb7(tmp_path_factory: pytest.TempPathFactory, sample: Path) -> Iterator[Notebook7]:
    pytest.importorskip("notebook", minversion="7", reason="Notebook 7 not installed")
    tmp = tmp_path_factory.mktemp("nb7")
    with notebook7(tmp, kernel_env(tmp)) as server:
        try:
            yield server
        finally:
            print(f"--- Notebook 7 log ---\n{server.log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def nb7_own_errors(browser: Any, nb7: Notebook7) -> list[str]:
    write_notebook(nb7.root / "baseline.ipynb", ["1 + 1"])
    return _host_errors_jupyter(browser, nb7.url("baseline.ipynb"))


def _nb7_notebook(nb7: Notebook7, sample: Path, name: str) -> str:
    code = f"from pcr_explore.widgets import ScanExplorer\nex = {explorer_code(sample)}\nex"
    write_notebook(nb7.root / f"{name}.ipynb", [code])
    return nb7.url(f"{name}.ipynb")


@pytest.mark.parametrize("viewport", SIZES, ids=SIZE_IDS)
def test_notebook7(
    browser: Any,
    nb7: Notebook7,
    sample: Path,
    num_scans: int,
    nb7_own_errors: list[str],
    viewport: dict[str, int],
) -> None:
    """Notebook 7: draws, clicks, the kernel follows, a reload redraws; axe-core (keys: below)."""
    size = f"{viewport['width']}x{viewport['height']}"
    url = _nb7_notebook(nb7, sample, f"nb7_{size}")
    _drive_jupyter(browser, "nb7", url, viewport, num_scans, nb7_own_errors, keys=False)


def test_notebook7_arrow_keys(
    browser: Any, nb7: Notebook7, sample: Path, num_scans: int, nb7_own_errors: list[str]
) -> None:
    """Notebook 7: ArrowRight on the focused level slider shows the next level; the kernel too."""
    url = _nb7_notebook(nb7, sample, "nb7_keys")
    with session(browser, "nb7_keys", SIZES[1]) as s:
        page = s.page
        _jupyter_open(page, url)
        run_all(page)
        root = page.locator(EXPLORER).first
        wait_drawn(page, root, num_scans)
        try:
            step_with_keyboard(page, root, num_scans)
            _wait_kernel_level(page, 3)
        finally:
            _shut_kernel(page)
        assert new_errors(s, nb7_own_errors) == [], s.errors


# -- marimo ------------------------------------------------------------------------------

MARIMO_APP = """import marimo

app = marimo.App(width="full")


@app.cell
def _():
    import marimo as mo
    from pcr_explore.widgets import ScanExplorer
    return ScanExplorer, mo


@app.cell
def _(ScanExplorer):
    ex = {explorer}
    ex
    return (ex,)


@app.cell
def _(ScanExplorer, mo):
    wrapped = mo.ui.anywidget({explorer})
    wrapped
    return (wrapped,)


@app.cell
def _(mo, wrapped):
    mo.md(f"kernel level: {{wrapped.widget.level}}")
    return


if __name__ == "__main__":
    app.run()
"""

BLANK_APP = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    mo.md("nothing here")
    return


if __name__ == "__main__":
    app.run()
"""


def _marimo_open(page: Any, server: Marimo) -> None:
    page.goto(server.url, wait_until="domcontentloaded", timeout=_budget.ms())


@pytest.fixture(scope="module")
def marimo_own_errors(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """What marimo's page shows as errors with an app that shows no explorer."""
    pytest.importorskip("marimo", reason="marimo not installed")
    tmp = tmp_path_factory.mktemp("marimo_blank")
    app = tmp / "blank.py"
    app.write_text(BLANK_APP)
    with marimo(tmp, app, {}) as server, session(browser, "marimo_baseline", SIZES[0]) as s:
        _marimo_open(s.page, server)
        s.page.get_by_text("nothing here", exact=True).wait_for(timeout=_budget.ms())
        print(f"errors of marimo's own page, excused below: {s.errors}")
        return list(s.errors)


@pytest.mark.parametrize("viewport", SIZES, ids=SIZE_IDS)
def test_marimo(
    browser: Any,
    tmp_path_factory: pytest.TempPathFactory,
    sample: Path,
    num_scans: int,
    marimo_own_errors: list[str],
    viewport: dict[str, int],
) -> None:
    """marimo: shown directly and through mo.ui.anywidget, both draw and follow the keys."""
    tmp = tmp_path_factory.mktemp("marimo")
    app = tmp / "explorer_app.py"
    app.write_text(MARIMO_APP.format(explorer=explorer_code(sample)))
    with marimo(tmp, app, kernel_env(tmp)) as server:
        try:
            with session(browser, "marimo", viewport) as s:
                page = s.page
                _marimo_open(page, server)
                page.locator(EXPLORER).nth(1).wait_for(timeout=_budget.ms())
                direct, wrapped = page.locator(EXPLORER).nth(0), page.locator(EXPLORER).nth(1)
                for root in (direct, wrapped):
                    wait_drawn(page, root, num_scans)
                s.shot(direct)
                check_axe(page, direct, s.name)
                for root in (direct, wrapped):
                    root.scroll_into_view_if_needed()
                    step_with_keyboard(page, root, num_scans)
                # the kernel got it: the cell reading the wrapped widget's level ran again
                page.get_by_text("kernel level: 3", exact=True).wait_for(timeout=_budget.ms())
                click_point_and_side(page, wrapped, num_scans, 5)
                page.get_by_text("kernel level: 5", exact=True).wait_for(timeout=_budget.ms())
                s.shot(wrapped, "_side")
                page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
                direct, wrapped = page.locator(EXPLORER).nth(0), page.locator(EXPLORER).nth(1)
                page.locator(EXPLORER).nth(1).wait_for(timeout=_budget.ms())
                after_reload(page, wrapped, num_scans, 5)
                wait_drawn(page, direct, num_scans)
                wait_caption(page, direct, f"scan 3 of {num_scans}")
                s.shot(wrapped, "_reloaded")
                assert new_errors(s, marimo_own_errors) == [], s.errors
        finally:
            print(f"--- marimo log ---\n{server.log.read_text()[-3000:]}")


# -- every other explorer, once per host (Notebook 7 and marimo) -----------------------------
#
# Each explorer built as cheaply as the tests build it elsewhere (two sample images, a
# simulated step, a report and a run on 32-pixel stand-in images, each under a few seconds
# of CPU), each in its own cell: it draws, its first slider takes ArrowRight and the
# kernel's trait follows, axe-core finds nothing serious in it.


@dataclass(frozen=True)
class Other:
    """One explorer to show: its variable, root class, code, and the trait its first slider sets."""

    name: str
    root: str
    code: str
    trait: str
    needs_torch: bool = False

    def expected(self, slider_value: str) -> float:
        """The trait the kernel gets for the value *slider_value* of the first slider."""
        v = float(slider_value)
        # the bandwidth slider is log10(MB/s); the others set their trait as they read
        return 10**v if self.trait == "bandwidth" else v


def others(sample: Path, data: SplitDatasets) -> list[Other]:
    """The explorers other than ScanExplorer, as the kernel builds them (torch ones if there)."""
    images, train, val = str(sample.parent / "images"), str(data.train), str(data.val)
    found = [
        Other("scripts", "pcr-scripts",
              f"ScriptExplorer({images!r}, ['standard', 'spectral'], sample=2, max_side=160)",
              "budget"),
        Other("panel", "pcr-step-panel", f"ScanPanel({str(sample)!r}, level=2, size=128)",
              "level"),
        Other("tuner", "pcr-tuner",
              f"TunerDashboard({str(sample)!r}, target=0.95, sample=2, worst=2, thumb_side=120,"
              " workers=1)", "target"),
        Other("swap", "pcr-swap", "SwapExplorer('vgg16', batch=8, noise=0.0, measured=False)",
              "sparsity"),
        Other("budget", "pcr-budget",
              f"BudgetExplorer(report=pcr.budget({train!r}, val={val!r}, bandwidth='20MB/s',"
              " sample=None, scans=(1, 3, 10), size=32, train_epochs=1, workers=1,"
              " progress=False))", "bandwidth", needs_torch=True),
        Other("training", "pcr-training",
              f"TrainingExplorer({train!r}, {val!r}, tune_batches=1, sample=4, workers=1,"
              f" result=train_at_levels({train!r}, val={val!r}, scans=(1, 5), size=32,"
              " epochs=2, workers=1, progress=False))", "epochs", needs_torch=True),
    ]  # fmt: skip
    torch = importlib.util.find_spec("torch") is not None
    return [o for o in found if torch or not o.needs_torch]


OTHERS_IMPORTS = (
    "import warnings\n"
    "import pcr_explore as pcr\n"
    "from pcr_explore.errors import FewerScalesWarning\n"
    "from pcr_explore.widgets import (BudgetExplorer, ScanPanel, ScriptExplorer, SwapExplorer,\n"
    "    TrainingExplorer, TunerDashboard)\n"
    "warnings.simplefilter('ignore', FewerScalesWarning)  # 32-pixel images: MS-SSIM's scales\n"
)

# The explorer has drawn: an SVG chart, or a picture with a source and pixels.
OTHER_DRAWN = """root => !!root.querySelector('svg.pcr-chart-svg')
  || [...root.querySelectorAll('img')].some(i => i.getAttribute('src') && i.complete
    && i.naturalWidth > 0)"""


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> SplitDatasets:
    """30 training and validation 32-pixel pattern images in 5 classes, as PCR datasets."""
    from pcr_explore.train import load_flowers, write_stand_in_archive

    tmp = tmp_path_factory.mktemp("stand_in")
    archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=6, side=32)
    return load_flowers(archive, cache_dir=tmp / "cache", workers=1, progress=False)


def press_arrow_right(page: Any, root: Any) -> str:
    """Focus the explorer's first range slider, press ArrowRight: its new value (it moved)."""
    slider = root.locator("input[type=range]").first
    slider.scroll_into_view_if_needed()
    before = slider.input_value()
    slider.focus()
    assert slider.evaluate("el => el === el.getRootNode().activeElement")
    page.keyboard.press("ArrowRight")
    after = slider.input_value()
    assert after != before, f"ArrowRight left the slider at {before}"
    return after


def check_trait(other: Other, slider_value: str, kernel_text: str) -> None:
    """The kernel's trait is what the slider's value sets (to 6 significant digits)."""
    got = float(kernel_text)
    assert got == pytest.approx(other.expected(slider_value), rel=1e-5), (
        other.name,
        slider_value,
        kernel_text,
    )


def _wait_kernel_changed(page: Any, expression: str, before: str) -> str:
    """Wait until the repr of *expression* in the kernel is other than *before*; return it."""
    found = page.wait_for_function(
        """async ([expr, before]) => { const k = window.jupyterapp.shell.currentWidget
            .sessionContext.session.kernel;
          const r = await k.requestExecute({code: '', silent: true, store_history: false,
            user_expressions: {v: expr}}).done;
          const v = r.content.user_expressions.v;
          return v.status === 'ok' && v.data['text/plain'] !== before && v.data['text/plain']; }""",
        arg=[expression, before],
        timeout=_budget.ms(),
        polling=250,
    )
    return str(found.json_value())


def _drawn(page: Any, o: Other) -> Any:
    """Wait until the explorer *o* is in the page and has drawn, in view; its root."""
    root = page.locator(f".pcr-explorer.{o.root}").first
    root.wait_for(timeout=_budget.ms())
    root.scroll_into_view_if_needed()
    page.wait_for_function(OTHER_DRAWN, arg=root.element_handle(), timeout=_budget.ms())
    return root


def _nb7_drawn(page: Any, cell: int, o: Other) -> Any:
    """Bring cell *cell* into the page and wait until its explorer *o* has drawn; its root."""
    # the notebook keeps only the cells near the view in the page
    page.evaluate(
        "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')", cell
    )
    return _drawn(page, o)


def test_notebook7_every_other_explorer(
    browser: Any,
    nb7: Notebook7,
    sample: Path,
    stand_in: SplitDatasets,
    nb7_own_errors: list[str],
) -> None:
    """Notebook 7: every other explorer draws, takes ArrowRight (the kernel follows); axe-core.

    Then the notebook is saved and reloaded at the other size (the same kernel): each
    explorer draws again, its first slider where ArrowRight left it.
    """
    shown = others(sample, stand_in)
    cells = [OTHERS_IMPORTS + "from pcr_explore.train import train_at_levels"]
    cells += [f"{o.name} = {o.code}\n{o.name}" for o in shown]
    write_notebook(nb7.root / "nb7_others.ipynb", cells)
    with session(browser, "nb7_others", SIZES[1]) as s:
        page = s.page
        _jupyter_open(page, nb7.url("nb7_others.ipynb"))
        try:
            run_all(page)
            moved = {}
            for cell, o in enumerate(shown, start=1):
                root = _nb7_drawn(page, cell, o)
                if cell == 1:
                    s.shot(root, "_others")
                check_axe(page, root, f"{s.name} {o.name}")
                before = kernel_value(page, f"{o.name}.{o.trait}")
                moved[o.name] = value = press_arrow_right(page, root)
                check_trait(o, value, _wait_kernel_changed(page, f"{o.name}.{o.trait}", before))
            page.set_viewport_size(SIZES[0])
            _jupyter_save_and_reload(page)
            for cell, o in enumerate(shown, start=1):
                root = _nb7_drawn(page, cell, o)
                if cell == 1:
                    s.shot(root, "_others_reloaded")
                slider = root.locator("input[type=range]").first
                expect(slider).to_have_value(moved[o.name], timeout=_budget.ms())
        finally:
            _shut_kernel(page)
        assert new_errors(s, nb7_own_errors) == [], s.errors


def marimo_others_app(shown: list[Other]) -> str:
    """A marimo app: the imports, then per explorer a cell showing it through
    ``mo.ui.anywidget`` and a cell writing its trait (run again when the widget changes)."""
    imports = "".join(f"    {line}\n" for line in OTHERS_IMPORTS.splitlines())
    names = "BudgetExplorer, ScanPanel, ScriptExplorer, SwapExplorer, TrainingExplorer, "
    names += "TunerDashboard, mo, pcr, train_at_levels"
    cells = [
        "import marimo\n\napp = marimo.App(width='full')\n",
        "@app.cell\ndef _():\n    import marimo as mo\n"
        f"{imports}    from pcr_explore.train import train_at_levels\n    return ({names})\n",
    ]
    for o in shown:
        w = f"w{o.name}"
        cells.append(
            f"@app.cell\ndef _({names}):\n    {w} = mo.ui.anywidget({o.code})\n    {w}\n"
            f"    return ({w},)\n"
        )
        cells.append(
            f"@app.cell\ndef _(mo, {w}):\n"
            f'    mo.md(f"kernel {o.name} {o.trait}: {{{w}.widget.{o.trait}!r}}")\n    return\n'
        )
    cells.append('if __name__ == "__main__":\n    app.run()\n')
    return "\n\n".join(cells)


def test_marimo_every_other_explorer(
    browser: Any,
    tmp_path_factory: pytest.TempPathFactory,
    sample: Path,
    stand_in: SplitDatasets,
    marimo_own_errors: list[str],
) -> None:
    """marimo: every other explorer draws, takes ArrowRight (the kernel follows); axe-core.

    Then the page is reloaded at the other size (``marimo edit`` keeps the session): every
    explorer draws again, its first slider where ArrowRight left it.
    """
    shown = others(sample, stand_in)
    tmp = tmp_path_factory.mktemp("marimo_others")
    app = tmp / "others_app.py"
    app.write_text(marimo_others_app(shown))
    with marimo(tmp, app, kernel_env(tmp)) as server:
        try:
            with session(browser, "marimo_others", SIZES[1]) as s:
                page = s.page
                _marimo_open(page, server)
                moved = {}
                for i, o in enumerate(shown):
                    root = _drawn(page, o)
                    if i == 0:
                        s.shot(root, "_others")
                    check_axe(page, root, f"{s.name} {o.name}")
                    # the value written, not the cell's code in the editor
                    said = page.get_by_text(re.compile(rf"^kernel {o.name} {o.trait}: [-.\d]+$"))
                    before = said.text_content(timeout=_budget.ms())
                    moved[o.name] = value = press_arrow_right(page, root)
                    # the cell ran again (its output may be a new element: the locator re-finds it)
                    expect(said).not_to_have_text(before or "", timeout=_budget.ms())
                    check_trait(o, value, said.text_content().split(": ", 1)[1])
                page.set_viewport_size(SIZES[0])
                page.reload(wait_until="domcontentloaded", timeout=_budget.ms())
                for i, o in enumerate(shown):
                    root = _drawn(page, o)
                    if i == 0:
                        s.shot(root, "_others_reloaded")
                    slider = root.locator("input[type=range]").first
                    expect(slider).to_have_value(moved[o.name], timeout=_budget.ms())
                assert new_errors(s, marimo_own_errors) == [], s.errors
        finally:
            print(f"--- marimo log ---\n{server.log.read_text()[-3000:]}")
