"""Control change to new picture, measured in a real browser (JupyterLab in Chromium).

Starts JupyterLab on a copy of the notebooks (``tests/_lab.py``), runs
notebooks 01 and 02 with ``PCR_QUICK=1`` and times, in the page, from an
input event to the last change it causes: the last mutation of the widget's
DOM (the new picture's ``src``, readouts), the last ``load`` of a picture
and the last change to a Bokeh document (a moved marker), followed by one
animation frame (the paint). A case is over when its readout says so, the
kernel is idle and nothing has changed for 400 ms.

Cases:

* 01, a fast drag of the level slider from 1 to 10 (30 moves sent as fast
  as Playwright sends them): from the last move to the last picture;
* 01, single steps of the level slider (arrow keys, up then down): when the
  new picture and its byte counter show, and when the last change (the
  plot's marker, the readouts) lands;
* 02, single steps of the target slider, the statistic toggled, the metric
  switched to PSNR and back.

Usage::

    python bench/bench_browser_latency.py [--steps 8] [--label before]

Prints a table (median, min, max in ms) and writes
``bench/results/browser_latency[_LABEL].json``. Needs Debian's
``chromium`` and Playwright (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import json
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
    chromium_path,
    jupyterlab,
    open_notebook,
    run_all,
    wait_caption,
    wait_for_plots,
)
from _lab import latency_probe as probe  # noqa: E402

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=8, help="single steps per direction")
    ap.add_argument("--only", default="", help="run only notebooks starting with this")
    ap.add_argument("--label", default="", help="suffix of the JSON file (e.g. before, after)")
    args = ap.parse_args()
    path = chromium_path()
    if path is None:
        sys.exit("no chromium (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    results: dict[str, Any] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {"PCR_QUICK": "1", "PCR_SAMPLE_DIR": str(tmp / "sample")}
        with jupyterlab(tmp, env) as lab, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            for name, run in (("01_progressive_scans", bench_01), ("02_tune_and_audit", bench_02)):
                if not name.startswith(args.only):
                    continue
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                open_notebook(page, lab, name, f"bench{name[:2]}")
                run_all(page)
                wait_for_plots(page, 1)
                results.update(run(page, args.steps))
                page.close()
            browser.close()
    print(f"{'case':<52} {'median':>8} {'min':>8} {'max':>8}   (ms, n)")
    for case, s in results.items():
        print(f"{case:<52} {s['median']:8.0f} {s['min']:8.0f} {s['max']:8.0f}   ({s['n']})")
    out = HERE / "results" / f"browser_latency{'_' + args.label if args.label else ''}.json"
    out.parent.mkdir(exist_ok=True)
    meta = {"machine": platform.platform(), "cpus": __import__("os").cpu_count()}
    meta["seconds"] = round(time.perf_counter() - t0, 1)
    for case, parts in PARTS.items():
        kinds = sorted({k for p in parts for k in p})
        med = {k: statistics.median([p.get(k, 0.0) for p in parts]) for k in kinds}
        print(
            f"  {case}: last change of each kind, median ms: "
            + ", ".join(f"{k} {v:.0f}" for k, v in med.items())
        )
    out.write_text(json.dumps({"meta": meta, "results": results, "parts": PARTS}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
