"""The ``swap-sim`` sub-command: a swap report (:func:`pcr_explore.swap.report`) as a table."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..swap.architectures import BUILTIN_MODELS
from ..swap.profiles import profile_names
from ..swap.report import report


def _ramp(text: str) -> tuple[float, float]:
    a, sep, b = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(a), float(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B (e.g. 0.4:0.8), got {text!r}") from None


def add_swap_sim_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``swap-sim`` on an argparse subparsers object.

    Parameters
    ----------
    subparsers
        What ``ArgumentParser.add_subparsers()`` returned.

    Returns
    -------
    argparse.ArgumentParser
        The sub-command's parser (its ``func`` default is :func:`run_swap_sim`).
    """
    p = subparsers.add_parser(
        "swap-sim",
        help="simulate compressed activation swapping under several policies",
        description="Simulate one training step that swaps activations to host memory, "
        "under each policy, and print swap time, stall and link bytes.",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--model",
        choices=sorted(BUILTIN_MODELS),
        default="vgg16",
        help="built-in architecture (default vgg16)",
    )
    src.add_argument("--trace", metavar="FILE", help="trace JSON written by Trace.save")
    p.add_argument("--batch", type=int, default=64, help="batch size (default 64)")
    p.add_argument("--resolution", type=int, default=224, help="input side (default 224)")
    p.add_argument(
        "--profile",
        default="v100-pcie3",
        help=f"device profile: {', '.join(profile_names())} (default v100-pcie3)",
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
        help="iterations to simulate; sparsity drifts over them (default 1)",
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
        help="vdnn, always:<codec>, cswap, cswap+lossy, cswap:<codecs>, oracle... "
        "(default: vdnn, always:<each codec>, cswap, oracle)",
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
    """Run ``pcr-explore swap-sim``: print the report's table, write its JSON if asked.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by the parser of :func:`add_swap_sim_parser`.

    Returns
    -------
    int
        0 on success.

    Raises
    ------
    SwapError
        For bad input (the main CLI prints it as one line).
    """
    rep = report(
        args.model,
        args.profile,
        args.policies,
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
