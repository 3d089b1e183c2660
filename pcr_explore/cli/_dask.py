"""The Dask options the encode, audit, tune and budget sub-commands share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._args import positive_int
from ._defaults import DASK_WORKERS_PER_CPU


def dask_options(p: argparse.ArgumentParser, verb: str) -> None:
    """Add ``--scheduler ADDRESS`` and ``--dask-workers N`` (one or the other) to *p*."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help=f"{verb} on this Dask cluster (tcp://HOST:PORT); needs pcr-explore[dask]",
    )
    group.add_argument(
        "--dask-workers",
        type=positive_int,
        metavar="N",
        help=f"start a local Dask cluster of N worker processes to {verb} on "
        f"(at most {DASK_WORKERS_PER_CPU} per CPU)",
    )


@contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[Any]:
    """The client that ``--scheduler`` or ``--dask-workers`` asks for, else None; closed after."""
    from ..encode.distributed import connect, local_cluster

    if args.scheduler:
        client, cluster = connect(args.scheduler), None
    elif args.dask_workers is None:
        yield None
        return
    else:
        try:
            cluster, client = local_cluster(workers=args.dask_workers)
        except ValueError as exc:  # too many for this machine
            raise ValueError(f"--dask-workers {args.dask_workers}: {exc}") from None
    try:
        yield client
    finally:
        # bounded: the work is done by now, and a worker that does not answer
        # the close must not keep the command running
        if cluster is None:
            client.close(timeout=30)
        else:
            try:
                client.close(timeout=30)
                cluster.close(timeout=30)
            except Exception as exc:  # noqa: BLE001 - reported, the command's work is done
                print(f"pcr-explore: the local Dask cluster did not close: {exc}", file=sys.stderr)
