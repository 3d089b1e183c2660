"""Benchmark the PyTorch adapter against WebDataset: direct reads and DataLoaders, in one run.

Data: ``--limit`` photos of a folder of class folders (default: all of
../shared/data/flowers5/train, baseline JPEGs, most 320x240 or 500x333),
written, as bench_peers.py writes them, as a PCR dataset and as WebDataset
tar shards of the original JPEG bytes, records and shards both of the
sources' bytes / 8. Every image is decoded by the same
``pcr_explore.jpeg.decode`` to one fixed RGB size, so that the DataLoaders
can batch them:

* ``1/8``: 40x30 (DCT scale 1/8 for every photo, then a small resize);
* ``224``: 224x224;
* ``full``: 320x240 (the full decode of every photo, no DCT scaling; larger
  photos are then shrunk to it).

Measured in the same run, per size and level (1, 5, 10), images/s as a
ratio to WebDataset:

* ``direct``: bench_peers.py's direct read: ``--workers`` processes (started
  before timing) each read their share of whole shards or records with the
  format's own reader (``wds.WebDataset``; ``PCRDataset.read_record``) and
  decode every image; the median of ``--repeat`` interleaved rounds;
* ``loader``: a full pass of a ``DataLoader`` with ``--workers`` persistent
  workers and batches of ``--batch`` made in the workers, WebDataset's
  (``wds.WebDataset(shards).map(decode).batched(B)``) against the adapter's
  (``torch_dataset(..., batch_size=B)``); a first pass of each starts its
  workers and is not timed, then the timed passes go round the loaders of a
  size, ``--repeat`` rounds, medians.

Each figure comes with the CPU time per image of the processes that did the
work (the readers; for a DataLoader its workers and the main process), and
its ratio (``cost``: WebDataset's CPU ms per image over PCR's). On a machine
shared with other work, images/s move with the load while CPU time per
image stays close to what the work costs.

And the shards (``--shards``): the same photos as a dataset of 2 records,
read by a DataLoader with 4 workers at level 5, with whole records dealt to
the workers (``whole_records=True``, as before: two workers idle) and with
image ranges (the default: each worker a quarter); and a dataset of one
record read by 2 workers. On a machine with fewer cores than workers the
idle workers cost little, so the ratio there mostly shows the cores.

Usage::

    python bench/bench_loader.py [FOLDER] [--limit 1200] [--sizes 1/8,224,full]
        [--scans 1,5,10] [--workers 2] [--batch 64] [--repeat 2] [--no-shards]

Prints both ratios side by side and writes bench/results/loader.json.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_peers import DEFAULT_SRC, pick_sources, write_all

from pcr_explore import encode_dataset, open_dataset
from pcr_explore._json import to_json
from pcr_explore.jpeg import decode, decoder_name
from pcr_explore.read.loader import torch_dataset

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "loader.json"
SIZES = {"1/8": (40, 30), "224": (224, 224), "full": (320, 240)}


class _WdsDecode:
    """Decode a WebDataset sample like the adapter does (picklable, for forkserver workers)."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size

    def __call__(self, sample: dict[str, Any]) -> tuple[Any, int]:
        import torch

        arr = decode(sample["jpg"], size=self.size, mode="RGB")
        return torch.from_numpy(arr).permute(2, 0, 1), int(sample["cls"])


def _collate(items: list[tuple[Any, int]]) -> tuple[Any, Any]:
    import torch

    return torch.stack([x for x, _ in items]), torch.as_tensor([y for _, y in items])


# -- direct reads (in worker processes, as bench_peers.py reads) ------------------


def read_part(task: tuple[str, Any, int, int, int | None, tuple[int, int]]) -> tuple[int, float]:
    """Read and decode one worker's share of whole shards or records; (images, CPU seconds)."""
    kind, where, part, parts, level, size = task
    n, c0 = 0, time.process_time()
    if kind == "wds":
        import webdataset as wds

        ds = wds.WebDataset(where[part::parts], shardshuffle=False, workersplitter=None)
        for sample in ds:
            decode(sample["jpg"], size=size, mode="RGB", source=sample["__key__"])
            n += 1
        return n, time.process_time() - c0
    pcr = open_dataset(where)
    for r in range(part, len(pcr.records), parts):
        prefix = pcr.read_record(r, level)
        for j in range(prefix.header.num_images):
            decode(prefix.jpeg_bytes(j), size=size, mode="RGB", source=f"{where} record {r}")
            n += 1
    return n, time.process_time() - c0


def _warm(_: int) -> str:
    return decoder_name()


