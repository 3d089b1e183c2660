"""JupyterLab in Chromium for the browser tests: a private server, page helpers, timings.

Used by ``tests/test_browser.py`` and ``bench/bench_browser_latency.py`` (the timings:
the tests only count). The server runs on a free loopback port
with a random token and private config, runtime and workspace directories,
and serves a copy of ``notebooks/`` (JupyterLab autosaves run notebooks,
which must not write outputs into the repository's stripped notebooks).
Every wait here waits on a condition, never on a fixed time, and its limit is
the time left to the test (``tests/_budget.py``; no limit outside pytest):
on a busy machine a wait takes longer, it does not fail. Stopping the server
also ends the kernels it started and their workers (``tests/_procs.py``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _budget
import _procs

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1280, "height": 720}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """Debian's chromium (or another Chrome) on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token and served root."""

    base: str
    token: str
    root: Path
    log: Path

    def url(self, notebook: str, workspace: str) -> str:
        """The URL opening *notebook* in a fresh workspace (no restored tabs)."""
        return f"{self.base}/lab/workspaces/{workspace}/tree/{notebook}?token={self.token}&reset"


@contextmanager
def jupyterlab(
    tmp: Path, env_extra: dict[str, str], *, args: Sequence[str] = (), news_answered: bool = True
) -> Iterator[Lab]:
    """Start JupyterLab on the notebooks (a copy under *tmp*); stop it on exit.

    *args* go to ``jupyter lab``; with *news_answered* False the user settings
    do not answer the news question (the server's own settings may).
    """
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        **env_extra,
    )
    env.pop("PCR_OWN_DATA", None)
    env.pop("PCR_TRACE", None)
    # Answer "fetch Jupyter news?" in advance: no pop-up over the screenshots.
    settings = tmp / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    if news_answered:
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    served = tmp / "root"
    shutil.copytree(ROOT / "notebooks", served / "notebooks")
    log_path = tmp / "lab.log"
    log = log_path.open("w")
    # Nothing reaches outside the loopback: no extension manager, no update check.
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={served}", "--LabApp.expose_app_in_browser=True",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    argv = [*argv, *args]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=served)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, f"{base}/api/status?token={token}", log, log_path)
        yield Lab(base, token, served, log_path)
    finally:
        stop_server(proc)
        log.close()


def wait_until_serving(proc: subprocess.Popen[Any], url: str, log: Any, log_path: Path) -> None:
    """Wait until *url* answers, for as long as the server runs and the test has time.

    *log* is the server's log file (open), *log_path* its path: a server that ended, or
    did not answer in the test's time, fails the wait with its log.
    """
    while True:
        left = _budget.seconds_left()
        try:
            with urllib.request.urlopen(url, timeout=left):
                return
        except OSError as exc:
            if proc.poll() is not None or _budget.out_of_time():
                log.flush()
                where = url.split("?")[0]
                raise RuntimeError(f"{where} did not answer:\n{log_path.read_text()}") from exc
            time.sleep(0.5)  # polling the server


def stop_server(proc: subprocess.Popen[Any]) -> None:
    """Stop a server the tests started, and whatever it started that still runs.

    SIGTERM, then SIGKILL after 20 s; then the same for the kernels it started (and their
    workers), which a server killed, or slow to stop on a busy machine, leaves behind.
    """
    started = _procs.watch(proc.pid)
    proc.terminate()
    try:
        proc.wait(timeout=_procs.GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    ended = started.end()
    if ended:
        print(f"ended what the server left running: {ended}")


KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === "idle";
}"""

# The notebook's code cells (their models: the notebook keeps only the cells near the view
# in the page).
_CODE_CELLS = """window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')"""

# Once every code cell has an execution count above *after* (the highest before the run),
# or once a cell shows an error (the cells after it are not run then): {failed, error},
# failed the index of the first cell with an error (null: none).
ALL_CELLS_RAN = f"""after => {{ const cells = {_CODE_CELLS};
  for (const [i, c] of cells.entries()) {{
    const e = c.model.outputs.toJSON().find(o => o.output_type === 'error');
    if (e) return {{failed: i, error: e.ename + ': ' + e.evalue}};
  }}
  return cells.length > 0 && cells.every(c => (c.model.executionCount || 0) > after)
    ? {{failed: null, error: ''}} : null; }}"""

HIGHEST_COUNT = f"""() => Math.max(0, ...({_CODE_CELLS}).map(c => c.model.executionCount || 0))"""

CANVAS_INK = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""

TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def new_page(browser: Any, **options: Any) -> Any:
    """``browser.new_page(**options)`` whose actions and navigations wait as long as the test may.

    (Playwright's own default is 30 s, which a busy machine outlasts.)
    """
    page = browser.new_page(**options)
    page.set_default_timeout(_budget.ms())
    page.set_default_navigation_timeout(_budget.ms())
    return page


def open_notebook(page: Any, lab: Lab, name: str, workspace: str) -> None:
    """Open ``notebooks/<name>.ipynb`` and wait for its kernel."""
    page.goto(
        lab.url(f"notebooks/{name}.ipynb", workspace),
        wait_until="domcontentloaded",
        timeout=_budget.ms(),
    )
    wait_for_kernel(page)


def wait_for_kernel(page: Any) -> None:
    """Wait until the notebook shows its cells and its kernel is idle."""
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=_budget.ms())
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())


def run_all(page: Any, timeout_ms: int | None = None) -> None:
    """Run every cell and wait until each has an execution count and the kernel is idle.

    A cell that fails (an error in its output) fails the test at once, with the error.

    *timeout_ms*: the limit of the wait (Playwright's; 0: none); by default the test's
    time left.
    """
    # A reloaded notebook shows the counts of its last run: wait for new ones.
    after = page.evaluate(HIGHEST_COUNT)
    # started, not awaited in the page: the wait below, with its limit, waits for the run
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    limit = _budget.ms() if timeout_ms is None else timeout_ms
    ran = page.wait_for_function(ALL_CELLS_RAN, arg=after, timeout=limit, polling=250)
    state = ran.json_value()
    assert state["failed"] is None, f"code cell {state['failed']} failed: {state['error']}"
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())


# Every canvas of the page, inside Bokeh's (nested) shadow roots too.
ALL_CANVASES = """() => { const out = [];
  const walk = n => { for (const e of n.querySelectorAll('*')) {
    if (e.tagName === 'CANVAS') out.push(e); if (e.shadowRoot) walk(e.shadowRoot); } };
  walk(document); return out; }"""


def wait_for_plots(page: Any, count: int, minimum: int = 1000) -> None:
    """Wait until at least *count* canvases of the page have been painted by Bokeh.

    A figure has a few canvas layers (the plot, its overlays), and only the
    plot layer holds ink, so painted canvases are counted, not elements.
    """
    page.wait_for_function(
        f"() => ({ALL_CANVASES})().filter(c => c.width > 0 && ({CANVAS_INK})(c) > {minimum})"
        f".length >= {count}",
        timeout=_budget.ms(),
        polling=250,
    )


# -- main-thread work while dragging ----------------------------------------------

