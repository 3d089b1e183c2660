"""Benchmark PCR against peer formats: WebDataset tars, MosaicML MDS shards, a folder.

The same source JPEGs (default: ../shared/data/flowers5/train, baseline JPEGs;
``--limit`` images picked evenly across its classes) are written as

* a PCR dataset (``pcr_explore.encode_dataset``: lossless progressive transcode);
* WebDataset tar shards of the original JPEG bytes (``webdataset.ShardWriter``);
* MosaicML MDS shards with a raw ``bytes`` column of the original JPEG bytes
  (``streaming.MDSWriter``);
* a plain folder (the sources themselves);

with shards and records of the same target size (the sources' bytes / 8, so
that two workers get four each). Each is then read back and decoded to uint8
arrays by worker processes, the way PyTorch ``DataLoader`` workers read these
formats: each of N processes (1 or 2; started once, before timing) reads its
own share of whole shards, records or files with the format's own reader and
decodes every image. Every format decodes with the same
``pcr_explore.jpeg.decode(data, size)``, so the same decoder and the same DCT
scaling serve all:

* ``full``: stored size;
* ``224``: longer side 224 pixels, aspect kept (DCT scaling where the image is
  at least twice that, then a BILINEAR resize);
* ``1/8``: longer side = stored longer side // 8 (DCT scale 1/8, then a resize
  of at most one pixel).

PCR is read at levels 1, 5 and all (10; with ``--scan-script``, where
``encode_dataset`` takes one, each named script's levels 1, 5 and all).
At 1/8 the decoder leaves out the AC scans that cannot change the pixels
(``pcr_explore.jpeg._eighth``); the rows ``pcr Lk, all scans`` read the standard
script's levels with that turned off (``PCR_SKIP_SCANS=0``), in the same run.

``--as-420`` first re-encodes the picked sources as baseline 4:2:0 JPEGs
(quality 90), the chroma layout of most camera and ImageNet JPEGs; the
flowers5 photos are stored 4:4:4, which leaves every AC scan out at 1/8,
while in 4:2:0 the chroma scans stay.
Figures: images/s (wall time of the pass), CPU ms/image (CPU time of the
worker processes; decode plus read), and bytes read per image (file bytes the
reader had to read; for PCR the record prefixes its reader fetched), each as a
ratio to WebDataset at the same size and worker count. Rounds are interleaved
over every case; figures are medians of ``--rounds`` rounds.

Storage-bandwidth crossover, per core: with one worker, WebDataset takes
``t_w`` CPU seconds and ``b_w`` bytes per image, PCR level k ``t_k`` and ``b_k``.
At a storage bandwidth of B bytes/s per core, one image costs

* read then decode (no overlap):   ``t + b / B``   -> PCR is faster while
  ``B < (b_w - b_k) / (t_k - t_w)``;
* read overlapped with decode:     ``max(t, b / B)`` -> PCR is faster while
  ``B < b_w / t_k``;

both only where ``t_k > t_w`` (otherwise PCR level k is faster at any
bandwidth).

Usage::

    python bench/bench_peers.py [FOLDER] [--limit 400] [--rounds 3] [--as-420]

Needs ``pip install pcr-explore[bench]`` (webdataset, mosaicml-streaming); a
missing peer is left out and named. Prints a table and writes
bench/results/bench_peers.json (with ``--as-420``: bench_peers_420.json).
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import multiprocessing as mp
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from pcr_explore import encode_dataset, open_dataset
from pcr_explore._json import to_json
from pcr_explore.jpeg import decode, decoder_name

try:  # the 1/8 rewrite's switch (absent before it existed)
    from pcr_explore.jpeg._decoders import SKIP_SCANS_VAR
except ImportError:
    SKIP_SCANS_VAR = "PCR_SKIP_SCANS"

HERE = Path(__file__).resolve().parent
DEFAULT_SRC = HERE.parent.parent / "shared" / "data" / "flowers5" / "train"
SIZES = ("full", "224", "1/8")
PCR_LEVELS = (1, 5, None)


# -- peers -------------------------------------------------------------------


def import_webdataset() -> Any:
    try:
        import webdataset

        return webdataset
    except ImportError:
        return None


def import_streaming() -> tuple[Any, str]:
    """``streaming`` (MosaicML), or None; and a note on how it was imported.

    mosaicml-streaming 0.13 imports torchvision and transformers when the
    package is imported, for dataset classes that MDS writing and reading never
    use. Where exactly those two are missing (or, like a CUDA-only torchvision
    wheel, do not load), empty stand-in modules take their place in this
    process only; any other missing module leaves MDS out.
    """
    note = ""
    for _ in range(40):
        try:
            import streaming

            return streaming, note
        except ModuleNotFoundError as exc:
            name = exc.name or ""
            if name.split(".")[0] not in ("torchvision", "transformers"):
                return None, f"mosaicml-streaming not importable: {exc}"
            _stand_in(name)
            note = "with stand-in torchvision/transformers modules (MDS uses neither)"
        except (ImportError, RuntimeError) as exc:
            m = re.search(r"cannot import name '(\w+)' from '([\w.]+)'", str(exc))
            top = m.group(2).split(".")[0] if m else ""
            if "torchvision" in str(exc) and not m:  # a torchvision that does not load
                for mod in [k for k in sys.modules if k.split(".")[0] == "torchvision"]:
                    del sys.modules[mod]
                _stand_in("torchvision")
                continue
            if top not in ("torchvision", "transformers"):
                return None, f"mosaicml-streaming not importable: {exc}"
            setattr(sys.modules[m.group(2)], m.group(1), type(m.group(1), (), {}))  # type: ignore[union-attr]
            note = "with stand-in torchvision/transformers modules (MDS uses neither)"
    return None, "mosaicml-streaming not importable"


def _stand_in(name: str) -> None:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        full = ".".join(parts[:i])
        if full not in sys.modules:
            sys.modules[full] = types.ModuleType(full)
            if i > 1:
                setattr(sys.modules[".".join(parts[: i - 1])], parts[i - 1], sys.modules[full])


# -- writing -------------------------------------------------------------------


def pick_sources(src: Path, limit: int) -> list[tuple[Path, int, str]]:
    """(path, label, class) for *limit* JPEGs spread evenly over the classes."""
    classes = sorted(p.name for p in src.iterdir() if p.is_dir())
    per = [sorted((src / c).glob("*.jp*g")) for c in classes]
    out = []
    for label, files in enumerate(per):
        n = max(1, limit // len(classes))
        step = max(1, len(files) // n)
        out += [(p, label, classes[label]) for p in files[::step][:n]]
    return out


def as_420(sources: list[tuple[Path, int, str]], work: Path) -> list[tuple[Path, int, str]]:
    """The sources re-encoded as baseline 4:2:0 JPEGs (quality 90), in *work*/src420."""
    from PIL import Image

    out = []
    for p, label, cls in sources:
        dst = work / "src420" / cls / p.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        with Image.open(p) as im:
            im.convert("RGB").save(dst, "JPEG", quality=90, subsampling=2)
        out.append((dst, label, cls))
    return out


def write_all(
    sources: list[tuple[Path, int, str]],
    work: Path,
    shard_bytes: int,
    wds: Any,
    streaming: Any,
    scan_scripts: list[str],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    folder = work / "folder"
    for p, _, cls in sources:
        (folder / cls).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, folder / cls / p.name)
    out["folder"] = sorted(str(p) for p in folder.rglob("*.jp*g"))

    for script in scan_scripts:
        kw = {} if script == "standard" else {"scan_script": script}
        dst = work / f"pcr-{script}"
        t = time.perf_counter()
        encode_dataset(folder, dst, record_size=shard_bytes, workers=2, progress=False, **kw)
        out[f"pcr-{script}"] = {"path": str(dst), "encode_s": time.perf_counter() - t}

    if wds is not None:
        (work / "wds").mkdir()
        pattern = str(work / "wds" / "shard-%05d.tar")
        with wds.ShardWriter(pattern, maxsize=shard_bytes, verbose=0) as sink:
            for i, (p, label, _) in enumerate(sources):
                sink.write({"__key__": f"{i:06d}", "jpg": p.read_bytes(), "cls": label})
        out["wds"] = sorted(str(p) for p in (work / "wds").glob("*.tar"))

    if streaming is not None:
        dst = work / "mds"
        columns = {"jpg": "bytes", "cls": "int"}
        with streaming.MDSWriter(out=str(dst), columns=columns, size_limit=shard_bytes) as w:
            for p, label, _ in sources:
                w.write({"jpg": p.read_bytes(), "cls": label})
        out["mds"] = str(dst)
    return out


# -- reading (in worker processes) ---------------------------------------------


def _size_for(label: str, data: bytes) -> int | None:
    if label == "full":
        return None
    if label == "224":
        return 224
    try:
        import simplejpeg

        h, w, _, _ = simplejpeg.decode_jpeg_header(data)
    except (ImportError, ValueError):
        from PIL import Image

        w, h = Image.open(io.BytesIO(data)).size
    return max(1, max(w, h) // 8)


def _share(items: list[Any], part: int, parts: int) -> list[Any]:
    return items[part::parts]


def read_part(task: tuple[str, Any, int, int, int | None, str]) -> tuple[int, int, float]:
    """Read and decode one worker's share; (images, bytes read, CPU seconds)."""
    kind, where, part, parts, level, size = task
    c0 = time.process_time()
    n = nbytes = 0
    if kind == "folder":
        for path in _share(where, part, parts):
            with open(path, "rb") as f:
                data = f.read()
            decode(data, size=_size_for(size, data), source=path)
            n, nbytes = n + 1, nbytes + len(data)
    elif kind == "wds":
        import webdataset as wds

        urls = _share(where, part, parts)
        ds = wds.WebDataset(urls, shardshuffle=False, workersplitter=None, empty_check=False)
        for sample in ds:
            data = sample["jpg"]
            decode(data, size=_size_for(size, data), source=sample["__key__"])
            n += 1
        nbytes = sum(os.path.getsize(u) for u in urls)
    elif kind == "mds":
        streaming, _ = import_streaming()
        ds = streaming.LocalDataset(local=where)
        index = json.loads(Path(where, "index.json").read_text())
        start = 0
        for s, shard in enumerate(index["shards"]):
            count = shard["samples"]
            if s % parts == part:
                for i in range(start, start + count):
                    data = ds[i]["jpg"]
                    decode(data, size=_size_for(size, data), source=f"{where}[{i}]")
                    n += 1
                nbytes += os.path.getsize(Path(where, shard["raw_data"]["basename"]))
            start += count
    elif kind == "pcr-all-scans":
        saved = os.environ.get(SKIP_SCANS_VAR)
        os.environ[SKIP_SCANS_VAR] = "0"
        try:
            n, nbytes, _ = read_part(("pcr", where, part, parts, level, size))
        finally:
            if saved is None:
                del os.environ[SKIP_SCANS_VAR]
            else:
                os.environ[SKIP_SCANS_VAR] = saved
    else:  # PCR
        ds = open_dataset(where)
        for r in range(part, len(ds.records), parts):
            prefix = ds.read_record(r, level)
            for j in range(prefix.header.num_images):
                data = prefix.jpeg_bytes(j)
                decode(data, size=_size_for(size, data), source=f"{where} record {r}")
                n += 1
        nbytes = ds.stats.bytes_read + ds.stats.metadata_bytes
    return n, nbytes, time.process_time() - c0


