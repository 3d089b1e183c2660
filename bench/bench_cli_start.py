"""How long ``pcr-explore`` takes to start, as a multiple of ``python -c pass``.

Each case is one fresh process of the installed ``pcr-explore`` script (the
same interpreter), timed from ``fork`` to exit: its wall time and its CPU
time (user + system, from ``getrusage`` of the children, steadier than the
wall time on a busy machine). Rounds are interleaved across cases (and
across checkouts, with ``--against``), after one warm-up round, and the
median of ``--repeat`` rounds is reported with its ratio to ``python -c pass``
measured in the same rounds. Cases:

* ``python -c pass``: the interpreter alone (the baseline);
* ``--version``, ``--help``, ``encode --help``: parsing only;
* ``cache info``: a real sub-command, on an empty cache folder.

The modules column counts ``sys.modules`` at exit (one extra run per case).

``--root DIR`` measures the package found in another checkout; ``--against
DIR`` measures a second checkout in the same rounds (for a before/after
comparison: ``git archive <commit> pcr_explore | tar -x -C /tmp/before``).

Usage::

    python bench/bench_cli_start.py [--repeat 20] [--quick] [--against /tmp/before]

Prints a table and writes bench/results/cli_start.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CASES: dict[str, list[str]] = {
    "python -c pass": [],
    "--version": ["--version"],
    "--help": ["--help"],
    "encode --help": ["encode", "--help"],
    "cache info": ["cache", "info", "{empty}"],
}
BASELINE = "python -c pass"

# What the console script runs, and a count of the modules loaded by the end.
COUNT = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('modules', len(sys.modules), file=sys.stderr))\n"
    "{body}"
)
SCRIPT_BODY = "from pcr_explore.cli import main\nsys.exit(main())"


def _script() -> str:
    """The ``pcr-explore`` entry point next to this interpreter (or on PATH)."""
    here = Path(sys.executable).parent / "pcr-explore"
    found = str(here) if here.exists() else shutil.which("pcr-explore")
    if found is None:
        sys.exit("no pcr-explore script: pip install -e . first")
    return found


def _argv(case: str, script: str, empty: str) -> list[str]:
    if case == BASELINE:
        return [sys.executable, "-c", "pass"]
    return [script, *(a.format(empty=empty) for a in CASES[case])]


def _once(argv: list[str], root: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of *argv*, importing pcr_explore from *root*."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _modules(case: str, root: Path, empty: str) -> int:
    body = "" if case == BASELINE else SCRIPT_BODY
    args = [a.format(empty=empty) for a in CASES[case]]
    out = subprocess.run(
        [sys.executable, "-c", COUNT.format(body=body), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,  # -c puts the working folder first on sys.path
    )
    return int(out.stderr.strip().splitlines()[-1].split()[-1])


def _measure(
    roots: dict[str, Path], repeat: int, empty: str
) -> dict[str, dict[str, dict[str, float]]]:
    script = _script()
    runs = [(label, case) for label in roots for case in CASES]
    for label, case in runs:  # warm the file cache and the bytecode caches
        _once(_argv(case, script, empty), roots[label])
    wall: dict[tuple[str, str], list[float]] = {r: [] for r in runs}
    cpu: dict[tuple[str, str], list[float]] = {r: [] for r in runs}
    for _ in range(repeat):
        for label, case in runs:
            w, c = _once(_argv(case, script, empty), roots[label])
            wall[label, case].append(w)
            cpu[label, case].append(c)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label in roots:
        base_w = statistics.median(wall[label, BASELINE])
        base_c = statistics.median(cpu[label, BASELINE])
        out[label] = {}
        for case in CASES:
            w = statistics.median(wall[label, case])
            c = statistics.median(cpu[label, case])
            out[label][case] = {
                "wall_s": w,
                "cpu_s": c,
                "wall_ratio": w / base_w,
                "cpu_ratio": c / base_c,
                "modules": _modules(case, roots[label], empty),
            }
    return out


def _table(results: dict[str, dict[str, dict[str, float]]]) -> None:
    head = f"{'checkout':<10}{'case':<17}{'wall s':>8}{'x pass':>8}{'CPU s':>8}{'x pass':>8}"
    print(head + f"{'modules':>9}")
    for label, cases in results.items():
        for case, r in cases.items():
            print(
                f"{label:<10}{case:<17}{r['wall_s']:8.3f}{r['wall_ratio']:7.1f}x"
                f"{r['cpu_s']:8.3f}{r['cpu_ratio']:7.1f}x{r['modules']:9d}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20, help="rounds (default 20)")
    ap.add_argument("--quick", action="store_true", help="5 rounds")
    ap.add_argument("--root", type=Path, default=HERE.parent, help="checkout holding pcr_explore/")
    ap.add_argument("--against", type=Path, default=None, help="another checkout, same rounds")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cli_start.json")
    args = ap.parse_args()
    repeat = 5 if args.quick else args.repeat
    roots = {"this": args.root.resolve()}
    if args.against is not None:
        roots["against"] = args.against.resolve()
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} at start")
    with tempfile.TemporaryDirectory() as empty:
        results = _measure(roots, repeat, empty)
    load_end = os.getloadavg()
    for label, root in roots.items():
        print(f"{label}: {root / 'pcr_explore'}")
    print(f"{repeat} rounds, median per case; x pass: ratio to python -c pass in the same rounds")
    _table(results)
    print(f"load average {load_end[0]:.2f} at the end")
    doc = {
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_average_start": load[0],
        "load_average_end": load_end[0],
        "repeat": repeat,
        "roots": {k: str(v / "pcr_explore") for k, v in roots.items()},
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
