"""Shuffled epochs through a bounded cache: PCR, LitData and MosaicML Streaming, in one run.

Data: ``--limit`` photos of a folder of class folders (default 600 of
../shared/data/flowers5/train, picked evenly across the classes as
bench_peers.py picks them), written as bench_peers.py writes them, records
and shards all of the sources' bytes / ``--records``:

* a PCR dataset (``encode_dataset``);
* LitData chunks (``litdata.optimize``) of the original JPEG bytes;
* MosaicML MDS shards (``streaming.MDSWriter``) of the original JPEG bytes.

Each tool then reads ``--epochs`` shuffled epochs over a link of ``--rate``
MB/s (one token bucket shared by every connection, bench/_link_server.py),
decoding every image with the same ``pcr_explore.jpeg.decode`` to
``--size`` x ``--size`` RGB, through a cache held to a share (``--share``,
default 0.30) of the dataset:

* PCR: served by :class:`_link_server.LinkServer` (HTTP, ``Range``) and read
  with ``open_dataset(url, cache_dir=<fresh folder>, cache_max_bytes=share x
  bytes_at(level))``, ``ds.iter(level, size=..., shuffle=True, seed=epoch)``,
  at each of ``--levels``, each level with a fresh cache folder. With
  ``--against DIR`` another checkout's package is read the same way in the
  same run (``git archive ee65177 pcr_explore | tar -x -C /tmp/before``: the
  least recently used eviction, before the cache kept a fixed part of a
  dataset that cannot fit), so the table shows both policies side by side;
* LitData: the chunks in moto's S3 server (tests/_loopback.py's
  ``s3_server``) behind :class:`_link_server.LinkProxy` (a TCP proxy through
  the same link), read with ``StreamingDataset(Dir(path=<fresh folder>,
  url="s3://..."), max_cache_size=<PCR's level-10 cache bytes>,
  shuffle=True)`` and ``set_epoch`` per epoch;
* MosaicML Streaming: the MDS shards in the same server behind the same kind
  of proxy, ``StreamingDataset(remote="s3://...", local=<fresh folder>,
  cache_limit=<the same bytes>, shuffle=True, batch_size=1)``, its other
  settings as shipped (``--mds-options`` adds keywords). Its default shuffle
  draws each sample from any shard, so with a cache of a few shards an epoch
  here fetches some 30x the shards' bytes, over two minutes at 10 MB/s: it
  reads ``--mds-epochs`` epochs (default 1; 3 to match the others). An epoch
  of any peer in which no image comes for 120 s ends there, and is marked.

Every pass runs in a process of its own (with the checkout's package first on
its path) that starts its own server or proxy and reads its byte counter
before and after each epoch: the bytes sent to the client (PCR: bodies; the
proxy: every byte of the answers, headers included, a few hundred bytes per
request). Per epoch: MB sent, images, images/s, and MB sent over the bytes
that cannot fit: the bytes of a whole epoch at that level (for LitData and
MDS: their chunks' or shards' bytes) minus the cache's size. Each later
epoch of a policy that keeps what it holds fetches about that; least
recently used, with shuffled epochs, about every byte.

Usage::

    python bench/bench_epochs.py [FOLDER] [--limit 600] [--records 16] [--rate 10]
        [--share 0.30] [--levels 5,10] [--epochs 3] [--size 224] [--against DIR]
        [--peers litdata,streaming] [--mds-epochs 1] [--mds-options JSON] [--quick]

Needs litdata and mosaicml-streaming, each without its declared
dependencies: ``pip install --no-deps litdata lightning-utilities obstore
tifffile`` (litdata's own requirements bring torchvision, and with it
another torch build) and ``pip install --no-deps "mosaicml-streaming>=0.7"``
(as ``make bench`` installs it); a missing peer is left out and named.
``--quick`` is a smoke run (120 photos). Prints a table and writes bench/results/epochs.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_peers import DEFAULT_SRC, import_streaming, pick_sources, write_all  # noqa: E402

OUT = HERE / "results" / "epochs.json"
MB = 1e6
BUCKET = "pcr"  # the bucket tests/_loopback.py's s3_server makes
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
PEERS = ("litdata", "streaming")
STALL_S = 120  # a peer's epoch in which no image comes for this long ends there


# -- writing ----------------------------------------------------------------------


def _litdata_item(item: tuple[str, int]) -> dict[str, Any]:
    """One LitData sample: the JPEG bytes and the label (module level: optimize pickles it)."""
    path, label = item
    return {"jpg": Path(path).read_bytes(), "cls": label}


def write_litdata(sources: list[tuple[Path, int, str]], out: Path, chunk_bytes: int) -> str:
    """The sources' JPEG bytes as LitData chunks in *out*, in the sources' order."""
    from litdata import optimize

    with warnings.catch_warnings():  # a photo larger than a chunk's target makes a larger chunk
        warnings.simplefilter("ignore", UserWarning)
        optimize(
            fn=_litdata_item,
            inputs=[(str(p), label) for p, label, _ in sources],
            output_dir=str(out),
            chunk_bytes=chunk_bytes,
            num_workers=1,
            reorder_files=False,
            verbose=False,
            mode="overwrite",
        )
    return str(out)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def upload(endpoint: str, folder: Path, prefix: str) -> int:
    """Every file of *folder* to s3://pcr/<prefix>/..., straight to the server: the bytes put."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    total = 0
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            s3.upload_file(str(p), BUCKET, f"{prefix}/{p.relative_to(folder).as_posix()}")
            total += p.stat().st_size
    return total


