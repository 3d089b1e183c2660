"""Benchmark the PCR core against the baselines the targets name, in one run.

Sources: the Kodak set (../shared/data/kodak24) saved as quality-90 baseline
JPEGs, in 20 variants each (flips, rotations, crops) so the timed runs last
long enough to measure; or any folder of images given on the command line.

Compared in the same run:

* encoding: ``encode_dataset(workers=2)`` vs a loop that runs the ``jpegtran``
  program once per file (the reference implementation's way);
* reading: full-level read + decode of the dataset vs opening and decoding a
  folder of the same progressive JPEG files with Pillow; level 1 decoded at
  1/8 size vs that same baseline;
* sizes: dataset bytes vs source bytes, header bytes vs payload;
* memory: peak RSS of a process that iterates the whole dataset, vs the
  record size.

Usage::

    python bench/bench_pcr.py [FOLDER] [--variants 20] [--repeat 5]

Prints a table and writes bench/results/pcr.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from pcr_explore import EncodeOptions, encode_dataset, find_jpegtran, open_dataset
from pcr_explore.encode.discover import find_sources

HERE = Path(__file__).resolve().parent
KODAK = HERE.parent.parent / "shared" / "data" / "kodak24"


def kodak_jpegs(variants: int) -> Path:
    """Kodak PNGs as quality-90 baseline JPEGs, ``variants`` per photo (cached)."""
    out = HERE / "_data" / f"kodak24-q90-x{variants}"
    if out.exists() and len(list(out.glob("*.jpg"))) == 24 * variants:
        return out
    if not KODAK.exists():
        sys.exit(f"{KODAK}: not found; pass a folder of images instead")
    out.mkdir(parents=True, exist_ok=True)
    ops = [
        lambda im: im,
        lambda im: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
        lambda im: im.transpose(Image.Transpose.FLIP_TOP_BOTTOM),
        lambda im: im.transpose(Image.Transpose.ROTATE_180),
        lambda im: im.transpose(Image.Transpose.ROTATE_90),
        lambda im: im.crop((16, 16, im.width - 16, im.height - 16)),
        lambda im: im.crop((0, 0, im.width - 64, im.height)),
        lambda im: im.transpose(Image.Transpose.TRANSPOSE),
        lambda im: im.crop((32, 0, im.width, im.height - 32)),
        lambda im: im.transpose(Image.Transpose.ROTATE_270),
    ]
    for png in sorted(KODAK.glob("*.png")):
        im = Image.open(png).convert("RGB")
        for v in range(variants):
            var = ops[v % len(ops)](im)
            shift = 8 * (v // len(ops))  # later rounds also shift the content
            if shift:
                var = var.crop((shift, 0, var.width, var.height))
            var.save(out / f"{png.stem}_{v:02d}.jpg", "JPEG", quality=90)
    return out


def best_of(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def jpegtran_loop(files: list[Path], out: Path) -> None:
    exe = find_jpegtran()
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        subprocess.run(
            [
                exe,
                "-copy",
                "none",
                "-optimize",
                "-progressive",
                "-outfile",
                str(out / f.name),
                str(f),
            ],
            check=True,
        )


def _decode_file(f: Path) -> None:
    with Image.open(f) as im:
        np.asarray(im.convert("RGB"))


def decode_folder(files: list[Path], threads: int = 1) -> None:
    if threads == 1:
        for f in files:
            _decode_file(f)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(_decode_file, files))


PEAK_SCRIPT = """
import resource, sys
from pcr_explore import open_dataset
ds = open_dataset(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in ds.iter(scan=None):
    pass
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base * 1024, peak * 1024)
"""


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", nargs="?", help="folder of images (default: Kodak JPEG variants)")
    ap.add_argument("--variants", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--record-size", type=int, default=8 * 1024 * 1024)
    args = ap.parse_args()
    if find_jpegtran() is None:
        sys.exit("jpegtran not found (Debian: libjpeg-turbo-progs)")

    src = Path(args.folder) if args.folder else kodak_jpegs(args.variants)
    items, _ = find_sources(src)
    files = [src / it.name for it in items]
    n = len(files)
    work = Path(tempfile.mkdtemp(prefix="pcr-bench-"))
    results: dict[str, object] = {
        "source": str(src),
        "images": n,
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    try:
        # -- encoding ---------------------------------------------------------
        def enc(workers: int, parallel: str = "threads", backend: str = "jpegtran") -> None:
            encode_dataset(
                src,
                work / f"ds{workers}{parallel}{backend}",
                workers=workers,
                record_size=args.record_size,
                overwrite=True,
                progress=False,
                options=EncodeOptions(backend=backend, parallel=parallel),
            )

        # interleaved, best of each: the machine's background load drifts
        loop_t, enc1_t, enc2_t, enc2p_t, pil_t, pilp_t = [], [], [], [], [], []
        for _ in range(args.repeat):
            loop_t.append(best_of(1, lambda: jpegtran_loop(files, work / "loop")))
            enc2_t.append(best_of(1, lambda: enc(2)))
            enc2p_t.append(best_of(1, lambda: enc(2, "processes")))
            enc1_t.append(best_of(1, lambda: enc(1)))
            pil_t.append(best_of(1, lambda: enc(2, "threads", "pillow")))
            pilp_t.append(best_of(1, lambda: enc(2, "processes", "pillow")))
        t_loop, t_enc1, t_enc2 = min(loop_t), min(enc1_t), min(enc2_t)
        t_enc2p, t_pil, t_pilp = min(enc2p_t), min(pil_t), min(pilp_t)

        # -- sizes --------------------------------------------------------------
        ds = open_dataset(str(work / "ds2threadsjpegtran"))
        headers = sum(r.header_bytes for r in ds.records)
        total = ds.total_bytes
        source = ds.source_bytes

        # -- reading ------------------------------------------------------------
        prog_files = sorted((work / "loop").glob("*.jpg"))

        def read(scan: int | None, size: int | None, workers: int = 1) -> None:
            for _ in ds.iter(scan=scan, size=size, workers=workers):
                pass

        folder_t, full_t, l1_t, l1s_t = [], [], [], []
        folder2_t, full2_t, l1s2_t = [], [], []
        for _ in range(args.repeat):
            folder_t.append(best_of(1, lambda: decode_folder(prog_files)))
            full_t.append(best_of(1, lambda: read(None, None)))
            l1_t.append(best_of(1, lambda: read(1, None)))
            l1s_t.append(best_of(1, lambda: read(1, 768 // 8)))
            folder2_t.append(best_of(1, lambda: decode_folder(prog_files, 2)))
            full2_t.append(best_of(1, lambda: read(None, None, 2)))
            l1s2_t.append(best_of(1, lambda: read(1, 768 // 8, 2)))
        t_folder, t_full, t_l1_full, t_l1 = min(folder_t), min(full_t), min(l1_t), min(l1s_t)
        t_folder2, t_full2, t_l12 = min(folder2_t), min(full2_t), min(l1s2_t)
        per_level = []
        for k in range(1, ds.num_scans + 1):
            ds.stats.reset()
            t = best_of(1, lambda k=k: read(k, None))
            per_level.append(
                {
                    "scan": k,
                    "bytes_read": ds.stats.bytes_read,
                    "bytes_at": ds.bytes_at(k),
                    "fraction": ds.bytes_at(k) / total,
                    "images_per_s": n / t,
                }
            )
        exact = all(p["bytes_read"] == p["bytes_at"] for p in per_level)

        # -- memory -------------------------------------------------------------
        out = subprocess.run(
            [sys.executable, "-c", PEAK_SCRIPT, str(work / "ds2threadsjpegtran")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        base_rss, peak_rss = int(out[0]), int(out[1])
        max_record = max(r.bytes_per_scan[-1] for r in ds.records)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = [
        ("encode: jpegtran per-file loop", n / t_loop, "img/s", 1.0),
        ("encode: encode_dataset workers=1", n / t_enc1, "img/s", t_loop / t_enc1),
        ("encode: encode_dataset workers=2 (threads)", n / t_enc2, "img/s", t_loop / t_enc2),
        ("encode: workers=2, processes", n / t_enc2p, "img/s", t_loop / t_enc2p),
        ("encode, Pillow re-encode: 2 processes", n / t_pilp, "img/s", 1.0),
        ("encode, Pillow re-encode: 2 threads", n / t_pil, "img/s", t_pilp / t_pil),
        ("read: folder of progressive JPEGs (Pillow)", n / t_folder, "img/s", 1.0),
        ("read: PCR full level", n / t_full, "img/s", t_folder / t_full),
        ("read: PCR level 1, full size", n / t_l1_full, "img/s", t_folder / t_l1_full),
        ("read: PCR level 1, 1/8 size (draft)", n / t_l1, "img/s", t_folder / t_l1),
        ("read, 2 threads: folder (Pillow)", n / t_folder2, "img/s", 1.0),
        ("read, 2 threads: PCR full level", n / t_full2, "img/s", t_folder2 / t_full2),
        ("read, 2 threads: PCR level 1, 1/8 size", n / t_l12, "img/s", t_folder2 / t_l12),
    ]
    print(f"\n{n} images from {src}; {os.cpu_count()} CPUs; best of {args.repeat}\n")
    print(f"{'measurement':<46} {'value':>10} {'unit':<6} {'x baseline':>10}")
    for name, v, unit, ratio in rows:
        print(f"{name:<46} {v:>10.1f} {unit:<6} {ratio:>10.2f}")
    print()
    print(f"dataset bytes / source JPEG bytes     {total / source:.4f}   (target <= 0.97)")
    print(
        f"header bytes / payload                {headers / (total - headers):.5f}"
        "  (target <= 0.005)"
    )
    print(f"level-k reads exactly header+groups   {exact}")
    print(
        f"read peak RSS                         {peak_rss / 2**20:.0f} MiB "
        f"(process start {base_rss / 2**20:.0f} MiB; largest record {max_record / 2**20:.1f} MiB; "
        f"limit 2 x record + 200 MiB = {(2 * max_record + 200 * 2**20) / 2**20:.0f} MiB)"
    )
    print("\nscan  fraction  img/s")
    for p in per_level:
        print(f"{p['scan']:>4}  {p['fraction']:8.3f}  {p['images_per_s']:6.1f}")

    results.update(
        encode={
            "jpegtran_loop_img_s": n / t_loop,
            "workers1_img_s": n / t_enc1,
            "workers2_img_s": n / t_enc2,
            "speedup_workers2": t_loop / t_enc2,
            "workers2_processes_img_s": n / t_enc2p,
            "threads_vs_processes_jpegtran": t_enc2p / t_enc2,
            "pillow_threads_vs_processes": t_pilp / t_pil,
        },
        read={
            "folder_img_s": n / t_folder,
            "full_img_s": n / t_full,
            "full_vs_folder": t_folder / t_full,
            "level1_eighth_img_s": n / t_l1,
            "level1_eighth_vs_folder": t_folder / t_l1,
        },
        size={
            "dataset_bytes": total,
            "source_bytes": source,
            "ratio": total / source,
            "header_bytes": headers,
            "overhead": headers / (total - headers),
        },
        per_level=per_level,
        level_reads_exact=exact,
        memory={
            "peak_rss": peak_rss,
            "start_rss": base_rss,
            "max_record_bytes": max_record,
            "limit": 2 * max_record + 200 * 2**20,
        },
    )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "pcr.json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {HERE / 'results' / 'pcr.json'}")


if __name__ == "__main__":
    main()
