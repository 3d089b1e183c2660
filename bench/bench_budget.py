"""Benchmark the byte budget and the early-stopping gradient tuner, on real photos.

Data: ``../shared/data/flowers5`` (1,200 training and 300 validation photos
of five flower classes), encoded once into ``bench/_data/flowers5``.

Measured on this machine, in one run:

* the gradient tuner with its early stop (at least ``--min-batches``, at
  most ``--batches``) against the same tuner forced to spend every batch
  (``min_batches=batches``, what it always did before): batches used,
  seconds, and the level each picks, at a fresh small CNN and at one trained
  one epoch at full quality; the cost against one full-quality epoch;
* ``budget()`` from nothing, then again from the results it returned
  (``curve=``, ``gradient=``, ``decode=``: nothing measured) and
  ``reprice()`` at another bandwidth, as ratios to the first call;
* the report itself (its table and sentence) at ``--bandwidth``.

Usage::

    python bench/bench_budget.py [--data DIR] [--size 64] [--batches 40] [--min-batches 3]
                                 [--bandwidth 20MB/s] [--sample 64] [--threads N]

Prints tables and writes bench/results/budget.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

from pcr_explore import budget, open_dataset
from pcr_explore._json import to_json
from pcr_explore.train import load_flowers, small_cnn, train_at_levels, tune_by_gradient

HERE = Path(__file__).resolve().parent
FLOWERS5 = HERE.parent.parent / "shared" / "data" / "flowers5"
OUT = HERE / "results" / "budget.json"
SCANS = (1, 2, 5, 10)


def _tuners(train: Any, model: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The tuner with its early stop against the tuner that spends every batch."""
    out = {}
    for name, least in (("every batch", args.batches), ("early stop", args.min_batches)):
        t0 = time.perf_counter()
        r = tune_by_gradient(
            train,
            model=model,
            scans=SCANS,
            batches=args.batches,
            min_batches=least,
            size=args.size,
            seed=0,
            workers=2,
        )
        out[name] = {
            "seconds": time.perf_counter() - t0,
            "batches": r.batches,
            "scan": r.scan,
            "decided": r.decided,
            "similarity": r.similarity,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(FLOWERS5), help="flowers5 (train/ and val/)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batches", type=int, default=40, help="the tuner's batch budget")
    ap.add_argument("--min-batches", type=int, default=3)
    ap.add_argument("--bandwidth", default="20MB/s")
    ap.add_argument("--sample", type=int, default=64, help="images in the quality sample")
    ap.add_argument("--threads", type=int, default=None, help="PyTorch threads")
    args = ap.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    data = load_flowers(args.data, cache_dir=HERE / "_data" / "flowers5", workers=2)
    train = open_dataset(str(data.train))
    print(f"{data}\n")

    torch.manual_seed(0)
    fresh = small_cnn(len(train.classes))
    t0 = time.perf_counter()
    warm = train_at_levels(
        train, val=data.val, scans=(train.num_scans,), size=args.size, epochs=1, progress=False
    )
    epoch_s = time.perf_counter() - t0
    trained = warm.models[warm.levels[0].label]
    tuners = {
        "initial weights": _tuners(train, fresh, args),
        "after one full-quality epoch": _tuners(train, trained, args),
    }
    print(
        f"gradient tuner, levels {SCANS}, {args.size} px, budget {args.batches} batches; one "
        f"full-quality training epoch (with its evaluation) took {epoch_s:.1f} s"
    )
    print(
        f"{'model':>30} {'tuner':>12} {'batches':>8} {'seconds':>8} {'of an epoch':>12} "
        f"{'scan':>5} {'decided':>8}"
    )
    for model, runs in tuners.items():
        for name, r in runs.items():
            print(
                f"{model:>30} {name:>12} {r['batches']:>8} {r['seconds']:>8.2f} "
                f"{r['seconds'] / epoch_s:>11.0%} {r['scan']:>5} {str(r['decided']):>8}"
            )
        ratio = runs["early stop"]["seconds"] / runs["every batch"]["seconds"]
        print(f"{'':>30} early stop / every batch: {ratio:.2f}x the time")

    t0 = time.perf_counter()
    report = budget(
        train,
        bandwidth=args.bandwidth,
        sample=args.sample,
        scans=SCANS,
        size=args.size,
        model=trained,
        progress=False,
    )
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    budget(
        train,
        bandwidth=args.bandwidth,
        size=args.size,
        curve=report.curve,
        gradient=report.gradient,
        decode=report.decode,
        progress=False,
    )
    again = time.perf_counter() - t0
    t0 = time.perf_counter()
    report.reprice("1GB/s")
    reprice = time.perf_counter() - t0
    print(
        f"\nbudget(): {first:.1f} s; from its own results {again / first:.4f}x; "
        f"reprice() {reprice / first:.6f}x\n"
    )
    print(report)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        to_json(
            {
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                "args": vars(args),
                "epoch_seconds": epoch_s,
                "tuners": tuners,
                "budget_seconds": first,
                "again_ratio": again / first,
                "reprice_ratio": reprice / first,
                "report": report.to_dict(),
            }
        )
        + "\n"
    )
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