# -- the passes (each in a process of its own) ---------------------------------------


def _cache_bytes(folder: Path) -> int:
    """Bytes of the record prefixes in a PCR cache folder (what cache_max_bytes holds)."""
    if not folder.is_dir():
        return 0
    return sum(
        p.stat().st_size
        for d in folder.iterdir()
        if d.is_dir()
        for p in d.iterdir()
        if p.is_file() and p.name != "source.json" and not p.name.startswith(".")
    )


class Stalled(Exception):
    """No image came for the stall limit's seconds (raised in the main thread by SIGALRM)."""


def _stalled(signum: int, frame: Any) -> None:
    raise Stalled


def _epoch(
    images: Any,
    counter: Any,
    decode: Any,
    size: int,
    e: int,
    after: Any = None,
    stall_s: int = 0,
) -> dict[str, Any]:
    """One epoch: bytes the counter moved, images decoded, seconds, CPU seconds of this process.

    With *stall_s*, an epoch in which no image comes for that many seconds
    ends there, marked ``stalled`` (a reader waiting in a Python loop, as
    MosaicML Streaming's does, is interrupted by the alarm).
    """
    b0, c0, t0 = counter(), time.process_time(), time.perf_counter()
    n, stalled = 0, False
    if stall_s:
        signal.signal(signal.SIGALRM, _stalled)
        signal.alarm(stall_s)
    try:
        for data in images:
            if decode is not None:
                decode(data, size=(size, size), mode="RGB")
            n += 1
            if stall_s:
                signal.alarm(stall_s)
    except Stalled:
        stalled = True
    finally:
        signal.alarm(0)
    got = {
        "epoch": e,
        "bytes": counter() - b0,
        "images": n,
        "seconds": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
        "stalled": stalled,
    }
    if after is not None:
        got.update(after())
    return got


