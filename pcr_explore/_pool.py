"""Worker processes shared by the encoder, quality curves and audits, or a Dask cluster.

Workers start with the ``forkserver`` method (``spawn`` off POSIX): forking a
process that has threads (a Jupyter kernel has several) can deadlock. Both
methods import the caller's main module in each worker, so a script needs
the ``if __name__ == "__main__":`` guard; when a worker dies, the error says
so instead of a bare ``BrokenProcessPool``.

:func:`parallel_map` is the one place the audit and the quality sample hand
work out: to this process, to such a pool, or to the workers of a Dask
cluster (``client=``, as :func:`~pcr_explore.encode_dataset` takes it), with
results in input order either way, so the same inputs give the same results
wherever they ran.

:func:`end_with` ends a DataLoader worker when the run that started it ends.
"""

from __future__ import annotations

import itertools
import os
import select
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context
from multiprocessing.context import BaseContext
from typing import Any, TypeVar

from .errors import MissingExtraError, WorkerError

__all__ = [
    "check_client",
    "cluster_threads",
    "main_is_importable",
    "ordered_map",
    "parallel_map",
    "progress_bar",
    "require_distributed",
    "worker_pool",
    "end_with",
]


def main_is_importable() -> bool:
    """Whether worker processes can import the main module (False for ``python - < file``)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


def _alive(pid: int) -> bool:
    """Whether *pid* runs (a killed process waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        if os.path.exists("/proc/self/stat"):  # a /proc that lists this process: pid is gone
            return False
    except (OSError, IndexError):  # a /proc this process may not read: ask the kernel
        pass
    # no /proc (macOS), an empty one (FreeBSD) or an unreadable one
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the pid is another user's now
        return False
    return True


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
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=end_with,
            initargs=(os.getpid(),),
        ) as pool:
            yield pool
    except BrokenProcessPool as exc:
        raise WorkerError(
            "a worker process died (killed, out of memory, or it could not start: a script "
            "that starts workers must keep its code under `if __name__ == '__main__':`, "
            "because each worker imports the main module); workers=1 runs in this process"
        ) from exc


_T = TypeVar("_T")
_R = TypeVar("_R")


def ordered_map(
    fn: Callable[[_T], _R], items: Iterable[_T], executor: Executor, window: int
) -> Iterator[_R]:
    """Yield ``fn(item)`` for every item, in input order, computed on *executor*.

    At most *window* calls are in flight, so a long input streams through in
    bounded memory while the executor's workers stay busy. Results are taken
    from the front of a deque; an exception raised by ``fn`` is raised here,
    at that item's place in the order.

    Parameters
    ----------
    fn : callable
        Function of one item; must be picklable for a process executor.
    items : iterable
        The inputs, consumed lazily.
    executor : concurrent.futures.Executor
        A thread or process pool.
    window : int
        Most calls submitted and not yet yielded (at least 1).

    Yields
    ------
    object
        ``fn(item)``, in the order of *items*.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(2) as ex:
    ...     list(ordered_map(abs, [-3, 1, -2], ex, window=2))
    [3, 1, 2]
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    it = iter(items)
    pending = deque(executor.submit(fn, item) for item in itertools.islice(it, window))
    try:
        while pending:
            result = pending.popleft().result()
            nxt = next(it, _END)
            if nxt is not _END:
                pending.append(executor.submit(fn, nxt))  # type: ignore[arg-type]
            yield result
    finally:
        for f in pending:  # a consumer that stops early leaves nothing running
            f.cancel()


_END = object()


# -- one function over many items, wherever it runs ------------------------------------


def check_client(client: Any) -> None:
    """Raise unless *client* is None or a Dask client (checked before any work starts).

    Raises
    ------
    TypeError
        If *client* is something else, such as a scheduler's address.
    """
    if client is None or (hasattr(client, "submit") and hasattr(client, "nthreads")):
        return
    hint = " (connect first: dask.distributed.Client(address))" if isinstance(client, str) else ""
    raise TypeError(f"client must be a dask.distributed.Client, got {client!r}{hint}")


def require_distributed(work: str) -> Any:
    """The ``distributed`` module.

    Raises
    ------
    MissingExtraError
        If Dask's distributed scheduler is not installed; names *work* and the extra.
    """
    try:
        import distributed
    except ImportError as exc:
        raise MissingExtraError(
            f"{work} on a Dask cluster needs dask.distributed ({exc.name} is missing): "
            "pip install 'pcr-explore[dask]'"
        ) from exc
    return distributed


def cluster_threads(client: Any) -> int:
    """Worker threads of *client*'s cluster now (at least 1: tasks wait for workers to join)."""
    return max(1, sum(client.nthreads().values()))


class _NamedTasks(Executor):
    """A Dask client's executor whose tasks carry readable names on the dashboard."""

    def __init__(self, client: Any, name: str) -> None:
        self._inner = client.get_executor(pure=False)
        self._name = f"{name}-{uuid.uuid4().hex[:8]}"
        self._count = itertools.count()

    def submit(self, fn: Callable[..., _R], /, *args: Any, **kwargs: Any) -> Future[_R]:
        key = f"{self._name}-{next(self._count):06d}"
        return self._inner.submit(fn, *args, key=key, **kwargs)  # type: ignore[no-any-return]


