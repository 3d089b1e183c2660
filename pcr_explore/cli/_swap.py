"""The swap sub-commands.

``swap-sim`` prints a swap report (:func:`pcr_explore.swap.simulator.report`): simulated
figures under a device profile's assumptions. ``swap-train`` loads the photos
(:func:`pcr_explore.swap.load_labelled_images`, opened by
:func:`pcr_explore.open_source`) and trains with a codec on the saved activations next to
the uncompressed run (:func:`pcr_explore.swap.swap_train`): figures measured on this
machine.

Each ``add_*`` function registers its sub-command on what
``ArgumentParser.add_subparsers()`` returned and returns its parser, whose
``func`` is the matching ``run_*``; each ``run_*`` takes the parsed
arguments, prints, and returns 0, raising the package's errors for bad input
(the main CLI prints them as one line and exits with status 1).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._args import int_list
from ._args import positive_int as _positive
from ._defaults import BUILTIN_MODELS, PROFILES

__all__ = ["add_swap_sim_parser", "add_swap_train_parser", "run_swap_sim", "run_swap_train"]

# pcr_explore.swap.traces._trace.MAX_ITERATIONS and MAX_TRACE_BYTES (in MiB), for the
# help text without importing numpy (tests/swap/test_swap_cli.py checks both copies)
MAX_ITERATIONS = 1000
MAX_TRACE_MIB = 16


def _ramp(text: str) -> tuple[float, float]:
    a, sep, b = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(a), float(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B (e.g. 0.4:0.8), got {text!r}") from None


def add_swap_sim_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``swap-sim``; returns its parser (``func``: :func:`run_swap_sim`)."""
    p = subparsers.add_parser(
        "swap-sim",
        help="simulate compressed activation swapping under several policies",
        description="Simulate one training step that swaps activations to host memory, "
        "under each policy, and print swap time, stall and link bytes. Every figure is "
        "simulated under the device profile's assumptions (docs/SWAP.md).",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--model",
        choices=BUILTIN_MODELS,
        default="vgg16",
        help="built-in architecture (default vgg16)",
    )
    src.add_argument(
        "--trace",
        metavar="TRACE",
        help=f"trace JSON written by Trace.save (at most {MAX_TRACE_MIB} MiB), or a measured "
        "trace shipped with the package (measured:small-cnn-flowers5, "
        "measured:vgg-small-flowers5, measured:resnet-small-flowers5)",
    )
    p.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    p.add_argument("--resolution", type=int, default=224, help="input side (default 224)")
    p.add_argument(
        "--profile",
        default="v100-pcie3",
        help=f"device profile: {', '.join(PROFILES)} (default v100-pcie3)",
    )
    sp = p.add_mutually_exclusive_group()
    sp.add_argument(
        "--sparsity",
        type=float,
        default=None,
        help="constant sparsity of ReLU/pool outputs (default 0.65)",
    )
    sp.add_argument(
        "--sparsity-ramp",
        type=_ramp,
        default=None,
        metavar="A:B",
        help="sparsity ramped from A (shallow) to B (deep)",
    )
    p.add_argument(
        "--iterations",
        type=int,
        default=1,
        help=f"iterations to simulate, at most {MAX_ITERATIONS}; sparsity drifts over them "
        "(default 1)",
    )
    p.add_argument(
        "--drift",
        type=float,
        default=0.1,
        help="sparsity change from the first to the last iteration (default 0.1)",
    )
    p.add_argument(
        "--policies",
        nargs="+",
        metavar="POLICY",
        default=None,
        help="vdnn, always:<codec>, cswap (ZVC, as CSWAP), cswap+lossy (ZVC+ZFP, as CSwap+), "
        "cswap-all (every lossless codec), cswap:<codecs>, oracle, oracle-all... "
        "(default: vdnn, always:<each codec>, cswap, cswap-all, oracle, oracle-all)",
    )
    p.add_argument(
        "--noise",
        type=float,
        default=0.05,
        help="sigma of true-vs-model kernel time noise (default 0.05)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="also write results as JSON to OUT")
    p.set_defaults(func=run_swap_sim)
    return p


def run_swap_sim(args: argparse.Namespace) -> int:
    """Run ``pcr-explore swap-sim``: print the report's table, write its JSON if asked."""
    from ..errors import SwapError
    from ..swap.simulator.report import MAX_ITERATIONS as most
    from ..swap.simulator.report import report

    if not 1 <= args.iterations <= most:
        raise SwapError(f"--iterations must lie in [1, {most}], got {args.iterations}")
    rep = report(
        args.model,
        profile=args.profile,
        policies=args.policies,
        trace=args.trace,
        batch=args.batch,
        resolution=args.resolution,
        sparsity=args.sparsity if args.sparsity_ramp is None else args.sparsity_ramp,
        iterations=args.iterations,
        drift=args.drift,
        noise=args.noise,
        seed=args.seed,
    )
    print(rep.to_text())
    if args.json:
        rep.save(args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _seeds(text: str) -> list[int]:
    return int_list(text, what="seeds", example="0,1,2")


def add_swap_train_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``swap-train``; returns its parser (``func``: :func:`run_swap_train`)."""
    from ..swap.capture.nets import NETS

    p = subparsers.add_parser(
        "swap-train",
        help="train with compressed saved activations next to the uncompressed run (PyTorch)",
        description="Train a small network on DATASET twice per seed, the same batches in "
        "the same order: once as usual and once with every saved activation encoded by "
        "CODEC and decoded for backward. Prints final validation accuracy and loss of both, "
        "whether the losses are identical, the activation bytes saved and the codec's CPU "
        "time, measured on this machine. Needs pcr-explore[torch].",
    )
    p.add_argument(
        "dataset",
        metavar="DATASET",
        help="folder with train/ and val/, folder of class sub-folders, or a PCR dataset",
    )
    p.add_argument("--codec", default="zfp:8", help="zvc, bitmap, zfp:<rate>, ... (default zfp:8)")
    p.add_argument("--steps", type=_positive, default=100, help="training steps (default 100)")
    p.add_argument("--net", choices=NETS, default="small-cnn", help="network (default small-cnn)")
    p.add_argument("--size", type=_positive, default=48, help="image side, pixels (default 48)")
    p.add_argument("--batch", type=_positive, default=32, help="batch size (default 32)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default per network)")
    p.add_argument("--seeds", type=_seeds, default=[0], help="comma-separated seeds (default 0)")
    p.add_argument(
        "--per-class", type=_positive, default=None, help="at most N images per class and side"
    )
    p.add_argument(
        "--threads", type=_positive, default=1, help="PyTorch threads (default 1: steadier timings)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_swap_train)
    return p


def run_swap_train(args: argparse.Namespace) -> int:
    """Run ``pcr-explore swap-train``: print the comparison as a table or one JSON object."""
    from .._json import to_json
    from ..read.sources import open_source
    from ..swap.training.codec_training import swap_train

    res = swap_train(
        args.dataset,
        opener=open_source,
        codec=args.codec,
        steps=args.steps,
        net=args.net,
        size=args.size,
        batch_size=args.batch,
        lr=args.lr,
        seeds=args.seeds,
        per_class=args.per_class,
        threads=args.threads,
    )
    print(to_json(res.to_dict()) if args.json else res.to_text())
    return 0
