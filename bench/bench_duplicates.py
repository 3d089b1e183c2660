"""Near-duplicate search: the band index against comparing every pair of hashes.

Hashes: 90% uniformly random 64-bit values and 10% planted near copies:
clusters of 2 to 9 hashes around random centres, each member 0 to
``max_bits + 1`` bits from the one before (chains, so a cluster can be
wider than ``max_bits`` end to end), with a few exact repeats (ties). The
same seed gives the same hashes.

For each size, in a fresh process (so its peak memory is its own):

* ``index``: ``near_duplicates(hashes, [], max_bits)`` as the audit calls it
  (nearest distances searched up to ``NEAREST_BITS``, 8 bits);
* ``sets only``: the same with ``reach=max_bits`` (no nearest distances
  beyond the threshold);
* ``every pair``: the exhaustive reference (``_near_duplicates_exhaustive``)
  for sizes up to ``--exhaustive-max``, in the same process, with the ratio
  to ``index`` and a check that the results are identical (sets,
  distances, nearest distances up to the reach).

Times are wall seconds and CPU seconds of the process (steadier on a busy
machine), the median of ``--repeat`` runs. Memory: the process's peak
resident set (``ru_maxrss``) after the runs, numpy and the package loaded.

Usage::

    python bench/bench_duplicates.py [--sizes 20000,50000,200000,1280000] [--max-bits 4]
        [--exhaustive-max 50000] [--repeat 1]

Prints a table and writes bench/results/duplicates.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pcr_explore.auditing._duplicates import (  # noqa: E402
    _near_duplicates_exhaustive,
    near_duplicates,
)
from pcr_explore.auditing._hash_index import plan_bands  # noqa: E402
from pcr_explore.storage._atomic import atomic_write  # noqa: E402


def make_hashes(n: int, max_bits: int, seed: int = 0) -> list[int | None]:
    """Random hashes with planted chains of near copies and ties, shuffled."""
    rng = np.random.default_rng(seed)
    out = [int(x) for x in rng.integers(0, 2**64, int(n * 0.9), dtype=np.uint64)]
    while len(out) < n:
        h = int(rng.integers(0, 2**64, dtype=np.uint64))
        for _ in range(int(rng.integers(2, 10))):
            out.append(h)
            flips = rng.choice(64, int(rng.integers(0, max_bits + 2)), replace=False)
            for b in flips.tolist():
                h ^= 1 << b
    hashes: list[int | None] = list(out[:n])
    order = rng.permutation(n)
    return [hashes[k] for k in order]


def _timed(fn: Any, repeat: int) -> tuple[Any, float, float]:
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return result, statistics.median(walls), statistics.median(cpus)


def _identical(a: Any, ref: Any) -> bool:
    want = np.where(ref.nearest > a.reach, np.inf, ref.nearest)
    return bool(
        a.sets == ref.sets
        and a.max_distance == ref.max_distance
        and np.array_equal(a.nearest, want, equal_nan=True)
    )


def one_size(n: int, max_bits: int, exhaustive_max: int, repeat: int) -> dict[str, Any]:
    """Time the searches on *n* hashes (run in its own process)."""
    hashes = make_hashes(n, max_bits)
    row: dict[str, Any] = {"n": n, "max_bits": max_bits}
    distinct = len({h for h in hashes if h is not None})
    row["distinct"] = distinct
    r, row["index_wall"], row["index_cpu"] = _timed(
        lambda: near_duplicates(hashes, [], max_bits), repeat
    )
    row["reach"], row["sets"] = r.reach, len(r.sets)
    row["bands"] = plan_bands(distinct, r.reach)
    _, row["sets_only_wall"], row["sets_only_cpu"] = _timed(
        lambda: near_duplicates(hashes, [], max_bits, reach=max_bits), repeat
    )
    row["sets_only_bands"] = plan_bands(distinct, max_bits)
    if n <= exhaustive_max:
        ref, row["every_pair_wall"], row["every_pair_cpu"] = _timed(
            lambda: _near_duplicates_exhaustive(hashes, [], max_bits), repeat
        )
        row["identical"] = _identical(r, ref)
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20000,50000,200000,1280000")
    ap.add_argument("--max-bits", type=int, default=4)
    ap.add_argument("--exhaustive-max", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "duplicates.json")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one_size(a.one, a.max_bits, a.exhaustive_max, a.repeat)))
        return
    rows = []
    import pcr_explore

    print(f"package: {Path(pcr_explore.__file__).parent}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"near duplicates, max_bits {a.max_bits}, median of {a.repeat}; load average {load}")
    print(
        f"{'hashes':>10} {'bands':>5} {'index s (cpu)':>15} {'sets only s (cpu)':>18} "
        f"{'every pair s (cpu)':>19} {'ratio':>7} {'same':>5} {'peak MB':>8}"
    )
    for n in (int(s) for s in a.sizes.split(",")):
        cmd = [sys.executable, __file__, "--one", str(n), "--max-bits", str(a.max_bits)]
        cmd += ["--exhaustive-max", str(a.exhaustive_max), "--repeat", str(a.repeat)]
        row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        rows.append(row)
        pair = (
            f"{row['every_pair_wall']:8.2f} ({row['every_pair_cpu']:6.2f})"
            if "every_pair_wall" in row
            else f"{'-':>19}"
        )
        ratio = f"{row['every_pair_cpu'] / row['index_cpu']:6.1f}x" if "identical" in row else "-"
        print(
            f"{n:>10,} {row['bands']:>5} {row['index_wall']:7.2f} ({row['index_cpu']:6.2f}) "
            f"{row['sets_only_wall']:9.2f} ({row['sets_only_cpu']:6.2f}) {pair} {ratio:>7} "
            f"{str(row.get('identical', '-')):>5} {row['peak_rss_mb']:8.0f}"
        )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    record = {"rows": rows, "machine": platform.platform(), "python": sys.version}
    atomic_write(a.out, json.dumps(record, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
