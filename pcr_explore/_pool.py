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
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context
from multiprocessing.context import BaseContext
from typing import Any, TypeVar

from .errors import WorkerError

__all__ = ["ordered_map", "main_is_importable", "progress_bar", "worker_pool"]


def main_is_importable() -> bool:
    """Whether worker processes can import the main module (False for ``python - < file``)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


def _alive(pid: int) -> bool:
    """Whether *pid* runs (a killed process waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
        return state not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc: ask the kernel directly
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover - the pid now belongs to another user
            return False
        return True


def _exit_with_parent(parent: int) -> None:
    """Worker initialiser: end this worker soon after the process that made the pool.

    A parent killed with SIGKILL cannot shut its pool down; without this, its
    workers would wait on their queue forever.
    """

    def watch() -> None:
        while _alive(parent):
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="pcr-parent-watch", daemon=True).start()


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
            initializer=_exit_with_parent,
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
    pending: deque[Future[_R]] = deque()
    for item in it:
        pending.append(executor.submit(fn, item))
        if len(pending) >= window:
            break
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
