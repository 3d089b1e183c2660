"""Control change to new picture, measured in a real browser (JupyterLab in Chromium).

Starts JupyterLab on a copy of the notebooks (``tests/_lab.py``, the
browser tests' helpers), runs notebooks 01, 02 and 03 with ``PCR_QUICK=1``
and measures two things. The explorers are anywidget modules
(``pcr_explore/widgets/static/*.js``): native ``<input type=range>`` sliders
labelled by a ``.pcr-label`` span, SVG charts, every level's picture of
ScanExplorer held in the page.

**Drags** (``--drags`` rounds, the latency targets that the browser tests
do not assert): the test's 40-move drag (``_lab.drag``: a move every two
animation frames, then the release, until the view has settled) of
ScanExplorer's "scan level" slider in notebook 01 (from level 10, down the
track and back up, as ``tests/test_browser.py::test_01_scans`` drags it) and
of SwapExplorer's "sparsity" slider in notebook 03. In the page, a
``PerformanceObserver`` collects the long tasks (over 50 ms) and a
``requestAnimationFrame`` loop the gaps between frames. Per case: the longest
task (median and max over the rounds) against the 250 ms target, the total
blocking time (each long task's part over 50 ms) and the worst frame gap.
The baseline, in the same run and the same rounds: the same drag of a bare
ipywidgets ``IntSlider`` 1..10 and ``FloatSlider`` 0..0.99 in a notebook of
their own, whose kernel only takes the values in: what JupyterLab,
ipywidgets, Chromium (software rendering) and the machine cost without the
explorers. The rounds alternate the four drags, so a load that comes and
goes weighs on each alike. The ratios explorer / bare (medians over the
rounds) of the longest task and of the blocking time are printed against
the target of 1.5x.

**Steps** (``--steps`` per direction): from an input event to the last change
it causes: the last mutation inside the explorer's root (a
``MutationObserver`` on its ``.pcr-explorer`` element: subtree, attributes,
child lists, text) or the last ``load`` of a picture in it, then one
animation frame (the paint). A case is over when its readout says so, the
kernel is idle and nothing in the explorer has changed for 400 ms.

* 01, a fast drag of the level slider from 1 to 10 (30 moves sent as fast
  as Playwright sends them): from the pointer move that takes the slider to
  level 10 (the page picks each level as it moves, so later moves change
  nothing) to the last change;
* 01, single steps of the level slider (arrow keys, up then down): when the
  new picture (loaded) and its byte counter show, and when the last change
  (the chart's marker, the readouts, the kernel's echo) lands;
* 02, single steps of TunerDashboard's target slider (until the kernel's
  recommendation names the new target), the statistic toggled, the metric
  switched to PSNR and back.

Usage::

    python bench/bench_browser_latency.py [--drags 5] [--steps 8] [--only drag,01,02]
        [--label before] [--out PATH] [--quick]

``--quick`` is a smoke run (2 drag rounds, 2 steps). Prints tables (ms) with
the load average before and after, and writes
``bench/results/browser_latency[_LABEL].json``. Needs Debian's ``chromium``
and Playwright (the ``test`` extra).
"""

from __future__ import annotations

import argparse
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
    SHOWN_CAPTION,
    TWO_FRAMES,
    VIEWPORT,
    DragTiming,
    Lab,
    chromium_path,
    drag,
    jupyterlab,
    open_notebook,
    run_all,
    wait_caption,
)

PARTS: dict[str, list[dict[str, float]]] = {}
WAIT_MS = 180_000  # the limit of any one wait in the page: a bench must not hang for ever


