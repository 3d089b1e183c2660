"""Remote reads that survive real servers: ranges checked, retries, a deadline.

:class:`HTTPStore` has the few file-system verbs the reader uses (``cat_file``,
``info``, ``isfile``, ``exists``, ``ls``) and speaks HTTP(S) through urllib3:
one pool of kept-alive connections per store, shared by the threads that read
through it (a forked child opens its own). It reads the status line before
the body, so a server that answers a range request with ``200`` and the whole
file is detected and that body is not downloaded; the reader then downloads
each record once into its cache, or fails at once. A redirect to another
origin drops every header the caller gave: credentials never follow it.

:func:`with_retries` is the one retry loop (urllib3's own retries are off but
for redirects); :class:`FsspecStore` wraps it around an fsspec file system's
reads (``s3://``). A
5xx, 408 or 429, a dropped connection or a timeout is retried
:data:`DEFAULT_RETRIES` times, after :data:`BACKOFF` seconds (with jitter),
doubled each time, or what the server's ``Retry-After`` asks; a body cut short
is resumed from where it stopped. Then :class:`~pcr_explore.errors.RemoteReadError`
names the URL, the bytes asked for and the last status.

``timeout`` (:data:`DEFAULT_TIMEOUT`) bounds each wait: to connect, and for the
next bytes. ``deadline`` (:data:`DEFAULT_DEADLINE`) bounds the whole read, from
its first request to its last byte, retries and their waits included: a server
trickling a byte now and then is cut off at it, and a retry whose wait would
end past it is not made.
"""

from __future__ import annotations

import email.utils
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, TypeVar

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    HTTPError,
    LocationValueError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ResponseError,
)
from urllib3.response import BaseHTTPResponse

from ..errors import RemoteReadError, TooLargeError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = [
    "BACKOFF",
    "DEFAULT_DEADLINE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "FsspecStore",
    "HTTPStore",
    "MAX_RETRY_AFTER",
    "TooLargeError",
    "RetryPolicy",
    "retry_after",
    "with_retries",
]

DEFAULT_RETRIES = 3
DEFAULT_TIMEOUT = 10.0
# A 64 MiB record at 1 MB/s takes about a minute: two leave room for slow links.
DEFAULT_DEADLINE = 120.0
BACKOFF = 0.2
# The longest Retry-After honoured: a server asking for more is treated as down.
MAX_RETRY_AFTER = 60.0
_REDIRECTS = 5
_RETRY_STATUS = frozenset({408, 429})
# Idle connections kept per host: more than a reader's threads (more threads
# still work; their extra connections are closed after use).
_POOL_SIZE = 16
# A body is read in chunks: a cut loses at most one chunk of what came.
_CHUNK = 1 << 16
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


def _length(value: str | None, url: str) -> int | None:
    """A ``Content-Length`` header's bytes (None when absent); a malformed one names the URL."""
    if value is None or value == "":
        return None
    if not value.strip().isdigit():
        raise RemoteReadError(f"{url}: the server sent Content-Length {value!r:.40}, not a number")
    return int(value)


class _Retry(Exception):
    """One attempt failed in a way that a later attempt may not.

    *retry_after* is the wait the server asked for (its ``Retry-After``), in seconds.
    """

    def __init__(self, status: int | None, why: str, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.status = status
        self.why = why
        self.retry_after = retry_after


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), or None.

    urllib3's ``Retry.parse_retry_after`` reads the clock itself and raises
    on a value it cannot parse; this one takes *now* and answers None.

    Examples
    --------
    >>> retry_after("3"), retry_after("soon"), retry_after(None)
    (3.0, None, None)
    >>> retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0)
    10.0
    """
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


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
        wait before the next retry would end past the deadline; it names
        *url*, the bytes *start*..*end* and the last status or error.
    """
    if until is None:
        until = _until(policy)
    for attempt in range(policy.retries + 1):
        try:
            return fn()
        except Exception as exc:
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
            elif until is not None and time.monotonic() + wait >= until:
                if asked is not None:
                    last += f"; the server asked to wait {asked:g} s"
                why = (
                    f"the deadline of {policy.deadline:g} s for the whole read was reached after "
                    f"{attempt + 1} attempt{'s' if attempt else ''} (last: {last}): raise "
                    "deadline, or try again later"
                )
            else:
                time.sleep(wait)
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