def direct(
    pool: Any,
    workers: int,
    cases: list[tuple[str, str, Any, int | None]],
    sizes: dict[str, tuple[int, int]],
    rounds: int,
) -> dict[tuple[str, str], tuple[float, float]]:
    """(images/s, CPU ms/image) of each (case, size): medians of *rounds* interleaved rounds."""
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for label, size in sizes.items():
            for name, kind, where, level in cases:
                tasks = [(kind, where, i, workers, level, size) for i in range(workers)]
                t = time.perf_counter()
                parts = pool.map(read_part, tasks)
                n = sum(p[0] for p in parts)
                cpu = sum(p[1] for p in parts) * 1e3 / n
                runs.setdefault((name, label), []).append((n / (time.perf_counter() - t), cpu))
    return {k: _medians(v) for k, v in runs.items()}


def _medians(values: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)


# -- DataLoaders ----------------------------------------------------------------


def _cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of the processes *pids* so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def interleaved(loaders: dict[str, Any], repeat: int) -> dict[str, tuple[float, float]]:
    """(images/s, CPU ms/image) of a full pass of each DataLoader: medians of *repeat* rounds.

    A first pass of each starts its persistent workers and is not timed; the
    timed passes go round the loaders, so a load that comes and goes on a
    shared machine falls on all alike. The CPU time is the workers' and the
    main process's.
    """
    pids = {}
    for name, loader in loaders.items():
        sum(len(y) for _, y in loader)
        pids[name] = [w.pid for w in loader._iterator._workers]
    runs: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeat):
        for name, loader in loaders.items():
            c0, m0, t0 = _cpu_seconds(pids[name]), time.process_time(), time.perf_counter()
            n = sum(len(y) for _, y in loader)
            wall = time.perf_counter() - t0
            cpu = _cpu_seconds(pids[name]) - c0 + time.process_time() - m0
            runs.setdefault(name, []).append((n / wall, cpu * 1e3 / n))
    return {name: _medians(v) for name, v in runs.items()}


def _loader(ds: Any, workers: int) -> Any:
    from torch.utils.data import DataLoader

    return DataLoader(
        ds,
        batch_size=None,
        num_workers=workers,
        persistent_workers=True,
        multiprocessing_context="forkserver",
    )


def loaders(
    shards: list[str],
    pcr: str,
    scans: list[int],
    sizes: dict[str, tuple[int, int]],
    workers: int,
    batch: int,
    repeat: int,
) -> dict[tuple[str, str], tuple[float, float]]:
    """WebDataset's DataLoader and the adapter's, batches made in the workers, per size."""
    import webdataset as wds

    out = {}
    for label, size in sizes.items():
        ds = (
            wds.WebDataset(shards, shardshuffle=False, workersplitter=wds.split_by_worker)
            .map(_WdsDecode(size))
            .batched(batch, collation_fn=_collate)
        )
        made = {"wds": _loader(ds, workers)}
        for k in scans:
            tds = torch_dataset(pcr, scan=k, size=size, batch_size=batch)
            made[f"pcr L{k}"] = _loader(tds, workers)
        for name, v in interleaved(made, repeat).items():
            out[(name, label)] = v
        del made
        print(f"  loaders at {label} done", flush=True)
    return out


