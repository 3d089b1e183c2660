"""Measure the JPEG decoders behind ``pcr_explore.jpeg.decode``: pixels and speed vs Pillow.

Sources, all real photographs:

* the Kodak set (../shared/data/kodak24 PNGs) transcoded to standard
  progressive JPEGs (4:2:0, 10 scans) and, converted to grey first, to
  grey progressive JPEGs (6 scans);
* photos of ../shared/data/flowers5/train as they are (baseline 4:4:4) and
  losslessly transcoded to progressive (``pcr_explore.jpeg.transcode.transcode``).

Pixel identity: every scan level of every image, decoded at full size, at the
sizes that make Pillow's ``draft`` pick a DCT scale of 1/2, 1/4 and 1/8, and at
two exact sizes that need a resize after (1/3 with DCT 1/2, 0.6 without DCT
scaling), each as stored, ``mode="L"`` and ``mode="RGB"``; each backend's
result is compared with Pillow's, array for array. "declined" counts images a
backend hands back to Pillow (a libjpeg warning, a tiny image). The rows
``jpeg.decode`` compare the public function as callers use it (the automatic
backend, and at 1/8 the rewrite without the scans that cannot change the
pixels, ``pcr_explore.jpeg._eighth``) with Pillow's decode of the whole file;
"rewritten" counts the 1/8 decodes that went through that rewrite.

Speed: ``pcr_explore.jpeg.decode`` with each decoder forced, one thread,
rounds interleaved across decoders, median of ``--repeat`` rounds of the
process's CPU time (robust to other load on the machine) and wall time.

Usage::

    python bench/bench_decoders.py [--flowers 40] [--repeat 5]

Prints two tables and writes bench/results/decoders.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

from pcr_explore.jpeg import _decoders, _eighth, decode, set_decoder, split_scans
from pcr_explore.jpeg._progressive import target_size
from pcr_explore.jpeg.transcode import transcode

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
SIZES = ("full", "1/2", "1/4", "1/8", "exact 1/3", "exact 0.6")
MODES = (None, "L", "RGB")


def corpus(n_flowers: int) -> dict[str, list[bytes]]:
    """Progressive and baseline JPEGs of real photos, by kind."""
    kodak = sorted((DATA / "kodak24").glob("*.png"))
    flowers = sorted((DATA / "flowers5" / "train").rglob("*.jpg"))[::-1]
    if not kodak or not flowers:
        sys.exit(f"{DATA}: kodak24 or flowers5 not found")
    flowers = flowers[:: max(1, len(flowers) // n_flowers)][:n_flowers]
    grey = []
    for p in kodak:
        buf = io.BytesIO()
        Image.open(p).convert("L").save(buf, "PNG")
        grey.append(transcode(buf.getvalue()).jpeg.data)
    return {
        "kodak progressive 4:2:0": [transcode(p).jpeg.data for p in kodak],
        "kodak grey progressive": grey,
        "flowers baseline 4:4:4": [p.read_bytes() for p in flowers],
        "flowers progressive 4:4:4": [transcode(p).jpeg.data for p in flowers],
    }


def size_arg(label: str, w: int, h: int) -> int | tuple[int, int] | None:
    if label == "full":
        return None
    if label.startswith("exact"):
        f = 1 / 3 if label.endswith("1/3") else 0.6
        return max(1, int(w * f)), max(1, int(h * f))
    return max(w, h) // int(label[2:])


def identity(jpegs: dict[str, list[bytes]], backends: list) -> dict[str, dict[str, Counter]]:
    out: dict[str, dict[str, Counter]] = {b.name: {} for b in backends}
    out["jpeg.decode"] = {}
    for kind, files in jpegs.items():
        for data in files:
            pj = split_scans(data)
            for k in range(1, pj.num_scans + 1):
                level = pj.level(k)
                for label in SIZES:
                    size = size_arg(label, pj.width, pj.height)

                    def target_for(w: int, h: int, size=size) -> tuple[int, int] | None:
                        return None if size is None else target_size(w, h, size)

                    for mode in MODES:
                        want = _decoders.pillow_decode(level, target_for, mode)
                        for b in backends:
                            got = _decoders.backend_decode(b, level, target_for, mode)
                            if got is None:
                                verdict = "declined"
                            elif got.shape == want.shape and np.array_equal(got, want):
                                verdict = "identical"
                            else:
                                verdict = "differs"
                            out[b.name].setdefault(f"{kind} | {label}", Counter())[verdict] += 1
                        got = decode(level, size=size, mode=mode)
                        same = got.shape == want.shape and np.array_equal(got, want)
                        c = out["jpeg.decode"].setdefault(f"{kind} | {label}", Counter())
                        c["identical" if same else "differs"] += 1
                        if label == "1/8" and _eighth.at_eighth(level) is not None:
                            c["rewritten"] += 1
    return out


def speed(jpegs: dict[str, list[bytes]], names: list[str], repeat: int) -> list[dict]:
    kodak = jpegs["kodak progressive 4:2:0"]
    workloads = {
        "kodak level 10, full": (kodak, None),
        "kodak level 10, 224": (kodak, 224),
        "kodak level 1, 1/8": ([split_scans(d).level(1) for d in kodak], 96),
        "kodak grey level 6, full": (jpegs["kodak grey progressive"], None),
        "flowers baseline, full": (jpegs["flowers baseline 4:4:4"], None),
        "flowers baseline, 224": (jpegs["flowers baseline 4:4:4"], 224),
        "flowers progressive, full": (jpegs["flowers progressive 4:4:4"], None),
    }
    rows = []
    for label, (files, size) in workloads.items():
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(repeat):
            for n in names:  # interleaved: every round times each decoder once
                set_decoder(n)
                t, c = time.perf_counter(), time.process_time()
                for d in files:
                    decode(d, size=size)
                cpu[n].append((time.process_time() - c) / len(files) * 1e3)
                wall[n].append((time.perf_counter() - t) / len(files) * 1e3)
        base = statistics.median(cpu["pillow"])
        for n in names:
            ms = statistics.median(cpu[n])
            rows.append(
                {
                    "workload": label,
                    "decoder": n,
                    "cpu_ms_per_image": ms,
                    "wall_ms_per_image": statistics.median(wall[n]),
                    "speedup": base / ms,
                }
            )
    set_decoder(None)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--flowers", type=int, default=40, help="flowers5 photos to use")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved timing rounds")
    args = ap.parse_args()

    backends, missing = [], {}
    for name in _decoders._FACTORIES:
        try:
            backends.append(_decoders._FACTORIES[name]())
        except ImportError as exc:
            missing[name] = str(exc)
    jpegs = corpus(args.flowers)
    t0 = time.perf_counter()
    ident = identity(jpegs, backends)
    t_ident = time.perf_counter() - t0
    rows = speed(jpegs, ["pillow"] + [b.name for b in backends], args.repeat)

    cmd = "python " + " ".join(sys.argv)
    print(f"\nmeasured on this machine ({os.cpu_count()} CPUs, 1 thread): {cmd}")
    print(f"automatic choice: {_decoders.decoder_name()}; not installed: {missing or 'none'}")
    print(f"\npixel identity with Pillow ({t_ident:.0f} s; every level x {len(MODES)} modes)")
    print(
        f"{'backend':>11} {'images | size':<38} {'identical':>9} {'differs':>7} {'declined':>8} "
        f"{'rewritten':>9}"
    )
    for name, groups in ident.items():
        for key, c in groups.items():
            print(
                f"{name:>11} {key:<38} {c['identical']:>9} {c['differs']:>7} {c['declined']:>8} "
                f"{c['rewritten']:>9}"
            )
    print(f"\nspeed: median of {args.repeat} interleaved rounds; CPU time of this process")
    print(
        f"{'workload':<28} {'decoder':>10} {'CPU ms/img':>10} {'wall ms/img':>11} {'vs Pillow':>9}"
    )
    for r in rows:
        print(
            f"{r['workload']:<28} {r['decoder']:>10} {r['cpu_ms_per_image']:>10.2f} "
            f"{r['wall_ms_per_image']:>11.2f} {r['speedup']:>8.2f}x"
        )
    result = {
        "command": cmd,
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "images": {k: len(v) for k, v in jpegs.items()},
        "missing": missing,
        "automatic": _decoders.decoder_name(),
        "identity": {n: {k: dict(c) for k, c in g.items()} for n, g in ident.items()},
        "speed": rows,
        "repeat": args.repeat,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "decoders.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {HERE / 'results' / 'decoders.json'}")


if __name__ == "__main__":
    main()
