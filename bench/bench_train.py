"""Benchmark training at scan levels on real photos, against scan 10 in the same run.

Data: ``../shared/data/flowers5`` (1,200 training and 300 validation photos
of five flower classes, CC-BY; its README), encoded once into
``bench/_data/flowers5``.

Measured, every figure a ratio to the full-quality run (scan 10) of the
same seed where it can be:

* final and best validation accuracy per scan (1, 2, 5, 10) at each size,
  over the seeds: mean and spread; bytes read per epoch per scan;
* at the first size, training reads held to a storage bandwidth that makes
  loading the bottleneck (``--bandwidth``, stated in the table): the time to
  reach 95% of the full run's best accuracy, per scan, as a speed-up over
  scan 10 (sequential load + compute, and pipelined max(load, compute));
* the scan ``tune_by_gradient`` picks (model at initialisation and after
  training at scan 10) and its cost against one full-quality epoch; the scan
  the MS-SSIM tuner picks at 0.95;
* peak resident memory of the process after the first size's runs.

Usage::

    python bench/bench_train.py [--sizes 64,128] [--seeds 0,1,2] [--epochs 6]
                                [--bandwidth 20MB/s] [--data DIR] [--threads N]
    python bench/bench_train.py --against webdataset [--sizes 128] [--schedule ramp:1-10:2-5]

Prints tables and writes bench/results/train.json. With ``--against
webdataset`` (``pip install webdataset``), the comparison with training from
WebDataset shards of the original JPEGs instead (``bench/_against_webdataset.py``
says how it is kept fair), written to bench/results/train_vs_webdataset.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from pcr_explore import open_dataset, tune
from pcr_explore._json import to_json
from pcr_explore.train import (
    load_flowers,
    parse_bandwidth,
    small_cnn,
    train_at_levels,
    tune_by_gradient,
)

HERE = Path(__file__).resolve().parent
FLOWERS5 = HERE.parent.parent / "shared" / "data" / "flowers5"
OUT = HERE / "results" / "train.json"
SCANS = (1, 2, 5, 10)


def _ms(values: list[float]) -> str:
    """Mean and spread (min..max) of per-seed values."""
    v = [x for x in values if x is not None and np.isfinite(x)]
    if not v:
        return "-"
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{statistics.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _against(args: Any, data: Any, size: int, seeds: list[int], bw: float, t0: float) -> None:
    from _against_webdataset import against_webdataset

    record = against_webdataset(
        data,
        Path(args.data) / "train",
        HERE / "_data",
        size=size,
        epochs=args.epochs,
        seeds=seeds,
        bandwidth=bw,
        schedule=args.schedule,
    )
    record.update(
        machine={"platform": platform.platform(), "cpus": os.cpu_count()},
        size=size,
        epochs=args.epochs,
        seeds=seeds,
        bandwidth=bw,
        torch_threads=args.threads,
        seconds=time.perf_counter() - t0,
    )
    out = HERE / "results" / "train_vs_webdataset.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(to_json(record) + "\n")
    print(f"{time.perf_counter() - t0:.0f} s; wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(FLOWERS5), help="flowers5 (train/ and val/)")
    ap.add_argument("--sizes", default="64,128", help="training sizes (first: throttled)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--bandwidth", default="20MB/s", help="storage bandwidth at the first size")
    ap.add_argument("--tune-batches", type=int, default=10)
    ap.add_argument("--mssim-sample", type=int, default=64)
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="PyTorch threads (default: PyTorch's choice); 1 on a machine shared with other "
        "jobs, where spinning OpenMP threads slow every step many times over",
    )
    ap.add_argument(
        "--against",
        choices=("webdataset",),
        default=None,
        help="compare with training from WebDataset shards of the original JPEGs",
    )
    ap.add_argument("--schedule", default="ramp:1-10:2-5", help="the curriculum (--against)")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    bw = parse_bandwidth(args.bandwidth)

    t_start = time.perf_counter()
    data = load_flowers(args.data, cache_dir=HERE / "_data" / "flowers5", workers=2)
    if args.against:
        _against(args, data, sizes[0], seeds, bw, t_start)
        return
    train = open_dataset(str(data.train))
    full_bytes = train.bytes_at(None)
    print(f"{data}\n")

    report: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "data": str(args.data),
        "train_images": data.train_images,
        "val_images": data.val_images,
        "epochs": args.epochs,
        "seeds": seeds,
        "bandwidth": bw,
        "bandwidth_size": sizes[0],
        "torch_threads": args.threads,
        "runs": {},
        "tuners": {},
    }
    results: dict[int, list[Any]] = {}
    peak_after_first = None
    for n, size in enumerate(sizes):
        results[size] = []
        for seed in seeds:
            t0 = time.perf_counter()
            r = train_at_levels(
                data.train,
                val=data.val,
                scans=SCANS,
                size=size,
                epochs=args.epochs,
                seed=seed,
                bandwidth=bw if n == 0 else None,
                progress=False,
            )
            results[size].append(r)
            print(f"size {size} seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
        report["runs"][str(size)] = [r.to_dict() for r in results[size]]
        if n == 0:
            peak_after_first = _peak_rss_mb()

    # -- accuracy per scan ---------------------------------------------------------
    rows = []
    for size, runs in results.items():
        for k in SCANS:
            best = [r.level(k).best_val_accuracy for r in runs]
            final = [r.level(k).final_val_accuracy for r in runs]
            rel = [r.level(k).best_val_accuracy / r.level(10).best_val_accuracy for r in runs]
            rows.append(
                [
                    str(size),
                    str(k),
                    f"{train.bytes_at(k) / 1e6:.1f}",
                    f"{train.bytes_at(k) / full_bytes:.1%}",
                    _ms(final),
                    _ms(best),
                    _ms(rel),
                ]
            )
    acc_table = _table(
        ["size", "scan", "MB/epoch", "of full", "final acc", "best acc", "best / scan 10"],
        rows,
    )

    # -- time to accuracy at the throttled size ---------------------------------------
    size0 = sizes[0]
    rows = []
    tta: dict[str, Any] = {}
    for k in SCANS:
        seq = [r.speedup(0.95)[f"scan {k}"] for r in results[size0]]
        pipe = [r.speedup(0.95, pipelined=True)[f"scan {k}"] for r in results[size0]]
        secs = [r.level(k).time_to_accuracy(r.target_accuracy(0.95) or 0.0) for r in results[size0]]
        load = [
            sum(e.load_seconds for e in r.level(k).epochs) / args.epochs for r in results[size0]
        ]
        comp = [
            sum(e.compute_seconds for e in r.level(k).epochs) / args.epochs for r in results[size0]
        ]
        reached = sum(s is not None for s in secs)
        tta[str(k)] = {"speedup": seq, "speedup_pipelined": pipe, "seconds": secs}
        rows.append(
            [
                str(k),
                _ms([statistics.mean(load)]),
                _ms([statistics.mean(comp)]),
                f"{reached}/{len(secs)}",
                _ms([s for s in secs if s is not None]),
                _ms(seq),
                _ms(pipe),
            ]
        )
    report["time_to_accuracy"] = tta
    tta_table = _table(
        [
            "scan",
            "load s/epoch",
            "compute s/epoch",
            "seeds reaching",
            "s to 95% of full best",
            "speed-up",
            "pipelined",
        ],
        rows,
    )

    # -- tuners -------------------------------------------------------------------------
    import torch

    rows = []
    for size, runs in results.items():
        r0 = runs[0]
        full_epochs = r0.level(10).epochs
        epoch_s = statistics.median(e.load_seconds + e.compute_seconds for e in full_epochs)
        compute_s = statistics.median(e.compute_seconds for e in full_epochs)
        torch.manual_seed(r0.seed)
        for state, model in (
            ("init", small_cnn(len(r0.classes))),
            ("trained", r0.models["scan 10"]),
        ):
            g = tune_by_gradient(
                train, model=model, scans=SCANS, batches=args.tune_batches, size=size, seed=0
            )
            report["tuners"][f"{size}/{state}"] = {
                **g.to_dict(),
                "epoch_seconds": epoch_s,
                "epoch_compute_seconds": compute_s,
            }
            rows.append(
                [
                    str(size),
                    state,
                    str(g.scan),
                    " ".join(f"{g.similarity[k]:.2f}" for k in SCANS),
                    f"{g.seconds:.1f}",
                    f"{g.seconds / epoch_s:.0%}",
                    f"{g.seconds / compute_s:.0%}",
                ]
            )
    q = tune(str(data.train), target=0.95, sample=args.mssim_sample, seed=0, workers=2)
    report["tuners"]["mssim"] = q.to_dict()
    tuner_table = _table(
        [
            "size",
            "model",
            "gradient scan",
            "similarity 1/2/5/10",
            "tune s",
            "of a full epoch",
            "of its compute",
        ],
        rows,
    )
    report["peak_rss_mb_after_first_size"] = peak_after_first
    report["peak_rss_mb"] = _peak_rss_mb()
    report["seconds"] = time.perf_counter() - t_start

    print()
    print(f"Validation accuracy per scan ({args.epochs} epochs, seeds {seeds}; mean (min-max))")
    print(acc_table)
    print()
    print(
        f"Size {size0}, training reads held to {bw / 1e6:g} MB/s: time to 95% of the scan-10 "
        "run's best accuracy, speed-up over scan 10 (mean (min-max) over seeds)"
    )
    print(tta_table)
    print()
    print(f"Gradient tuner ({args.tune_batches} batches of 32, threshold 0.8, unthrottled reads)")
    print(tuner_table)
    print(
        f"MS-SSIM tuner, mean >= 0.95 over {q.sample_size} images: scan {q.scan} "
        f"({q.bytes_fraction:.1%} of the bytes; {q.explanation})"
    )
    print()
    print(
        f"Peak RSS after the size-{size0} runs: {peak_after_first:.0f} MB; "
        f"whole benchmark: {report['peak_rss_mb']:.0f} MB"
    )
    print(f"Total {report['seconds'] / 60:.1f} min")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(to_json(report) + "\n")
    print(f"JSON: {OUT}")


if __name__ == "__main__":
    main()