def shard_cases(folder: Path, work: Path, src_bytes: int, batch: int, repeat: int) -> list[dict]:
    """Whole-record shards against image ranges: 4 workers on 2 records, 2 workers on 1."""
    rows = []
    for records, workers in ((2, 4), (1, 2)):
        dst = work / f"pcr-{records}-records"
        encode_dataset(folder, dst, record_size=src_bytes // records + 1, workers=2, progress=False)
        assert len(open_dataset(str(dst)).records) == records
        for label in ("1/8", "224"):
            made = {
                str(whole): _loader(
                    torch_dataset(
                        str(dst), scan=5, size=SIZES[label], batch_size=batch, whole_records=whole
                    ),
                    workers,
                )
                for whole in (True, False)
            }
            got = interleaved(made, repeat)
            del made
            rows.append(
                {
                    "records": records,
                    "workers": workers,
                    "size": label,
                    "scan": 5,
                    "whole_records": got["True"][0],
                    "image_ranges": got["False"][0],
                    "ratio": got["False"][0] / got["True"][0],
                    "cpu_ms_whole_records": got["True"][1],
                    "cpu_ms_image_ranges": got["False"][1],
                }
            )
            r = rows[-1]
            print(
                f"  {records} record(s), {workers} workers, {label}: whole records "
                f"{r['whole_records']:.0f}, image ranges {r['image_ranges']:.0f} img/s "
                f"({r['ratio']:.2f}x)",
                flush=True,
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--limit", type=int, default=1200, help="source photos (default 1200)")
    ap.add_argument("--sizes", default="1/8,224,full")
    ap.add_argument("--scans", default="1,5,10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-shards", action="store_true", help="leave out the shard comparison")
    args = ap.parse_args()
    sizes = {k: SIZES[k] for k in args.sizes.split(",")}
    scans = [int(s) for s in args.scans.split(",")]
    import torch
    import webdataset as wds

    torch.set_num_threads(1)
    sources = pick_sources(args.folder, args.limit)
    src_bytes = sum(p.stat().st_size for p, _, _ in sources)
    work = Path(tempfile.mkdtemp(prefix="bench_loader-"))
    t0 = time.perf_counter()
    try:
        written = write_all(sources, work, -(-src_bytes // 8), wds, None, ["standard"])
        pcr, shards = written["pcr-standard"]["path"], written["wds"]
        cases = [("wds", "wds", shards, None)]
        cases += [(f"pcr L{k}", "pcr", pcr, k) for k in scans]
        with mp.get_context("fork").Pool(args.workers) as pool:
            used = sorted(set(pool.map(_warm, range(args.workers))))
            read = direct(pool, args.workers, cases, sizes, args.repeat)
        print("direct reads done", flush=True)
        dl = loaders(shards, pcr, scans, sizes, args.workers, args.batch, args.repeat)
        split = (
            []
            if args.no_shards
            else shard_cases(work / "folder", work, src_bytes, args.batch, args.repeat)
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    took = time.perf_counter() - t0
    report(args, sources, src_bytes, used, sizes, scans, read, dl, split, took)


def report(
    args: Any,
    sources: list[Any],
    src_bytes: int,
    used: list[str],
    sizes: dict[str, tuple[int, int]],
    scans: list[int],
    read: dict[tuple[str, str], float],
    dl: dict[tuple[str, str], float],
    split: list[dict],
    seconds: float,
) -> None:
    """Print the two ratios side by side and the shard comparison; write the JSON."""
    cmd = "python " + " ".join(sys.argv)
    print(
        f"\nmeasured on this machine ({os.cpu_count()} CPUs, shared): {cmd}\n"
        f"{len(sources)} photos from {args.folder} ({src_bytes / len(sources) / 1e3:.1f} kB "
        f"each), records and shards of {src_bytes / 8e6:.1f} MB; decoder {', '.join(used)}; "
        f"{args.workers} workers, batches of {args.batch}; {seconds:.0f} s in all\n"
    )
    print(
        "images/s (wall, shared machine) and CPU ms/image (workers + main process); ratios "
        "PCR / WebDataset: speed = images/s ratio, cost = WebDataset CPU / PCR CPU"
    )
    print(
        f"{'size':>5} {'level':>5} | {'direct img/s':>12} {'ms/img':>7} {'speed':>6} {'cost':>6} "
        f"| {'loader img/s':>12} {'ms/img':>7} {'speed':>6} {'cost':>6}"
    )
    rows = []
    for label in sizes:
        (rw, cw), (lw, lc) = read[("wds", label)], dl[("wds", label)]
        print(f"{label:>5} {'wds':>5} | {rw:>12.0f} {cw:>7.2f} {'':>13} | {lw:>12.0f} {lc:>7.2f}")
        for k in scans:
            (r, c), (li, lcpu) = read[(f"pcr L{k}", label)], dl[(f"pcr L{k}", label)]
            row = {
                "size": label,
                "scan": k,
                "direct_images_per_s": r,
                "direct_cpu_ms": c,
                "direct_wds_images_per_s": rw,
                "direct_wds_cpu_ms": cw,
                "direct_ratio": r / rw,
                "direct_cpu_ratio": cw / c,
                "loader_images_per_s": li,
                "loader_cpu_ms": lcpu,
                "loader_wds_images_per_s": lw,
                "loader_wds_cpu_ms": lc,
                "loader_ratio": li / lw,
                "loader_cpu_ratio": lc / lcpu,
            }
            rows.append(row)
            print(
                f"{label:>5} {k:>5} | {r:>12.0f} {c:>7.2f} {r / rw:>5.2f}x {cw / c:>5.2f}x "
                f"| {li:>12.0f} {lcpu:>7.2f} {li / lw:>5.2f}x {lc / lcpu:>5.2f}x"
            )
    if split:
        print("\nshards, level 5, batches made in the workers: images/s")
        print(
            f"{'records':>7} {'workers':>7} {'size':>5} {'whole records':>13} "
            f"{'image ranges':>12} {'ratio':>6} {'CPU ms/img whole, ranges':>25}"
        )
        for r in split:
            print(
                f"{r['records']:>7} {r['workers']:>7} {r['size']:>5} "
                f"{r['whole_records']:>13.0f} {r['image_ranges']:>12.0f} {r['ratio']:>5.2f}x "
                f"{r['cpu_ms_whole_records']:>12.2f} {r['cpu_ms_image_ranges']:>12.2f}"
            )
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        to_json(
            {
                "command": cmd,
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                "args": {k: str(v) for k, v in vars(args).items()},
                "images": len(sources),
                "source_bytes": src_bytes,
                "decoder": used,
                "sizes": {k: list(v) for k, v in sizes.items()},
                "rows": rows,
                "shards": split,
            }
        )
        + "\n"
    )
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
