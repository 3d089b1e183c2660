"""Control change to new picture, measured in a real browser (JupyterLab in Chromium).

Starts JupyterLab on a copy of the notebooks (``tests/_lab.py``, the
browser tests' helpers), runs notebooks 01, 02 and 03 with ``PCR_QUICK=1``
and measures two things.

**Drags** (``--drags`` rounds, the latency targets that ``tests/test_browser.py``
no longer asserts): the test's 40-move drag (``_lab.drag``: a move every two
animation frames, then the release, until the view has settled) of the level
slider of notebook 01 (from level 10, every level's picture in the page) and
of the sparsity slider of notebook 03. In the page, a ``PerformanceObserver``
collects the long tasks (over 50 ms) and a ``requestAnimationFrame`` loop the
gaps between frames. Per case: the longest task (median and max over the
rounds) against the 250 ms target, the total blocking time (each long task's
part over 50 ms) and the worst frame gap. The baseline, in the same run and
the same rounds: the same drag of a bare ``IntSlider`` 1..10 and a bare
``FloatSlider`` 0..0.99 (the explorers' sizes and labels) in a notebook of
their own, whose kernel only takes the values in: what JupyterLab, ipywidgets,
Chromium (software rendering) and the machine cost without the explorers.
The rounds alternate the four drags, so a load that comes and goes weighs on
each alike.

**Steps** (``--steps`` per direction): from an input event to the last change
it causes: the last mutation of the widget's DOM (the new picture's ``src``,
readouts), the last ``load`` of a picture and the last change to a Bokeh
document (a moved marker), followed by one animation frame (the paint). A
case is over when its readout says so, the kernel is idle and nothing has
changed for 400 ms.

* 01, a fast drag of the level slider from 1 to 10 (30 moves sent as fast
  as Playwright sends them): from the last move to the last picture;
* 01, single steps of the level slider (arrow keys, up then down): when the
  new picture and its byte counter show, and when the last change (the
  plot's marker, the readouts) lands;
* 02, single steps of the target slider, the statistic toggled, the metric
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
    wait_for_plots,
)
from _lab import latency_probe as probe  # noqa: E402
from _procs import uptime  # noqa: E402

PARTS: dict[str, list[dict[str, float]]] = {}


def _timed(page: Any, case: str, settled: str, arg: Any) -> float:
    """Wait for *case* to settle; keep when each kind of change last happened."""
    ms = probe.wait(page, settled, arg)
    PARTS.setdefault(case, []).append(probe.parts(page))
    return ms


def _stats(ms: list[float]) -> dict[str, Any]:
    return {
        "n": len(ms),
        "median": statistics.median(ms),
        "min": min(ms),
        "max": max(ms),
        "all": [round(m, 1) for m in ms],
    }


def _slider(page: Any, label: str) -> Any:
    return page.locator(".widget-slider:visible", has_text=label).first


def bench_01(page: Any, steps: int) -> dict[str, Any]:
    """The level slider of notebook 01: a fast drag, then single steps."""
    out = page.locator(".jp-OutputArea-output", has=page.locator(".widget-image")).first
    slider = _slider(page, "scan level")
    handle = slider.locator(".noUi-handle").first
    track = slider.locator(".noUi-target").first
    readout = slider.locator(".widget-readout").first.element_handle()
    # the counter of the level shown says the slider's level (each level has its own)
    settled = (
        f"r => {{ const c = {SHOWN_CAPTION}();"
        " return !!c && c.innerText.startsWith('scan ' + r.textContent.trim() + ' of'); }"
    )
    probe.install(page, out)
    results: dict[str, Any] = {}

    def to_first() -> None:  # the Home key: level 1
        handle.focus()
        handle.press("Home")
        wait_caption(page, "scan 1 of")
        page.wait_for_function(KERNEL_IDLE)
        probe.quiet(page)

    drags = []
    for _ in range(max(2, steps // 3)):
        to_first()
        tb, hb = track.bounding_box(), handle.bounding_box()
        y = hb["y"] + hb["height"] / 2
        page.mouse.move(hb["x"] + hb["width"] / 2, y)
        page.mouse.down()
        for i in range(1, 31):  # a move every few ms, not waiting for the page: a fast hand
            page.mouse.move(tb["x"] + tb["width"] * min(1.0, i / 29), y)
        probe.start(page)  # after the last move
        page.mouse.up()
        drags.append(_timed(page, "drag", settled, readout))
        assert "scan 10 of" in page.evaluate(f"() => {SHOWN_CAPTION}().innerText")
    results["01 fast drag 1->10, last move to last picture"] = _stats(drags)

    to_first()
    single = []
    for key in ["ArrowRight"] * steps + ["ArrowLeft"] * steps:
        handle.focus()
        probe.start(page, settled, readout)
        handle.press(key)
        single.append(_timed(page, "01 step", settled, readout))
    results["01 level slider, one step: picture and counter shown"] = _stats(
        [p["shown"] for p in PARTS["01 step"][-len(single) :]]
    )
    results["01 level slider, one step: last change (marker, readouts)"] = _stats(single)
    return results


def bench_02(page: Any, steps: int) -> dict[str, Any]:
    """The tuner dashboard of notebook 02: target steps, statistic, metric."""
    out = page.locator(".jp-OutputArea-output", has=page.locator(".widget-dropdown")).first
    rec = page.locator(".widget-html", has_text="recommended scan").first.element_handle()
    probe.install(page, out)
    results: dict[str, Any] = {}
    slider = _slider(page, "target")
    handle = slider.locator(".noUi-handle").first
    readout = slider.locator(".widget-readout").first.element_handle()
    # the recommendation names the target the slider shows
    settled = "([rec, r]) => rec.innerText.includes(r.textContent.trim().replace(/0+$/, ''))"
    target = []
    for key in ["ArrowRight"] * steps + ["ArrowLeft"] * steps:
        handle.focus()
        probe.start(page)
        handle.press(key)
        target.append(_timed(page, "02 target", settled, [rec, readout]))
    results["02 target slider, one step"] = _stats(target)

    stat = []
    for label, says in [("5th percentile", "5th percentile"), ("mean of images", "mean")] * (
        max(1, steps // 2)
    ):
        probe.start(page)
        page.locator(".widget-toggle-button", has_text=label).first.click()
        stat.append(
            _timed(page, "02 statistic", "([rec, s]) => rec.innerText.includes(s)", [rec, says])
        )
    results["02 statistic toggled"] = _stats(stat)

    metric = page.locator(".widget-dropdown", has_text="metric").locator("select").first
    switch = []
    for label, says in [("PSNR (dB)", "PSNR ≥"), ("MS-SSIM", "MS-SSIM ≥")] * max(1, steps // 2):
        probe.start(page)
        metric.select_option(label=label)
        switch.append(
            _timed(page, "02 metric", "([rec, s]) => rec.innerText.includes(s)", [rec, says])
        )
    results["02 metric switched (PSNR <-> MS-SSIM)"] = _stats(switch)
    return results


# -- drags: the browser test's 40-move drag, its long tasks and frame gaps --------------

TARGET_MS = 250.0  # the longest task a drag may cause (was asserted by test_browser.py)

# The baseline: the explorers' two sliders, bare, in a notebook of their own.
BARE_CELL = """import ipywidgets as w
level = w.IntSlider(value=10, min=1, max=10, description="scan level",
                    continuous_update=True, layout=w.Layout(width="360px"))