class HTTPStore:
    """Range reads over HTTP(S) with status checks, retries, a timeout and a deadline.

    Threads may share one store (and its kept-alive connections); a forked
    child opens connections of its own.

    Parameters
    ----------
    policy : RetryPolicy, optional
        Retries, timeout, backoff and deadline.
    headers : dict, optional
        Extra request headers (an ``Authorization`` header, say), sent to the
        URL's origin only: a redirect to another origin drops them all.

    Attributes
    ----------
    range_support : bool or None
        Whether the server honours Range requests (None until it is seen).
    retried : int
        Requests retried so far.
    """

    def __init__(
        self, policy: RetryPolicy | None = None, headers: dict[str, str] | None = None
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.headers = dict(headers or {})
        self.range_support: bool | None = None
        self.retried = 0
        self._lock = threading.Lock()
        self._manager: urllib3.PoolManager | None = None
        self._pid = 0  # the process _manager belongs to

    # -- connections -------------------------------------------------------
    def _pool(self) -> urllib3.PoolManager:
        with self._lock:
            if self._manager is None or self._pid != os.getpid():
                self._retire()
                t = self.policy.timeout
                retries = urllib3.Retry(
                    total=None,
                    connect=False,  # False: raise the error itself, for with_retries to judge
                    read=False,
                    other=0,
                    redirect=_REDIRECTS,
                    # any header the caller gave may be a credential (a cookie, an API key)
                    remove_headers_on_redirect=set(self.headers)
                    | urllib3.Retry.DEFAULT_REMOVE_HEADERS_ON_REDIRECT,
                )
                self._manager = urllib3.PoolManager(
                    maxsize=_POOL_SIZE, timeout=urllib3.Timeout(connect=t, read=t), retries=retries
                )
                self._manager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
                self._pid = os.getpid()
            return self._manager

    def _retire(self) -> None:
        """Let go of the pool (the caller holds the lock)."""
        manager, self._manager = self._manager, None
        if manager is not None and self._pid == os.getpid():
            manager.clear()
        elif manager is not None:
            # A forked child's copy of its parent's pool: left untouched (a parent
            # thread may have held its locks at the fork) and referenced, so that
            # no finaliser closes the parent's sockets here or warns about them.
            _INHERITED.append(manager)

    def close(self) -> None:
        """Close every idle kept-alive connection (a later request opens a new one)."""
        with self._lock:
            self._retire()

    def __del__(self) -> None:
        if hasattr(self, "_manager"):
            self.close()

    def __getstate__(self) -> _HTTPState:
        return {"policy": self.policy, "headers": self.headers}

    def __setstate__(self, state: _HTTPState) -> None:
        HTTPStore.__init__(self, state["policy"], state["headers"])

    def _count_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def _open(self, method: str, url: str, headers: dict[str, str]) -> BaseHTTPResponse:
        """Send one request, following redirects; a GET's body is left unread."""
        try:
            return self._pool().urlopen(
                method,
                url,
                headers={**self.headers, **headers},
                preload_content=method == "HEAD",  # no body: the connection goes back at once
                decode_content=False,  # the bytes as stored: offsets count them
            )
        except MaxRetryError as exc:
            if isinstance(exc.reason, ResponseError):  # the one retry urllib3 makes: redirects
                raise RemoteReadError(f"{url}: more than {_REDIRECTS} redirects", url=url) from exc
            raise _Retry(None, _describe(exc)) from exc
        except LocationValueError as exc:  # this URL, or one it redirects to
            raise RemoteReadError(f"{url}: not an http(s) URL ({exc})", url=url) from exc
        except (HTTPError, OSError) as exc:
            raise _Retry(None, _describe(exc)) from exc

    def _head(self, path: str, until: float | None) -> BaseHTTPResponse:
        with _Watchdog(until):
            return self._open("HEAD", path, {})

    # -- file-system verbs -------------------------------------------------
    def cat_file(
        self,
        path: str,
        start: int | None = None,
        end: int | None = None,
        *,
        limit: int | None = None,
    ) -> bytes:
        """Bytes *start*..*end* (end exclusive) of the file at URL *path*.

        Parameters
        ----------
        path : str
            The file's http(s) URL.
        start, end : int, optional
            The bytes wanted (neither: the whole file, asked without Range).
        limit : int, optional
            A body longer than this many bytes is not read further.

        Returns
        -------
        bytes

        Raises
        ------
        FileNotFoundError
            On 404 or 410.
        TooLargeError
            With *limit*, when the body is longer (not retried).
        RemoteReadError
            When retries are spent or the deadline is reached, on another
            4xx, on a 206 of another part, or (``range_ignored`` set) when
            the server answers a range request with the whole file, whose
            body is not downloaded.
        """
        got = bytearray()
        until = _until(self.policy)

        def once() -> bytes:
            if end is None or (start or 0) + len(got) < end:
                with _Watchdog(until):
                    self._get(path, start, end, got, limit)
            return bytes(got)

        return with_retries(
            self.policy, once, path, start, end, on_retry=self._count_retry, until=until
        )

    def _get(
        self, path: str, start: int | None, end: int | None, got: bytearray, limit: int | None
    ) -> None:
        """One GET of what *got* still lacks of bytes *start*..*end*, appended to it."""
        lo = (start or 0) + len(got)
        ranged = start is not None or end is not None
        headers = {"Range": f"bytes={lo}-{'' if end is None else end - 1}"} if ranged else {}
        resp = self._open("GET", path, headers)
        try:
            cap = self._accept(resp, path, lo, start, end, bool(got), limit)
            _read(resp, got, cap)
            if cap is not None and len(got) > cap:  # never read an endless body to its end
                if resp.status != 206 or end is None:
                    raise TooLargeError(f"{path}: longer than {limit:,} bytes")
                raise RemoteReadError(
                    f"{path}: {_span(start, end)}: the server's 206 answer is longer than the "
                    f"{cap:,} bytes asked for",
                    url=path,
                    start=start,
                    end=end,
                    status=206,
                )
        except BaseException:
            if resp.length_remaining == 0:  # an empty body, as of most errors: keep the connection
                resp.read()
            else:  # the rest is still on the wire: closed, it reconnects on its next use
                resp.close()
                resp.release_conn()
            raise

    def _accept(
        self,
        resp: BaseHTTPResponse,
        path: str,
        lo: int,
        start: int | None,
        end: int | None,
        resumed: bool,
        limit: int | None,
    ) -> int | None:
        """The bytes the body may hold in all (None: any), once its status line is right."""
        if resp.status == 206:
            self.range_support = True
            _check_content_range(resp, path, lo, end)
            return limit if end is None else end - (start or 0)
        if resp.status != 200:
            _refuse(resp, path, _span(start, end), start, end)
        if start is None and end is None:
            return limit
        if resumed:
            raise _Retry(200, "server stopped honouring Range")  # resuming needs Range
        size = resp.headers.get("Content-Length")
        if (start or 0) == 0 and end is not None and _length(size, path) == end:
            return limit  # asked for the whole file: the answer is right either way
        self.range_support = False
        raise RemoteReadError(
            f"{path}: the server ignores Range requests (it answered a request for "
            f"{_span(start, end)} with the whole file, {size or 'unknown'} bytes); reading a "
            "level below the full one would download whole records: open the dataset with "
            "cache_dir=... to download each record once, or serve it from a server that "
            "supports Range",
            url=path,
            start=start,
            end=end,
            status=200,
            range_ignored=True,
        )

    def info(self, path: str) -> dict[str, str | int | None]:
        """``{"name": path, "type": "file", "size": bytes or None}`` from a HEAD request.

        Raises
        ------
        FileNotFoundError
            On 404 or 410.
        RemoteReadError
            When retries are spent or the deadline is reached, or on another 4xx.
        """
        until = _until(self.policy)

        def once() -> dict[str, str | int | None]:
            resp = self._head(path, until)
            if resp.status >= 400:
                _refuse(resp, path, "HEAD")
            size = _length(resp.headers.get("Content-Length"), path)
            return {"name": path, "type": "file", "size": size}

        return with_retries(self.policy, once, path, on_retry=self._count_retry, until=until)

    def isfile(self, path: str) -> bool:
        """Whether a HEAD of *path* answers like a file (never for a folder URL)."""
        if path.endswith("/"):
            return False
        try:
            resp = self._head(path, _until(self.policy))
        except (_Retry, RemoteReadError):
            return False
        html = resp.headers.get("Content-Type", "").startswith("text/html")
        return resp.status == 200 and not html

    def exists(self, path: str) -> bool:
        """Whether a HEAD of *path* (or of *path* + ``/``) answers below 400."""
        for p in (path, path.rstrip("/") + "/"):
            try:
                if self._head(p, _until(self.policy)).status < 400:
                    return True
            except (_Retry, RemoteReadError):
                pass
        return False

    def ls(self, path: str, detail: bool = False) -> list[str]:
        """HTTP has no listing.

        Raises
        ------
        OSError
            Always.
        """
        raise OSError(f"{path}: an HTTP server cannot list a folder")


class _HTTPState(TypedDict):
    """What a pickled :class:`HTTPStore` carries: its settings, not its connections."""

    policy: RetryPolicy
    headers: dict[str, str]


# fsspec stores report "not there" and "not allowed" as these; retrying cannot help.
_FINAL = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _FINAL):
        return False
    if isinstance(exc, OSError):
        return True
    mod = type(exc).__module__.split(".")[0]
    return mod in ("aiohttp", "botocore", "aiobotocore", "urllib3", "requests")


