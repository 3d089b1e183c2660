"""Benchmark reading over a slow network link: the PyTorch adapter against WebDataset, in one run.

Data: ``--limit`` photos of a folder of class folders (default 600 of
../shared/data/flowers5/train, baseline JPEGs), written as bench_loader.py
writes them: a PCR dataset (``encode_dataset``) and WebDataset tar shards of
the original JPEG bytes, records and shards both of the sources' bytes / 8.

Both are read over HTTP/1.1 from one loopback server (bench/_link_server.py,
a process of its own) that models a link: ``--rate`` bytes/s shared by every
connection (one token bucket; bodies go out in 16 kB chunks, each waiting
for its slot), ``--latency-ms`` before each answer, and a count of the body
bytes it sent and the requests it answered.

* PCR: ``torch_dataset(url, scan=k, size=(s, s), batch_size=B,
  shuffle=True)`` in a ``DataLoader(ds, batch_size=None, num_workers=2,
  persistent_workers=True)`` (the reader's own HTTP client), at levels
  ``--scans``;
* WebDataset: ``wds.WebDataset(shard_urls, shardshuffle=False)``, each
  image decoded by the same ``pcr_explore.jpeg.decode(data, size=(s, s),
  mode="RGB")``, ``.batched(B)``, in a DataLoader of its own with 2
  workers (webdataset fetches http URLs with a ``curl`` subprocess per
  shard, as its users get).

Conditions, per size (``--sizes``): the link at each ``--rate`` and
unthrottled (``none``: the latency only), on quiet cores and on cores kept
busy by ``--busy`` processes spinning in pure-Python loops (started before
the busy rows, stopped after, the same for both sides). Each loader makes a
first pass that starts its workers, not timed; then ``--repeat`` rounds go
round every rate and loader, medians.

Per row:

* images/s; MB/s the server sent in the pass; bytes per image (server count
  / images delivered);
* the link ceiling (rate / bytes per image, images/s) and the share of it
  reached;
* CPU ms per image: the DataLoader's workers (with the curl processes they
  started and reaped) and the main process; the server's is apart (JSON);
* the CPU ceiling: cores / CPU s per image of the same loader's unthrottled
  pass on quiet cores; on busy cores, times the share of the cores the
  benchmark's processes got there: the most that any loader's processes
  used (CPU s / wall s / cores) in an unthrottled pass on the busy cores.
  The unthrottled rows are thus the calibration; each row's own cores used
  is in the JSON, and so is what two CPU-bound probe processes got of the
  cores before and after each load's passes (a check that quiet was quiet);
* the share of min(link ceiling, CPU ceiling) reached, and the ratio to
  WebDataset's images/s in the same condition.

The cache (``--no-cache`` leaves it out): the PCR dataset read in this
process over the link at the first rate, through ``open_dataset(url,
cache_dir=..., cache_max_bytes=0.55 x the dataset's bytes)``: one pass at
level 10, then two shuffled passes at level 5. Reported: the bytes the
server sent for the second level-5 pass as a share of the first, for the
cache as pcr_explore/storage/cache.py has it (prefixes above the level just
read first trimmed to it, then deleted whole) and for
whole-record eviction (the baseline: a subclass whose eviction keeps every
level, so it only deletes whole; checked to trim nothing), same run, each
with a cache folder of its own and a dataset of ``--cache-records`` records.

Usage::

    python bench/bench_link.py [FOLDER] [--limit 600] [--shards 8] [--rate 5,20] [--sizes 64,224]
        [--scans 1,3,5,10] [--batch 64] [--repeat 2] [--busy 6] [--latency-ms 10]
        [--read-ahead BYTES] [--probe-s 2] [--no-cache] [--cache-records 24] [--quick]

``--quick`` is a smoke run (60 photos, 5 MB/s, 64 px, levels 1 and 10, one
round). Prints a table and writes bench/results/link.json.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _link_server import LinkServer
from bench_loader import _collate, _loader, _WdsDecode
from bench_peers import DEFAULT_SRC, pick_sources, write_all

from pcr_explore import encode_dataset, open_dataset
from pcr_explore._json import to_json
from pcr_explore.jpeg import decoder_name
from pcr_explore.read import torch_dataset

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "link.json"
MB = 1e6
FULL = {
    "limit": 600,
    "rate": "5,20",
    "sizes": "64,224",
    "scans": "1,3,5,10",
    "repeat": 2,
    "probe_s": 2.0,
}
QUICK = {"limit": 60, "rate": "5", "sizes": "64", "scans": "1,10", "repeat": 1, "probe_s": 1.0}
CACHE_SHARE = 0.55
SPIN = "while True:\n    pass\n"
PROBE = (
    "import sys, time\n"
    "w, c = time.perf_counter(), time.process_time()\n"
    "while time.perf_counter() - w < float(sys.argv[1]):\n"
    "    pass\n"
    "print(time.process_time() - c, time.perf_counter() - w)\n"
)


# -- CPU time -------------------------------------------------------------------


def _cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of *pids* so far, with their reaped children's and their live children's.

    A DataLoader worker of WebDataset starts a curl per shard and reaps it, so
    curl's time lands in the worker's children times; one still running is
    counted directly. The parent is read before its children: a child reaped
    in between is then missed (a few ms), never counted twice.
    """
    import psutil

    total = 0.0
    for pid in pids:
        p = psutil.Process(pid)
        t = p.cpu_times()
        total += t.user + t.system + t.children_user + t.children_system
        for c in p.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                ct = c.cpu_times()
                total += ct.user + ct.system
    return total


