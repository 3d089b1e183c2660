"""The ``train`` and ``tune-gradient`` sub-commands (PyTorch: ``pcr-explore[torch]``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._args import bandwidth, int_list
from ._args import positive_int as _positive

__all__ = ["add_train_parsers"]


def _schedule(text: str) -> Any:
    from ..read.schedule import ScanSchedule

    try:
        return ScanSchedule.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _scans(text: str) -> list[int] | str:
    if text.strip() == "auto":
        return "auto"
    return int_list(text, example="1,2,5,10 or 'auto'")


def _levels(text: str) -> list[int]:
    levels = _scans(text)
    if isinstance(levels, str):
        raise argparse.ArgumentTypeError("tune-gradient compares levels: give e.g. 1,2,5,10")
    return levels


def add_train_parsers(sub: Any) -> None:
    """Register ``train`` and ``tune-gradient`` on an argparse sub-parser set.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers`` returned.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pcr-explore")
    >>> add_train_parsers(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["train", "t.pcr", "--val", "v.pcr", "--scans", "1,10"]).scans
    [1, 10]
    """
    p = sub.add_parser(
        "train",
        help="train one small CNN per scan level; accuracy, bytes read and time per epoch",
    )
    p.add_argument("train", metavar="TRAIN_DATASET", help="labelled PCR dataset to train on")
    p.add_argument("--val", required=True, metavar="VAL_DATASET", help="validation dataset")
    p.add_argument(
        "--scans",
        type=_scans,
        default=None,
        help="levels to train at, e.g. 1,2,5,10, or 'auto' (gradient tuner); default 1,2,5,10 "
        "(another scan script: 1, 2, its middle and its full level)",
    )
    p.add_argument(
        "--schedule",
        type=_schedule,
        default=None,
        help="a scan-level curriculum as one more run: ramp:1-10:2-6 (level 1 up to epoch 2, "
        "rising to 10 at epoch 6) or steps:1=2,4=5,7=10; alone when --scans is not given",
    )
    p.add_argument("--size", type=_positive, default=64, help="image side in pixels (64)")
    p.add_argument("--epochs", type=_positive, default=10, help="epochs per level (10)")
    p.add_argument("--batch-size", type=_positive, default=32, help="batch size (32)")
    p.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate (0.002)")
    p.add_argument("--seed", type=int, default=0, help="seed of weights and order (0)")
    p.add_argument(
        "--bandwidth",
        type=bandwidth,
        default=None,
        help="hold training reads to this storage bandwidth, e.g. 50MB/s (default: unlimited)",
    )
    p.add_argument("--workers", type=_positive, default=2, help="decoding threads (2)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--html", metavar="OUT", help="write a standalone HTML report")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    p.set_defaults(func=_train)

    p = sub.add_parser(
        "tune-gradient",
        help="pick the scan level whose loss gradients match full quality's (cosine similarity)",
    )
    p.add_argument("dataset", metavar="DATASET", help="labelled PCR dataset")
    p.add_argument(
        "--scans",
        type=_levels,
        default=None,
        help="levels to compare (default 1,2,5,10; another scan script: 1, 2, middle, full)",
    )
    p.add_argument("--size", type=_positive, default=64, help="image side in pixels (64)")
    p.add_argument("--batches", type=_positive, default=10, help="batches to average (10)")
    p.add_argument("--batch-size", type=_positive, default=32, help="images per batch (32)")
    p.add_argument("--threshold", type=float, default=0.8, help="similarity to reach (0.8)")
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        metavar="EPOCHS",
        help="epochs of full-quality training of the small CNN before measuring "
        "(0: at initialisation; default 1)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the sample (0)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=_tune_gradient)


def _train(args: argparse.Namespace) -> int:
    from ..train import TrainOptions, train_at_levels

    result = train_at_levels(
        args.train,
        val=args.val,
        scans=args.scans,
        schedule=args.schedule,
        size=args.size,
        epochs=args.epochs,
        seed=args.seed,
        bandwidth=args.bandwidth,
        workers=args.workers,
        progress=not (args.quiet or args.json),
        options=TrainOptions(batch_size=args.batch_size, lr=args.lr),
    )
    if args.json:
        sys.stdout.write(result.to_json() + "\n")
    elif not args.quiet:
        print(result.summary())
    if args.html:
        from ..train.plot import write_html

        out = write_html(result, args.html)
        if not (args.quiet or args.json):
            print(f"HTML report: {out}")
    return 0


def _tune_gradient(args: argparse.Namespace) -> int:
    from .._json import to_json
    from ..read.reader import open_dataset
    from ..train import TrainOptions, small_cnn, train_at_levels, tune_by_gradient

    ds = open_dataset(args.dataset)
    if args.warmup > 0:
        warm = train_at_levels(
            ds,
            val=ds,
            scans=(ds.num_scans,),
            size=args.size,
            epochs=args.warmup,
            seed=args.seed,
            progress=not args.json,
            options=TrainOptions(batch_size=args.batch_size),
        )
        model = warm.models[warm.levels[0].label]
    else:
        from ..train._torch import require_torch

        require_torch("tune-gradient").manual_seed(args.seed)
        model = small_cnn(len(ds.classes))
    result = tune_by_gradient(
        ds,
        model=model,
        scans=args.scans,
        batches=args.batches,
        batch_size=args.batch_size,
        threshold=args.threshold,
        size=args.size,
        seed=args.seed,
    )
    if args.json:
        sys.stdout.write(to_json(result.to_dict()) + "\n")
    else:
        print(result.summary())
    return 0