def _on_dask(fn: Callable[[_T], _R], items: Iterable[_T], client: Any, name: str) -> Iterator[_R]:
    """:func:`ordered_map` on *client*'s cluster: a few tasks queued per worker thread."""
    # a client without its package: only a stand-in could get here
    killed_worker = require_distributed("work").KilledWorker
    window = 4 * cluster_threads(client)
    try:
        yield from ordered_map(fn, items, _NamedTasks(client, name), window)
    except killed_worker as exc:
        raise WorkerError(
            f"{name}: every Dask worker that ran one of its tasks died (killed or out of memory, "
            f"more often than distributed.scheduler.allowed-failures allows): {exc}"
        ) from exc


def parallel_map(
    fn: Callable[[_T], _R],
    items: Iterable[_T],
    *,
    workers: int,
    client: Any = None,
    preload: Sequence[str] = (),
    name: str = "pcr-task",
) -> Iterator[_R]:
    """Yield ``fn(item)`` for every item, in input order: here, in worker processes, or on Dask.

    With *client*, each item is one task on its Dask cluster (at most four
    per worker thread submitted ahead); otherwise *workers* processes share
    the items (:func:`worker_pool`), or this process runs them when
    *workers* is 1 or worker processes could not import the main module.
    Items should be worth a task: a few images each, not one byte.

    Parameters
    ----------
    fn : callable
        Function of one item; picklable (a module-level function or a
        :func:`functools.partial` of one) for processes and Dask. It runs
        where the item is sent, so it must read its inputs from paths or
        URLs every worker can read, and write nothing.
    items : iterable
        The inputs, consumed lazily.
    workers : int
        Worker processes for a local run (ignored with *client*).
    client : dask.distributed.Client, optional
        Run on this Dask cluster.
    preload : sequence of str
        Modules a local pool's worker server imports once, before forking.
    name : str
        The tasks' name on the Dask dashboard, and in errors.

    Yields
    ------
    object
        ``fn(item)``, in the order of *items*; an exception raised by ``fn``
        is raised here, at that item's place.

    Raises
    ------
    WorkerError
        If a local worker process dies, or the Dask workers running a task
        keep dying.

    Examples
    --------
    >>> list(parallel_map(abs, [-3, 1, -2], workers=1))
    [3, 1, 2]
    """
    if client is not None:
        yield from _on_dask(fn, items, client, name)
        return
    if workers <= 1 or not main_is_importable():
        yield from map(fn, items)
        return
    with worker_pool(workers, preload=preload) as pool:
        yield from ordered_map(fn, items, pool, window=4 * workers)


# -- the progress bar of a run of jobs --------------------------------------------------
#
# tqdm's notebook bar is an ipywidget: a notebook saved with one and opened again
# without its kernel (or on GitHub, in nbviewer) shows "Error displaying widget:
# model not found" where the bar was. In a notebook, the bar below replaces its
# output when it closes: with its last line as plain text, or with nothing when it
# was not to be left (leave=False).


def progress_bar(*args: Any, **kwargs: Any) -> Any:
    """Return a ``tqdm.auto`` bar whose notebook output turns into text when it closes.

    Parameters
    ----------
    *args, **kwargs
        As for ``tqdm.auto.tqdm`` (``total``, ``desc``, ``unit``, ``disable``,
        ``leave``...).

    Returns
    -------
    tqdm.auto.tqdm
        A bar; use it as tqdm's (``update``, ``close``, a ``with`` block).

    Examples
    --------
    >>> with progress_bar(total=3, disable=True) as bar:
    ...     bar.update(3)
    """
    from tqdm.auto import tqdm

    # tqdm.auto imports tqdm.notebook (and with it ipywidgets) only in a
    # notebook: a script that encodes or reads must not pay for it here.
    notebook = sys.modules.get("tqdm.notebook")
    if notebook is None or not issubclass(tqdm, notebook.tqdm_notebook):
        return tqdm(*args, **kwargs)  # a terminal or a script: text already
    return _text_when_closed()(*args, **kwargs)


def _text_when_closed() -> type:
    """The notebook bar of tqdm, shown through a display handle that its close rewrites."""
    from IPython.display import display
    from tqdm.notebook import tqdm_notebook

    class TextWhenClosed(tqdm_notebook):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            shown = kwargs.pop("display", True)
            super().__init__(*args, display=False, **kwargs)
            self._handle: Any = None
            if shown and not self.disable and self.delay <= 0:
                self._handle = display(self.container, display_id=True)
                self.displayed = True

        def close(self) -> None:
            if self.disable:
                return
            stopped = bool(self.total) and self.n < self.total
            super().close()
            handle, self._handle = getattr(self, "_handle", None), None
            if handle is not None:  # a stopped bar keeps its count, as tqdm's does
                handle.update({"text/plain": str(self) if self.leave or stopped else ""}, raw=True)

    return TextWhenClosed


_watched: set[int] = set()


def end_with(pid: int) -> None:
    """End this worker process as soon as process *pid* (its run) has ended.

    A run killed with SIGKILL cannot shut its workers down. The package's
    pools start their workers with this; the PyTorch adapter calls it in
    each DataLoader worker, whose own watch looks at the process that
    started it: under the forkserver and spawn contexts the fork server,
    which lives as long as any worker does, so a killed run would leave its
    workers, the fork server and its resource tracker behind for good. A
    daemon thread waits on *pid* (a ``pidfd`` where Linux has one; else a
    check every half second).
    """
    if pid in _watched or pid == os.getpid():
        return
    _watched.add(pid)
    threading.Thread(target=_exit_when_gone, args=(pid,), daemon=True, name="pcr-parent").start()


def _exit_when_gone(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+ (or it is gone already)
        while _alive(pid):
            time.sleep(0.5)
    else:
        select.select([fd], [], [])  # readable once the process has ended
    os._exit(1)
