"""Scale-out encoding on a Dask cluster (``pip install 'pcr-explore[dask]'``).

``encode_dataset(src, out, client=Client(...))`` runs one task per planned
record (:mod:`pcr_explore.encode._plan`): the task transcodes the record's sources in
order and writes the whole record straight to *out* (a shared folder, with an
atomic rename, or object storage, with one PUT), then returns the record's
entry. The client journals entries as they arrive, writes the manifest last,
and keeps at most a few tasks per worker thread queued, so the scheduler
never holds the whole source list.

If a worker dies mid-task, the scheduler runs the task again elsewhere (up to
Dask's ``distributed.scheduler.allowed-failures`` times); a record is
published only by its final rename or PUT, so nothing half-written is ever
visible under a record's name. Tasks are named ``pcr-record-NNNNN-...`` on
the dashboard.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from typing import Any

from .._checks import check_count
from .._pool import cluster_threads, require_distributed
from .._public import public
from ..errors import DatasetError, WorkerError
from ._plan import EncodePlan
from ._shard import encode_shard

__all__ = [
    "CONNECT_TIMEOUT",
    "WORKERS_PER_CPU",
    "connect",
    "local_cluster",
    "max_local_workers",
    "run_on_dask",
]

#: Local worker processes per CPU at most: more only queue for the same cores,
#: and each one is a Python process of its own to start.
WORKERS_PER_CPU = 4
#: Seconds to wait for a scheduler to answer.
CONNECT_TIMEOUT = 5.0


def max_local_workers() -> int:
    """The most worker processes :func:`local_cluster` starts: ``WORKERS_PER_CPU`` per CPU."""
    return WORKERS_PER_CPU * (os.cpu_count() or 1)


@public("pcr_explore.encode")
def local_cluster(*, workers: int, threads_per_worker: int = 1) -> tuple[Any, Any]:
    """Start a Dask cluster of *workers* processes on this machine; return (cluster, client).

    Close both when done (``client.close(); cluster.close()``).

    Raises
    ------
    ValueError
        If *workers* is below 1 or above :func:`max_local_workers`.
    MissingExtraError
        If ``pcr-explore[dask]`` is not installed.
    """
    distributed = require_distributed("encoding")
    workers = check_count(workers, "dask workers")
    if workers > max_local_workers():
        raise ValueError(
            f"at most {max_local_workers()} local worker processes ({WORKERS_PER_CPU} per CPU; "
            f"this machine has {os.cpu_count() or 1}), got {workers}"
        )
    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=threads_per_worker,
        processes=True,
        dashboard_address=":0",
    )
    return cluster, distributed.Client(cluster)


def connect(address: str, *, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A client of the Dask scheduler at *address* (``tcp://host:port``).

    A TCP or TLS address is tried with a plain connection first, so that a
    refused port or an unknown host fails at once, and Dask's own connection
    waits at most *timeout* seconds (its default is 30).

    Raises
    ------
    ConnectionError
        Naming *address*, if it is malformed or no scheduler answers there.
    MissingExtraError
        If ``pcr-explore[dask]`` is not installed.
    """
    distributed = require_distributed("encoding")
    try:
        scheme, where = distributed.comm.parse_address(address)
        if scheme in ("tcp", "tls"):
            host, port = distributed.comm.parse_host_port(where)
            socket.create_connection((host, port), timeout=timeout).close()
        return distributed.Client(address, timeout=timeout)
    except (OSError, ValueError, OverflowError, TimeoutError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConnectionError(
            f"{address}: no Dask scheduler answers there ({why}); give its tcp://HOST:PORT"
        ) from None


def run_on_dask(
    client: Any,
    plan: EncodePlan,
    output: Any,
    todo: list[int],
    options: dict[str, Any],
    strict: bool,
    finished: Callable[[dict[str, Any]], None],
    bar: Any,
) -> None:
    """Encode the records *todo* of *plan* on *client*'s cluster.

    *finished* is called with each record's entry as it completes (in any
    order); *bar* advances by the record's source count.

    Raises
    ------
    DatasetError
        With *strict*, at the first record that skipped a source.
    WorkerError
        If the workers running a record kept dying.
    """
    distributed = require_distributed("encoding")
    token = uuid.uuid4().hex[:8]

    def submit(i: int) -> Any:
        start, end = plan.slices[i]
        return client.submit(
            encode_shard,
            output,
            i,
            start,
            end,
            plan.tasks(i, options),
            key=f"pcr-record-{i:05d}-{token}",
            retries=2,  # a raised error (a shared disk's hiccup); a dead worker is retried anyway
        )

    pending = iter(todo)
    first = [submit(i) for _, i in zip(range(2 * cluster_threads(client)), pending)]
    futures = distributed.as_completed(first)
    live = set(first)
    try:
        for fut in futures:
            live.discard(fut)
            try:
                entry = fut.result()
            except distributed.KilledWorker as exc:
                raise WorkerError(
                    f"{fut.key}: every Dask worker that ran this record died (killed or out of "
                    "memory, more often than distributed.scheduler.allowed-failures allows); "
                    "finished records are journaled: run the encode again to resume"
                ) from exc
            if strict and entry["skipped"]:
                raise DatasetError(entry["skipped"][0]["issue"])
            finished(entry)
            bar.update(entry["end"] - entry["start"])
            nxt = next(pending, None)
            if nxt is not None:
                f = submit(nxt)
                live.add(f)
                futures.add(f)
    finally:
        if live:
            client.cancel(list(live))
