"""The ``demo`` sub-command: images at every scan level as one HTML page with no kernel."""

from __future__ import annotations

import argparse
from typing import Any

from ._args import positive_int
from ._defaults import DEFAULT_DATASET_SAMPLE


def _levels(text: str) -> list[int]:
    """``"1,2,5,10"`` -> [1, 2, 5, 10]."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected levels such as 1,2,5,10, got {text!r}"
        ) from None
    if not levels:
        raise argparse.ArgumentTypeError(f"expected levels such as 1,2,5,10, got {text!r}")
    return levels


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="write one HTML page that slides through the scan levels of a few images "
        "(opens offline, no kernel)",
        description="Write one self-contained HTML page: the images at every scan level, a "
        "level slider with play, the byte counter, the bytes-vs-quality curve and the "
        "comparison views, driven in the browser alone (BokehJS inlined, no network).",
    )
    p.add_argument("source", help="PCR dataset, folder of images or image file")
    p.add_argument("out", help="the HTML file to write, e.g. scans.html")
    p.add_argument(
        "--images", type=positive_int, default=8, metavar="N", help="the first N images (8)"
    )
    p.add_argument(
        "--index",
        type=int,
        nargs="+",
        metavar="I",
        help="these image indices instead of the first N",
    )
    p.add_argument("--levels", type=_levels, metavar="K,K,...", help="levels embedded (all)")
    p.add_argument("--max-side", type=positive_int, default=512, help="picture size (512 px)")
    p.add_argument("--metric", choices=("mssim", "ssim", "psnr"), default="mssim")
    p.add_argument(
        "--dataset-sample",
        type=int,
        default=DEFAULT_DATASET_SAMPLE,
        metavar="N",
        help="images sampled to draw the dataset's mean curve and band, as notebook 01 "
        f"does ({DEFAULT_DATASET_SAMPLE}; 0: none)",
    )
    p.add_argument("--gain", type=float, default=4.0, help="amplification of the difference view")
    p.add_argument(
        "--title",
        help="page title (default: 'Scan levels of NAME', NAME the dataset's folder, or the "
        "folder above it when it is called pcr)",
    )
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from ..widgets import scan_demo

    page = scan_demo(
        args.source,
        images=args.index if args.index else args.images,
        levels=args.levels,
        max_side=args.max_side,
        metric=args.metric,
        dataset_sample=args.dataset_sample,
        gain=args.gain,
        title=args.title,
    )
    path = page.save_html(args.out)
    print(f"wrote {path} ({page.nbytes / 1e6:.1f} MB): open it in a browser, no kernel needed")
    return 0
