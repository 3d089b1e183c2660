"""Benchmark the audit on a Dask cluster against the same audit on this machine's worker pool.

A folder of generated photos (``--images``, default 300, about 400x300
JPEGs in three classes, with an exact duplicate, a resized near duplicate
and a truncated file planted) is audited ``--repeat`` times each way in the
same run, interleaved (the side that goes first alternates): locally with
``workers=N``, and on the cluster that ``--client`` names (``local:N``: a
``LocalCluster`` of N single-threaded worker processes started before the
first round, its start-up reported apart, as a user's cluster would already
be running; ``tcp://HOST:PORT``: a running scheduler). Each round gives the
wall times and their ratio (cluster / local; below 1 the cluster was
faster), and the CPU seconds of every process of this run (this one, with
the scheduler's threads, the pool's or the cluster's workers; polled every
50 ms, ``pip install pcr-explore[bench]`` for psutil), which other work on
the machine changes less than wall time. The median of the rounds is the
figure, since other work on a shared machine changes from minute to
minute. Every cluster report must equal the local one (its JSON without
the timings). Nothing is asserted.

Usage: ``python bench/bench_audit_cluster.py [--client local:2] [--images 300]
[--repeat 3] [--sample 64]``. Prints a table and writes
bench/results/audit_cluster.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "audit_cluster.json"
TIMED = ("seconds", "timings")


def build_folder(root: Path, n: int) -> Path:
    """*n* generated photos in three class folders, three planted problems among them (cached)."""
    done = root / f".complete-{n}"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(0)
    for k in range(n - 3):
        folder = root / f"c{k % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        low = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
        base = np.asarray(Image.fromarray(low).resize((400, 300), Image.Resampling.BICUBIC))
        grain = rng.normal(0, 10, (300, 400, 1))
        pixels = np.clip(base + grain, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"img{k:05d}.jpg", quality=90)
    first = root / "c0" / "img00000.jpg"
    shutil.copy(first, root / "c0" / "exact_copy.jpg")
    Image.open(first).resize((320, 240)).save(root / "c0" / "near_copy.jpg", quality=70)
    whole = (root / "c1" / "img00001.jpg").read_bytes()
    (root / "c1" / "truncated.jpg").write_bytes(whole[: len(whole) // 2])
    done.write_text("1\n")
    return root


def _connect(spec: str) -> tuple[Any, Any, float]:
    """(cluster or None, client, seconds to start) for ``local:N`` or a scheduler address."""
    from pcr_explore.encode.distributed import connect, local_cluster

    t = time.perf_counter()
    if spec.startswith("local:"):
        cluster, client = local_cluster(workers=int(spec.split(":", 1)[1]))
    else:
        cluster, client = None, connect(spec)
    client.wait_for_workers(1)
    return cluster, client, time.perf_counter() - t


def _untimed(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in TIMED}


def _cpu_during(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the CPU seconds this process and all its descendants spent meanwhile.

    A process that lives through the call counts its growth; one that starts
    and ends within it, its last value seen (at most 50 ms stale).
    """
    import psutil

    top = psutil.Process()

    def seen() -> dict[tuple[int, float], float]:
        out = {}
        for p in [top, *top.children(recursive=True)]:
            try:
                t = p.cpu_times()
                out[(p.pid, p.create_time())] = t.user + t.system
            except psutil.Error:
                pass
        return out

    before = seen()
    last = dict(before)
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            last.update(seen())
            stop.wait(0.05)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    try:
        result = fn()
    finally:
        stop.set()
        th.join()
    last.update(seen())
    return result, sum(v - before.get(k, 0.0) for k, v in last.items())


def _one(folder: Path, sample: int, workers: int, client: Any) -> tuple[float, dict[str, Any]]:
    from pcr_explore import audit

    load = os.getloadavg()[0]
    t = time.perf_counter()
    r, cpu = _cpu_during(
        lambda: audit(folder, sample=sample, workers=workers, client=client, progress=False)
    )
    seconds = time.perf_counter() - t
    return seconds, {"load_at_start": load, "cpu_s": cpu, "report": json.loads(r.to_json())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", default="local:2", help="local:N or tcp://HOST:PORT")
    ap.add_argument("--images", type=int, default=300, help="generated photos (at least 10)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds: one audit each way")
    ap.add_argument("--sample", type=int, default=64, help="the audit's quality sample")
    ap.add_argument("--workers", type=int, default=None, help="local workers (default: N)")
    args = ap.parse_args()
    folder = build_folder(HERE / "_data" / "audit-cluster", max(10, args.images))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    cluster, client, start = _connect(args.client)
    threads = sum(client.nthreads().values())
    workers = args.workers or threads
    print(
        f"{folder}: {args.images} images; cluster {args.client} ({threads} worker threads) "
        f"started in {start:.1f} s (not counted below); local runs: workers={workers}"
    )
    rounds: list[dict[str, Any]] = []
    try:
        for k in range(args.repeat):
            sides = ["local", "cluster"] if k % 2 == 0 else ["cluster", "local"]
            got: dict[str, tuple[float, dict[str, Any]]] = {}
            for side in sides:
                got[side] = _one(
                    folder, args.sample, workers, client if side == "cluster" else None
                )
            (lt, lr), (ct, cr) = got["local"], got["cluster"]
            same = _untimed(lr["report"]) == _untimed(cr["report"])
            rounds.append(
                {
                    "first": sides[0],
                    "local_s": lt,
                    "cluster_s": ct,
                    "ratio": ct / lt,
                    "local_cpu_s": lr["cpu_s"],
                    "cluster_cpu_s": cr["cpu_s"],
                    "cpu_ratio": cr["cpu_s"] / lr["cpu_s"],
                    "identical": same,
                    "load_at_start": {"local": lr["load_at_start"], "cluster": cr["load_at_start"]},
                    "issue_counts": lr["report"]["issue_counts"],
                }
            )
    finally:
        client.close(timeout=30)
        if cluster is not None:
            cluster.close(timeout=30)
    print(
        f"{'round':<7}{'first':<9}{'load':>6}{'local s':>9}{'cluster s':>11}{'ratio':>7}"
        f"{'local CPU s':>13}{'cluster CPU s':>15}{'ratio':>7}  same"
    )
    for k, r in enumerate(rounds, 1):
        load = max(r["load_at_start"].values())
        print(
            f"{k:<7}{r['first']:<9}{load:6.1f}{r['local_s']:9.1f}{r['cluster_s']:11.1f}"
            f"{r['ratio']:7.2f}{r['local_cpu_s']:13.1f}{r['cluster_cpu_s']:15.1f}"
            f"{r['cpu_ratio']:7.2f}  {'yes' if r['identical'] else 'NO'}"
        )
    median = float(np.median([r["ratio"] for r in rounds]))
    cpu_median = float(np.median([r["cpu_ratio"] for r in rounds]))
    print(
        f"median cluster / local: wall time {median:.2f}, CPU time {cpu_median:.2f}; findings and "
        f"numbers identical in every round: {all(r['identical'] for r in rounds)}; "
        f"flags: {rounds[0]['issue_counts']}; load average at the end "
        f"{os.getloadavg()[0]:.2f}"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    from pcr_explore._json import to_json

    OUT.write_text(
        to_json(
            {
                "machine": {"cores": os.cpu_count()},
                "client": args.client,
                "images": args.images,
                "sample": args.sample,
                "workers": workers,
                "cluster_start_s": start,
                "rounds": rounds,
                "median_ratio": median,
                "median_cpu_ratio": cpu_median,
            }
        )
        + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
