"""A page reload with the same kernel: how soon every widget in view is drawn again.

Starts JupyterLab on a copy of the notebooks (``tests/_lab.py``, the browser
tests' helpers), runs each notebook with Run All in Chromium (1440x900), saves
it, then reloads the page ``--rounds`` times. The kernel keeps running, so
each widget's model comes back from it: until the page's widget manager has
every model, each widget output says "Loading widget...".

A sampler installed in the page before it loads records, every 25 ms, the
notebook's cells in the DOM, the outputs that say "Loading widget...", the
widget views (the widget outputs that hold their view; an anywidget's view
has none of ipywidgets' control classes) and the explorers drawn: a
``.pcr-explorer`` element (the root every explorer's ES module draws into)
that holds its content, an SVG chart (``svg.pcr-chart-svg``) or a decoded
picture (``img``), not only its frame. A round ends when no output says
"Loading widget...", the kernel is idle and nothing has changed for 2 s. Per
notebook and round, in seconds from the reload (the navigation's start):

* *shown*: the first cell is in the page (JupyterLab's own start);
* *loading*: how long outputs said "Loading widget..." (first to last sample);
* *drawn*: the last widget view and the last explorer of the cells in view
  are drawn (the widgets redrawn).

The baseline, in the same run and the same rounds: a notebook of bare widgets,
an ``IntSlider``, a ``FloatSlider``, an ``Image`` and a minimal
``anywidget.AnyWidget`` whose ES module draws one div (counted as the
baseline's explorer once its text is in): the same kinds of front end as the
explorers (ipywidgets' views, anywidget's module loading), so what JupyterLab,
ipywidgets, anywidget, Chromium and the machine cost without the explorers;
the table gives each notebook's *drawn* over the baseline's.

``--load K`` runs K busy-loop processes (at the same priority as everything
else) during the reloads, after the notebooks have run: a simulated busy
machine, the state a class's laptops are often in.

Usage::

    python bench/bench_reload.py [--rounds 5] [--load 0] [--notebooks 01,02,03,05]
        [--quick] [--label after]

``--quick`` runs the notebooks with ``PCR_QUICK=1`` (smaller data); without it
they run with their defaults, as in class. Prints the table (medians, and the
worst round) and the load average before and after, and writes
``bench/results/reload[_LABEL].json``. Needs Debian's ``chromium`` and
Playwright (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from _lab import (  # noqa: E402
    CHROMIUM_ARGS,
    KERNEL_IDLE,
    Lab,
    chromium_path,
    jupyterlab,
    open_notebook,
    run_all,
)

# bench/_procs.py by its path: the name ``_procs`` is tests/_procs.py's, which _lab imports.
_spec = importlib.util.spec_from_file_location("_bench_procs", HERE / "_procs.py")
if _spec is None or _spec.loader is None:
    raise ImportError(f"cannot load {HERE / '_procs.py'}")
_bench_procs = sys.modules["_bench_procs"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench_procs)
uptime = _bench_procs.uptime

NOTEBOOKS = {
    "01": "01_progressive_scans",
    "02": "02_tune_and_audit",
    "03": "03_swap_simulation",
    "04": "04_read_pcr_for_training",
    "05": "05_train_at_levels",
    "06": "06_swap_on_real_training",
}
BASELINE = "bare_widgets"

# Bare widgets: what a reload costs without the explorers. The bare anywidget's div carries
# the class that the sampler counts as the baseline's explorer (``pcr-bare``).
_BASELINE_CELLS = [
    "import numpy as np, ipywidgets as w, anywidget, traitlets",
    "w.VBox([w.IntSlider(5, min=1, max=10, description='level'),\n"
    "        w.FloatSlider(0.5, min=0, max=0.99, description='sparsity')])",
    "import io\nfrom PIL import Image\n"
    "buf = io.BytesIO(); Image.fromarray((np.random.default_rng(0).random((256, 256, 3)) * 255)"
    ".astype('uint8')).save(buf, 'JPEG')\n"
    "w.Image(value=buf.getvalue(), format='jpeg')",
    "class Bare(anywidget.AnyWidget):\n"
    "    _esm = '''export default { render({ model, el }) {\n"
    "        const d = document.createElement('div'); d.className = 'pcr-bare';\n"
    "        d.textContent = model.get('text'); el.appendChild(d); } };'''\n"
    "    text = traitlets.Unicode('a bare anywidget').tag(sync=True)\n\n"
    "Bare()",
]

# The explorers drawn: roots that hold a chart or a decoded picture (the baseline: its div's text).
_DRAWN = """() => [...document.querySelectorAll('.jp-OutputArea-output .pcr-explorer')]
  .filter(r => r.querySelector('svg.pcr-chart-svg')
    || [...r.querySelectorAll('img')].some(i => i.complete && i.naturalWidth > 0)).length
  + [...document.querySelectorAll('.jp-OutputArea-output .pcr-bare')]
    .filter(d => d.textContent.length > 0).length"""

# Installed before the page's own scripts: samples the page every 25 ms from the start.
_SAMPLER = f"""window.addEventListener('DOMContentLoaded', () => {{
  const s = window.__reload = []; const drawn = {_DRAWN};
  setInterval(() => {{
    let loading = 0, failed = 0;
    for (const o of document.querySelectorAll('.jp-OutputArea-output')) {{
      if (o.childElementCount === 0 && o.textContent.startsWith('Loading widget')) loading++;
      if (o.textContent.startsWith('Error displaying widget')) failed++;
    }}
    s.push([performance.now(), document.querySelectorAll('.jp-Notebook .jp-Cell').length,
      loading, document.querySelectorAll('.jp-OutputArea-output > .lm-Widget').length,
      drawn(), failed]);
  }}, 25);
}});"""

# Settled: nothing says "Loading widget..." and the counts have not changed for 2 s.
_SETTLED = """() => { const s = window.__reload; if (!s) return false; const n = s.length;
  if (n < 80) return false; const last = s[n - 1]; if (!last[1] || last[2]) return false;
  return s.slice(n - 80).every(x => x[2] === 0 && x[3] === last[3] && x[4] === last[4]); }"""


def _baseline_notebook(root: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in _BASELINE_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, str(root / "notebooks" / f"{BASELINE}.ipynb"))


def _timeline(samples: list[list[float]]) -> dict[str, float]:
    """Seconds from the navigation's start to each event of one reload."""
    last = samples[-1]
    shown = next(x[0] for x in samples if x[1] > 0)
    loading = [x[0] for x in samples if x[2] > 0]
    views = next(x[0] for x in samples if x[3] >= last[3])
    explorers = next(x[0] for x in samples if x[4] >= last[4])
    drawn = max(views, explorers, loading[-1] if loading else 0.0)
    return {
        "failed": max(x[5] for x in samples),
        "shown": shown / 1000,
        "loading": (loading[-1] - loading[0]) / 1000 if loading else 0.0,
        "drawn": drawn / 1000,
        "views": last[3],
        "explorers": last[4],
    }