def _load() -> str:
    """The machine's load, as ``uptime`` says it (the machine is shared)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


# -- from an input event to the last change it causes in the explorer ---------------------

# Watches one explorer's root (``.pcr-explorer``): every mutation in it and every picture
# loaded in it marks a change; the first animation frame after the last change is its paint.
_PROBE_INSTALL = """root => {
  const p = window.__pcrBench = window.__pcrBench || {};
  if (p.obs) p.obs.disconnect();
  if (p.root) for (const [k, f] of [['load', p.onLoad], ['pointermove', p.onMove],
                                     ['input', p.onInput]]) p.root.removeEventListener(k, f, true);
  p.root = root; p.kinds = {}; p.shown = null; p.shownFrame = null;
  p.t0 = p.last = p.frame = performance.now();
  const mark = kind => () => {
    const t = performance.now();
    p.last = p.kinds[kind] = t;
    const first = p.shown && p.shownFrame === null && !('shown' in p.kinds) && p.shown(p.arg);
    if (first) p.kinds.shown = t;
    requestAnimationFrame(() => {
      const now = performance.now();
      if (p.last === t) p.frame = now;
      if (first) p.shownFrame = now;
    });
  };
  p.obs = new MutationObserver(mark('page'));
  p.obs.observe(root, {subtree: true, attributes: true, childList: true, characterData: true});
  p.onLoad = mark('picture');
  root.addEventListener('load', p.onLoad, true);  // a picture decoded (load does not bubble)
  // with p.fromInput, the time starts again at each value the slider takes: at the pointer
  // move that made it (its event's time), else at the input event itself
  p.onMove = ev => { p.move = ev.timeStamp; };
  p.onInput = ev => { if (!p.fromInput) return;
    p.t0 = p.last = p.frame = p.move ?? ev.timeStamp; p.kinds = {}; p.shownFrame = null; };
  root.addEventListener('pointermove', p.onMove, true);
  root.addEventListener('input', p.onInput, true);
}"""

_PROBE_START = """([s, arg, fromInput]) => { const p = window.__pcrBench; p.kinds = {};
  p.shown = s ? new Function('return ' + s)() : null; p.arg = arg; p.shownFrame = null;
  p.fromInput = fromInput; p.move = null; p.t0 = p.last = p.frame = performance.now(); }"""

_PROBE_PARTS = """() => { const p = window.__pcrBench; const out = {};
  for (const k in p.kinds) out[k] = p.kinds[k] - p.t0;
  out.painted = p.frame - p.t0;
  if (p.shownFrame !== null) out['shown, painted'] = p.shownFrame - p.t0;
  return out; }"""


def _install(root: Any) -> None:
    """Watch the explorer whose root element (``.pcr-explorer``) is the locator *root*."""
    root.evaluate(_PROBE_INSTALL)


def _start(page: Any, shown: str | None = None, arg: Any = None, from_input: bool = False) -> None:
    """Mark the time of the input; *shown* (a JavaScript predicate on *arg*) also times the
    first change after which it holds. With *from_input*, the time starts again at each
    value a slider in the explorer takes (at the pointer move that made it)."""
    page.evaluate(_PROBE_START, [shown, arg, from_input])


def _quiet(page: Any, ms: int = 400) -> None:
    page.wait_for_function(
        f"() => performance.now() - window.__pcrBench.last > {ms}", timeout=WAIT_MS, polling=50
    )


def _timed(page: Any, case: str, settled: str, arg: Any = None) -> float:
    """Wait until *settled* (with *arg*) holds, the kernel is idle and the explorer quiet.

    Returns the ms from the input to the paint of the last change; keeps each kind's last
    change in ``PARTS[case]``.
    """
    page.wait_for_function(settled, arg=arg, timeout=WAIT_MS, polling=20)
    page.wait_for_function(KERNEL_IDLE, timeout=WAIT_MS, polling=20)
    _quiet(page)
    parts = {str(k): float(v) for k, v in page.evaluate(_PROBE_PARTS).items()}
    PARTS.setdefault(case, []).append(parts)
    return parts["painted"]


def _stats(ms: list[float]) -> dict[str, Any]:
    return {
        "n": len(ms),
        "median": statistics.median(ms),
        "min": min(ms),
        "max": max(ms),
        "all": [round(m, 1) for m in ms],
    }


def _explorer_slider(page: Any, root: str, label: str) -> Any:
    """The native range input labelled *label* in the first explorer *root* (a selector)."""
    wrap = page.locator(f"{root} label", has=page.locator(".pcr-label", has_text=label))
    return wrap.first.locator("input[type=range]")


def _reveal(page: Any, code: str, selector: str) -> None:
    """Scroll to the cell whose source holds *code* and wait for *selector* in the page
    (the notebook keeps only the cells near the view in the page)."""
    page.evaluate(
        """code => { const nb = window.jupyterapp.shell.currentWidget.content;
          const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes(code));
          if (i >= 0) nb.scrollToItem(i, 'start'); }""",
        code,
    )
    page.locator(selector).first.wait_for(state="attached", timeout=WAIT_MS)


# The explorers drawn: 01 its curve (a point per level) and its picture, 02 its curve and
# readout, 03 its three charts and the timeline's events.
DRAWN_01 = """() => { const r = document.querySelector('.pcr-scan.pcr-explorer');
  const img = r && r.querySelector('.pcr-stage img');
  return !!img && img.complete && img.naturalWidth > 0
    && r.querySelectorAll('circle.pcr-point').length === 10; }"""
DRAWN_02 = """() => { const r = document.querySelector('.pcr-tuner.pcr-explorer');
  return !!r && r.querySelectorAll('circle.pcr-point').length === 10
    && /recommended scan/.test(r.querySelector('.pcr-tune-readout').innerText); }"""
DRAWN_03 = """() => { const r = document.querySelector('.pcr-swap.pcr-explorer');
  return !!r && r.querySelectorAll('svg.pcr-chart-svg').length === 3
    && r.querySelectorAll('rect.pcr-event').length > 10; }"""

# 01: the counter shown is the level *arg* ("scan 4 of") and its picture is decoded
SHOWN_01 = (
    f"want => {{ const c = {SHOWN_CAPTION}(); if (!c || !c.innerText.startsWith(want))"
    " return false; const i = document.querySelector('.pcr-scan .pcr-stage img');"
    " return !!i && i.complete && i.naturalWidth > 0; }"
)


def bench_01(page: Any, steps: int) -> dict[str, Any]:
    """ScanExplorer's level slider in notebook 01: a fast drag, then single steps."""
    _reveal(page, "ScanExplorer(", ".pcr-scan.pcr-explorer")
    page.wait_for_function(DRAWN_01, timeout=WAIT_MS)
    root = page.locator(".pcr-scan.pcr-explorer").first
    slider = _explorer_slider(page, ".pcr-scan", "scan level")
    root.evaluate("el => el.scrollIntoView({block: 'start'})")
    _install(root)
    results: dict[str, Any] = {}

    def to_first() -> None:  # the Home key: level 1
        slider.press("Home")
        wait_caption(page, "scan 1 of", timeout=WAIT_MS)
        page.wait_for_function(KERNEL_IDLE, timeout=WAIT_MS)
        _start(page)
        _quiet(page)

    drags = []
    for _ in range(max(2, steps // 3)):
        to_first()
        box = slider.bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + 4, y)  # the thumb, at level 1 (the track's left end)
        # from the move that takes the slider to level 10 (the page picks each level as the
        # slider moves, so the moves after it change nothing)
        _start(page, SHOWN_01, "scan 10 of", from_input=True)
        page.mouse.down()
        for i in range(1, 31):  # a move every few ms, not waiting for the page: a fast hand
            page.mouse.move(box["x"] + box["width"] * min(1.0, i / 29), y)
        page.mouse.up()
        drags.append(_timed(page, "01 fast drag", SHOWN_01, "scan 10 of"))
    results["01 fast drag 1->10, move reaching 10 to last change"] = _stats(drags)

    to_first()
    single = []
    level = 1
    for key in ["ArrowRight"] * steps + ["ArrowLeft"] * steps:
        level = min(10, max(1, level + (1 if key == "ArrowRight" else -1)))
        want = f"scan {level} of"
        _start(page, SHOWN_01, want)
        slider.press(key)
        single.append(_timed(page, "01 step", SHOWN_01, want))
    shown = [p["shown, painted"] for p in PARTS["01 step"][-len(single) :]]
    results["01 level slider, one step: picture and counter shown"] = _stats(shown)
    results["01 level slider, one step: last change"] = _stats(single)
    return results


# 02: the kernel's recommendation names the target the slider shows (0.950 -> "≥ 0.95")
SETTLED_TARGET = """([rec, t]) => { const m = /≥\\s*([0-9.]+)/.exec(rec.innerText);
  return !!m && Number(m[1]) === Number(t.getAttribute('aria-valuetext')); }"""


def bench_02(page: Any, steps: int) -> dict[str, Any]:
    """TunerDashboard in notebook 02: target steps, statistic, metric."""
    _reveal(page, "TunerDashboard(source, curve=curve", ".pcr-tuner.pcr-explorer")
    page.wait_for_function(DRAWN_02, timeout=WAIT_MS)
    root = page.locator(".pcr-tuner.pcr-explorer").first
    root.evaluate("el => el.scrollIntoView({block: 'start'})")
    _install(root)
    rec = page.locator(".pcr-tuner .pcr-tune-readout").first.element_handle()
    slider = _explorer_slider(page, ".pcr-tuner", "target")
    results: dict[str, Any] = {}
    target = []
    for key in ["ArrowRight"] * steps + ["ArrowLeft"] * steps:
        _start(page)
        slider.press(key)
        target.append(_timed(page, "02 target", SETTLED_TARGET, [rec, slider.element_handle()]))
    results["02 target slider, one step"] = _stats(target)

    says_it = "([rec, s]) => rec.innerText.includes(s)"
    stat = []
    for label, says in [("mean of images", "mean "), ("5th percentile", "5th percentile")] * (
        max(1, steps // 2)
    ):
        button = page.locator(".pcr-tuner button", has_text=label).first
        _start(page)
        button.click()
        stat.append(_timed(page, "02 statistic", says_it, [rec, says]))
    results["02 statistic toggled"] = _stats(stat)

    metric = page.locator(".pcr-tuner label", has=page.locator(".pcr-label", has_text="metric"))
    select = metric.first.locator("select")
    switch = []
    for label, says in [("PSNR (dB)", "PSNR ≥"), ("MS-SSIM", "MS-SSIM ≥")] * max(1, steps // 2):
        _start(page)
        select.select_option(label=label)
        switch.append(_timed(page, "02 metric", says_it, [rec, says]))
    results["02 metric switched (PSNR <-> MS-SSIM)"] = _stats(switch)
    return results


# -- drags: the browser test's 40-move drag, its long tasks and frame gaps --------------

TARGET_MS = 250.0  # the longest task a drag may cause (was asserted by test_browser.py)
RATIO_TARGET = 1.5  # an explorer's drag within 1.5x the bare slider's

# The baseline: the explorers' two sliders, bare, in a notebook of their own.
BARE_CELL = """import ipywidgets as w
level = w.IntSlider(value=10, min=1, max=10, description="scan level",
                    continuous_update=True, layout=w.Layout(width="360px"))
sparsity = w.FloatSlider(value=0.5, min=0.0, max=0.99, step=0.01, readout_format=".0%",
                         description="sparsity", continuous_update=True,
                         layout=w.Layout(width="340px"))
w.VBox([level, sparsity])"""

# the test's moves (tests/test_browser.py::test_01_scans): 01 down the track and back up;
# 03 up a stretch of it
MOVES_01 = [0.97 - 0.94 * i / 19 for i in range(20)] + [0.03 + 0.94 * i / 19 for i in range(20)]
MOVES_03 = [0.42 + 0.4 * i / 39 for i in range(40)]

# the settled predicates: the counter shown is the slider's level (the test's); the
# timeline's caption names the slider's sparsity
SETTLED_01 = (
    f"sl => {{ const c = {SHOWN_CAPTION}(); return !!c && "
    "c.innerText.startsWith(sl.getAttribute('aria-valuetext')); }"
)
SETTLED_03 = (
    "([cap, sl]) => cap.innerText.includes('at sparsity ' + "
    "sl.getAttribute('aria-valuetext') + ' for')"
)


def _bare_notebook(lab: Lab) -> str:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BARE_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    name = "bench_bare_sliders"
    nbformat.write(nb, lab.root / "notebooks" / f"{name}.ipynb")
    return name


def _open(browser: Any, lab: Lab, name: str, drawn: str | None) -> Any:
    page = browser.new_page(viewport=VIEWPORT)  # the test's screen
    page.set_default_timeout(WAIT_MS)
    open_notebook(page, lab, name, f"drag{name[:2]}")
    run_all(page)
    if drawn:
        page.wait_for_function(drawn, timeout=WAIT_MS)
    return page


def _settle(page: Any) -> None:
    """Wait until the kernel is idle and the notebook has not changed for 1.5 s.

    The explorers redraw their saved picture a second after the controls
    stop; the next round must not start under it.
    """
    page.wait_for_function(KERNEL_IDLE, timeout=WAIT_MS)
    _install(page.locator(".jp-Notebook").first)
    _quiet(page, 1500)


def _to_top(slider: Any) -> None:
    """Scroll the output holding *slider* to the top of the notebook, as the test has it."""
    slider.evaluate(
        "el => (el.closest('.jp-OutputArea-output') || el).scrollIntoView({block: 'start'})"
    )
    slider.page.evaluate(TWO_FRAMES)


def _drag_01(page: Any) -> DragTiming:
    slider = _explorer_slider(page, ".pcr-scan", "scan level")
    slider.press("End")  # from level 10, as in the test (a click on the curve put it there)
    wait_caption(page, "scan 10 of", timeout=WAIT_MS)
    page.wait_for_function(DRAWN_01, timeout=WAIT_MS)
    _to_top(slider)
    _settle(page)
    sl = slider.element_handle()
    return drag(page, slider, slider, MOVES_01, SETTLED_01, sl)


def _drag_03(page: Any) -> DragTiming:
    slider = _explorer_slider(page, ".pcr-swap", "sparsity")
    caption = page.locator(".pcr-swap .pcr-timeline .pcr-hint").first
    caption.wait_for(timeout=WAIT_MS)
    _to_top(slider)
    _settle(page)
    arg = [caption.element_handle(), slider.element_handle()]
    return drag(page, slider, slider, MOVES_03, SETTLED_03, arg)


def _drag_bare(page: Any, label: str, moves: list[float]) -> DragTiming:
    slider = page.locator(".widget-slider:visible", has_text=label).first
    handle = slider.locator(".noUi-handle").first
    track = slider.locator(".noUi-target").first
    _to_top(slider)
    _settle(page)
    return drag(page, handle, track, moves, "() => true")


def bench_drags(browser: Any, lab: Lab, rounds: int) -> dict[str, list[DragTiming]]:
    """The test's drags on 01 and 03 and on the bare sliders, *rounds* times, alternated."""
    bare = _open(browser, lab, _bare_notebook(lab), None)
    bare.locator(".widget-slider").first.wait_for(timeout=WAIT_MS)
    p01 = _open(browser, lab, "01_progressive_scans", DRAWN_01)
    p03 = _open(browser, lab, "03_swap_simulation", DRAWN_03)
    cases = {
        "01 level slider": lambda: _drag_01(p01),
        "bare IntSlider 1..10 (baseline)": lambda: _drag_bare(bare, "scan level", MOVES_01),
        "03 sparsity slider": lambda: _drag_03(p03),
        "bare FloatSlider (baseline)": lambda: _drag_bare(bare, "sparsity", MOVES_03),
    }
    out: dict[str, list[DragTiming]] = {case: [] for case in cases}
    for r in range(rounds):
        for case, run in cases.items():
            timing = run()
            out[case].append(timing)
            print(f"  round {r + 1}, {case}: {timing.summary()}", flush=True)
    for page in (bare, p01, p03):
        page.close()
    return out


DRAG_BASELINE = {
    "01 level slider": "bare IntSlider 1..10 (baseline)",
    "03 sparsity slider": "bare FloatSlider (baseline)",
}


def _ratio(x: float, base: float) -> float | None:
    """*x* over *base*; 1 where both are 0 (no long task in either), None where only *base*."""
    if base > 0:
        return x / base
    return 1.0 if x == 0 else None


def _show(r: float | None, x: float, base: float) -> str:
    """The ratio with the two medians it is made of: ``1.20x (60/50)``."""
    return f"{'inf' if r is None else f'{r:.2f}x'} ({x:.0f}/{base:.0f})"


def _drag_table(drags: dict[str, list[DragTiming]]) -> dict[str, Any]:
    """Print the drag table and the ratios explorer / bare; return the figures for the JSON."""
    med = statistics.median
    figures: dict[str, Any] = {}
    for case, timings in drags.items():
        longest = [t.longest_task for t in timings]
        figures[case] = {
            "rounds": len(timings),
            "longest_task_ms": [round(x, 1) for x in longest],
            "blocking_ms": [round(t.blocking_ms, 1) for t in timings],
            "worst_frame_ms": [round(t.worst_frame, 1) for t in timings],
            "seconds": [round(t.seconds, 2) for t in timings],
            "summary": [t.summary() for t in timings],
            "longest_task_median_ms": med(longest),
            "longest_task_max_ms": max(longest),
            "blocking_median_ms": med([t.blocking_ms for t in timings]),
            "worst_frame_median_ms": med([t.worst_frame for t in timings]),
            "of_target": med(longest) / TARGET_MS,
        }
    n = len(next(iter(drags.values()))) if drags else 0
    print(
        f"\nDrags: the 40-move drags of tests/test_browser.py, {n} rounds;"
        " ms, median over the rounds (max: the worst round)"
    )
    print(
        f"{'case':<34} {'longest':>8} {'max':>6} {'/250ms':>7} {'blocking':>9} {'worst frame':>12}"
    )
    for case, f in figures.items():
        print(
            f"{case:<34} {f['longest_task_median_ms']:8.0f} {f['longest_task_max_ms']:6.0f}"
            f" {f['of_target']:7.2f} {f['blocking_median_ms']:9.0f}"
            f" {f['worst_frame_median_ms']:12.0f}"
        )
    print(
        "longest: the longest main-thread task (0: none over 50 ms); /250ms: its median over the"
        " target;\nblocking: total blocking time (each long task's part over 50 ms)"
    )
    print(f"\nExplorer / bare slider, medians of the same rounds (target: within {RATIO_TARGET}x)")
    print(f"{'case':<20} {'longest task':>18} {'blocking':>18} {'worst frame':>18}   within?")
    for case, base_case in DRAG_BASELINE.items():
        if case not in figures or base_case not in figures:
            continue
        f, b = figures[case], figures[base_case]
        ratios = {
            "longest_task": _ratio(f["longest_task_median_ms"], b["longest_task_median_ms"]),
            "blocking": _ratio(f["blocking_median_ms"], b["blocking_median_ms"]),
            "worst_frame": _ratio(f["worst_frame_median_ms"], b["worst_frame_median_ms"]),
        }
        within = {
            k: r is not None and r <= RATIO_TARGET for k, r in ratios.items() if k != "worst_frame"
        }
        f["vs_bare"] = ratios
        f["within_target"] = within
        said = ", ".join(
            f"{k.replace('_', ' ')} {'yes' if ok else 'NO'}" for k, ok in within.items()
        )
        shown = [
            _show(ratios[k], f[f"{m}_median_ms"], b[f"{m}_median_ms"])
            for k, m in (
                ("longest_task", "longest_task"),
                ("blocking", "blocking"),
                ("worst_frame", "worst_frame"),
            )
        ]
        print(f"{case:<20} {shown[0]:>18} {shown[1]:>18} {shown[2]:>18}   {said}")
    print(
        "(in brackets: explorer ms / bare ms; 1.00x where neither had a task over 50 ms,"
        " inf where only the explorer had)"
    )
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--drags", type=int, default=5, help="rounds of the four drags")
    ap.add_argument("--steps", type=int, default=8, help="single steps per direction")
    ap.add_argument(
        "--only", default="drag,01,02", help="comma-separated: drag (01 and 03), 01, 02 (steps)"
    )
    ap.add_argument("--label", default="", help="suffix of the JSON file (e.g. before, after)")
    ap.add_argument("--out", type=Path, default=None, help="the JSON (default bench/results/...)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2 drag rounds, 2 steps")
    args = ap.parse_args()
    if args.quick:
        args.drags, args.steps = 2, 2
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    path = chromium_path()
    if path is None:
        sys.exit("no chromium (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    load_before = _load()
    print(f"before: {load_before}", flush=True)
    results: dict[str, Any] = {}
    drags: dict[str, Any] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {
            "PCR_QUICK": "1",
            "PCR_SAMPLE_DIR": str(tmp / "sample"),
            "PCR_RESULTS_CACHE": str(tmp / "results"),
        }
        with jupyterlab(tmp, env) as lab, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            if "drag" in only and args.drags > 0:
                drags = _drag_table(bench_drags(browser, lab, args.drags))
            for name, run in (("01_progressive_scans", bench_01), ("02_tune_and_audit", bench_02)):
                if name[:2] not in only:
                    continue
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.set_default_timeout(WAIT_MS)
                open_notebook(page, lab, name, f"bench{name[:2]}")
                run_all(page)
                results.update(run(page, args.steps))
                page.close()
            browser.close()
    if results:
        print(f"\nSteps ({args.steps} per direction): input to the paint of the last change")
        print(f"{'case':<58} {'median':>8} {'min':>8} {'max':>8}   (ms, n)")
    for case, s in results.items():
        print(f"{case:<58} {s['median']:8.0f} {s['min']:8.0f} {s['max']:8.0f}   ({s['n']})")
    for case, parts in PARTS.items():
        kinds = sorted({k for p in parts for k in p})
        med = {k: statistics.median([p.get(k, 0.0) for p in parts]) for k in kinds}
        print(
            f"  {case}: last change of each kind, median ms: "
            + ", ".join(f"{k} {v:.0f}" for k, v in med.items())
        )
    load_after = _load()
    print(f"before: {load_before}\nafter:  {load_after}")
    name = f"browser_latency{'_' + args.label if args.label else ''}.json"
    out = args.out or HERE / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "seconds": round(time.perf_counter() - t0, 1),
        "load_before": load_before,
        "load_after": load_after,
        "args": {k: str(v) for k, v in vars(args).items()},
        "target_ms": TARGET_MS,
        "ratio_target": RATIO_TARGET,
    }
    out.write_text(
        json.dumps({"meta": meta, "drags": drags, "results": results, "parts": PARTS}, indent=1)
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
