"""The ``export`` sub-command: a dataset at one level as WebDataset shards or a folder."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._args import byte_size, positive_int


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write a dataset at one scan level as WebDataset tar shards or a folder of JPEGs",
    )
    p.add_argument("dataset", help="PCR dataset (path or URL)")
    p.add_argument("out", help="output folder (empty, unless --overwrite)")
    p.add_argument("--scan", type=positive_int, required=True, help="the level to export")
    p.add_argument("--to", choices=("webdataset", "folder"), default="webdataset")
    p.add_argument(
        "--shard-size",
        type=byte_size,
        default=256 * 2**20,
        metavar="SIZE",
        help="bytes per WebDataset shard (default 256MiB)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier export in the folder (refused if it holds other files)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from ..read.export import export_dataset

    summary = export_dataset(
        args.dataset,
        args.out,
        scan=args.scan,
        to=args.to,
        shard_bytes=args.shard_size,
        overwrite=args.overwrite,
        progress=not args.quiet,
    )
    print(summary)
    if summary.pattern is not None:  # the shards this export wrote, not read back from the folder
        print(f"read it with: webdataset.WebDataset('{summary.pattern}')", file=sys.stderr)
    return 0
