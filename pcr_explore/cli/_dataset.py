"""Sub-commands on PCR datasets: encode, inspect, read, sample."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ._args import byte_size, positive_int
from ._dask import dask_client, dask_options
from ._defaults import (
    DEFAULT_DEADLINE,
    DEFAULT_RECORD_SIZE,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    SCRIPT_LEVELS,
)

if TYPE_CHECKING:
    from ..encode.encoder import EncodeSummary
    from ..read.reader import PCRDataset


def register(sub: Any) -> None:
    """Add the encode, inspect, read and sample sub-commands to *sub*."""
    _register_encode(sub)
    _register_readers(sub)


def _register_encode(sub: Any) -> None:
    p = sub.add_parser("encode", help="encode a folder of images into a PCR dataset")
    p.add_argument(
        "src",
        help="folder of images (class sub-folders give labels), WebDataset tar shards (a path, "
        "URL or brace pattern such as 's-{0000..0009}.tar') or a Parquet file",
    )
    p.add_argument("out", help="output dataset folder, or an object storage URL (s3://bucket/ds)")
    p.add_argument("--backend", choices=["auto", "jpegtran", "pillow"], default="auto")
    p.add_argument("--quality", type=int, default=90, help="JPEG quality for non-JPEG sources")
    p.add_argument(
        "--scan-script",
        default="standard",
        metavar="NAME|FILE",
        help="scans every image is stored in, one level each: "
        + "; ".join(f"{n} ({levels} levels)" for n, levels in SCRIPT_LEVELS.items())
        + "; or a file in jpegtran -scans syntax (default: standard)",
    )
    p.add_argument(
        "--record-size",
        type=byte_size,
        default=DEFAULT_RECORD_SIZE,
        metavar="SIZE",
        help=f"source bytes per record, e.g. 4MB or 64MiB (default {DEFAULT_RECORD_SIZE})",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="parallel transcodes (default: all cores)"
    )
    p.add_argument(
        "--processes",
        action="store_true",
        help="run workers as processes instead of threads (for Pillow-heavy, non-JPEG sources)",
    )
    p.add_argument("--labels", metavar="CSV", help="CSV with a file,label header (at most 256 MiB)")
    p.add_argument("--no-shuffle", action="store_true", help="keep sorted order")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed")
    p.add_argument("--strict", action="store_true", help="stop at the first unreadable file")
    p.add_argument("--overwrite", action="store_true", help="replace what OUT holds")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    dask_options(p, "encode")
    p.set_defaults(func=_encode)


def _register_readers(sub: Any) -> None:
    """inspect, verify, read and sample."""
    p = sub.add_parser("inspect", help="bytes per scan level of a dataset")
    p.add_argument("path", help="dataset folder or URL")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _remote_options(p)
    p.set_defaults(func=_inspect)

    p = sub.add_parser("verify", help="check every record's checksums; exit 1 on any problem")
    p.add_argument("path", help="dataset folder or URL")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_verify)

    p = sub.add_parser("read", help="read and decode every image at one scan level")
    p.add_argument("path", help="dataset folder or URL")
    p.add_argument("--scan", type=int, required=True, help="scan level 1..num_scans")
    p.add_argument("--size", type=positive_int, default=None, help="longer side in pixels")
    p.add_argument("--workers", type=int, default=1, help="decoding threads (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _remote_options(p)
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="keep the prefixes read here; a later, higher level fetches only what it adds",
    )
    p.add_argument(
        "--cache-max-bytes",
        type=byte_size,
        default=None,
        metavar="SIZE",
        help="hold the cache folder to SIZE (e.g. 2GB): the least recently used records lose "
        "the scan groups above the level read first, then whole records go; warns if the "
        "level does not fit",
    )
    p.add_argument(
        "--read-ahead",
        type=_size_or_zero,
        default=None,
        metavar="SIZE",
        help="bytes of the next records kept in flight while one decodes (default 32MiB for "
        "a URL, 0 for a local folder)",
    )
    p.set_defaults(func=_read)

    p = sub.add_parser("sample", help="build the bundled sample dataset from scikit-image photos")
    p.add_argument("out", nargs="?", default="data/sample", help="folder (default data/sample)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_sample)


def _size_or_zero(text: str) -> int:
    """A size such as ``64MB``, or 0."""
    return 0 if text.strip() == "0" else byte_size(text)


def _remote_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds a remote request may go unanswered (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=DEFAULT_RETRIES,
        metavar="N",
        help=f"retries after a 5xx, a dropped connection or a timeout (default {DEFAULT_RETRIES})",
    )
    p.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        metavar="S",
        help="seconds a remote read may take in all, retries and waits included, however "
        f"slowly bytes arrive (default {DEFAULT_DEADLINE:g}; 0: no limit)",
    )


def _open(args: argparse.Namespace) -> PCRDataset:
    from ..read.reader import open_dataset

    cache = getattr(args, "cache_dir", None)
    return open_dataset(
        args.path,
        cache_dir=cache,
        cache_max_bytes=getattr(args, "cache_max_bytes", None),
        timeout=args.timeout,
        retries=args.retries,
        deadline=args.deadline or None,
        read_ahead=getattr(args, "read_ahead", None),
    )


def _encode(args: argparse.Namespace) -> int:
    try:
        summary = _run_encode(args)
    except KeyboardInterrupt:
        print(
            f"pcr-explore: interrupted; finished records in {args.out} are kept: run the same "
            "command again to resume",
            file=sys.stderr,
        )
        return 130
    print(summary)
    if summary.skipped:
        print(f"skipped files are listed in {args.out}/manifest.json under 'skipped'")
    return 0


def _run_encode(args: argparse.Namespace) -> EncodeSummary:
    from ..encode.encoder import EncodeOptions, encode_dataset

    options = EncodeOptions(
        backend=args.backend,
        quality=args.quality,
        parallel="processes" if args.processes else "threads",
        shuffle=not args.no_shuffle,
        strict=args.strict,
    )
    with dask_client(args) as client:
        return encode_dataset(
            args.src,
            args.out,
            scan_script=args.scan_script,
            record_size=args.record_size,
            workers=args.workers,
            labels=args.labels,
            seed=args.seed,
            overwrite=args.overwrite,
            progress=not args.quiet,
            client=client,
            options=options,
        )


def _inspect(args: argparse.Namespace) -> int:
    from .._json import to_json

    info = _open(args).summary()
    print(to_json(info.to_dict()) if args.json else info)  # as verify prints its report
    return 0


def _verify(args: argparse.Namespace) -> int:
    from .._json import to_json
    from ..read.verify import verify_dataset

    report = verify_dataset(args.path)
    print(to_json(report.to_dict()) if args.json else report)
    return 0 if report.ok else 1


def _read(args: argparse.Namespace) -> int:
    from .._json import to_json
    from ..read.throughput import read_pass

    ds = _open(args)
    r = read_pass(ds, args.scan, args.size, workers=args.workers, progress=not args.quiet)
    out = {
        "scan": r.scan,
        "size": args.size,
        "workers": args.workers,
        "images": r.images,
        "bytes_read": r.bytes_read,
        "requests": ds.stats.requests,
        "cache_bytes": ds.stats.cache_bytes,
        "seconds": r.seconds,
        "images_per_second": r.images_per_s if r.seconds > 0 else None,
    }
    if args.json:
        print(to_json(out))
    else:
        cached = f" (+{ds.stats.cache_bytes:,} from the cache)" if ds.cache is not None else ""
        print(
            f"scan {r.scan}: {r.images} images, {r.bytes_read:,} bytes in {ds.stats.requests} "
            f"reads{cached}, {r.seconds:.3f} s ({r.images_per_s:.1f} images/s)"
        )
    return 0


def _sample(args: argparse.Namespace) -> int:
    from ..encode.sample import build_sample
    from ..read.reader import open_dataset

    pcr = build_sample(args.out, progress=not args.quiet)
    print(f"sample dataset: {pcr}")
    print(open_dataset(str(pcr)).summary())
    return 0
