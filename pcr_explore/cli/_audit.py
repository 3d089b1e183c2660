"""The ``audit`` and ``tune`` sub-commands: a dataset audit, and the level for a quality target."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..auditing._checks import CHECKS
from ._args import positive_int as _positive
from ._dask import dask_client, dask_options
from ._defaults import (
    DEFAULT_STATISTIC,
    DEFAULT_TARGETS,
    MAX_QUALITY_PIXELS,
    METRICS,
    STATISTICS,
)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _threshold(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or name not in CHECKS:
        raise argparse.ArgumentTypeError(
            f"expected ISSUE=VALUE with ISSUE one of {', '.join(CHECKS)}, got {text!r}"
        )
    return name, _number(value)


def _sample(text: str) -> int | str:
    if text == "auto":
        return text
    return _positive(text)


def _quality_options(p: argparse.ArgumentParser) -> None:
    """The target, metric, statistic, workers and luminance: the audit's and the tuner's alike."""
    defaults = ", ".join(f"{m} {t:g}" for m, t in DEFAULT_TARGETS.items())
    p.add_argument(
        "--target",
        type=_number,
        default=None,
        help=f"quality target; default per metric ({defaults}; PSNR in dB)",
    )
    p.add_argument("--metric", choices=METRICS, default="mssim", help="quality metric")
    p.add_argument(
        "--statistic",
        choices=STATISTICS,
        default=DEFAULT_STATISTIC,
        help="statistic over images that must reach the target: p5, the 5th percentile "
        "(nearly every image; the default), or the mean",
    )
    p.add_argument("--workers", type=_positive, default=None, help="worker processes")
    p.add_argument(
        "--luminance", action="store_true", help="measure quality on luminance only (default RGB)"
    )


def register(sub: Any) -> None:
    register_tune(sub)
    p = sub.add_parser(
        "audit",
        help="audit a folder of images or a PCR dataset: broken, odd and duplicate images, "
        "bytes and quality per scan level, recommended level",
    )
    p.add_argument("path", help="folder of images, image file, or PCR dataset folder")
    p.add_argument(
        "--sample", type=_positive, default=32, help="images measured for quality (default 32)"
    )
    _quality_options(p)
    p.add_argument("--json", metavar="OUT", help="write the report as JSON ('-': stdout)")
    p.add_argument("--html", metavar="OUT", help="write a standalone HTML report")
    p.add_argument("--seed", type=int, default=0, help="seed of the quality sample")
    p.add_argument(
        "--threshold",
        type=_threshold,
        action="append",
        default=[],
        metavar="ISSUE=VALUE",
        help="override a check's threshold (repeatable), e.g. blurry=0.1; the defaults are "
        + ", ".join(f"{k} {c.threshold:g}" for k, c in CHECKS.items()),
    )
    p.add_argument(
        "--max-pixels",
        type=_positive,
        default=MAX_QUALITY_PIXELS,
        help="measure the quality of larger sampled images at a reduced size "
        f"(bounds memory; default {MAX_QUALITY_PIXELS:,})",
    )
    bytes_count = p.add_mutually_exclusive_group()
    bytes_count.add_argument(
        "--bytes-sample",
        type=_positive,
        default=32,
        metavar="N",
        help="transcode N images (the quality sample among them; default 32) and estimate "
        "the bytes per level from them, with a 95%% interval; the other JPEGs only have "
        "their coefficients read",
    )
    bytes_count.add_argument(
        "--exact-bytes",
        action="store_true",
        help="transcode every image: the exact bytes per level (slower)",
    )
    p.add_argument(
        "--full-size-quality",
        action="store_true",
        help="measure the quality sample at full size (up to --max-pixels); by default an "
        "image over 131,072 pixels is measured at a reduced size, to bound the CPU",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    dask_options(p, "audit")
    p.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    from ..auditing import AuditOptions, audit
    from ..auditing._options import QUALITY_PIXELS

    with dask_client(args) as client:
        report = audit(
            args.path,
            sample=args.sample,
            target=args.target,
            metric=args.metric,
            statistic=args.statistic,
            workers=args.workers,
            progress=not args.quiet,
            seed=args.seed,
            luminance=args.luminance,
            options=AuditOptions(
                thresholds=dict(args.threshold),
                max_pixels=args.max_pixels,
                bytes_sample=None if args.exact_bytes else args.bytes_sample,
                quality_pixels=None if args.full_size_quality else QUALITY_PIXELS,
            ),
            client=client,
        )
    to_stdout = args.json == "-"
    if not args.quiet and not to_stdout:
        print(report.summary())
    if args.json:
        if to_stdout:
            sys.stdout.write(report.to_json())
        else:
            report.to_json(args.json)
            if not args.quiet:
                print(f"JSON report: {args.json}")
    if args.html:
        out = report.to_html(args.html)
        if not args.quiet and not to_stdout:
            print(f"HTML report: {out}")
    return 0


def register_tune(sub: Any) -> None:
    p = sub.add_parser(
        "tune",
        help="the smallest scan level whose quality reaches a target, over a sample, "
        "with a bootstrap interval",
    )
    p.add_argument("path", help="PCR dataset, folder of images or image file")
    _quality_options(p)
    p.add_argument(
        "--sample",
        type=_sample,
        default=64,
        help="images measured, or 'auto' (double the sample until the decision is clear)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap")
    p.add_argument(
        "--max-pixels",
        type=_positive,
        default=None,
        help="measure larger images at the size a training decode of this many pixels "
        "produces (DCT scaling; default full size)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    dask_options(p, "measure")
    p.set_defaults(func=_tune)


def _tune(args: argparse.Namespace) -> int:
    from .._json import to_json
    from ..quality.tune import tune

    with dask_client(args) as client:
        result = tune(
            args.path,
            target=args.target,
            metric=args.metric,
            statistic=args.statistic,
            sample=args.sample,
            seed=args.seed,
            workers=args.workers,
            progress=not (args.quiet or args.json),
            luminance=args.luminance,
            max_pixels=args.max_pixels,
            client=client,
        )
    if args.json:
        sys.stdout.write(to_json(result.to_dict()) + "\n")
    else:
        print(result.summary())
    return 0