def _server_cpu(server: LinkServer) -> float:
    import psutil

    t = psutil.Process(server.pid).cpu_times()
    return t.user + t.system


# -- passes ---------------------------------------------------------------------


def one_pass(loader: Any, pids: list[int], server: LinkServer, expect: int) -> dict[str, float]:
    """A full pass of *loader*: images, seconds, CPU seconds, bytes and requests at the server."""
    b0, r0 = server.counters()
    s0 = _server_cpu(server)
    c0, m0, t0 = _cpu_seconds(pids), time.process_time(), time.perf_counter()
    n = sum(len(y) for _, y in loader)
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds(pids) - c0 + time.process_time() - m0
    b1, r1 = server.counters()
    if n != expect:
        raise RuntimeError(f"a pass delivered {n} images, expected {expect}")
    return {
        "images": n,
        "seconds": wall,
        "cpu_s": cpu,
        "bytes": b1 - b0,
        "requests": r1 - r0,
        "server_cpu_s": _server_cpu(server) - s0,
    }


class Spinners:
    """*k* processes spinning on a pure-Python loop while the block runs."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Spinners:
        self.procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(self.k)]
        time.sleep(0.5)  # running before the first pass starts
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait()


def core_share(n: int, seconds: float, cores: int) -> float:
    """The share of the cores *n* CPU-bound processes of ours get now: CPU s / wall s / cores."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE, str(seconds)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(n)
    ]
    got = [tuple(float(v) for v in p.communicate()[0].split()) for p in procs]
    return sum(cpu / wall for cpu, wall in got) / cores


def takes(path: str, extra: dict[str, Any]) -> bool:
    """Whether torch_dataset takes the keywords *extra* (named, or among its ``**options``)."""
    try:
        torch_dataset(path, scan=1, **extra)
    except TypeError:
        return False
    return True


