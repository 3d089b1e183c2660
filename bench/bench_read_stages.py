"""What timing the read stages costs: the clock reads per image, against a decode.

``ReadStats.stages`` is filled by a few clock reads per image (decode: two
``perf_counter`` and two ``thread_time`` calls and one locked add), one pair
per record or image range (waiting) and per batch. Two measurements:

* the instrumentation alone, per image: the calls the decode stage makes
  around each image, run *n* times in a loop (no decode), in ns;
* ``pipeline.decode`` over the bundled sample's images, already split in
  memory (no I/O), without a clock (the code path as it was before the
  stages were timed: one ``is None`` test more) and with one, rounds
  interleaved, at a large and a small output size (a small decode is the
  worst case for the share the clock reads take). Median of ``--repeat``
  rounds of the process's CPU time (robust to other load on the machine)
  and of wall time; the ratio is with / without.

Usage::

    python bench/bench_read_stages.py [--repeat 15] [--calls 200000]

Prints a table and writes bench/results/read_stages.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import pcr_explore.read.pipeline as pipeline
from pcr_explore import build_sample, open_dataset
from pcr_explore.read import ReadStats

HERE = Path(__file__).resolve().parent


def instrumentation_ns(calls: int) -> float:
    """Nanoseconds of the decode stage's clock reads and add, per image."""
    clock = ReadStats().clock(1)
    start = time.perf_counter()
    for _ in range(calls):
        t0, c0 = time.perf_counter(), time.thread_time()
        clock.decoded(time.perf_counter() - t0, time.thread_time() - c0)
    return (time.perf_counter() - start) / calls * 1e9


def one_pass(items: list[pipeline.Encoded], size: int, timed: bool) -> tuple[float, float]:
    """CPU and wall seconds of decoding *items* at *size*, with a clock or without."""
    clock = ReadStats().clock(1) if timed else None
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in pipeline.decode(items, size=size, clock=clock):
        pass
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="interleaved rounds per size")
    ap.add_argument("--calls", type=int, default=200_000, help="loop length of the microbench")
    ap.add_argument("--level", type=int, default=5, help="scan level decoded")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        ds = open_dataset(str(build_sample(Path(tmp) / "sample", progress=False)))
        items = list(ds._items(args.level, False, None))
    ns = instrumentation_ns(args.calls)
    rows = []
    for size in (224, 32):
        runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for _ in range(args.repeat):
            for timed in (False, True):
                runs[timed].append(one_pass(items, size, timed))
        med = {t: [statistics.median(x[i] for x in r) for i in (0, 1)] for t, r in runs.items()}
        per_image_us = med[False][0] / len(items) * 1e6
        rows.append(
            {
                "size": size,
                "images": len(items),
                "cpu_s_without": med[False][0],
                "cpu_s_with": med[True][0],
                "cpu_ratio": med[True][0] / med[False][0],
                "wall_s_without": med[False][1],
                "wall_s_with": med[True][1],
                "wall_ratio": med[True][1] / med[False][1],
                "decode_us_per_image": per_image_us,
                "instrumentation_share": ns / 1e3 / per_image_us,
            }
        )
    print(f"instrumentation per image (decode stage): {ns:,.0f} ns  ({args.calls:,} calls)")
    print(
        f"{'size':>5} {'images':>6} {'decode us/img':>13} {'clock share':>11} "
        f"{'CPU with/without':>16} {'wall with/without':>17}"
    )
    for r in rows:
        print(
            f"{r['size']:>5} {r['images']:>6} {r['decode_us_per_image']:>13,.0f} "
            f"{r['instrumentation_share']:>11.3%} {r['cpu_ratio']:>16.3f} {r['wall_ratio']:>17.3f}"
        )
    out = HERE / "results" / "read_stages.json"
    out.parent.mkdir(exist_ok=True)
    result = {
        "instrumentation_ns_per_image": ns,
        "level": args.level,
        "repeat": args.repeat,
        "rows": rows,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load": os.getloadavg()[0],
        },
    }
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
