"""How many worker processes per-image work is worth.

The quality sample (:class:`~pcr_explore.quality.Sampler`) and the dataset
audit (:func:`~pcr_explore.auditing.audit`) both run one picklable function per
image through :func:`pcr_explore._pool.parallel_map`: in this process, a pool
or a Dask cluster (``client=``), results in job order. A pool costs about a
second to start, so :func:`default_workers` keeps small jobs in this process.
"""

from __future__ import annotations

import os

__all__ = ["default_workers"]


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
