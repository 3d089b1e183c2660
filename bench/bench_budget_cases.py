"""Where low scan levels are enough and where they cost accuracy: ``budget()`` on two tasks.

Data, both shipped photos:

* ``flowers`` — ``../shared/data/flowers5`` (1,200 training and 300
  validation photos of five kinds of flower), encoded once into
  ``bench/_data/flowers5``: telling the kinds apart takes shapes and
  colours, which the first levels carry.
* ``sharpness`` — :func:`~pcr_explore.train.sharpness_task` on
  ``../shared/data/kodak24`` (24 photos, 768x512): 48 patches of ``--size``
  pixels per photo, half taken from the photo blurred by a Gaussian of
  ``--sigma`` pixels; 18 photos train, 6 validate. Telling sharp from soft
  takes the finest detail, which the first levels leave out.

For each task and seed, ``budget(train, val=, size=, train_epochs=,
scans=(1, 2, 5, 10))``: bytes, p5 MS-SSIM, gradient similarity (at the
proxy training's full-quality weights) and the proxy training's best
validation accuracy per level, and each criterion's choice. The quality
curve and decode cost are measured on the first seed and passed to the
others (measured once). Accuracy is reported over the seeds (mean, min-max)
and as a share of full quality's; the accuracy criterion is the lowest level
reaching 95% of full quality's, per seed and on the means.

Usage::

    python bench/bench_budget_cases.py [--seeds 0,1,2] [--epochs 4] [--size 64]
                                       [--sigma 1.0] [--tasks flowers,sharpness]

Prints one table per task and writes bench/results/budget_cases.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from pcr_explore import budget
from pcr_explore._json import to_json
from pcr_explore.train import load_flowers, sharpness_task

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
OUT = HERE / "results" / "budget_cases.json"
SCANS = (1, 2, 5, 10)


def _data(task: str, args: argparse.Namespace) -> Any:
    if task == "flowers":
        return load_flowers(SHARED / "flowers5", cache_dir=HERE / "_data" / "flowers5", workers=2)
    return sharpness_task(
        SHARED / "kodak24",
        HERE / "_data" / f"sharpness-{args.size}-{args.sigma:g}",
        patch=args.size,
        sigma=args.sigma,
        workers=2,
        progress=False,
    )


def _task(task: str, args: argparse.Namespace) -> dict[str, Any]:
    """budget() over the seeds, the first seed's curve and decode cost reused."""
    data = _data(task, args)
    print(f"{task}: {data}")
    reports = []
    t0 = time.perf_counter()
    for seed in args.seeds:
        first = reports[0] if reports else None
        reports.append(
            budget(
                data.train,
                val=data.val,
                bandwidth="20MB/s",
                scans=SCANS,
                size=args.size,
                train_epochs=args.epochs,
                seed=seed,
                progress=False,
                curve=None if first is None else first.curve,
                decode=None if first is None else first.decode,
            )
        )
    seconds = time.perf_counter() - t0
    acc = {k: [r.level(k).accuracy for r in reports] for k in SCANS}
    full = statistics.mean(acc[SCANS[-1]])
    rows = []
    for k in SCANS:
        row = reports[0].level(k)
        grads = [r.level(k).gradient for r in reports]
        rows.append(
            {
                "scan": k,
                "bytes_fraction": row.bytes_fraction,
                "quality_p5": row.quality_p5,
                "gradient": statistics.mean(grads),
                "gradient_min": min(grads),
                "accuracy": statistics.mean(acc[k]),
                "accuracy_min": min(acc[k]),
                "accuracy_max": max(acc[k]),
                "of_full": statistics.mean(acc[k]) / full,
            }
        )
    on_means = min(r["scan"] for r in rows if r["of_full"] >= 0.95)
    return {
        "data": str(data),
        "seconds": seconds,
        "rows": rows,
        "choices": [r.choices for r in reports],
        "accuracy_choice_on_means": on_means,
        "sentences": [r.sentence for r in reports],
        "reports": [r.to_dict() for r in reports],
    }


def _print(task: str, m: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"\n{task} at {args.size} px, {args.epochs} proxy epochs, seeds "
        f"{','.join(map(str, args.seeds))} ({m['seconds']:.0f} s)"
    )
    print("| level | bytes | p5 MS-SSIM | gradient cosine | accuracy (min-max) | of full |")
    print("|---:|---:|---:|---:|---|---:|")
    for r in m["rows"]:
        print(
            f"| {r['scan']} | {r['bytes_fraction']:.0%} | {r['quality_p5']:.3f} | "
            f"{r['gradient']:.3f} | {r['accuracy']:.3f} ({r['accuracy_min']:.3f}-"
            f"{r['accuracy_max']:.3f}) | {r['of_full']:.0%} |"
        )
    picks = {c: [ch[c] for ch in m["choices"]] for c in ("quality", "gradient", "accuracy")}
    print(
        f"choices per seed: quality {picks['quality']}, gradient {picks['gradient']}, "
        f"accuracy {picks['accuracy']}; accuracy on the means: level "
        f"{m['accuracy_choice_on_means']}"
    )
    print(f"seed {args.seeds[0]}: {m['sentences'][0]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=4, help="proxy training epochs per level")
    ap.add_argument("--size", type=int, default=64, help="training size (and patch side)")
    ap.add_argument("--sigma", type=float, default=1.0, help="the sharpness task's blur, px")
    ap.add_argument("--tasks", default="flowers,sharpness")
    ap.add_argument("--threads", type=int, default=None, help="PyTorch threads")
    args = ap.parse_args()
    args.seeds = [int(s) for s in args.seeds.split(",")]
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    out = {}
    for task in args.tasks.split(","):
        out[task] = _task(task, args)
        _print(task, out[task], args)
    OUT.parent.mkdir(exist_ok=True)
    machine = {"platform": platform.platform(), "cpus": os.cpu_count()}
    OUT.write_text(to_json({"machine": machine, "args": vars(args), "tasks": out}) + "\n")
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
