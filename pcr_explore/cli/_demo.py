"""The ``demo`` sub-command: images at every scan level as one HTML page with no kernel."""

from __future__ import annotations

import argparse
from typing import Any

from ._args import int_list, positive_int
from ._defaults import DEFAULT_DATASET_SAMPLE


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
    p.add_argument("--levels", type=int_list, metavar="K,K,...", help="levels embedded (all)")
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
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from .._pool import progress_bar
    from ..read.sources import open_source
    from ..widgets import scan_demo

    src = open_source(args.source)
    images = args.index if args.index else args.images
    curve, qualities = _measure(src, args, images)
    # the pictures of each image at each level, and the page around them
    with progress_bar(total=1, desc="pictures and page", unit="page", disable=args.quiet) as bar:
        page = scan_demo(
            src,
            images=images,
            levels=args.levels,
            max_side=args.max_side,
            metric=args.metric,
            dataset_sample=0,
            curve=curve,
            qualities=qualities,
            gain=args.gain,
            title=args.title,
        )
        bar.update(1)
    path = page.save_html(args.out)
    print(f"wrote {path} ({page.nbytes / 1e6:.1f} MB): open it in a browser, no kernel needed")
    return 0


def _measure(src: Any, args: argparse.Namespace, images: Any) -> tuple[Any, dict[int, Any]]:
    """What scan_demo would measure without a word, measured here with progress bars.

    The dataset's curve (its sample, as scan_demo draws it) and the quality of each shown
    image that sample does not hold. The page's own checks run first, so that a bad option
    fails at once, not after the measuring.
    """
    from .._pool import progress_bar
    from ..quality import image_quality, quality_curve
    from ..widgets._scan_demo import _check_settings, _choose_images, _choose_levels

    _check_settings(src, args.metric, args.max_side, args.gain, 85, 50, None)  # page's qualities
    chosen, _ = _choose_images(src, images, None)
    _choose_levels(src, args.levels)
    curve = None
    if args.dataset_sample > 0:
        n = min(args.dataset_sample, len(src))
        with progress_bar(total=n, desc="quality sample", unit="img", disable=args.quiet) as bar:
            curve = quality_curve(src, sample=n, seed=0, metric=args.metric, progress=bar)
    sampled = set() if curve is None else {int(i) for i in curve.per_image.indices}
    missing = [i for i in chosen if i not in sampled]
    qualities = {}
    if missing:
        with progress_bar(
            total=len(missing), desc="image quality", unit="img", disable=args.quiet
        ) as bar:
            for i in missing:
                qualities[i] = image_quality(src, image=i)
                bar.update(1)
    return curve, qualities
