"""Per-image work over many images: in worker processes when it pays, in order.

The quality sample (:class:`~pcr_explore.quality.Sampler`) and the dataset
audit (:func:`~pcr_explore.auditing.audit`) both run one picklable function per
image through :func:`run_jobs`. It decides between this process, a pool
(:func:`pcr_explore._pool.worker_pool`) and a Dask cluster (``client=``),
streams the jobs through a bounded window at a time
(:func:`pcr_explore._pool.parallel_map`), returns the results in job order
and advances a progress bar.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from .._pool import parallel_map
from ..jpeg._decoders import carried

__all__ = ["default_workers", "run_jobs"]

_J = TypeVar("_J")
_R = TypeVar("_R")


def default_workers(n: int) -> int:
    """Return the worker processes worth starting for *n* jobs.

    A process pool costs about a second to start, so up to 4 jobs run in
    this process; more get one worker per core, at most one per job.

    Examples
    --------
    >>> default_workers(3)
    1
    """
    cpus = os.cpu_count() or 1
    return 1 if n <= 4 else min(cpus, n)


def run_jobs(
    task: Callable[[_J], _R],
    jobs: Iterable[_J],
    *,
    total: int,
    workers: int | None = None,
    progress: bool | Any = False,
    desc: str = "",
    preload: Sequence[str] = (),
    client: Any = None,
) -> list[_R]:
    """Return ``[task(job) for job in jobs]``, computed in worker processes when it pays.

    Parameters
    ----------
    task : callable
        A function of one job. For worker processes it must be picklable: a
        module-level function, or a :func:`functools.partial` of one.
    jobs : iterable
        The jobs, consumed lazily (at most ``4 * workers`` in flight).
    total : int
        How many jobs there are (for the worker count and the progress bar).
    workers : int, optional
        Worker processes; 1 runs in this process. Default:
        :func:`default_workers`. Scripts run from stdin always run in-process
        (workers could not import them).
    progress : bool or tqdm bar
        Show a progress bar, or advance this open one by one per job.
    desc : str
        Label of a new progress bar.
    preload : sequence of str
        Modules the worker server imports once, before forking workers.
    client : dask.distributed.Client, optional
        Run one task per job on this Dask cluster instead (*workers* is
        then ignored); the jobs must name files the workers can read.

    Returns
    -------
    list
        The results, in job order.

    Raises
    ------
    WorkerError
        If a worker process dies (on Dask: keeps dying).

    Examples
    --------
    >>> run_jobs(abs, [-2, 3, -1], total=3)
    [2, 3, 1]
    """
    from .._pool import progress_bar as tqdm

    w = default_workers(total) if workers is None else max(1, int(workers))
    own_bar = not hasattr(progress, "update")
    bar: Any = (
        tqdm(total=total, desc=desc, unit="img", disable=not progress, leave=False)
        if own_bar
        else progress
    )
    out: list[_R] = []
    try:
        # workers decode with the JPEG decoder in force here (a context variable stays)
        for result in parallel_map(
            carried(task), jobs, workers=w, client=client, preload=preload, name="pcr-quality"
        ):
            out.append(result)
            bar.update(1)
        return out
    finally:
        if own_bar:
            bar.close()
