"""What opening a dataset costs in imports: the read and write path against numpy + PIL.

Each case runs in a fresh interpreter (nothing cached in ``sys.modules``;
the operating system's file cache is warm after the first round), rounds
interleaved across cases, and the median of ``--repeat`` rounds is reported
with its ratio to the baseline measured in the same run:

* ``numpy + PIL``: ``import numpy, PIL.Image`` (what any image reader pays);
* ``read path``: ``import pcr_explore`` and the four read and write verbs
  (``open_dataset``, ``encode_dataset``, ``open_source``, ``verify_dataset``);
* ``audit``: the same and ``pcr_explore.audit`` (the heaviest verb).

``--root DIR`` measures the package found in another checkout (for a
before/after comparison: ``git worktree add /tmp/before <commit>``).

Usage::

    python bench/bench_import.py [--repeat 15] [--root DIR]

Prints a table and writes bench/results/import.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

TIMER = "import time as _t; _t0 = _t.perf_counter()\n{body}\nprint(_t.perf_counter() - _t0)"
CASES = {
    "numpy + PIL": "import numpy, PIL.Image",
    "read path": (
        "import numpy, PIL.Image, pcr_explore as p\n"
        "p.open_dataset, p.encode_dataset, p.open_source, p.verify_dataset"
    ),
    "audit": (
        "import numpy, PIL.Image, pcr_explore as p\n"
        "p.open_dataset, p.encode_dataset, p.open_source, p.verify_dataset, p.audit"
    ),
}


def _once(body: str, root: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", TIMER.format(body=body)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=root,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--root", type=Path, default=HERE.parent, help="checkout holding pcr_explore/")
    args = ap.parse_args()
    root = args.root.resolve()
    for body in CASES.values():  # warm the file cache and the bytecode caches
        _once(body, root)
    times: dict[str, list[float]] = {k: [] for k in CASES}
    for _ in range(args.repeat):
        for name, body in CASES.items():
            times[name].append(_once(body, root))
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["numpy + PIL"]
    print(f"package: {root / 'pcr_explore'}   ({args.repeat} rounds, median wall time)")
    print(f"{'case':<14}{'ms':>9}{'x numpy + PIL':>15}")
    for name, t in med.items():
        print(f"{name:<14}{t * 1e3:>9.1f}{t / base:>14.2f}x")
    result = {
        "package": str(root / "pcr_explore"),
        "python": platform.python_version(),
        "repeat": args.repeat,
        "median_seconds": med,
        "ratio_to_numpy_pil": {k: t / base for k, t in med.items()},
    }
    (HERE / "results").mkdir(exist_ok=True)
    out = HERE / "results" / "import.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
