"""The ``swap-sim`` subcommand: simulate swapping a model's activations under policies."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from ..errors import SwapError
from .model import get_profile, profile_names
from .simulate import default_policies, simulate_many
from .traces import BUILTIN_MODELS, Trace, builtin_trace

__all__ = ["add_swap_sim_parser", "run_swap_sim", "swap_sim_report"]


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
        The subcommand's parser (its ``func`` default is :func:`run_swap_sim`).
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
        default=None,
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


def _load_trace(args: argparse.Namespace) -> Trace:
    spec: Any = None
    if args.sparsity is not None:
        spec = args.sparsity
    elif args.sparsity_ramp is not None:
        spec = tuple(args.sparsity_ramp)
    if args.trace:
        trace = Trace.load(args.trace)
        return trace if spec is None else trace.with_sparsity(spec)
    return builtin_trace(
        args.model or "vgg16", args.batch, args.resolution, 0.65 if spec is None else spec
    )


def swap_sim_report(args: argparse.Namespace) -> dict[str, Any]:
    """Run the simulation described by parsed ``swap-sim`` arguments; return the JSON report.

    Raises
    ------
    SwapError
        For a bad trace, profile, policy or sparsity.
    """
    trace = _load_trace(args)
    profile = get_profile(args.profile)
    policies = args.policies or default_policies(profile)
    results = simulate_many(trace, profile, policies, noise=args.noise, seed=args.seed)
    decisions = {name: r.decisions() for name, r in results.items()}
    tensors = []
    for t, rec in enumerate(trace.tensors):
        tensors.append(
            {
                "name": rec.name,
                "shape": list(rec.shape),
                "bytes": rec.nbytes,
                "sparsity": float(trace.sparsity[-1, t]),
                "decisions": {
                    name: {
                        "codec": d[t].codec,
                        "bytes": d[t].bytes,
                        "stall_seconds": d[t].actual_stall,
                        "reason": d[t].reason,
                    }
                    for name, d in decisions.items()
                },
            }
        )
    return {
        "trace": trace.name,
        "profile": profile.name,
        "mean_sparsity": trace.mean_sparsity,
        "total_bytes": trace.total_bytes,
        "policies": {name: r.summary() for name, r in results.items()},
        "tensors": tensors,
    }


def _table(report: dict[str, Any]) -> str:
    pol = report["policies"]
    base = pol.get("vdnn")
    lines = [
        f"{report['trace']} on {report['profile']}: {len(report['tensors'])} tensors, "
        f"{report['total_bytes'] / 2**30:.2f} GiB, mean sparsity {report['mean_sparsity']:.2f}",
        f"{'policy':<18}{'swap ms':>10}{'stall ms':>10}{'link GiB':>10}{'step ms':>10}"
        f"{'vs vdnn':>9}  codecs",
    ]
    for name, s in pol.items():
        rel = ""
        if base and base["swap_seconds"] > 0:
            rel = f"{(s['swap_seconds'] / base['swap_seconds'] - 1) * 100:+.1f}%"
        counts = " ".join(f"{c}:{k}" for c, k in s["codec_counts"].items())
        lines.append(
            f"{name:<18}{s['swap_seconds'] * 1e3:>10.2f}{s['stall_seconds'] * 1e3:>10.2f}"
            f"{s['link_bytes'] / 2**30:>10.3f}{s['step_seconds'] * 1e3:>10.2f}{rel:>9}  {counts}"
        )
    return "\n".join(lines)


def _clean(obj: Any) -> Any:
    """JSON cannot hold inf/nan: write them as strings."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def run_swap_sim(args: argparse.Namespace) -> int:
    """Entry point of ``pcr-explore swap-sim``; prints the table, writes JSON if asked.

    Returns
    -------
    int
        0 on success.

    Raises
    ------
    SwapError
        For bad input (the main CLI prints it as one line).
    """
    if args.batch < 1:
        raise SwapError(f"--batch must be >= 1, got {args.batch}")
    report = swap_sim_report(args)
    print(_table(report))
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(_clean(report), fh, indent=1)
        except OSError as exc:
            raise SwapError(f"{args.json}: cannot write JSON ({exc.strerror})") from exc
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