class FsspecStore:
    """An fsspec file system whose reads are retried like an HTTP store's.

    :meth:`cat_file` and :meth:`info` are retried on transient failures and,
    where the file system is asynchronous, cut off at the policy's deadline;
    ``isfile``, ``exists`` and ``ls`` are the file system's own. Every other
    attribute is the wrapped file system's.

    Parameters
    ----------
    fs : fsspec.AbstractFileSystem
        The file system to read.
    policy : RetryPolicy, optional
        Retries, backoff and deadline.

    Attributes
    ----------
    range_support : bool
        True: fsspec stores read ranges.
    retried : int
        Reads retried so far.
    """

    def __init__(self, fs: AbstractFileSystem, policy: RetryPolicy | None = None) -> None:
        self.fs = fs
        self.policy = policy or RetryPolicy()
        self.range_support: bool | None = True
        self.retried = 0

    def _call(
        self, fn: Callable[[], _T], path: str, start: int | None = None, end: int | None = None
    ) -> _T:
        return with_retries(
            self.policy, fn, path, start, end, transient=_transient, on_retry=self._count
        )

    def _count(self) -> None:
        self.retried += 1

    def _bounded(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``fs.<name>(...)``, cut off after the policy's deadline where fs is asynchronous.

        A synchronous backend has only its own timeouts.
        """
        fs, deadline = self.fs, self.policy.deadline
        if deadline is None or not getattr(fs, "async_impl", False) or fs.loop is None:
            return getattr(fs, name)(*args, **kwargs)
        from fsspec.asyn import sync
        from fsspec.exceptions import FSTimeoutError

        try:
            return sync(fs.loop, getattr(fs, "_" + name), *args, timeout=deadline, **kwargs)
        except FSTimeoutError as exc:
            raise TimeoutError(
                f"timed out: no whole answer within the deadline of {deadline:g} s"
            ) from exc

    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes *start*..*end* of *path*, retried on transient failures."""
        return bytes(
            self._call(
                lambda: self._bounded("cat_file", path, start=start, end=end), path, start, end
            )
        )

    def info(self, path: str) -> dict[str, Any]:
        """The wrapped file system's ``info``, retried on transient failures."""
        return dict(self._call(lambda: self._bounded("info", path), path))

    def isfile(self, path: str) -> bool:
        """Whether *path* is a file (the file system's answer)."""
        return bool(self.fs.isfile(path))

    def exists(self, path: str) -> bool:
        """Whether anything is at *path* (the file system's answer)."""
        return bool(self.fs.exists(path))

    def ls(self, path: str, detail: bool = False) -> list[str]:
        """The paths in the folder *path*: the file system's listing, names only (any *detail*)."""
        return [str(p) for p in self.fs.ls(path, detail=False)]

    def __getattr__(self, name: str) -> Any:
        if name == "fs":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.fs, name)