sparsity = w.FloatSlider(value=0.5, min=0.0, max=0.99, step=0.01, readout_format=".0%",
                         description="sparsity", continuous_update=True,
                         layout=w.Layout(width="340px"))
w.VBox([level, sparsity])"""

# the test's moves (tests/test_browser.py): 01 down and up the track, 03 up a stretch of it
MOVES_01 = [0.92 - 0.85 * i / 19 for i in range(20)] + [0.07 + 0.85 * i / 19 for i in range(20)]
MOVES_03 = [0.42 + 0.4 * i / 39 for i in range(40)]

# the settled predicates of the test: the counter shown says the slider's level; the
# timeline's caption names the slider's sparsity
SETTLED_01 = (
    f"sl => {{ const c = {SHOWN_CAPTION}(); return !!c && c.innerText.startsWith("
    "'scan ' + sl.querySelector('.widget-readout').textContent.trim() + ' of'); }"
)
SETTLED_03 = (
    "([cap, sl]) => cap.innerText.includes('at sparsity ' + "
    "sl.querySelector('.widget-readout').textContent.trim() + ' for')"
)


def _bare_notebook(lab: Lab) -> str:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BARE_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    name = "bench_bare_sliders"
    nbformat.write(nb, lab.root / "notebooks" / f"{name}.ipynb")
    return name


def _open(browser: Any, lab: Lab, name: str, plots: int) -> Any:
    page = browser.new_page(viewport=VIEWPORT)  # the test's screen
    open_notebook(page, lab, name, f"drag{name[:2]}")
    run_all(page)
    if plots:
        wait_for_plots(page, plots)
    return page


def _settle(page: Any) -> None:
    """Wait until the kernel is idle and the page has not changed for 1.5 s.

    The explorers redraw their saved picture a second after the controls
    stop; the next round must not start under it.
    """
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    root = page.locator(".jp-Notebook").first
    probe.install(page, root)
    probe.start(page)
    probe.quiet(page, 1500)


def _to_top(page: Any, slider: Any) -> None:
    """Scroll the output holding *slider* to the top of the notebook, as the test has it."""
    out = page.locator(".jp-OutputArea-output", has=slider).first
    out.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.evaluate(TWO_FRAMES)


def _drag_01(page: Any) -> DragTiming:
    slider = _slider(page, "scan level")
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    handle.press("End")  # from level 10, as in the test (a click on the curve put it there)
    wait_caption(page, "scan 10 of")
    levels = page.locator(".pcr-levels").first.element_handle()
    page.wait_for_function("el => !el.querySelector('.pcr-stale')", arg=levels, timeout=60_000)
    _to_top(page, slider)
    _settle(page)
    track = slider.locator(".noUi-target").first
    return drag(page, handle, track, MOVES_01, SETTLED_01, slider.element_handle())


def _drag_03(page: Any) -> DragTiming:
    slider = _slider(page, "sparsity")
    caption = page.locator(".widget-html", has_text="of stall").first
    caption.wait_for(timeout=60_000)
    _to_top(page, slider)
    _settle(page)
    handle = slider.locator(".noUi-handle").first
    track = slider.locator(".noUi-target").first
    arg = [caption.element_handle(), slider.element_handle()]
    return drag(page, handle, track, MOVES_03, SETTLED_03, arg)


def _drag_bare(page: Any, label: str, moves: list[float]) -> DragTiming:
    slider = _slider(page, label)
    handle = slider.locator(".noUi-handle").first
    track = slider.locator(".noUi-target").first
    _to_top(page, slider)
    _settle(page)
    return drag(page, handle, track, moves, "() => true")


def bench_drags(browser: Any, lab: Lab, rounds: int) -> dict[str, list[DragTiming]]:
    """The test's drags on 01 and 03 and on the bare sliders, *rounds* times, alternated."""
    bare = _open(browser, lab, _bare_notebook(lab), 0)
    p01 = _open(browser, lab, "01_progressive_scans", 1)
    p03 = _open(browser, lab, "03_swap_simulation", 3)
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


