"""What walking a JPEG's segments costs: split_scans, read_frame and the 1/8 rewrite, per call.

All three walk the file through ``pcr_explore.jpeg._segments``. To compare
with another checkout (before that walker existed, say), ``--root DIR``
measures the package found there; ``--against DIR`` measures both in one run,
rounds interleaved, and prints the ratios.

Inputs: the first ``--images`` Kodak photographs (../shared/data/kodak24)
transcoded to standard progressive JPEGs; read_frame and the rewrite run on
their levels 1, 5 and 10. Each figure is the best of ``--repeat`` rounds of
the process's CPU time per call (robust to other load on the machine).

Usage::

    python bench/bench_walk.py [--images 12] [--repeat 30] [--against /tmp/before]

Prints a table and writes bench/results/walk.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KODAK = HERE.parent.parent / "shared" / "data" / "kodak24"

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pcr_explore.jpeg import split_scans
from pcr_explore.jpeg._eighth import at_eighth
from pcr_explore.jpeg._frame import read_frame
from pcr_explore.jpeg.transcode import transcode
files = sorted(__import__("glob").glob(sys.argv[2] + "/*.png"))[: int(sys.argv[3])]
repeat = int(sys.argv[4])
whole = [transcode(f).jpeg.data for f in files]
levels = [split_scans(d).level(k) for d in whole for k in (1, 5, 10)]
def best(fn, items):
    out = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for x in items:
            fn(x)
        out = min(out, (time.process_time() - t0) / len(items))
    return out * 1e6
print(json.dumps({"split_scans": best(split_scans, whole), "read_frame": best(read_frame, levels),
                  "at_eighth": best(at_eighth, levels)}))
"""


def _run(root: Path, args: argparse.Namespace) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(KODAK), str(args.images), str(args.repeat)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3, help="processes per checkout, interleaved")
    ap.add_argument("--root", type=Path, default=HERE.parent)
    ap.add_argument("--against", type=Path, default=None, help="another checkout to compare")
    args = ap.parse_args()
    roots = {"this": args.root.resolve()}
    if args.against is not None:
        roots["against"] = args.against.resolve()
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():
            runs[name].append(_run(root, args))
    best = {k: {f: min(r[f] for r in v) for f in v[0]} for k, v in runs.items()}
    print(f"best of {args.rounds} processes x {args.repeat} rounds, CPU us per call")
    print(f"{'':<12}" + "".join(f"{k:>14}" for k in best["this"]))
    for name, fig in best.items():
        print(f"{name:<12}" + "".join(f"{v:>14.2f}" for v in fig.values()))
    if "against" in best:
        ratios = {f: best["this"][f] / best["against"][f] for f in best["this"]}
        print(f"{'ratio':<12}" + "".join(f"{v:>13.2f}x" for v in ratios.values()))
    (HERE / "results").mkdir(exist_ok=True)
    path = HERE / "results" / "walk.json"
    path.write_text(
        json.dumps({"roots": {k: str(v) for k, v in roots.items()}, "best": best}, indent=1)
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
