"""The ``budget`` sub-command: how many bytes training needs, in one report."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._args import bandwidth, byte_size, int_list, positive_int
from ._dask import dask_client, dask_options
from ._defaults import DEFAULT_STATISTIC, STATISTICS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "budget",
        help="how many bytes training needs: bytes, quality, gradients, accuracy and decode "
        "cost per scan level, each criterion's choice and one recommendation",
    )
    p.add_argument("train", help="PCR dataset or folder of images (labelled for gradients)")
    p.add_argument("--val", help="validation set with the same classes (for --train-epochs)")
    p.add_argument(
        "--bandwidth", type=bandwidth, default=None, help="storage bandwidth, e.g. 20MB/s"
    )
    p.add_argument(
        "--disk",
        type=byte_size,
        default=None,
        help="a disk or cache size, e.g. 20GB: the highest level whose prefixes fit on it",
    )
    p.add_argument("--target", type=float, default=None, help="quality target (MS-SSIM 0.95)")
    p.add_argument(
        "--statistic",
        choices=STATISTICS,
        default=DEFAULT_STATISTIC,
        help="what must reach the target: p5 (the default) or mean",
    )
    p.add_argument("--sample", type=positive_int, default=64, help="images in the quality sample")
    p.add_argument(
        "--scans", type=int_list, default=None, help="levels for gradients and training (1,2,5,10)"
    )
    p.add_argument("--size", type=positive_int, default=64, help="training image side, px")
    p.add_argument(
        "--train-epochs", type=int, default=0, help="proxy training epochs per level (0: none)"
    )
    p.add_argument("--workers", type=positive_int, default=2, help="decoding threads")
    p.add_argument("--seed", type=int, default=0, help="seed of every sample")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", metavar="OUT", help="also write a page that opens offline")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    dask_options(p, "measure the quality curve")
    p.set_defaults(func=_budget)


def _budget(args: argparse.Namespace) -> int:
    from ..budgeting import budget

    with dask_client(args) as client:
        report = budget(
            args.train,
            val=args.val,
            bandwidth=args.bandwidth,
            disk=args.disk,
            target=args.target,
            statistic=args.statistic,
            sample=args.sample,
            scans=args.scans,
            size=args.size,
            train_epochs=args.train_epochs,
            workers=args.workers,
            seed=args.seed,
            progress=not (args.quiet or args.json),
            client=client,
        )
    if args.html:
        print(f"HTML report: {report.save_html(args.html)}", file=sys.stderr)
    if args.json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        print(report.summary())
    return 0
