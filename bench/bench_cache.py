"""A write to a full, bounded prefix cache: its time, memory and folder listings against N.

For each N (default 1,000, 10,000 and 100,000), a fresh cache folder is
filled with N tiny records (a 16-23 byte header and three scan groups, 40
to 120 bytes whole: synthetic manifest entries written straight through
``PrefixCache``, no JPEG work), written whole with no limit. It is then
opened again with ``max_bytes`` equal to what it holds, so each further
write of a new record makes room (a pass cannot fit, so the prefix ranked
last goes; a record ranked after every one held is not kept), and

* ``--writes`` such writes are timed (CPU and wall, per write; the CPU time
  of the process, steadier than the wall time on a busy machine);
* a few more run under ``tracemalloc``: the peak of Python memory one write
  allocates beyond what the open cache holds;
* folder listings (``os.scandir`` and ``os.listdir`` calls) are counted per
  write.

``--against DIR`` measures another checkout's package in the same run (each
N of each checkout in its own process, checkouts taking turns) and prints
the ratios before/after: ``git archive <commit> pcr_explore | tar -x -C
/tmp/before``. The filling itself is timed too (``fill`` columns), per write.

Usage::

    python bench/bench_cache.py [--sizes 1000,10000,100000] [--writes 100] [--against DIR]

Prints a table and writes bench/results/cache.json (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
URL = "https://example.org/bench"


@dataclass(frozen=True)
class Rec:
    """A manifest's record entry, as much of it as the cache reads."""

    file: str
    checksum: str
    header_bytes: int
    bytes_per_scan: tuple[int, ...]


def _records(n: int) -> list[Rec]:
    rng = random.Random(0)
    out = []
    for r in range(n):
        header = 16 + rng.randrange(8)
        cum = [header + 8 + rng.randrange(16)]
        for _ in range(2):
            cum.append(cum[-1] + 8 + rng.randrange(40))
        out.append(Rec(f"record-{r:07d}.pcr", f"{r:08x}", header, tuple(cum)))
    return out


def _write(cache: Any, rec: Rec, r: int) -> None:
    cache.extend(r, 0, bytes([r % 251]) * rec.bytes_per_scan[-1])


class _Listings:
    """Counts os.scandir and os.listdir calls (a counter around them, nothing else)."""

    def __init__(self) -> None:
        self.calls = 0
        self._scandir, self._listdir = os.scandir, os.listdir

    def __enter__(self) -> _Listings:
        def scandir(path: Any = ".") -> Any:
            self.calls += 1
            return self._scandir(path)

        def listdir(path: Any = ".") -> Any:
            self.calls += 1
            return self._listdir(path)

        os.scandir, os.listdir = scandir, listdir  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        os.scandir, os.listdir = self._scandir, self._listdir  # type: ignore[assignment]


def measure_one(n: int, writes: int, traced: int, tmp: str) -> dict[str, Any]:
    """One N in this process, with the pcr_explore found on sys.path."""
    from pcr_explore.storage.cache import PrefixCache

    recs = _records(n + writes + traced)
    raw = b"bench manifest"
    with tempfile.TemporaryDirectory(dir=tmp) as root:
        fill = PrefixCache(root, URL, raw, recs)
        t0, c0 = time.perf_counter(), time.process_time()
        for r in range(n):
            _write(fill, recs[r], r)
        fill_wall, fill_cpu = time.perf_counter() - t0, time.process_time() - c0
        getattr(fill, "close", lambda: None)()
        limit = sum(recs[r].bytes_per_scan[-1] for r in range(n))
        cache = PrefixCache(root, URL, raw, recs, max_bytes=limit)
        with _Listings() as listed:
            t0, c0 = time.perf_counter(), time.process_time()
            for r in range(n, n + writes):
                _write(cache, recs[r], r)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for r in range(n + writes, n + writes + traced):
            _write(cache, recs[r], r)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        held = sum(1 for p in Path(root).glob("*/record-*"))
        evicted = cache.evicted
    return {
        "n": n,
        "writes": writes,
        "fill_cpu_us": 1e6 * fill_cpu / n,
        "fill_wall_us": 1e6 * fill_wall / n,
        "write_cpu_us": 1e6 * cpu / writes,
        "write_wall_us": 1e6 * wall / writes,
        "listings_per_write": listed.calls / writes,
        "peak_bytes": peak,
        "evicted": evicted,
        "held_after": held,
    }


def _run(root: Path, n: int, writes: int, traced: int, tmp: str) -> dict[str, Any]:
    """measure_one in a fresh process importing pcr_explore from *root*."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); "
        "import bench_cache as b; "
        "print(json.dumps(b.measure_one(*map(int, sys.argv[3:6]), sys.argv[6])))"
    )
    argv = [sys.executable, "-c", code, str(HERE), str(root), str(n), str(writes), str(traced)]
    out = subprocess.run(
        [*argv, tmp],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=tmp,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _table(results: dict[str, list[dict[str, Any]]]) -> None:
    print(
        f"{'checkout':<10}{'N':>9}{'fill us':>9}{'write CPU us':>14}{'wall us':>10}"
        f"{'listings':>10}{'peak KiB':>10}{'evicted':>9}"
    )
    for label, rows in results.items():
        for r in rows:
            print(
                f"{label:<10}{r['n']:>9,}{r['fill_cpu_us']:>9.0f}{r['write_cpu_us']:>14.0f}"
                f"{r['write_wall_us']:>10.0f}{r['listings_per_write']:>10.1f}"
                f"{r['peak_bytes'] / 1024:>10.1f}{r['evicted']:>9}"
            )
    if "before" in results:
        print("\nbefore / after, per write:")
        for old, new in zip(results["before"], results["after"]):
            cpu = old["write_cpu_us"] / new["write_cpu_us"]
            mem = old["peak_bytes"] / max(new["peak_bytes"], 1)
            print(f"  N = {new['n']:>9,}: CPU {cpu:8.1f}x, peak memory {mem:8.1f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,100000", help="N, comma separated")
    p.add_argument("--writes", type=int, default=100, help="timed writes per N")
    p.add_argument("--traced", type=int, default=10, help="writes under tracemalloc per N")
    p.add_argument("--root", type=Path, default=HERE.parent, help="the checkout to measure")
    p.add_argument("--against", type=Path, help="another checkout, measured as 'before'")
    p.add_argument("--tmp", default=None, help="where the cache folders go (default: $TMPDIR)")
    p.add_argument("--out", type=Path, default=HERE / "results" / "cache.json")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    roots = {"after": args.root.resolve()}
    if args.against is not None:
        roots = {"before": args.against.resolve(), **roots}
    tmp = args.tmp or tempfile.gettempdir()
    load_start = os.getloadavg()[0]
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in roots}
    for n in sizes:
        for label, root in roots.items():
            results[label].append(_run(root, n, args.writes, args.traced, tmp))
            print(f"{label} N={n:,} done", file=sys.stderr, flush=True)
    _table(results)
    print(f"load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"machine": platform.platform(), "python": platform.python_version()}
    meta["load_average"] = [load_start, os.getloadavg()[0]]  # at the start, at the end
    meta["writes"], meta["traced"] = args.writes, args.traced
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
