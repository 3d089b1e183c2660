"""Benchmark: the named scan scripts on real photos: bytes, quality per level, decode time.

For every script in ``pcr_explore.jpeg.scan_script.SCRIPTS`` the same sampled
JPEGs are transcoded losslessly (jpegtran) into it and measured with
``pcr_explore.quality.compare_scripts``:

- bytes of the full level, as a ratio to the standard script's;
- mean MS-SSIM at each level, and the worst gap to the standard script's
  curve at the same bytes (interpolated; negative = worse than standard);
- milliseconds to decode one image at each level on this machine (the
  package's decoder, fastest of ``--repeats`` per image, one thread), and
  the full-level decode speed-up over the standard script.

A script "matches the standard curve" when its worst gap is at most 0.005
mean MS-SSIM. The frontier is decode speed-up against worst gap.

Usage: ``python bench/bench_scans.py [--source DIR] [--sample N] [--repeats R]``.
Default source: ``../shared/data/flowers5/train`` (baseline JPEG photos).
Prints a table and writes bench/results/bench_scans.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from pcr_explore._json import json_safe  # noqa: E402
from pcr_explore.jpeg.scan_script import SCRIPTS  # noqa: E402
from pcr_explore.quality import compare_scripts  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parent.parent / "shared" / "data" / "flowers5" / "train"


def main() -> int:
    """Run the benchmark; print the table; write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--sample", type=int, default=64, help="images measured (default 64)")
    ap.add_argument("--repeats", type=int, default=5, help="decodes per image and level")
    ap.add_argument("--scripts", default=",".join(SCRIPTS), help="comma-separated names")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_scans.json")
    args = ap.parse_args()
    if not args.source.exists():
        print(f"{args.source}: no such folder (give --source)", file=sys.stderr)
        return 2
    names = args.scripts.split(",")
    cmp = compare_scripts(
        args.source, scripts=names, sample=args.sample, repeats=args.repeats, progress=False
    )
    print("measured on this machine:", " ".join(sys.argv))
    print(cmp)
    print("\nper level: bytes (share of standard's full level) / mean MS-SSIM / decode ms")
    for name in cmp.names:
        c = cmp[name]
        cells = "  ".join(
            f"{x:.3f}/{q:.4f}/{ms:.2f}" for x, q, ms in zip(cmp.x(name), c.curve.mean, c.decode_ms)
        )
        print(f"{name:<9} {cells}")
    matches = [r["script"] for r in cmp.rows() if r["worst_gap"] >= -0.005]  # type: ignore[operator]
    print(f"\nwithin 0.005 MS-SSIM of the standard curve at every level: {', '.join(matches)}")
    result = {
        "command": " ".join(sys.argv),
        "machine": platform.platform(),
        "source": str(args.source),
        "sample": args.sample,
        "rows": cmp.rows(),
        "levels": {
            n: {
                "bytes_share": cmp.x(n).tolist(),
                "mssim": cmp[n].curve.mean.tolist(),
                "decode_ms": cmp[n].decode_ms.tolist(),
                "gap": cmp.gap(n).tolist(),
            }
            for n in cmp.names
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(json_safe(result), indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