def make_loaders(
    server: LinkServer,
    shards: list[str],
    scans: list[int],
    size: int,
    batch: int,
    pcr_extra: dict[str, Any],
) -> dict[str, tuple[Any, Any]]:
    """name -> (DataLoader, PCR dataset or None): WebDataset's and the adapter's per level."""
    import webdataset as wds

    urls = [f"{server.url}/wds/{Path(s).name}" for s in shards]
    ds = (
        wds.WebDataset(urls, shardshuffle=False)
        .map(_WdsDecode((size, size)))
        .batched(batch, collation_fn=_collate)
    )
    made: dict[str, tuple[Any, Any]] = {"webdataset": (_loader(ds, 2), None)}
    for k in scans:
        tds = torch_dataset(
            f"{server.url}/pcr-standard",
            scan=k,
            size=(size, size),
            batch_size=batch,
            shuffle=True,
            **pcr_extra,
        )
        made[f"L{k}"] = (_loader(tds, 2), tds)
    return made


def run_size(
    server: LinkServer,
    shards: list[str],
    scans: list[int],
    size: int,
    rates: list[float],
    args: Any,
    pcr_extra: dict[str, Any],
    expect: int,
    cores: int,
) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """Every pass at one size, as (rate, load, loader) with its timed passes; the probes' shares.

    Before and after each load's passes, two CPU-bound probe processes (as
    many as a DataLoader's workers) measure the share of the cores the
    benchmark's processes get in that condition.
    """
    t0 = time.perf_counter()
    made = make_loaders(server, shards, scans, size, args.batch, pcr_extra)
    pids: dict[str, list[int]] = {}
    server.set_rate(0)
    for name, (loader, _) in made.items():  # starts the persistent workers; not timed
        sum(len(y) for _, y in loader)
        pids[name] = [w.pid for w in loader._iterator._workers]
    runs: dict[tuple[float, str, str], list[dict[str, float]]] = {}
    shares: dict[str, list[float]] = {}
    epoch = 1
    loads = [("quiet", 0)] + ([("busy", args.busy)] if args.busy else [])
    for load, spinners in loads:
        with Spinners(spinners):
            shares[load] = [core_share(2, args.probe_s, cores)]
            for _ in range(args.repeat):
                for rate in [0.0, *rates]:
                    server.set_rate(rate)
                    for name, (loader, tds) in made.items():
                        if tds is not None:
                            tds.set_epoch(epoch)  # a new shuffle, as in training
                        got = one_pass(loader, pids[name], server, expect)
                        runs.setdefault((rate, load, name), []).append(got)
                    epoch += 1
            shares[load].append(core_share(2, args.probe_s, cores))
        print(f"  {size} px, {load} cores done ({time.perf_counter() - t0:.0f} s)", flush=True)
    del made
    server.set_rate(0)
    raw = [
        {"rate": rate, "load": load, "size": size, "loader": name, "passes": passes}
        for (rate, load, name), passes in runs.items()
    ]
    return raw, shares


# -- the figures ----------------------------------------------------------------