def _warm(_: int) -> str:
    return decoder_name()  # chooses (and checks) the decoder before timing


# -- main ----------------------------------------------------------------------


def crossover(t_w: float, b_w: float, t_k: float, b_k: float) -> tuple[float, float]:
    """Bandwidths (bytes/s per core) below which PCR level k beats WebDataset full reads."""
    if t_k <= t_w:
        return float("inf"), float("inf")
    return (b_w - b_k) / (t_k - t_w), b_w / t_k


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--limit", type=int, default=400, help="source images (default 400)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument(
        "--as-420",
        action="store_true",
        help="re-encode the sources as baseline 4:2:0 JPEGs (quality 90) first",
    )
    has_scripts = "scan_script" in inspect.signature(encode_dataset).parameters
    if has_scripts:
        ap.add_argument(
            "--scan-script",
            nargs="+",
            default=["standard"],
            help="PCR scan scripts to bench, each a name encode_dataset accepts "
            "(standard, lean, spectral, hybrid); default: standard",
        )
    args = ap.parse_args()
    scripts: list[str] = getattr(args, "scan_script", ["standard"])
    if not args.folder.is_dir():
        sys.exit(f"{args.folder}: not a folder of class folders of JPEGs")

    wds = import_webdataset()
    streaming, mds_note = import_streaming()
    missing = [n for n, m in (("webdataset", wds), ("mosaicml-streaming", streaming)) if not m]
    if wds is None:
        sys.exit("WebDataset is the baseline: pip install webdataset")

    sources = pick_sources(args.folder, args.limit)
    work = Path(tempfile.mkdtemp(prefix="bench_peers-"))
    try:
        if args.as_420:
            sources = as_420(sources, work)
        src_bytes = sum(p.stat().st_size for p, _, _ in sources)
        shard_bytes = -(-src_bytes // 8)
        t0 = time.perf_counter()
        written = write_all(sources, work, shard_bytes, wds, streaming, scripts)
        write_s = time.perf_counter() - t0
        cases: list[tuple[str, str, Any, int | None]] = [("wds", "wds", written["wds"], None)]
        if "mds" in written:
            cases.append(("mds", "mds", written["mds"], None))
        cases.append(("folder", "folder", written["folder"], None))
        for script in scripts:
            path = written[f"pcr-{script}"]["path"]
            tag = "pcr" if script == "standard" else f"pcr[{script}]"
            scans = open_dataset(path).num_scans  # another script may have fewer than 5
            for k in [lv for lv in PCR_LEVELS if lv is None or lv < scans]:
                cases.append((f"{tag} L{k or scans}", "pcr", path, k))
                if script == "standard":
                    cases.append((f"{tag} L{k or scans}, all scans", "pcr-all-scans", path, k))

        ctx = mp.get_context("fork")  # workers inherit the imported readers
        pools = {w: ctx.Pool(w) for w in args.workers}
        decoders = {w: set(p.map(_warm, range(w))) for w, p in pools.items()}
        runs: dict[tuple[str, str, int], list[tuple[float, float, float]]] = {}
        t0 = time.perf_counter()
        for _ in range(args.rounds):
            for w, pool in pools.items():
                for size in SIZES:
                    for name, kind, where, level in cases:
                        if kind == "pcr-all-scans" and size != "1/8":
                            continue  # the decoder leaves scans out at 1/8 only
                        tasks = [(kind, where, i, w, level, size) for i in range(w)]
                        t = time.perf_counter()
                        parts = pool.map(read_part, tasks)
                        wall = time.perf_counter() - t
                        n = sum(p[0] for p in parts)
                        runs.setdefault((name, size, w), []).append(
                            (n / wall, sum(p[2] for p in parts) / n, sum(p[1] for p in parts) / n)
                        )
        read_s = time.perf_counter() - t0
        for pool in pools.values():
            pool.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = []
    for (name, size, w), vals in runs.items():
        rows.append(
            {
                "format": name,
                "size": size,
                "workers": w,
                "images_per_s": statistics.median(v[0] for v in vals),
                "cpu_ms_per_image": statistics.median(v[1] for v in vals) * 1e3,
                "bytes_per_image": statistics.median(v[2] for v in vals),
            }
        )
    base = {(r["size"], r["workers"]): r for r in rows if r["format"] == "wds"}
    for r in rows:
        b = base[(r["size"], r["workers"])]
        r["speed_vs_wds"] = r["images_per_s"] / b["images_per_s"]
        r["cpu_vs_wds"] = r["cpu_ms_per_image"] / b["cpu_ms_per_image"]
        r["bytes_vs_wds"] = r["bytes_per_image"] / b["bytes_per_image"]

    cross = []
    for r in rows:
        if r["format"].startswith("pcr") and r["workers"] == min(args.workers):
            b = base[(r["size"], r["workers"])]
            serial, overlap = crossover(
                b["cpu_ms_per_image"] / 1e3,
                b["bytes_per_image"],
                r["cpu_ms_per_image"] / 1e3,
                r["bytes_per_image"],
            )
            cross.append(
                {
                    "format": r["format"],
                    "size": r["size"],
                    "serial_Bps": serial,
                    "overlap_Bps": overlap,
                }
            )

    cmd = "python " + " ".join(sys.argv)
    used = ", ".join(sorted(set().union(*decoders.values())))
    print(
        f"\nmeasured on this machine ({os.cpu_count()} CPUs, shared): {cmd}\n"
        f"{len(sources)} JPEGs from {args.folder} ({src_bytes / len(sources) / 1e3:.1f} kB each), "
        f"shards/records of {shard_bytes / 1e6:.1f} MB; decoder {used}; "
        f"worker processes, each reading whole shards; median of {args.rounds} interleaved rounds; "
        f"writing {write_s:.0f} s, reading {read_s:.0f} s"
    )
    if mds_note:
        print(f"MDS: streaming imported {mds_note}")
    if missing:
        print(f"left out (not installed): {', '.join(missing)}")
    print(
        f"\n{'format':<20} {'size':>5} {'workers':>7} {'images/s':>9} {'CPU ms/img':>10} "
        f"{'kB read/img':>11} {'speed/WDS':>9} {'CPU/WDS':>8} {'bytes/WDS':>9}"
    )
    for r in sorted(rows, key=lambda r: (r["workers"], SIZES.index(r["size"]))):
        print(
            f"{r['format']:<20} {r['size']:>5} {r['workers']:>7} {r['images_per_s']:>9.1f} "
            f"{r['cpu_ms_per_image']:>10.2f} {r['bytes_per_image'] / 1e3:>11.1f} "
            f"{r['speed_vs_wds']:>8.2f}x {r['cpu_vs_wds']:>7.2f}x {r['bytes_vs_wds']:>8.2f}x"
        )
    print(
        "\nstorage bandwidth per core below which PCR level k reads+decodes faster than "
        "WebDataset full reads\n(one worker; t, b = CPU s and bytes per image; "
        "serial: B < (b_wds - b_k) / (t_k - t_wds); overlapped: B < b_wds / t_k; "
        "inf: PCR's decode is no slower)"
    )
    print(f"{'format':<20} {'size':>5} {'serial MB/s':>12} {'overlap MB/s':>13}")
    for c in cross:
        print(
            f"{c['format']:<20} {c['size']:>5} {c['serial_Bps'] / 1e6:>12.1f} "
            f"{c['overlap_Bps'] / 1e6:>13.1f}"
        )
    result = {
        "command": cmd,
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "source": str(args.folder),
        "images": len(sources),
        "source_bytes": src_bytes,
        "shard_bytes": shard_bytes,
        "rounds": args.rounds,
        "workers": "processes, one share of whole shards/records/files each",
        "decoder": used,
        "mds_note": mds_note,
        "missing": missing,
        "encode_s": {k: v["encode_s"] for k, v in written.items() if k.startswith("pcr")},
        "rows": rows,
        "crossover": cross,
        "crossover_formula": {
            "serial": "B < (b_wds - b_k) / (t_k - t_wds)",
            "overlap": "B < b_wds / t_k",
            "units": "bytes/s per core; t: CPU s/image with 1 worker; b: bytes/image",
        },
    }
    (HERE / "results").mkdir(exist_ok=True)
    out = HERE / "results" / ("bench_peers_420.json" if args.as_420 else "bench_peers.json")
    out.write_text(to_json(result) + "\n")  # an infinite crossover is written as null
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
