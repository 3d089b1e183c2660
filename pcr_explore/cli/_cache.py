"""The ``cache`` sub-command: what a prefix cache folder holds, emptying it, and sizing one."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._args import byte_size


def register(sub: Any) -> None:
    p = sub.add_parser(
        "cache", help="a prefix cache folder: what it holds, empty it, or which level fits one"
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    info = verbs.add_parser(
        "info", help="datasets, prefixes and bytes held, and how many records at each level"
    )
    info.add_argument("dir", help="the cache folder (--cache-dir, cache_dir=)")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(func=_info)
    clear = verbs.add_parser("clear", help="delete the cached prefixes (nothing else)")
    clear.add_argument("dir", help="the cache folder")
    clear.add_argument("--url", help="only this dataset's prefixes")
    clear.set_defaults(func=_clear)
    plan = verbs.add_parser(
        "plan", help="which scan level of a dataset a cache (or disk) of a given size holds whole"
    )
    plan.add_argument("path", help="dataset folder or URL")
    plan.add_argument(
        "--size", type=byte_size, required=True, help="the cache or disk size, e.g. 20GB"
    )
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.set_defaults(func=_plan)


def _info(args: argparse.Namespace) -> int:
    from .._json import to_json
    from ..records.summary import count
    from ..storage.cache import cache_usage

    rows = cache_usage(args.dir)
    total = sum(r["bytes"] for r in rows)
    if args.json:
        sys.stdout.write(to_json({"dir": args.dir, "bytes": total, "datasets": rows}) + "\n")
        return 0
    print(f"{args.dir}: {count(len(rows), 'dataset')}, {total:,} bytes")
    for r in rows:
        print(
            f"  {r['url']}: {count(r['prefixes'], 'record prefix', 'record prefixes')}, "
            f"{r['bytes']:,} bytes ({r['folder']})"
        )
        for held in r["levels"]:
            print(
                f"    {_level_name(held['level'])}: {count(held['records'], 'record')}, "
                f"{held['bytes']:,} bytes"
            )
    return 0


def _level_name(level: int | None) -> str:
    if level is None:  # cached by an older version, or a record the manifest no longer names
        return "level unknown"
    return "level 0 (header only)" if level == 0 else f"level {level}"


def _clear(args: argparse.Namespace) -> int:
    from ..records.summary import count
    from ..storage.cache import clear_cache

    files, nbytes = clear_cache(args.dir, args.url)
    what = f" of {args.url}" if args.url else ""
    print(
        f"{args.dir}: deleted {count(files, 'cached prefix', 'cached prefixes')}{what}, "
        f"{nbytes:,} bytes"
    )
    return 0


def _plan(args: argparse.Namespace) -> int:
    from .._json import to_json
    from ..read.reader import open_dataset

    ds = open_dataset(args.path)
    fit = ds.level_that_fits(args.size)
    levels = [
        {"level": k, "bytes": ds.bytes_at(k), "fits": fit is not None and k <= fit}
        for k in range(1, ds.num_scans + 1)
    ]
    if args.json:
        out = {"dataset": args.path, "size": args.size, "level": fit, "levels": levels}
        sys.stdout.write(to_json(out) + "\n")
        return 0
    if fit is None:
        verdict = f"not even level 1 fits ({levels[0]['bytes']:,} bytes)"
    else:
        verdict = (
            f"level {fit} of every record fits ({ds.bytes_at(fit):,} bytes): passes at level "
            f"{fit} or lower fetch each byte once"
        )
    print(f"{args.path}: a cache of {args.size:,} bytes: {verdict}")
    for row in levels:
        mark = "fits" if row["fits"] else "does not fit"
        print(f"  level {row['level']}: {row['bytes']:,} bytes, {mark}")
    return 0