def figures(
    raw: list[dict[str, Any]],
    shares: dict[int, dict[str, list[float]]],
    cores: int,
    manifest_bytes: dict[int, int],
    images: int,
) -> list[dict[str, Any]]:
    """Medians per row, the ceilings from the unthrottled rows, and the ratios to WebDataset."""
    med = statistics.median
    rows = []
    for r in raw:
        p = r["passes"]
        rows.append(
            {
                **{k: r[k] for k in ("rate", "load", "size", "loader")},
                "images_per_s": med(x["images"] / x["seconds"] for x in p),
                "mb_per_s": med(x["bytes"] / x["seconds"] / MB for x in p),
                "bytes_per_image": med(x["bytes"] / x["images"] for x in p),
                "requests_per_pass": med(x["requests"] for x in p),
                "cpu_ms_per_image": med(x["cpu_s"] * 1e3 / x["images"] for x in p),
                "cores_used": med(x["cpu_s"] / x["seconds"] for x in p),
                "server_cpu_ms_per_image": med(x["server_cpu_s"] * 1e3 / x["images"] for x in p),
                "passes": p,
            }
        )
    rows.sort(
        key=lambda r: (
            r["rate"] == 0,  # the unthrottled rows last
            r["rate"],
            r["load"] != "quiet",
            r["size"],
            -1 if r["loader"] == "webdataset" else int(r["loader"][1:]),
        )
    )
    by = {(r["rate"], r["load"], r["size"], r["loader"]): r for r in rows}
    # the share of the cores the benchmark's processes got under each load: the most that any
    # loader's processes used in an unthrottled pass there (on quiet cores: every core)
    # (that loader's unthrottled row then reaches about 100% of its CPU ceiling by construction)
    top: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        r["sets_busy_share"] = False
        if r["rate"] == 0 and r["load"] != "quiet":
            key = (r["load"], r["size"])
            if key not in top or r["cores_used"] > top[key]["cores_used"]:
                top[key] = r
    got = {key: r["cores_used"] / cores for key, r in top.items()}
    for r in top.values():
        r["sets_busy_share"] = True
    for r in rows:
        quiet = by[(0.0, "quiet", r["size"], r["loader"])]
        cpu_s = quiet["cpu_ms_per_image"] / 1e3
        share = 1.0 if r["load"] == "quiet" else got[(r["load"], r["size"])]
        r["cores_share"] = share
        r["cores_share_probe"] = statistics.mean(shares[r["size"]][r["load"]])
        r["cpu_ceiling"] = cores * share / cpu_s
        r["link_ceiling"] = r["rate"] / r["bytes_per_image"] if r["rate"] else None
        r["of_link"] = r["images_per_s"] / r["link_ceiling"] if r["rate"] else None
        limit = min(r["cpu_ceiling"], r["link_ceiling"] or float("inf"))
        r["of_ceiling"] = r["images_per_s"] / limit
        if r["loader"] != "webdataset":
            r["manifest_bytes_per_image"] = manifest_bytes[int(r["loader"][1:])] / images
        wds = by[(r["rate"], r["load"], r["size"], "webdataset")]
        r["vs_webdataset"] = r["images_per_s"] / wds["images_per_s"]
    return rows


# -- the cache ------------------------------------------------------------------


def _whole_records() -> type:
    """PrefixCache whose room-making deletes prefixes whole and never trims one.

    ``PrefixCache._make_room`` first cuts this dataset's least recently used
    prefixes above the level being written back to it, each found by
    ``_cache_index.oldest_above``; with that finding none, only whole
    prefixes go. The run checks that the cache object is this class and that
    its ``trimmed`` count stays 0.
    """
    from unittest import mock

    from pcr_explore.storage import _cache_index
    from pcr_explore.storage.cache import PrefixCache

    class WholeRecords(PrefixCache):  # type: ignore[misc, valid-type]
        def _make_room(self, *args: Any, **kwargs: Any) -> Any:
            # inside the index's lock: no other thread of this process makes room meanwhile
            with mock.patch.object(_cache_index, "oldest_above", lambda *a: None):
                return super()._make_room(*args, **kwargs)

    return WholeRecords


def _counters(cache: Any) -> dict[str, int]:
    """The cache object's own counts (``evicted``, and any the class adds)."""
    return {
        k: v
        for k, v in vars(cache).items()
        if isinstance(v, int) and not isinstance(v, bool) and k != "max_bytes"
    }


def cache_run(url: str, server: LinkServer, folder: Path, max_bytes: int, size: int) -> dict:
    """One pass at level 10, two shuffled at level 5, through one bounded cache; server counts."""
    from pcr_explore.storage.cache import cache_usage

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = open_dataset(url, cache_dir=folder, cache_max_bytes=max_bytes)
        passes = []
        for scan, seed in ((ds.num_scans, 0), (5, 1), (5, 2)):
            b0, r0 = server.counters()
            t0 = time.perf_counter()
            n = sum(1 for _ in ds.iter(scan, size=size, shuffle=True, seed=seed))
            b1, r1 = server.counters()
            passes.append(
                {
                    "scan": scan,
                    "seed": seed,
                    "images": n,
                    "seconds": time.perf_counter() - t0,
                    "bytes": b1 - b0,
                    "requests": r1 - r0,
                    "cache_after": cache_usage(folder),
                }
            )
    return {
        "class": f"{type(ds.cache).__module__}.{type(ds.cache).__qualname__}",
        "passes": passes,
        "counters": _counters(ds.cache),
        "warnings": sorted({str(w.message) for w in caught}),
        "second_over_first": passes[2]["bytes"] / passes[1]["bytes"],
    }