def _drag_table(drags: dict[str, list[DragTiming]]) -> dict[str, Any]:
    """Print the drag table; return its figures for the JSON."""
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
            "of_target": med(longest) / TARGET_MS,
        }
    n = len(next(iter(drags.values()))) if drags else 0
    print(
        f"\nDrags: the 40-move drags of tests/test_browser.py, {n} rounds;"
        " ms, median over the rounds (max: the worst round)"
    )
    head = (
        f"{'case':<34} {'longest':>8} {'max':>6} {'/250ms':>7} {'blocking':>9}"
        f" {'worst frame':>12} {'vs bare':>8}"
    )
    print(head)
    for case, f in figures.items():
        base = figures.get(DRAG_BASELINE.get(case, ""))
        frame = med(f["worst_frame_ms"])
        ratio = f"{frame / med(base['worst_frame_ms']):.2f}x" if base else "1.00x"
        if base:
            f["worst_frame_vs_bare"] = frame / med(base["worst_frame_ms"])
            bare_longest = base["longest_task_median_ms"]
            f["longest_task_vs_bare"] = (
                f["longest_task_median_ms"] / bare_longest if bare_longest else None
            )
        print(
            f"{case:<34} {f['longest_task_median_ms']:8.0f} {f['longest_task_max_ms']:6.0f}"
            f" {f['of_target']:7.2f} {med(f['blocking_ms']):9.0f} {frame:12.0f} {ratio:>8}"
        )
    print(
        "longest: the longest main-thread task (0: none over 50 ms); /250ms: its median over the"
        " target;\nvs bare: the worst frame gap over the same drag's on a bare slider"
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

    load_before = uptime()
    print(f"before: {load_before}", flush=True)
    results: dict[str, Any] = {}
    drags: dict[str, Any] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {"PCR_QUICK": "1", "PCR_SAMPLE_DIR": str(tmp / "sample")}
        with jupyterlab(tmp, env) as lab, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            if "drag" in only and args.drags > 0:
                drags = _drag_table(bench_drags(browser, lab, args.drags))
            for name, run in (("01_progressive_scans", bench_01), ("02_tune_and_audit", bench_02)):
                if name[:2] not in only:
                    continue
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                open_notebook(page, lab, name, f"bench{name[:2]}")
                run_all(page)
                wait_for_plots(page, 1)
                results.update(run(page, args.steps))
                page.close()
            browser.close()
    if results:
        print(f"\nSteps ({args.steps} per direction)")
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
    load_after = uptime()
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
    }
    out.write_text(
        json.dumps({"meta": meta, "drags": drags, "results": results, "parts": PARTS}, indent=1)
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
