"""Measure once: tuning from a curve already measured, against measuring again (notebook 02's flow).

Notebook 02 measures a quality curve, shows it in the TunerDashboard and then
tunes. This times, in one run on the same images:

* ``quality_curve(source, sample=S)``: the measurement (every level of S
  images decoded and compared);
* ``tune(curve, target=...)``: the recommendation from that curve;
* ``TunerDashboard(source, curve=curve)`` and a target change in it;
* the baseline, ``tune(source, sample=S)``: what tuning cost when it could
  not take the curve and measured the same sample again.

Each is the median of ``--repeat`` runs; ratios are to the curve's time.

Source: the 24 Kodak photographs (../shared/data/kodak24) as a folder, or
``--source PATH`` (a folder, file or PCR dataset).

Usage::

    python bench/bench_measure_once.py [--sample 24] [--repeat 3] [--workers 2]

Prints a table and writes bench/results/measure_once.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pcr_explore as pcr
from pcr_explore.widgets import TunerDashboard

HERE = Path(__file__).resolve().parent
KODAK = HERE.parent.parent / "shared" / "data" / "kodak24"


def _median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=KODAK)
    ap.add_argument("--sample", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    src = pcr.open_source(args.source)
    kw = dict(sample=args.sample, seed=0, workers=args.workers, progress=False)

    t_curve, curve = _median_time(lambda: pcr.quality_curve(src, **kw), args.repeat)
    t_tune, result = _median_time(lambda: pcr.tune(curve, target=0.95), args.repeat)
    t_dash, dash = _median_time(
        lambda: TunerDashboard(src, curve=curve, target=0.95, worst=2), args.repeat
    )

    def retarget() -> int:
        dash.target = 0.97 if dash.target != 0.97 else 0.95
        return dash.result.scan

    t_slider, _ = _median_time(retarget, max(5, args.repeat))
    t_again, again = _median_time(lambda: pcr.tune(src, target=0.95, **kw), args.repeat)
    assert again.scan == result.scan  # the same sample gives the same recommendation

    rows = [
        ("quality_curve(source, sample=S)", t_curve),
        ("tune(curve, target=0.95)", t_tune),
        ("TunerDashboard(source, curve=curve)", t_dash),
        ("its target slider, one change", t_slider),
        ("baseline: tune(source, sample=S) measuring again", t_again),
    ]
    print(
        f"source: {args.source} ({len(src)} images), sample {args.sample}, "
        f"{args.workers} workers, median of {args.repeat}"
    )
    print(f"{'step':<52}{'seconds':>10}{'x curve':>10}")
    for name, t in rows:
        print(f"{name:<52}{t:>10.4f}{t / t_curve:>10.4f}")
    out = {
        "source": str(args.source),
        "images": len(src),
        "sample": args.sample,
        "workers": args.workers,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "seconds": dict(rows),
        "ratio_to_curve": {k: t / t_curve for k, t in rows},
        "recommended_scan": result.scan,
    }
    (HERE / "results").mkdir(exist_ok=True)
    path = HERE / "results" / "measure_once.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
