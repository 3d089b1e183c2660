"""A real Dask cluster of two worker processes on this machine, for the tests that use one."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def local_cluster(*, cwd: Path | None = None, scratch: Path | None = None) -> Iterator[Any]:
    """Start two single-threaded worker processes; yield their client; end them all after.

    *cwd* is the folder the workers start in, *scratch* their Dask scratch
    space (``local_directory``): a test can then check that nothing else
    was written.
    """
    import distributed

    before = set(multiprocessing.active_children())
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)  # worker processes keep the folder they started in
    try:
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            local_directory=None if scratch is None else str(scratch),
        )
    finally:
        os.chdir(here)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        # Bounded: once in many runs a worker that was killed and restarted by
        # a test never answered the close, and the teardown waited forever.
        try:
            c.close(timeout=30)
            cluster.close(timeout=30)
        except Exception:  # noqa: BLE001 - any failure to close: end the processes below
            pass
        for proc in set(multiprocessing.active_children()) - before:  # the cluster's own
            proc.kill()
