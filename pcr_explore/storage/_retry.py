"""The retry policy and the one retry loop every remote store shares, and a cancel.

:class:`RetryPolicy` says how often and how patiently a remote read is tried;
:func:`with_retries` is the loop that tries it (an HTTP store's requests, an
fsspec file system's reads): a failure the store marks transient is retried
after a backoff with jitter, or what the server's ``Retry-After`` asks, unless
the retries are spent or the wait would end past the deadline; then
:class:`~pcr_explore.errors.RemoteReadError` names the URL, the bytes asked
for and the last status. :class:`Cancel` ends the reads made under it at once
(:mod:`.remote` re-exports all of these).
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import urllib3
from urllib3.exceptions import InvalidHeader, MaxRetryError, NewConnectionError

from ..errors import RemoteReadError

DEFAULT_RETRIES = 3
DEFAULT_TIMEOUT = 10.0
# A 64 MiB record at 1 MB/s takes about a minute: two leave room for slow links.
DEFAULT_DEADLINE = 120.0
BACKOFF = 0.2
# The longest wait a Retry-After gets: a server asking more is tried again after this
# long, or at once given up on where what it asked would end past the deadline.
MAX_RETRY_AFTER = 60.0
_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a remote read is tried.

    Parameters
    ----------
    retries : int
        Retries after the first attempt (so ``retries + 1`` requests at most).
    timeout : float
        Seconds to wait to connect, or for the next bytes of an answer,
        after which a request counts as failed.
    backoff : float
        Seconds before the first retry; doubled before each next one.
    deadline : float or None
        Seconds the whole read may take, from its first request to its last
        byte, retries and the waits before them included (None: no limit).
        A transfer still running then is cut off; a retry whose wait would
        end past it is not made.

    Examples
    --------
    >>> RetryPolicy().delays()
    [0.2, 0.4, 0.8]
    """

    retries: int = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT
    backoff: float = BACKOFF
    deadline: float | None = DEFAULT_DEADLINE

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be an integer >= 0, got {self.retries!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError(
                f"deadline must be a positive number of seconds or None, got {self.deadline!r}"
            )
        if not self.backoff >= 0:
            raise ValueError(f"backoff must be >= 0 seconds, got {self.backoff!r}")

    def delays(self) -> list[float]:
        """Seconds before each retry without jitter: *backoff*, doubled each time."""
        return [self.backoff * 2**i for i in range(self.retries)]

    def wait(self, attempt: int, asked: float | None = None) -> float:
        """Seconds to sleep before retry *attempt* (0-based).

        What the server asked for (``Retry-After``, up to
        :data:`MAX_RETRY_AFTER`), else the backoff with jitter: a uniform
        draw between half and all of it, so that many readers that failed
        together do not all come back at the same moment.
        """
        if asked is not None:
            return min(asked, MAX_RETRY_AFTER)
        base = self.delays()[attempt]
        return base * (0.5 + 0.5 * random.random())


def _until(policy: RetryPolicy) -> float | None:
    """The ``time.monotonic()`` by which a read that starts now must end."""
    return None if policy.deadline is None else time.monotonic() + policy.deadline


def _span(start: int | None, end: int | None) -> str:
    if start is None and end is None:
        return "the whole file"
    return f"bytes {start or 0}..{end if end is not None else 'end'}"


class _Retry(Exception):
    """One attempt failed in a way that a later attempt may not.

    *retry_after* is the wait the server asked for (its ``Retry-After``), in seconds.
    """

    def __init__(self, status: int | None, why: str, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.status = status
        self.retry_after = retry_after


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), or None.

    urllib3's parser, less its error: a value it cannot read counts as absent.

    Examples
    --------
    >>> retry_after("3"), retry_after("soon"), retry_after(None)
    (3.0, None, None)
    >>> retry_after("Thu, 01 Jan 1970 00:00:00 GMT")  # in the past: at once
    0.0
    """
    try:
        return None if value is None else float(urllib3.Retry().parse_retry_after(value))
    except InvalidHeader:
        return None


class Cancel:
    """Ends the HTTP reads made under it at once, from any thread.

    :meth:`run` reads under it; :meth:`cancel` then shuts the sockets of
    those reads (a read blocked waiting for bytes returns at once), ends
    their waits before a retry, and makes them, and any read started under
    it later, raise :class:`concurrent.futures.CancelledError`. The reader's
    read-ahead cancels its reads in flight so when its consumer stops.
    """

    def __init__(self) -> None:
        self._set = threading.Event()
        self._lock = threading.Lock()
        self._conns: dict[int, _Wired] = {}  # the last connection of each thread reading under it

    def run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)``, whose reads (in this thread) end when :meth:`cancel` is called."""
        token = _SCOPE.set(self)
        try:
            return fn(*args)
        finally:
            _SCOPE.reset(token)

    def cancel(self) -> None:
        """End the reads under it: those in flight at once, later ones before they begin."""
        with self._lock:
            self._set.set()
            wires = [c.wire for c in self._conns.values() if c.owner is self and c.wire]
        for wire in wires:
            try:
                wire.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already
                pass

    def _watch(self, conn: _Wired) -> None:
        with self._lock:
            conn.owner = self
            self._conns[threading.get_ident()] = conn
        _check_cancel()  # after the watch: a cancel from now on finds this connection


class _Wired(Protocol):
    """A connection as :class:`Cancel` sees it (``remote._Conn``): the socket it reads from."""

    wire: socket.socket | None
    owner: Cancel | None


_SCOPE: ContextVar[Cancel | None] = ContextVar("pcr_cancel", default=None)


def _check_cancel() -> None:
    stop = _SCOPE.get()
    if stop is not None and stop._set.is_set():
        raise CancelledError("the read was cancelled: nobody waits for its bytes any more")


def _pause(seconds: float) -> None:
    """Sleep *seconds* before a retry; a :class:`Cancel` in force ends the sleep and the read."""
    stop = _SCOPE.get()
    if stop is None:
        time.sleep(seconds)
    elif stop._set.wait(seconds):
        _check_cancel()


def with_retries(
    policy: RetryPolicy,
    fn: Callable[[], _T],
    url: str,
    start: int | None = None,
    end: int | None = None,
    *,
    transient: Callable[[BaseException], bool] = lambda exc: isinstance(exc, _Retry),
    on_retry: Callable[[], None] | None = None,
    until: float | None = None,
) -> _T:
    """Call *fn* until it succeeds, retrying the failures *transient* accepts.

    Parameters
    ----------
    policy : RetryPolicy
        The retries, their backoff, and the deadline of the whole call.
    fn : callable
        One attempt; its result is returned.
    url, start, end
        The file and the bytes *fn* reads (``end`` exclusive), for the error.
    transient : callable
        Whether a failure may pass on a later attempt (default: those
        :class:`HTTPStore` marks so).
    on_retry : callable, optional
        Called before each retry.
    until : float, optional
        The ``time.monotonic()`` by which the call must end (default:
        ``policy.deadline`` seconds from now).

    Raises
    ------
    RemoteReadError
        Once ``policy.retries`` retries have failed too, or at once when the
        wait before the next retry (the whole wait the server asked for, not
        the :data:`MAX_RETRY_AFTER` it is cut to) would end past the
        deadline; it names *url*, the bytes *start*..*end* and the last
        status or error.
    concurrent.futures.CancelledError
        When a :class:`Cancel` in force is cancelled.
    """
    if until is None:
        until = _until(policy)
    for attempt in range(policy.retries + 1):
        try:
            return fn()
        except Exception as exc:
            _check_cancel()  # the failure of a cancelled read is the cancel
            if not transient(exc):
                raise
            status = getattr(exc, "status", None)
            if isinstance(exc, _Retry) or status is None:
                last = _describe(exc)  # "timed out" even when a 206 had begun
            else:
                last = f"HTTP {status}"
            asked = getattr(exc, "retry_after", None)
            wait = policy.wait(attempt, asked) if attempt < policy.retries else None
            if wait is None:
                why = (
                    f"failed {attempt + 1} times (last: {last}); the server may be down or "
                    "overloaded: try again later, or raise retries/timeout"
                )
            elif until is not None and time.monotonic() + max(wait, asked or 0) >= until:
                if asked is not None:
                    last += f"; the server asked to wait {asked:g} s"
                why = (
                    f"the deadline of {policy.deadline:g} s for the whole read was reached after "
                    f"{attempt + 1} attempt{'s' if attempt else ''} (last: {last}): raise "
                    "deadline, or try again later"
                )
            else:
                _pause(wait)
                if on_retry is not None:
                    on_retry()
                continue
            raise RemoteReadError(
                f"{url}: {_span(start, end)}: {why}",
                url=url,
                start=start,
                end=end,
                status=status if isinstance(status, int) else None,
                attempts=attempt + 1,
            ) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _Retry):
        return str(exc)
    if isinstance(exc, MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    # NewConnectionError subclasses urllib3's TimeoutError, for history
    timeouts = (TimeoutError, urllib3.exceptions.TimeoutError)
    if isinstance(exc, timeouts) and not isinstance(exc, NewConnectionError):
        why = str(exc)
        return why if why.startswith("timed out") else "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