def pcr_pass(p: dict[str, Any]) -> dict[str, Any]:
    """Epochs at one level through a fresh bounded cache, over a LinkServer of this process."""
    from _link_server import LinkServer

    import pcr_explore
    from pcr_explore import open_dataset

    where = Path(pcr_explore.__file__).resolve()
    if Path(p["root"]).resolve() not in where.parents:
        raise RuntimeError(f"imported {where}, not the package of {p['root']}")
    level, size = p["level"], p["size"]
    local = open_dataset(p["pcr"])
    total = local.bytes_at(level)
    cap = int(p["share"] * total)
    cache = Path(p["cache"])
    with (
        LinkServer(Path(p["pcr"]).parent, rate=p["rate"], latency=0.0) as server,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        ds = open_dataset(
            f"{server.url}/{Path(p['pcr']).name}", cache_dir=cache, cache_max_bytes=cap
        )
        opened = server.counters()[0]
        epochs = []
        for e in range(1, p["epochs"] + 1):
            images = (
                0 for _ in ds.iter(level, size=(size, size), mode="RGB", shuffle=True, seed=e)
            )
            epochs.append(
                _epoch(
                    images,
                    lambda: server.counters()[0],
                    None,
                    size,
                    e,
                    lambda: {"cache_bytes": _cache_bytes(cache)},
                )
            )
    return {
        "package": str(where.parent),
        "level": level,
        "records": len(local.records),
        "dataset_bytes": total,
        "cache_max_bytes": cap,
        "cannot_fit": total - cap,
        "open_bytes": opened,
        "epochs": epochs,
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }


def litdata_pass(p: dict[str, Any]) -> dict[str, Any]:
    """LitData's StreamingDataset over s3://, behind a LinkProxy of this process."""
    from _link_server import LinkProxy

    from pcr_explore.jpeg import decode

    with LinkProxy(tuple(p["s3"]), rate=p["rate"]) as link:
        os.environ["AWS_ENDPOINT_URL"] = link.url
        os.environ["AWS_ENDPOINT_URL_S3"] = link.url
        import litdata
        import litdata.streaming.downloader as downloader
        from litdata import StreamingDataset
        from litdata.streaming.resolver import Dir

        # LitData reads chunks with obstore, which refuses an http:// endpoint unless told
        options = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
        if isinstance(options, dict):
            downloader._OBSTORE_CLIENT_OPTIONS = {**options, "allow_http": "true"}  # type: ignore[attr-defined]

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = StreamingDataset(
                input_dir=Dir(path=p["cache"], url=f"s3://{BUCKET}/{p['prefix']}"),
                max_cache_size=p["cap"],
                shuffle=True,
                storage_options={
                    "endpoint_url": link.url,
                    "aws_access_key_id": "testing",
                    "aws_secret_access_key": "testing",
                    "region_name": "us-east-1",
                },
            )
            opened = link.sent()
            epochs = []
            for e in range(1, p["epochs"] + 1):
                ds.set_epoch(e)
                epochs.append(
                    _epoch(
                        (x["jpg"] for x in ds),
                        link.sent,
                        decode,
                        p["size"],
                        e,
                        lambda: {"cache_bytes": folder_bytes(Path(p["cache"]))},
                        stall_s=p["stall_s"],
                    )
                )
    return {
        "version": litdata.__version__,
        "open_bytes": opened,
        "epochs": epochs,
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }


def streaming_pass(p: dict[str, Any]) -> dict[str, Any]:
    """MosaicML Streaming's StreamingDataset over s3://, behind a LinkProxy of this process."""
    from _link_server import LinkProxy

    from pcr_explore.jpeg import decode

    streaming, note = import_streaming()
    if streaming is None:
        raise RuntimeError(note)
    with contextlib.suppress(Exception):  # shared memory a stalled earlier run left
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
    with LinkProxy(tuple(p["s3"]), rate=p["rate"]) as link:
        os.environ["S3_ENDPOINT_URL"] = link.url
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = streaming.StreamingDataset(
                remote=f"s3://{BUCKET}/{p['prefix']}",
                local=p["cache"],
                cache_limit=p["cap"],
                shuffle=True,
                **p["options"],
            )
            opened = link.sent()
            epochs = []
            for e in range(1, p["epochs"] + 1):
                got = _epoch(
                    (x["jpg"] for x in ds),
                    link.sent,
                    decode,
                    p["size"],
                    e,
                    lambda: {"cache_bytes": folder_bytes(Path(p["cache"]))},
                    stall_s=p["stall_s"],
                )
                epochs.append(got)
                if got["stalled"]:
                    break
    return {
        "version": streaming.__version__,
        "import_note": note,
        "open_bytes": opened,
        "epochs": epochs,
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }


PASSES = {"pcr": pcr_pass, "litdata": litdata_pass, "streaming": streaming_pass}


def run_pass(kind: str, root: Path, params: dict[str, Any], cwd: Path, env: dict[str, str]) -> Any:
    """PASSES[kind](params) in a fresh process that imports pcr_explore from *root*."""
    code = (
        "import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import bench_epochs as b; "
        "print('\\n' + json.dumps(b.PASSES[sys.argv[3]](json.loads(sys.argv[4]))), flush=True); "
        "import os; os._exit(0)"  # a stalled reader's threads would hold the exit
    )
    argv = [sys.executable, "-c", code, str(root), str(HERE), kind, json.dumps(params)]
    env = {**os.environ, **env, "PYTHONPATH": str(root)}
    got = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if got.returncode:
        tail = (got.stderr or got.stdout).strip().splitlines()[-15:]
        return "\n".join(tail) or f"exit status {got.returncode}"
    return json.loads(got.stdout.strip().splitlines()[-1])


# -- main -------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--limit", type=int, help="source photos (default 600; --quick 120)")
    ap.add_argument(
        "--records", type=int, default=16, help="records, chunks and shards (sources' bytes / N)"
    )
    ap.add_argument("--rate", type=float, default=10.0, help="the link's MB/s (default 10)")
    ap.add_argument("--share", type=float, default=0.30, help="cache size / dataset bytes")
    ap.add_argument("--levels", default="5,10", help="PCR levels (default 5,10)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--size", type=int, default=224, help="decoded size, px square")
    ap.add_argument("--against", type=Path, help="another checkout, read as 'before'")
    ap.add_argument("--peers", default=",".join(PEERS), help="peers to read (empty: none)")
    ap.add_argument(
        "--mds-options",
        default='{"batch_size": 1}',
        help="MosaicML StreamingDataset's other keywords, JSON (default: batch_size 1, so "
        "predownload is its least, 8 samples)",
    )
    ap.add_argument(
        "--mds-epochs",
        type=int,
        default=1,
        help="MosaicML Streaming's epochs (default 1: with its default shuffle an epoch here "
        "fetches some 30x its shards' bytes, over 2 minutes at 10 MB/s; 3 to match the others)",
    )
    ap.add_argument("--out", type=Path, default=OUT, help=f"the JSON (default {OUT})")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 120 photos")
    args = ap.parse_args()
    if args.limit is None:
        args.limit = 120 if args.quick else 600
    if not args.folder.is_dir():
        sys.exit(f"{args.folder}: not a folder of class folders of JPEGs")
    if args.against is not None and not (args.against / "pcr_explore").is_dir():
        sys.exit(f"--against {args.against}: no pcr_explore package there")
    peers = [x for x in args.peers.split(",") if x]
    for x in peers:
        if x not in PEERS:
            sys.exit(f"--peers: {x!r} is none of {', '.join(PEERS)}")
    levels = [int(k) for k in args.levels.split(",")]
    rate = args.rate * MB
    roots = {"after": ROOT}
    if args.against is not None:
        roots = {"before": args.against.resolve(), **roots}
    load_before = os.getloadavg()
    sources = pick_sources(args.folder, args.limit)
    src_bytes = sum(p.stat().st_size for p, _, _ in sources)
    part = -(-src_bytes // args.records)
    work = Path(tempfile.mkdtemp(prefix="bench_epochs-"))
    t0 = time.perf_counter()
    left_out: dict[str, str] = {}
    results: dict[str, Any] = {"pcr": {}, "peers": {}}
    try:
        streaming = None
        if "streaming" in peers:
            streaming, note = import_streaming()
            if streaming is None:
                left_out["streaming"] = note
        written = write_all(sources, work, part, None, streaming, ["standard"])
        pcr = Path(written["pcr-standard"]["path"])
        served = work / "served"
        served.mkdir()
        pcr = pcr.rename(served / "pcr")
        if "litdata" in peers:
            try:
                written["litdata"] = write_litdata(sources, work / "litdata", part)
            except Exception as exc:  # noqa: BLE001 - left out, and said why
                left_out["litdata"] = f"litdata: {type(exc).__name__}: {exc}"
        print(f"written in {time.perf_counter() - t0:.0f} s", flush=True)
        from pcr_explore import open_dataset

        local = open_dataset(str(pcr))
        dataset = {
            "images": len(sources),
            "source_bytes": src_bytes,
            "records": len(local.records),
            "bytes_at_level": {k: local.bytes_at(k) for k in range(1, local.num_scans + 1)},
        }
        full_cap = int(args.share * local.bytes_at(None))
        for level in levels:
            for label, root in roots.items():
                params = {
                    "root": str(root),
                    "pcr": str(pcr),
                    "level": level,
                    "share": args.share,
                    "rate": rate,
                    "epochs": args.epochs,
                    "size": args.size,
                    "cache": str(work / f"cache-{label}-L{level}"),
                }
                got = run_pass("pcr", root, params, work, {})
                if isinstance(got, str):
                    raise RuntimeError(f"PCR level {level} ({label}) failed:\n{got}")
                results["pcr"][f"{label} L{level}"] = {"checkout": str(root), **got}
                print(f"  PCR {label} level {level} done ({time.perf_counter() - t0:.0f} s)")
        todo = [x for x in peers if x not in left_out]
        if todo:
            results["peers"] = run_peers(todo, written, work, full_cap, rate, args, left_out)
            for x, r in results["peers"].items():
                print(f"  {x} done: {r['dataset_bytes'] / MB:.1f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.perf_counter() - t0
    machine = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cores": len(os.sched_getaffinity(0)),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }
    report(args, dataset, results, left_out, machine, seconds, full_cap)


def run_peers(
    todo: list[str],
    written: dict[str, Any],
    work: Path,
    cap: int,
    rate: float,
    args: Any,
    left_out: dict[str, str],
) -> dict[str, Any]:
    """Each peer's epochs from moto's S3 server behind a throttled proxy."""
    sys.path.insert(0, str(ROOT / "tests"))
    from _loopback import s3_server

    out: dict[str, Any] = {}
    folders = {"litdata": written.get("litdata"), "streaming": written.get("mds")}
    with s3_server() as s3:
        host, port = s3.endpoint.rsplit("/", 1)[-1].split(":")
        env = dict(CREDENTIALS)
        os.environ.update(CREDENTIALS)
        for x in todo:
            folder = Path(folders[x])
            total = upload(s3.endpoint, folder, x)
            index = sum(p.stat().st_size for p in folder.glob("index.json"))
            data = total - index
            params = {
                "s3": [host, int(port)],
                "prefix": x,
                "rate": rate,
                "cap": cap,
                "epochs": args.epochs,
                "size": args.size,
                "cache": str(work / f"cache-{x}"),
                "stall_s": STALL_S,
            }
            if x == "streaming":
                params["options"] = json.loads(args.mds_options)
                params["epochs"] = args.mds_epochs
            got = run_pass(x, ROOT, params, work, env)
            if isinstance(got, str):
                left_out[x] = f"{x} failed:\n{got}"
                continue
            out[x] = {
                "options": params.get("options"),
                **got,
                "dataset_bytes": data,
                "index_bytes": index,
                "cache_max_bytes": cap,
                "cannot_fit": data - cap,
            }
    return out


# -- the table ------------------------------------------------------------------------


def rows(results: dict[str, Any], images: int) -> list[dict[str, Any]]:
    out = []
    for name, r in results["pcr"].items():
        label, level = name.split()
        tool = "PCR, " + ("least recently used" if label == "before" else "keeps a fixed part")
        out += _rows(tool, level, r, images)
    names = {"litdata": "LitData", "streaming": "MosaicML Streaming"}
    for x, r in results["peers"].items():
        out += _rows(f"{names[x]} {r['version']}", "JPEG", r, images)
    return out


def _rows(tool: str, level: str, r: dict[str, Any], images: int) -> list[dict[str, Any]]:
    """A row per epoch; an epoch stopped early is extrapolated to every image (``whole``)."""
    return [
        {
            "tool": tool,
            "level": level,
            "epoch": e["epoch"],
            "mb": e["bytes"] / MB,
            "images": e["images"],
            "images_per_s": e["images"] / e["seconds"],
            "whole": e["images"] == images,
            "mb_epoch": e["bytes"] / MB * images / max(e["images"], 1),
            "of_cannot_fit": e["bytes"] * images / max(e["images"], 1) / r["cannot_fit"],
            "cache_mb": e.get("cache_bytes", 0) / MB,
            "dataset_mb": r["dataset_bytes"] / MB,
            "cap_mb": r["cache_max_bytes"] / MB,
        }
        for e in r["epochs"]
    ]


def report(
    args: Any,
    dataset: dict[str, Any],
    results: dict[str, Any],
    left_out: dict[str, str],
    machine: dict[str, Any],
    seconds: float,
    full_cap: int,
) -> None:
    cmd = "python " + " ".join(sys.argv)
    table = rows(results, dataset["images"])
    n = dataset["images"]
    print(
        f"\nmeasured on this machine ({machine['cores']} cores, load average before "
        f"{machine['load_average_before'][0]:.2f}): {cmd}\n"
        f"{n} photos from {args.folder} ({dataset['source_bytes'] / n / 1e3:.1f} kB each, "
        f"{dataset['source_bytes'] / MB:.1f} MB), {dataset['records']} PCR records (LitData "
        f"chunks and MDS shards of the same size); link {args.rate:g} MB/s; cache "
        f"{args.share:.2f} x the dataset at the level read (LitData, MDS: {full_cap / MB:.1f} "
        f"MB, PCR's at level 10); every image decoded to {args.size}x{args.size}; "
        f"{seconds:.0f} s in all\n"
        "MB = sent to the reader in the epoch; data MB = the dataset's bytes at the level "
        "(LitData: its chunks, MDS: its shards); cannot = data MB minus the cache's size "
        "(cache MB); x fit = MB per epoch / cannot; cached = the cache folder's MB after "
        "the epoch; "
        "~: an epoch that ended early (no image for "
        f"{STALL_S} s), MB per epoch extrapolated from its images to all\n"
    )
    head = (
        f"{'tool':<34} {'level':>5} {'epoch':>5} | {'MB':>7} {'images':>6} {'img/s':>6} "
        f"{'MB/epoch':>9} | {'data MB':>7} {'cache MB':>8} {'cannot':>6} {'x fit':>7} | "
        f"{'cached':>6}"
    )
    print(head)
    print("-" * len(head))
    last = None
    for r in table:
        if last is not None and last != (r["tool"], r["level"]):
            print()
        last = (r["tool"], r["level"])
        about = " " if r["whole"] else "~"
        print(
            f"{r['tool']:<34} {r['level']:>5} {r['epoch']:>5} | {r['mb']:>7.1f} "
            f"{r['images']:>6} {r['images_per_s']:>6.0f} {about}{r['mb_epoch']:>8.1f} | "
            f"{r['dataset_mb']:>7.1f} {r['cap_mb']:>8.1f} {r['dataset_mb'] - r['cap_mb']:>6.1f} "
            f"{about}{r['of_cannot_fit']:>5.2f}x | {r['cache_mb']:>6.1f}"
        )
    for why in left_out.values():
        print(f"\nleft out: {why}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": cmd,
                "note": "measured on this machine",
                "machine": machine,
                "args": {k: str(v) for k, v in vars(args).items()},
                "dataset": dataset,
                "seconds": seconds,
                "rows": table,
                "runs": results,
                "left_out": left_out,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"\nfigures measured on this machine with: {cmd}\nwrote {args.out}")


if __name__ == "__main__":
    main()