def cache_section(
    server: LinkServer, rate: float, work: Path, records: int, size: int
) -> dict[str, Any]:
    """The cache as it is against whole-record eviction, same dataset, link and passes."""
    from unittest import mock

    import pcr_explore.read.reader as reader_mod

    src_bytes = sum(p.stat().st_size for p in (work / "folder").rglob("*.jp*g"))
    dst = work / "pcr-cache"
    encode_dataset(
        work / "folder", dst, record_size=-(-src_bytes // records), workers=2, progress=False
    )
    local = open_dataset(str(dst))
    total = local.bytes_at(None)
    max_bytes = int(CACHE_SHARE * total)
    url = f"{server.url}/{dst.name}"
    server.set_rate(rate)
    try:
        as_is = cache_run(url, server, work / "cache-as-is", max_bytes, size)
        with mock.patch.object(reader_mod, "PrefixCache", _whole_records()):
            whole = cache_run(url, server, work / "cache-whole", max_bytes, size)
    finally:
        server.set_rate(0)
    if "WholeRecords" not in whole["class"]:
        raise RuntimeError(f"the baseline read through {whole['class']}, not the subclass")
    trims = {k: v for k, v in whole["counters"].items() if "trim" in k and v}
    if trims:
        raise RuntimeError(f"the whole-record baseline trimmed prefixes: {trims}")
    print("  cache done", flush=True)
    return {
        "rate": rate,
        "records": len(local.records),
        "dataset_bytes": total,
        "bytes_at_level": {k: local.bytes_at(k) for k in range(1, local.num_scans + 1)},
        "max_bytes": max_bytes,
        "share": CACHE_SHARE,
        "size": size,
        "as_is": as_is,
        "whole_records": whole,
        "ratio": as_is["second_over_first"] / whole["second_over_first"]
        if whole["second_over_first"]
        else None,
    }


# -- main -----------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--limit", type=int, help=f"source photos (default {FULL['limit']})")
    ap.add_argument("--rate", help=f"link rates in MB/s, comma-separated (default {FULL['rate']})")
    ap.add_argument("--sizes", help=f"square sizes in px (default {FULL['sizes']})")
    ap.add_argument("--scans", help=f"PCR levels (default {FULL['scans']})")
    ap.add_argument("--repeat", type=int, help=f"timed rounds (default {FULL['repeat']})")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--busy", type=int, default=6, help="spinning processes (0: no busy rows)")
    ap.add_argument(
        "--probe-s",
        type=float,
        help=f"seconds of each core-share probe (default {FULL['probe_s']})",
    )
    ap.add_argument("--latency-ms", type=float, default=10.0, help="before each answer")
    ap.add_argument(
        "--read-ahead",
        help="torch_dataset(read_ahead=...), where it takes one (default: not given)",
    )
    ap.add_argument(
        "--shards",
        type=int,
        default=8,
        help="records (and WebDataset shards) the photos are split into (default 8: each "
        "DataLoader worker reads 4 per pass, so a pass's first and last record weigh much; "
        "a dataset of many records per worker, as in training, gives the steady state)",
    )
    ap.add_argument("--out", type=Path, default=OUT, help=f"the JSON (default {OUT})")
    ap.add_argument("--no-cache", action="store_true", help="leave out the cache section")
    ap.add_argument(
        "--cache-records", type=int, default=24, help="records of the cache section's dataset"
    )
    ap.add_argument("--quick", action="store_true", help="a smoke run: " + str(QUICK))
    args = ap.parse_args()
    for key in FULL:
        if getattr(args, key) is None:
            setattr(args, key, (QUICK if args.quick else FULL)[key])
    rates = [float(r) * MB for r in args.rate.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    scans = [int(s) for s in args.scans.split(",")]
    pcr_extra: dict[str, Any] = {}
    if args.read_ahead is not None:
        ra = args.read_ahead
        pcr_extra["read_ahead"] = int(ra) if ra.isdigit() else ra
        params = inspect.signature(torch_dataset).parameters.values()
        if not any(p.name == "read_ahead" or p.kind == p.VAR_KEYWORD for p in params):
            sys.exit("--read-ahead: this torch_dataset takes no read_ahead setting")
    if not args.folder.is_dir():
        sys.exit(f"{args.folder}: not a folder of class folders of JPEGs")
    import torch
    import webdataset as wds

    torch.set_num_threads(1)
    cores = len(os.sched_getaffinity(0))
    load_before = os.getloadavg()
    sources = pick_sources(args.folder, args.limit)
    src_bytes = sum(p.stat().st_size for p, _, _ in sources)
    work = Path(tempfile.mkdtemp(prefix="bench_link-"))
    t0 = time.perf_counter()
    raw: list[dict[str, Any]] = []
    shares: dict[int, dict[str, list[float]]] = {}
    cache: dict[str, Any] | None = None
    try:
        written = write_all(sources, work, -(-src_bytes // args.shards), wds, None, ["standard"])
        shards = written["wds"]
        local = open_dataset(written["pcr-standard"]["path"])
        if pcr_extra and not takes(local.url, pcr_extra):
            sys.exit("--read-ahead: this torch_dataset takes no read_ahead setting")
        manifest_bytes = {k: local.bytes_at(k) for k in scans}
        print(f"written in {time.perf_counter() - t0:.0f} s", flush=True)
        with LinkServer(work, latency=args.latency_ms / 1e3) as server:
            for size in sizes:
                got, shares[size] = run_size(
                    server, shards, scans, size, rates, args, pcr_extra, len(sources), cores
                )
                raw += got
            if not args.no_cache:
                cache = cache_section(server, rates[0], work, args.cache_records, sizes[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    took = time.perf_counter() - t0
    rows = figures(raw, shares, cores, manifest_bytes, len(sources))
    machine = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cores": cores,
        "cpu_count": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "torch": torch.__version__,
        "webdataset": getattr(wds, "__version__", "?"),
        "curl": subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split(
            "\n"
        )[0],
        "decoder": decoder_name(),
    }
    report(args, sources, src_bytes, rows, shares, cache, machine, manifest_bytes, pcr_extra, took)


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def report(
    args: Any,
    sources: list[Any],
    src_bytes: int,
    rows: list[dict[str, Any]],
    shares: dict[int, dict[str, list[float]]],
    cache: dict[str, Any] | None,
    machine: dict[str, Any],
    manifest_bytes: dict[int, int],
    pcr_extra: dict[str, Any],
    seconds: float,
) -> None:
    """Print the table and the cache comparison; write the JSON."""
    cmd = "python " + " ".join(sys.argv)
    n = len(sources)
    print(
        f"\nmeasured on this machine ({machine['cores']} cores, load average before "
        f"{machine['load_average_before'][0]:.2f}): {cmd}\n"
        f"{n} photos from {args.folder} ({src_bytes / n / 1e3:.1f} kB each); records and "
        f"shards of {src_bytes / args.shards / 1e6:.1f} MB ({args.shards}); "
        f"decoder {machine['decoder']}; 2 workers per "
        f"DataLoader, batches of {args.batch}; latency {args.latency_ms:g} ms per request; "
        f"busy = {args.busy} spinning processes; medians of {args.repeat} round(s); "
        f"{seconds:.0f} s in all" + (f"; torch_dataset{pcr_extra}" if pcr_extra else "")
    )
    probes = "; ".join(
        f"{size} px {load} {', '.join(f'{100 * v:.0f}%' for v in got)}"
        for size, by_load in shares.items()
        for load, got in by_load.items()
    )
    busy = {
        f"{r['size']} px": f"{100 * r['cores_share']:.0f}%" for r in rows if r["load"] == "busy"
    }
    print(
        "\nrate = the link's MB/s (none: unthrottled, latency only); link ceil = rate / bytes "
        "per image; CPU ceil = cores / CPU s per image of the same "
        "loader unthrottled on quiet cores, on busy cores times the share of the cores the "
        "benchmark's processes got there (the most any loader's used unthrottled: "
        f"{busy or '-'}); % ceil = of min(link, CPU); vs wds = images/s over WebDataset's in "
        "the same condition. Two CPU-bound probe processes got, before and after each load's "
        f"passes: {probes}. *: the row that set its load's share (so near 100% by "
        "construction)\n"
    )
    head = (
        f"{'rate':>5} {'load':>5} {'size':>4} {'level':>10} | {'img/s':>7} {'MB/s':>6} "
        f"{'kB/img':>7} {'link ceil':>9} {'% link':>6} | {'CPU ms':>6} {'CPU ceil':>8} "
        f"{'% ceil':>6} | {'vs wds':>6}"
    )
    print(head)
    print("-" * len(head))
    group = None
    for r in rows:
        if group is not None and group != (r["rate"], r["load"], r["size"]):
            print()
        group = (r["rate"], r["load"], r["size"])
        rate = "none" if not r["rate"] else f"{r['rate'] / MB:g}"
        of_link = "-" if r["of_link"] is None else f"{100 * r['of_link']:.0f}%"
        print(
            f"{rate:>5} {r['load']:>5} {r['size']:>4} {r['loader']:>10} | "
            f"{r['images_per_s']:>7.0f} {r['mb_per_s']:>6.2f} {r['bytes_per_image'] / 1e3:>7.1f} "
            f"{_f(r['link_ceiling'], '9.0f'):>9} {of_link:>6} | "
            f"{r['cpu_ms_per_image']:>6.2f} {r['cpu_ceiling']:>8.0f} "
            f"{100 * r['of_ceiling']:>5.0f}%{'*' if r['sets_busy_share'] else ' '}| "
            f"{r['vs_webdataset']:>5.2f}x"
        )
    if cache is not None:
        print_cache(cache)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        to_json(
            {
                "command": cmd,
                "note": "measured on this machine",
                "machine": machine,
                "args": {k: str(v) for k, v in vars(args).items()},
                "torch_dataset_extra": pcr_extra,
                "images": n,
                "source_bytes": src_bytes,
                "manifest_bytes_at_level": manifest_bytes,
                "core_share_probes": shares,
                "seconds": seconds,
                "rows": rows,
                "cache": cache,
            }
        )
        + "\n"
    )
    print(f"\nfigures measured on this machine with: {cmd}\nwrote {args.out}")


def print_cache(c: dict[str, Any]) -> None:
    print(
        f"\ncache: {c['records']} records, {c['dataset_bytes'] / MB:.1f} MB, cache_max_bytes "
        f"{c['share']:.2f} x that ({c['max_bytes'] / MB:.1f} MB), {c['rate'] / MB:g} MB/s link; "
        "one pass at level 10, two shuffled at level 5; MB the server sent"
    )
    print(f"{'eviction':>26} | {'L10':>6} {'L5 1st':>6} {'L5 2nd':>6} | {'2nd / 1st':>9} | counts")
    for label, key in (
        ("as in storage/cache.py", "as_is"),
        ("whole records (baseline)", "whole_records"),
    ):
        r = c[key]
        mb = [p["bytes"] / MB for p in r["passes"]]
        print(
            f"{label:>26} | {mb[0]:>6.2f} {mb[1]:>6.2f} {mb[2]:>6.2f} | "
            f"{100 * r['second_over_first']:>8.0f}% | {r['counters']}"
        )


if __name__ == "__main__":
    main()
