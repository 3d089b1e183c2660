"""Worker processes shared by the encoder, quality curves and audits.

Workers start with the ``forkserver`` method (``spawn`` off POSIX): forking a
process that has threads (a Jupyter kernel has several) can deadlock. Both
methods import the caller's main module in each worker, so a script needs
the ``if __name__ == "__main__":`` guard; when a worker dies, the error says
so instead of a bare ``BrokenProcessPool``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context
from multiprocessing.context import BaseContext

from .errors import WorkerError

__all__ = ["main_is_importable", "worker_pool"]


def main_is_importable() -> bool:
    """Whether worker processes can import the main module (False for ``python - < file``)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


@contextmanager
def worker_pool(workers: int, preload: Sequence[str] = ()) -> Iterator[ProcessPoolExecutor]:
    """A process pool of *workers*; a dead worker raises :class:`WorkerError`.

    Callers check :func:`main_is_importable` first and run in-process when
    it is False.
    """
    ctx: BaseContext
    if os.name == "posix":
        ctx = get_context("forkserver")
        if preload:  # workers fork from a server that imported these once
            ctx.set_forkserver_preload(list(preload))
    else:  # pragma: no cover - Windows
        ctx = get_context("spawn")
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            yield pool
    except BrokenProcessPool as exc:
        raise WorkerError(
            "a worker process died (killed, out of memory, or it could not start: a script "
            "that starts workers must keep its code under `if __name__ == '__main__':`, "
            "because each worker imports the main module); workers=1 runs in this process"
        ) from exc