# The pools forked children inherited (see HTTPStore._retire).
_INHERITED: list[urllib3.PoolManager] = []


def _refuse(
    resp: BaseHTTPResponse, path: str, what: str, start: int | None = None, end: int | None = None
) -> NoReturn:
    """Raise for an answer that is not the file: not there, retry later, or refused."""
    status = resp.status
    if status in (404, 410):
        raise FileNotFoundError(2, f"not found (HTTP {status})", path)
    if status >= 500 or status in _RETRY_STATUS:
        raise _Retry(status, f"HTTP {status}", retry_after(resp.headers.get("Retry-After")))
    why = f"{path}: {what}: HTTP {status} {resp.reason}"
    raise RemoteReadError(why, url=path, start=start, end=end, status=status)


def _check_content_range(resp: BaseHTTPResponse, path: str, lo: int, end: int | None) -> None:
    """A 206 must be the part asked for (checked before its body: a longer one is not read)."""
    value = resp.headers.get("Content-Range", "")
    unit, _, rest = value.partition(" ")
    first, _, last = rest.partition("/")[0].partition("-")
    length = resp.headers.get("Content-Length")
    if (
        unit == "bytes"
        and first.isdigit()
        and int(first) == lo
        and (end is None or (last.isdigit() and int(last) == end - 1))
        and (end is None or length is None or _length(length, path) == end - lo)
    ):
        return
    raise RemoteReadError(
        f"{path}: asked for {_span(lo, end)}, the server sent a part it calls {value!r}"
        + (f" of {length} bytes" if length is not None else ""),
        url=path,
        start=lo,
        status=206,
    )