_OBSERVE = """() => {
  window.__pcr = {tasks: [], frames: [], t0: performance.now(), stop: false};
  const obs = new PerformanceObserver(list => {
    for (const e of list.getEntries()) window.__pcr.tasks.push([e.startTime, e.duration]);
  });
  obs.observe({type: "longtask"});
  window.__pcr.obs = obs;
  let last = performance.now();
  const tick = now => {
    window.__pcr.frames.push(now - last); last = now;
    if (!window.__pcr.stop) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""

_COLLECT = """() => {
  const p = window.__pcr; p.stop = true;
  for (const e of p.obs.takeRecords()) p.tasks.push([e.startTime, e.duration]);
  p.obs.disconnect();
  return {tasks: p.tasks.filter(t => t[0] >= p.t0).map(t => t[1]),
          frames: p.frames, elapsed: performance.now() - p.t0};
}"""


@dataclass(frozen=True)
class DragTiming:
    """Main-thread work during a drag, from the first move until the view settled."""

    steps: int
    seconds: float
    long_tasks: tuple[float, ...]  # durations in ms of tasks over 50 ms
    frame_gaps: tuple[float, ...]  # ms between consecutive animation frames
    probes: tuple[Any, ...] = ()  # what the probe saw after each move

    @property
    def longest_task(self) -> float:
        return max(self.long_tasks, default=0.0)

    @property
    def blocking_ms(self) -> float:
        """Total blocking time: the part of each long task beyond 50 ms."""
        return float(sum(d - 50 for d in self.long_tasks))

    @property
    def worst_frame(self) -> float:
        return max(self.frame_gaps, default=0.0)

    def frames_over(self, ms: float) -> int:
        return sum(g > ms for g in self.frame_gaps)

    def summary(self) -> str:
        gaps = sorted(self.frame_gaps)
        median = gaps[len(gaps) // 2] if gaps else 0.0
        return (
            f"{self.steps} moves in {self.seconds:.1f} s; long tasks: {len(self.long_tasks)}, "
            f"longest {self.longest_task:.0f} ms, blocking {self.blocking_ms:.0f} ms; frames: "
            f"median {median:.0f} ms, worst {self.worst_frame:.0f} ms, "
            f"{self.frames_over(50)} over 50 ms"
        )


def drag(
    page: Any,
    handle: Any,
    track: Any,
    fractions: list[float],
    settled: str,
    arg: Any = None,
    probe: str | None = None,
) -> DragTiming:
    """Drag a slider handle through *fractions* of its track, one move per two frames.

    The moves are paced by the page's own animation frames (a hand moving at
    about 30 events a second when the page keeps up, slower when it does
    not). After the release, waits for the JavaScript predicate *settled*
    (called with *arg*) before collecting the long tasks and frame gaps.
    The JavaScript function *probe*, when given, is called (with *arg*)
    after each move and what it returns is kept.
    """
    hb, tb = handle.bounding_box(), track.bounding_box()
    y = hb["y"] + hb["height"] / 2
    page.evaluate(_OBSERVE)
    t0 = time.perf_counter()
    page.mouse.move(hb["x"] + hb["width"] / 2, y)
    page.mouse.down()
    seen = []
    for f in fractions:
        page.mouse.move(tb["x"] + f * tb["width"], y)
        page.evaluate(TWO_FRAMES)
        if probe is not None:
            seen.append(page.evaluate(probe, arg))
    page.mouse.up()
    page.wait_for_function(settled, arg=arg, timeout=_budget.ms(), polling=50)
    page.wait_for_function(KERNEL_IDLE, timeout=_budget.ms())
    page.evaluate(TWO_FRAMES)
    seconds = time.perf_counter() - t0
    got = page.evaluate(_COLLECT)
    return DragTiming(
        len(fractions), seconds, tuple(got["tasks"]), tuple(got["frames"]), tuple(seen)
    )


# -- what a drag changes in the page, counted ---------------------------------------------

_RECORD = """([root, text]) => {
  const r = window.__pcrRec = {pictures: 0, texts: [], obs: []};
  const watch = (el, options, fn) => {
    const o = new MutationObserver(fn); o.observe(el, options); r.obs.push([o, fn]); };
  watch(root, {subtree: true, attributes: true, attributeFilter: ['src']}, ms => {
    r.pictures += ms.filter(m => m.target.tagName === 'IMG').length; });
  if (text) watch(text, {subtree: true, childList: true, characterData: true}, () => {
    const t = text.innerText; if (r.texts[r.texts.length - 1] !== t) r.texts.push(t); });
}"""

_RECORDED = """() => { const r = window.__pcrRec;
  for (const [o, fn] of r.obs) { const left = o.takeRecords(); if (left.length) fn(left);
    o.disconnect(); }
  return {pictures: r.pictures, texts: r.texts}; }"""


class page_changes:  # noqa: N801 - a namespace of two page helpers
    """Count what changes in the page, whatever the time it takes.

    ``start`` watches *root* (an element handle) for pictures given a new
    ``src`` and, given the element handle *text*, keeps each text it shows in
    turn; ``stop`` returns ``{"pictures": n, "texts": [...]}``.
    """

    @staticmethod
    def start(page: Any, root: Any, text: Any = None) -> None:
        page.evaluate(_RECORD, [root, text])

    @staticmethod
    def stop(page: Any) -> dict[str, Any]:
        return dict(page.evaluate(_RECORDED))


# -- the byte counter of the level a ScanExplorer shows -------------------------------

# Each level has its own caption and picture in the page and one is visible: the counter
# of the level shown (the first ScanExplorer in *root*, default the whole page).
# (inside open shadow roots too: marimo draws each anywidget in one)
SHOWN_CAPTION = """(root => { const find = n => {
  const c = n.querySelector('.pcr-scan .pcr-caption'); if (c) return c;
  for (const e of n.querySelectorAll('*')) if (e.shadowRoot) {
    const f = find(e.shadowRoot); if (f) return f; }
  return null; }; return find(root || document); })"""


def caption_text(page: Any) -> str:
    """The byte counter above the level shown (empty when none shows)."""
    got = page.evaluate(f"() => {{ const c = {SHOWN_CAPTION}(); return c ? c.innerText : ''; }}")
    return str(got)


def wait_caption(page: Any, text: str, *, start: bool = True, timeout: float | None = None) -> None:
    """Wait until the byte counter of the level shown starts with (or holds) *text*.

    *timeout*: the limit of the wait in ms (0: none); by default the test's time left.
    """
    test = "startsWith" if start else "includes"
    page.wait_for_function(
        f"t => {{ const c = {SHOWN_CAPTION}(); return !!c && c.innerText.{test}(t); }}",
        arg=text,
        timeout=_budget.ms() if timeout is None else timeout,
    )