class _Requests:
    """Count the widget-state requests a page sends its kernel (its WebSocket frames).

    ipywidgets asks for every model's state in one message (``request_states``)
    and waits 4 s for the answer; without one it asks again, one message per
    model (``request_state``), each answered in turn by the kernel.
    """

    def __init__(self, page: Any) -> None:
        self.all = self.each = 0
        page.on("websocket", lambda ws: ws.on("framesent", self._sent))

    def _sent(self, payload: Any) -> None:
        data = payload.encode() if isinstance(payload, str) else bytes(payload)
        self.all += data.count(b'"request_states"')
        self.each += data.count(b'"request_state"')


def reload_rounds(page: Any, requests: _Requests, rounds: int) -> list[dict[str, float]]:
    """Reload the page *rounds* times and time each redraw."""
    out = []
    for _ in range(rounds):
        requests.all = requests.each = 0
        page.reload(wait_until="domcontentloaded")
        page.wait_for_function(KERNEL_IDLE, timeout=120_000, polling=100)
        page.wait_for_function(_SETTLED, timeout=180_000, polling=100)
        got = _timeline(page.evaluate("() => window.__reload"))
        got.update(request_states=requests.all, request_state=requests.each)
        out.append(got)
    return out


def _prepare(browser: Any, lab: Lab, name: str) -> tuple[Any, _Requests]:
    """Open *name*, Run All, wait for an explorer drawn, save: ready to reload."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.add_init_script(_SAMPLER)
    requests = _Requests(page)
    open_notebook(page, lab, name, f"reload{name[:2]}")
    t = time.perf_counter()
    run_all(page, timeout_ms=900_000)
    page.wait_for_function(f"() => ({_DRAWN})() > 0", timeout=300_000, polling=250)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    time.sleep(2)  # the explorers redraw their saved pictures a second after the last change
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    print(f"{name}: Run All {time.perf_counter() - t:.1f} s", flush=True)
    return page, requests


def _median(rounds: list[dict[str, float]], key: str) -> float:
    return float(statistics.median(r[key] for r in rounds))


def _table(results: dict[str, list[dict[str, float]]]) -> None:
    base = _median(results[BASELINE], "drawn")
    print(
        f"\n{'notebook':<28} {'shown':>6} {'loading':>8} {'drawn':>6} {'worst':>6}"
        f" {'drawn-shown':>11} {'x bare':>7}  views/explorers  one-by-one  failed"
        "   (s from reload, median)"
    )
    for name, rounds in results.items():
        drawn = _median(rounds, "drawn")
        gap = statistics.median(r["drawn"] - r["shown"] for r in rounds)
        print(
            f"{name:<28} {_median(rounds, 'shown'):6.2f} {_median(rounds, 'loading'):8.2f}"
            f" {drawn:6.2f} {max(r['drawn'] for r in rounds):6.2f} {gap:11.2f}"
            f" {drawn / base:7.2f}  {rounds[-1]['views']:>5.0f}/{rounds[-1]['explorers']:<9.0f}"
            f" {sum(r['request_state'] > 0 for r in rounds):>4} of {len(rounds):<4}"
            f" {sum(r['failed'] for r in rounds):>5.0f}"
        )
    print(
        "views: widget outputs holding their view; explorers: explorers drawn (the baseline:"
        " its bare anywidget)\none-by-one: rounds in which the page asked for the widgets'"
        " states one model at a time (the kernel missed the 4 s to answer all at once);"
        ' failed: outputs that said "Error displaying widget"'
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="reloads per notebook")
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes during the reloads")
    ap.add_argument("--notebooks", default="01,02,03,05", help="comma-separated numbers")
    ap.add_argument("--quick", action="store_true", help="run the notebooks with PCR_QUICK=1")
    ap.add_argument("--label", default="", help="suffix of the JSON file (e.g. before, after)")
    args = ap.parse_args()
    path = chromium_path()
    if path is None:
        sys.exit("no chromium (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    names = [NOTEBOOKS[n.strip()] for n in args.notebooks.split(",") if n.strip()]
    load_before = uptime()
    print(f"before: {load_before}", flush=True)
    results: dict[str, list[dict[str, float]]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {"PCR_SAMPLE_DIR": str(tmp / "sample"), "PCR_RESULTS_CACHE": str(tmp / "results")}
        if args.quick:
            env["PCR_QUICK"] = "1"
        with jupyterlab(tmp, env) as lab, sync_playwright() as pw:
            _baseline_notebook(lab.root)
            browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            pages = {name: _prepare(browser, lab, name) for name in [BASELINE, *names]}
            hogs = [
                subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.load)
            ]
            try:
                time.sleep(3 if hogs else 0)  # let them take the cores
                # Rounds alternate the notebooks, so a load that comes and goes weighs on each.
                for _ in range(args.rounds):
                    for name, (page, requests) in pages.items():
                        results.setdefault(name, []).extend(reload_rounds(page, requests, 1))
                load_during = uptime()  # at the end of the rounds, the load average has caught up
            finally:
                for h in hogs:
                    h.kill()
            browser.close()
    _table(results)
    load_after = uptime()
    print(f"before: {load_before}\nduring: {load_during}\nafter:  {load_after}")
    out = HERE / "results" / f"reload{'_' + args.label if args.label else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "seconds": round(time.perf_counter() - t0, 1),
        "load_before": load_before,
        "load_during": load_during,
        "load_after": load_after,
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