def _read(resp: BaseHTTPResponse, got: bytearray, cap: int | None) -> None:
    """Append *resp*'s body to *got*, up to one byte past *cap*; a cut keeps what came."""
    try:
        while cap is None or len(got) <= cap:
            chunk = resp.read(_CHUNK if cap is None else min(_CHUNK, cap + 1 - len(got)))
            if not chunk:
                return
            got += chunk
    except (HTTPError, OSError) as exc:
        why = "connection dropped mid-body" if isinstance(exc, ProtocolError) else _describe(exc)
        raise _Retry(resp.status, why) from exc


_local = threading.local()


class _Watchdog:
    """Cuts the connection of this thread's read when it runs past its deadline.

    urllib3's timeouts bound each socket operation, so a server that sends a
    byte a second would hold a read for hours. At *until* the socket is shut
    down, whatever call is blocked on it returns at once, and the failure
    reads "timed out at the deadline". Connections (:class:`_GuardedHTTP`)
    report to the watchdog of the thread that uses them, since urllib3 does
    not tell which connection a request gets.
    """

    def __init__(self, until: float | None) -> None:
        self.expired = False
        self._conn: HTTPConnection | None = None
        self._lock = threading.Lock()  # the timer's thread and the reading one
        self._timer: threading.Timer | None = None
        if until is not None:
            self._timer = threading.Timer(max(0.0, until - time.monotonic()), self._expire)
            self._timer.daemon = True

    def guard(self, conn: HTTPConnection) -> None:
        """Watch *conn*, which this thread is about to use."""
        with self._lock:
            self._conn = conn
            if self.expired:  # expired while conn was connecting
                self._cut()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            self._cut()

    def _cut(self) -> None:
        sock = None if self._conn is None else self._conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass

    def __enter__(self) -> _Watchdog:
        _local.watchdog = self
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        _local.watchdog = None
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._conn = None  # back in the pool: another thread's now
        if self.expired and isinstance(exc, _Retry):
            raise _Retry(exc.status, "timed out at the deadline") from exc


class _GuardedHTTP(HTTPConnection):
    """A connection that the watchdog of the thread using it can cut."""

    def connect(self) -> None:
        super().connect()
        _guard(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _guard(self)  # a kept-alive connection does not connect() again
        super().request(*args, **kwargs)


def _guard(conn: HTTPConnection) -> None:
    watchdog = getattr(_local, "watchdog", None)
    if watchdog is not None:
        watchdog.guard(conn)


class _GuardedHTTPS(_GuardedHTTP, HTTPSConnection):
    """The same over TLS (the method order puts HTTPSConnection's connect under ours)."""


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _GuardedHTTP


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPS


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _Retry):
        return exc.why
    if isinstance(exc, MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    # NewConnectionError subclasses urllib3's TimeoutError, for history
    timeouts = (TimeoutError, urllib3.exceptions.TimeoutError)
    if isinstance(exc, timeouts) and not isinstance(exc, NewConnectionError):
        why = str(exc)
        return why if why.startswith("timed out") else "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# fsspec's own backends for the schemes it knows; only s3 has an extra here.
_BACKENDS = {"gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs"}


def install_hint(scheme: str) -> str:
    """What to install for an fsspec URL scheme whose backend is missing."""
    if scheme in ("s3", "s3a"):
        return "pip install 'pcr-explore[s3]'"
    if scheme in _BACKENDS:
        return f"pip install {_BACKENDS[scheme]}"
    return f"install the fsspec backend for {scheme}://"
