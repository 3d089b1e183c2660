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
* the report itself (its table and sentence) at ``--bandwidth``;
* the tuner during training (:class:`~pcr_explore.train.StepTuner`, what
  ``scans="auto"`` runs), taking the trained level's gradient from each
  training step against computing it again in a pass of its own: the
  tuner's seconds and passes per batch, on the same batches from the same
  weights (``--reuse-batches`` of them, each spent), at the full level and
  at level 2, alternated ``--repeats`` times; the similarities of the two
  must agree.

Usage::

    python bench/bench_budget.py [--data DIR] [--size 64] [--batches 40] [--min-batches 3]
                                 [--bandwidth 20MB/s] [--sample 64] [--threads N]
                                 [--reuse-batches 10] [--repeats 3] [--only reuse]

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
from pcr_explore.train import (
    StepTuner,
    load_flowers,
    read_level,
    small_cnn,
    train_at_levels,
    train_epoch,
    tune_by_gradient,
)

HERE = Path(__file__).resolve().parent
FLOWERS5 = HERE.parent.parent / "shared" / "data" / "flowers5"
OUT = HERE / "results" / "budget.json"
OUT_REUSE = HERE / "results" / "budget_reuse.json"
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


def _tuned_steps(train: Any, model: Any, level: Any, args: argparse.Namespace, reuse: bool) -> Any:
    """Training steps over the tuning batches, from a copy of *model*, fed to a step tuner."""
    import copy

    import torch

    net = copy.deepcopy(model)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    n = args.reuse_batches * 32
    b = args.reuse_batches
    with StepTuner(
        train,
        model=net,
        trained=level.scan,
        scans=SCANS,
        batches=b,
        min_batches=b,  # every batch spent: the cost per batch, not the early stop
        size=args.size,
        workers=2,
        reuse=reuse,
    ) as tuner:
        t0 = time.perf_counter()
        train_epoch(
            net,
            opt,
            level.images[:n],
            level.labels[:n],
            batch_size=32,
            generator=torch.Generator().manual_seed(0),
            on_step=tuner,
        )
        total = time.perf_counter() - t0
    r = tuner.result()
    return {
        "tuner_seconds": tuner.seconds,
        "training_seconds": total - tuner.seconds,
        "batches": r.batches,
        "passes_run": r.passes - r.passes_reused,
        "passes_reused": r.passes_reused,
        "scan": r.scan,
        "similarity": r.similarity,
    }


def _reuse(train: Any, model: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The step tuner with the step's gradient against one more pass, alternated."""
    out: dict[str, Any] = {}
    for scan in (train.num_scans, 2):
        level = read_level(train, scan=scan, size=args.size, workers=2)
        runs: dict[str, list[Any]] = {"own pass": [], "reused": []}
        for _ in range(args.repeats):
            for name, reuse in (("own pass", False), ("reused", True)):
                runs[name].append(_tuned_steps(train, model, level, args, reuse))
        sims = {n: r[0]["similarity"] for n, r in runs.items()}
        gap = max(abs(sims["reused"][k] - sims["own pass"][k]) for k in SCANS)
        own = min(r["tuner_seconds"] for r in runs["own pass"])
        reused = min(r["tuner_seconds"] for r in runs["reused"])
        out[str(scan)] = {
            "runs": runs,
            "own_seconds": own,
            "reused_seconds": reused,
            "ratio": reused / own,
            "similarity_gap": gap,
        }
    print(
        f"tuner during training, levels {SCANS}, {args.reuse_batches} batches of 32 at "
        f"{args.size} px, fastest of {args.repeats}"
    )
    print(
        f"{'trained':>8} {'gradient':>9} {'passes/batch':>13} {'tuner s':>8} {'s/batch':>8} "
        f"{'train s':>8} {'scan':>5}"
    )
    for scan, m in out.items():
        for name in ("own pass", "reused"):
            r = min(m["runs"][name], key=lambda x: x["tuner_seconds"])
            print(
                f"{scan:>8} {name:>9} {r['passes_run'] / r['batches']:>13.1f} "
                f"{r['tuner_seconds']:>8.2f} {r['tuner_seconds'] / r['batches']:>8.3f} "
                f"{r['training_seconds']:>8.2f} {r['scan']:>5}"
            )
        print(
            f"{'':>8} reused / own pass: {m['ratio']:.2f}x the tuner's time; similarities "
            f"agree within {m['similarity_gap']:.1e}"
        )
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
    ap.add_argument("--reuse-batches", type=int, default=10, help="batches of the step tuner")
    ap.add_argument("--repeats", type=int, default=3, help="alternated runs of each tuner")
    ap.add_argument("--only", choices=("reuse",), default=None, help="only the step tuner")
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
    reuse = _reuse(train, trained, args)
    if args.only == "reuse":
        _write({"args": vars(args), "epoch_seconds": epoch_s, "reuse": reuse}, OUT_REUSE)
        return
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
    _write(
        {
            "args": vars(args),
            "epoch_seconds": epoch_s,
            "tuners": tuners,
            "budget_seconds": first,
            "again_ratio": again / first,
            "reprice_ratio": reprice / first,
            "report": report.to_dict(),
            "reuse": reuse,
        },
        OUT,
    )


def _write(record: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(exist_ok=True)
    machine = {"platform": platform.platform(), "cpus": os.cpu_count()}
    out.write_text(to_json({"machine": machine, **record}) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
