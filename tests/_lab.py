"""JupyterLab in Chromium for the browser tests: a private server, page helpers, timings.

Used by ``tests/test_browser.py`` and ``bench/bench_browser_latency.py`` (the timings:
the tests only count). The server runs on a free loopback port
with a random token and private config, runtime and workspace directories,
and serves a copy of ``notebooks/`` (JupyterLab autosaves run notebooks,
which must not write outputs into the repository's stripped notebooks).
Every wait here waits on a condition in the page, never on a fixed time.
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
        deadline = time.monotonic() + 300  # a hang guard: a busy machine starts it slowly
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(
                        f"JupyterLab did not start:\n{log_path.read_text()}"
                    ) from exc
                time.sleep(0.5)  # polling the server's status endpoint
        yield Lab(base, token, served, log_path)
    finally:
        stop_server(proc)
        log.close()


def stop_server(proc: subprocess.Popen[Any]) -> None:
    """Stop a server the tests started: politely, then for good after 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === "idle";
}"""

# Every code cell's prompt shows an execution count above *after* (the highest before the run).
ALL_CELLS_RAN = """after => {
  const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
  return prompts.length > 0 && prompts.every(p => {
    const m = /\\[(\\d+)\\]/.exec(p.textContent); return m && Number(m[1]) > after; });
}"""

HIGHEST_COUNT = """() => Math.max(0,
  ...[...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")]
  .map(p => Number((/\\[(\\d+)\\]/.exec(p.textContent) || [0, 0])[1])))"""

CANVAS_INK = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""

TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def open_notebook(page: Any, lab: Lab, name: str, workspace: str) -> None:
    """Open ``notebooks/<name>.ipynb`` and wait for its kernel."""
    page.goto(lab.url(f"notebooks/{name}.ipynb", workspace), wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_function(KERNEL_IDLE, timeout=90_000)


def run_all(page: Any, timeout_ms: int = 240_000) -> None:
    """Run every cell and wait until each has an execution count and the kernel is idle."""
    # A reloaded notebook shows the counts of its last run: wait for new ones.
    after = page.evaluate(HIGHEST_COUNT)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_CELLS_RAN, arg=after, timeout=timeout_ms, polling=250)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)


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
        timeout=60_000,
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
    page.wait_for_function(settled, arg=arg, timeout=60_000, polling=50)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
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
SHOWN_CAPTION = (
    "(root => [...(root || document).querySelectorAll('.pcr-levels .widget-html')]"
    ".find(e => e.offsetParent !== null && e.innerText.includes(' bytes (')))"
)


def caption_text(page: Any) -> str:
    """The byte counter above the level shown (empty when none shows)."""
    got = page.evaluate(f"() => {{ const c = {SHOWN_CAPTION}(); return c ? c.innerText : ''; }}")
    return str(got)


def wait_caption(page: Any, text: str, *, start: bool = True, timeout: float = 30_000) -> None:
    """Wait until the byte counter of the level shown starts with (or holds) *text*."""
    test = "startsWith" if start else "includes"
    page.wait_for_function(
        f"t => {{ const c = {SHOWN_CAPTION}(); return !!c && c.innerText.{test}(t); }}",
        arg=text,
        timeout=timeout,
    )


# -- latency from an input event to the last change it causes ---------------------------

_PROBE_INSTALL = """out => {
  const now = () => performance.now();
  const p = window.__pcrLat = window.__pcrLat || {t0: 0, last: 0, docs: new Set()};
  if (p.obs) p.obs.disconnect();
  p.kinds = p.kinds || {};
  const mark = kind => () => {
    p.last = p.kinds[kind] = now();
    if (p.settled && !("shown" in p.kinds) && p.settled(p.arg)) p.kinds.shown = p.last;
  };
  p.obs = new MutationObserver(mark("page"));
  p.obs.observe(out, {subtree: true, childList: true, attributes: true, characterData: true});
  out.addEventListener("load", mark("picture"), true);  // a new picture decoded
  p.attach = () => { for (const v of (window.Bokeh ? Bokeh.index.roots : [])) {
    const d = v.model.document;
    if (d && !p.docs.has(d)) { p.docs.add(d); d.on_change(mark("plot")); } } };
  p.attach();
}"""


class latency_probe:  # noqa: N801 - a namespace of three page helpers
    """Time, in the page, from an input event to the last change it causes.

    ``install`` watches an output area: mutations of its DOM (a new picture's
    ``src``, readouts), ``load`` events of its pictures, and changes to the
    Bokeh documents of the page (a marker moved). ``start`` marks the time of
    the input (and, given the predicate, watches for the first change after which it
    holds); ``wait`` waits for the JavaScript predicate *settled*, an idle
    kernel and 400 ms without changes, and returns the milliseconds from the
    start to the last change (its paint follows in the next animation frame).
    """

    @staticmethod
    def install(page: Any, output: Any) -> None:
        output.evaluate(_PROBE_INSTALL)

    @staticmethod
    def start(page: Any, settled: str | None = None, arg: Any = None) -> None:
        """Mark the input's time; *settled* (as for :meth:`wait`) also times when it first holds."""
        page.evaluate(
            "([s, arg]) => { const p = window.__pcrLat; p.attach(); p.kinds = {};"
            " p.settled = s ? new Function('return ' + s)() : null; p.arg = arg;"
            " p.t0 = p.last = performance.now(); }",
            [settled, arg],
        )

    @staticmethod
    def quiet(page: Any, ms: int = 400) -> None:
        page.wait_for_function(
            f"() => performance.now() - window.__pcrLat.last > {ms}", timeout=60_000, polling=50
        )

    @staticmethod
    def wait(page: Any, settled: str, arg: Any = None) -> float:
        page.wait_for_function(settled, arg=arg, timeout=60_000, polling=20)
        page.wait_for_function(KERNEL_IDLE, timeout=60_000, polling=20)
        latency_probe.quiet(page)
        t, t0 = page.evaluate("() => [window.__pcrLat.last, window.__pcrLat.t0]")
        return float(t - t0)

    @staticmethod
    def parts(page: Any) -> dict[str, float]:
        """Milliseconds from the start to the last change of each kind (page, picture, plot).

        With a *settled* predicate given to :meth:`start`, "shown" is the first change after
        which it held (the new picture and its counter in view).
        """
        got = page.evaluate(
            "() => { const p = window.__pcrLat; const out = {};"
            " for (const k in p.kinds) out[k] = p.kinds[k] - p.t0; return out; }"
        )
        return {str(k): float(v) for k, v in got.items()}
