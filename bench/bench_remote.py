"""Benchmark scale-out encoding, object storage reads and the prefix cache, in one run.

Sources: the Kodak set (../shared/data/kodak24) as quality-90 JPEGs in
variants (as bench_pcr.py makes them), or any folder given on the command
line. Every comparison is against a baseline measured in the same run:

* encode on a Dask ``LocalCluster`` of 1, 2 and 4 worker processes (one
  thread each) against the local encoder (``workers=2`` threads): throughput
  ratio, per-worker efficiency (Dask images/s over N x the 1-worker figure),
  and the SHA-256 of every output file, which must equal the local encode's.
  The cluster's start-up is timed apart. This machine has 2 cores, so more
  than 2 workers cannot be faster here; the point of 4 is the identity proof
  and the overhead;
* bytes the S3 server (moto, server mode, on loopback; counted in the
  server) sent for full passes at levels 1, 3 and 10, against ``bytes_at``;
* the prefix cache: levels 1 -> 3 -> 5 -> 10 read through one cache against
  four cold reads, bytes from the server and seconds;
* read + decode through the loopback S3 server against local disk, at level
  10 (full size) and level 1 (1/8 size): images/s ratio.

Usage::

    python bench/bench_remote.py [FOLDER] [--variants 10] [--repeat 3]

Prints a table and writes bench/results/remote.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the loopback S3 server the tests use

from _loopback import s3_server  # noqa: E402
from bench_pcr import kodak_jpegs  # noqa: E402

from pcr_explore import encode_dataset, open_dataset  # noqa: E402
from pcr_explore.encode.distributed import local_cluster  # noqa: E402


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.iterdir())
        if p.is_file()
    }


def timed(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_encode(src: Path, tmp: Path, n: int, repeat: int, record_size: int) -> dict[str, Any]:
    kw: dict[str, Any] = {"record_size": record_size, "progress": False, "overwrite": True}
    ref = tmp / "local"
    t_local = timed(lambda: encode_dataset(src, ref, workers=2, **kw), repeat)
    want = tree_digest(ref)
    rows = []
    for workers in (1, 2, 4):
        t0 = time.perf_counter()
        cluster, client = local_cluster(workers=workers)
        start_s = time.perf_counter() - t0
        try:
            out = tmp / f"dask{workers}"
            secs = timed(lambda: encode_dataset(src, out, client=client, **kw), repeat)  # noqa: B023
        finally:
            client.close()
            cluster.close()
        rows.append(
            {
                "workers": workers,
                "seconds": secs,
                "images_per_s": n / secs,
                "startup_s": start_s,
                "identical": tree_digest(out) == want,
            }
        )
    one = rows[0]["images_per_s"]
    for r in rows:
        r["vs_local"] = r["images_per_s"] / (n / t_local)
        r["efficiency"] = r["images_per_s"] / (r["workers"] * one)
    records = len(json.loads((ref / "manifest.json").read_text())["records"])
    return {
        "local_seconds": t_local,
        "local_images_per_s": n / t_local,
        "records": records,
        "files": len(want),
        "dask": rows,
    }


def read_pass(ds: Any, scan: int, size: int | None) -> float:
    t = time.perf_counter()
    for _ in ds.iter(scan=scan, size=size):
        pass
    return time.perf_counter() - t


def bench_s3(src: Path, tmp: Path, repeat: int, record_size: int) -> dict[str, Any]:
    local_path = tmp / "local"  # made by bench_encode with the same options
    local = open_dataset(str(local_path))
    n = len(local)
    out: dict[str, Any] = {}
    with s3_server() as s3:
        url = f"s3://{s3.bucket}/ds"
        opts = s3.storage_options
        encode_dataset(src, url, record_size=record_size, progress=False, storage_options=opts)
        import s3fs

        fs = s3fs.S3FileSystem(**opts)
        remote = {
            p.rsplit("/", 1)[-1]: hashlib.sha256(fs.cat_file(p)).hexdigest()
            for p in fs.ls(f"{s3.bucket}/ds", detail=False)
        }
        out["s3_encode_identical"] = remote == tree_digest(local_path)

        levels = []
        for k in (1, 3, 10):
            ds = open_dataset(url, storage_options=opts)
            s3.log.clear()
            for _ in ds.iter_jpeg(scan=k):
                pass
            gets = s3.gets()
            levels.append(
                {
                    "level": k,
                    "server_bytes": sum(g.sent for g in gets),
                    "bytes_at": ds.bytes_at(k),
                    "gets": len(gets),
                    "records": len(ds.records),
                }
            )
        out["levels"] = levels

        cold_bytes = cold_s = 0.0
        for k in (1, 3, 5, 10):
            ds = open_dataset(url, storage_options=opts)
            s3.log.clear()
            t = time.perf_counter()
            ds.prefetch(k)
            cold_s += time.perf_counter() - t
            cold_bytes += sum(g.sent for g in s3.gets())
        with tempfile.TemporaryDirectory() as cache:
            ds = open_dataset(url, storage_options=opts, cache_dir=cache)
            s3.log.clear()
            t = time.perf_counter()
            for k in (1, 3, 5, 10):
                ds.prefetch(k)
            delta_s = time.perf_counter() - t
            delta_bytes = sum(g.sent for g in s3.gets())
        out["delta"] = {
            "delta_bytes": delta_bytes,
            "cold_bytes": cold_bytes,
            "delta_seconds": delta_s,
            "cold_seconds": cold_s,
            "bytes_at_10": local.bytes_at(10),
        }

        speeds = []
        for k, size in ((10, None), (1, 96)):
            t_disk = min(read_pass(open_dataset(str(local_path)), k, size) for _ in range(repeat))
            t_s3 = min(
                read_pass(open_dataset(url, storage_options=opts), k, size) for _ in range(repeat)
            )
            speeds.append(
                {
                    "level": k,
                    "size": size,
                    "disk_images_per_s": n / t_disk,
                    "s3_images_per_s": n / t_s3,
                    "ratio": t_disk / t_s3,
                }
            )
        out["read"] = speeds
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", nargs="?", help="folder of images (default: Kodak JPEG variants)")
    ap.add_argument("--variants", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record-size", type=int, default=2 << 20, metavar="BYTES")
    args = ap.parse_args()
    src = Path(args.folder) if args.folder else kodak_jpegs(args.variants)
    n = len([p for p in src.rglob("*") if p.is_file()])
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        enc = bench_encode(src, tmp, n, args.repeat, args.record_size)
        s3 = bench_s3(src, tmp, args.repeat, args.record_size)

    print(
        f"{n} images from {src}, {enc['records']} records of ~{args.record_size:,} source bytes, "
        f"{os.cpu_count()} cores, best of {args.repeat}"
    )
    print(f"\nlocal encoder (2 threads): {enc['local_images_per_s']:.1f} images/s")
    print(
        f"{'dask workers':>12} {'images/s':>9} {'vs local':>9} {'efficiency':>10} "
        f"{'start-up s':>10}  identical bytes"
    )
    for r in enc["dask"]:
        print(
            f"{r['workers']:>12} {r['images_per_s']:>9.1f} {r['vs_local']:>8.2f}x "
            f"{r['efficiency']:>10.2f} {r['startup_s']:>10.1f}  "
            f"{'yes' if r['identical'] else 'NO'} ({enc['files']} files)"
        )
    print(
        f"\nencode to s3:// byte-identical to the local encode: "
        f"{'yes' if s3['s3_encode_identical'] else 'NO'}"
    )
    print(
        f"\n{'level':>5} {'S3 server sent':>15} {'bytes_at(k)':>12} {'equal':>6} "
        f"{'GETs/records':>13}"
    )
    for lv in s3["levels"]:
        same = "yes" if lv["server_bytes"] == lv["bytes_at"] else "NO"
        print(
            f"{lv['level']:>5} {lv['server_bytes']:>15,} {lv['bytes_at']:>12,} {same:>6} "
            f"{lv['gets']:>6}/{lv['records']}"
        )
    d = s3["delta"]
    same = "yes" if d["delta_bytes"] == d["bytes_at_10"] else "NO"
    print(
        f"\nlevels 1->3->5->10 through the cache: {int(d['delta_bytes']):,} bytes "
        f"(= bytes_at(10) {d['bytes_at_10']:,}: {same}), "
        f"{d['delta_seconds']:.3f} s; four cold reads: {int(d['cold_bytes']):,} bytes, "
        f"{d['cold_seconds']:.3f} s; bytes ratio {d['cold_bytes'] / d['delta_bytes']:.2f}x, "
        f"time ratio {d['cold_seconds'] / d['delta_seconds']:.2f}x"
    )
    print(
        f"\n{'read + decode':>14} {'local disk img/s':>17} {'loopback S3 img/s':>18} {'S3/disk':>8}"
    )
    for r in s3["read"]:
        what = f"level {r['level']}" + (f" @{r['size']}px" if r["size"] else " full")
        print(
            f"{what:>14} {r['disk_images_per_s']:>17.1f} {r['s3_images_per_s']:>18.1f} "
            f"{r['ratio']:>7.2f}x"
        )
    result = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "images": n,
        "source": str(src),
        "record_size": args.record_size,
        "repeat": args.repeat,
        "encode": enc,
        "s3": s3,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "remote.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {HERE / 'results' / 'remote.json'}")


if __name__ == "__main__":
    main()
