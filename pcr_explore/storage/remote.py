"""Remote reads that survive real servers: ranges checked, retries, timeouts.

:class:`HTTPStore` has the few file-system verbs the reader uses
(``cat_file``, ``info``, ``isfile``, ``exists``, ``ls``) and speaks HTTP(S)
itself (the standard library's ``http.client``, one kept-alive connection per
thread and host), so it can look at the status line *before* the body: a
server that answers a range request with ``200`` and the whole file (no Range
support) is detected on that first response and the body is not downloaded;
the reader then falls back to one full download per record into its cache,
or fails at once.

:func:`with_retries` is its retry loop, which the reader also wraps around
other fsspec file systems (``s3://`` through s3fs, for one). A request that
meets a 5xx status, a 408 or 429, a dropped connection or a timeout is tried
:data:`DEFAULT_RETRIES` more times, waiting :data:`BACKOFF` seconds before the
first retry and twice as long before each next one; then it raises
:class:`~pcr_explore.errors.RemoteReadError`,
naming the URL, the bytes asked for and the last status. A request that
receives nothing for ``timeout`` seconds (default :data:`DEFAULT_TIMEOUT`)
counts as failed, and so does one that is still running after ``deadline``
seconds (default :data:`DEFAULT_DEADLINE`; a server that trickles a byte now
and then never trips ``timeout``). A body cut short, or stopped at the
deadline, is resumed from where it stopped on the next attempt.
"""

from __future__ import annotations

import email.utils
import http.client
import random
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import RemoteReadError

__all__ = [
    "BACKOFF",
    "DEFAULT_DEADLINE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
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
_REDIRECTS = 5
_RETRY_STATUS = frozenset({408, 429})
_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a remote request is tried.

    Parameters
    ----------
    retries : int
        Retries after the first attempt (so ``retries + 1`` requests at most).
    timeout : float
        Seconds without any answer after which a request counts as failed.
    deadline : float or None
        Seconds one attempt may take in all, from sending the request to the
        last byte of its answer (None: no limit). Bytes received before it
        expires are kept: the retry asks only for the rest.
    backoff : float
        Seconds before the first retry; doubled before each next one.

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


class TooLargeError(ValueError):
    """A body longer than the caller's limit; its rest was not read."""


class _Retry(Exception):
    """One attempt failed in a way that a later attempt may not.

    *retry_after* is the wait the server asked for (its ``Retry-After``), in seconds.
    """

    def __init__(self, status: int | None, why: str, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.status = status
        self.why = why
        self.retry_after = retry_after


# The longest Retry-After honoured: a server asking for more is treated as down.
MAX_RETRY_AFTER = 60.0


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), or None.

    Written here rather than taken from urllib3: the store speaks http.client
    so that it can check Range before reading a body, and this is all it needs.

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
) -> _T:
    """Call *fn* until it succeeds, retrying the failures *transient* accepts.

    Raises
    ------
    RemoteReadError
        Once ``policy.retries`` retries have failed too; it names *url*, the
        bytes *start*..*end* and the last status or error.
    """
    asked: float | None = None
    for attempt in range(policy.retries + 1):
        if attempt:
            time.sleep(policy.wait(attempt - 1, asked))
            if on_retry is not None:
                on_retry()
        try:
            return fn()
        except Exception as exc:
            if not transient(exc):
                raise
            status = getattr(exc, "status", None)
            asked = getattr(exc, "retry_after", None)
            if attempt == policy.retries:
                if isinstance(exc, _Retry) or status is None:
                    last = _describe(exc)  # "timed out" even when a 206 had begun
                else:
                    last = f"HTTP {status}"
                raise RemoteReadError(
                    f"{url}: {_span(start, end)}: failed {attempt + 1} times (last: {last}); "
                    "the server may be down or overloaded: try again later, or raise "
                    "retries/timeout",
                    url=url,
                    start=start,
                    end=end,
                    status=status if isinstance(status, int) else None,
                    attempts=attempt + 1,
                ) from exc
    raise AssertionError("unreachable")  # pragma: no cover


class HTTPStore:
    """Range reads over HTTP(S) with status checks, retries and a timeout.

    Parameters
    ----------
    policy : RetryPolicy, optional
        Retries, timeout and backoff.
    headers : dict, optional
        Extra request headers (an ``Authorization`` header, say).

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
        # one kept-alive connection per (thread, scheme, host)
        self._pool: dict[tuple[int, str, str], http.client.HTTPConnection] = {}
        self._lock = threading.Lock()

    # -- connections -------------------------------------------------------
    def _connection(self, url: urllib.parse.SplitResult) -> http.client.HTTPConnection:
        key = (threading.get_ident(), url.scheme, url.netloc)
        with self._lock:
            conn = self._pool.get(key)
            if conn is None:
                t = self.policy.timeout
                if url.scheme == "https":
                    ctx = ssl.create_default_context()
                    conn = http.client.HTTPSConnection(url.netloc, timeout=t, context=ctx)
                else:
                    conn = http.client.HTTPConnection(url.netloc, timeout=t)
                self._pool[key] = conn
        return conn

    def _drop(self, url: urllib.parse.SplitResult) -> None:
        with self._lock:
            conn = self._pool.pop((threading.get_ident(), url.scheme, url.netloc), None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close every kept-alive connection (a later request opens a new one)."""
        with self._lock:
            conns, self._pool = list(self._pool.values()), {}
        for conn in conns:
            conn.close()

    def __del__(self) -> None:
        if hasattr(self, "_pool"):
            self.close()

    def _open(
        self, method: str, url: str, headers: dict[str, str], watch: _Watchdog | None = None
    ) -> tuple[http.client.HTTPResponse, urllib.parse.SplitResult]:
        """Send one request, following redirects; the response's body is not read yet."""
        for _ in range(_REDIRECTS + 1):
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("http", "https"):
                raise RemoteReadError(f"{url}: not an http(s) URL", url=url)
            target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            conn = self._connection(parts)
            if watch is not None:
                watch.guard(conn)
            try:
                conn.request(method, target, headers={**self.headers, **headers})
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                self._drop(parts)
                raise _Retry(None, _describe(exc)) from exc
            if resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
                resp.close()
                self._drop(parts)
                url = urllib.parse.urljoin(url, resp.getheader("Location", ""))
                continue
            return resp, parts
        raise RemoteReadError(f"{url}: more than {_REDIRECTS} redirects", url=url)

    def _count_retry(self) -> None:
        self.retried += 1

    def __getstate__(self) -> dict[str, Any]:
        return {"policy": self.policy, "headers": self.headers}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["policy"], state["headers"])  # type: ignore[misc]

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

        With *limit*, a body longer than *limit* bytes is not read further.

        Raises
        ------
        FileNotFoundError
            On 404 or 410.
        TooLargeError
            With *limit*, when the body is longer (not retried).
        RemoteReadError
            When retries are spent, on another 4xx, or (``range_ignored``
            set) when the server answers a range request with the whole
            file; that body is not downloaded.
        """
        got = bytearray()
        ranged = start is not None or end is not None

        def once() -> bytes:
            lo = (start or 0) + len(got)
            if ranged and end is not None and lo >= end:
                return bytes(got)
            with _Watchdog(self.policy.deadline) as watch:
                try:
                    self._attempt(path, lo, start, end, got, limit, watch)
                except _Retry as exc:
                    if watch.expired:
                        raise _Retry(None, watch.why) from exc
                    raise
            return bytes(got)

        return with_retries(self.policy, once, path, start, end, on_retry=self._count_retry)

    def _attempt(
        self,
        path: str,
        lo: int,
        start: int | None,
        end: int | None,
        got: bytearray,
        limit: int | None,
        watch: _Watchdog,
    ) -> None:
        """One GET of bytes *lo*..*end* of *path*, appended to *got*."""
        ranged = start is not None or end is not None
        headers = {}
        if ranged:
            headers["Range"] = f"bytes={lo}-{'' if end is None else end - 1}"
        resp, parts = self._open("GET", path, headers, watch)
        self._check_status(resp, parts, path, start, end, ranged and not got)
        if ranged and resp.status == 200 and got:  # resuming needs Range
            self._drop(parts)
            raise _Retry(200, "server stopped honouring Range")
        cap = limit
        if resp.status == 206:
            _check_content_range(resp, parts, path, lo, end, self._drop)
            if end is not None:
                cap = end - (start or 0)
        try:
            if cap is None:
                body = resp.read()
            else:  # a read with a size returns short, without IncompleteRead, if cut
                body = resp.read(cap + 1 - len(got))
            got.extend(body)
            sent = _length(resp.getheader("Content-Length"), path)
            if sent is not None and len(body) < sent and (cap is None or len(got) <= cap):
                raise http.client.IncompleteRead(b"", sent - len(body))
        except http.client.IncompleteRead as exc:
            got.extend(exc.partial)
            self._drop(parts)
            raise _Retry(resp.status, "connection dropped mid-body") from exc
        except (OSError, http.client.HTTPException) as exc:
            self._drop(parts)
            raise _Retry(resp.status, _describe(exc)) from exc
        if cap is not None and len(got) > cap:
            self._drop(parts)  # never read an endless body to its end
            if cap == limit:
                raise TooLargeError(f"{path}: longer than {limit:,} bytes")
            raise RemoteReadError(
                f"{path}: {_span(start, end)}: the server's 206 answer is longer than the "
                f"{cap:,} bytes asked for",
                url=path,
                start=start,
                end=end,
                status=206,
            )
        if resp.will_close or watch.expired:
            self._drop(parts)

    def _check_status(
        self,
        resp: http.client.HTTPResponse,
        parts: urllib.parse.SplitResult,
        path: str,
        start: int | None,
        end: int | None,
        first_range: bool,
    ) -> None:
        status = resp.status
        if status == 206:
            self.range_support = True
            return
        if status == 200:
            if not first_range:
                return
            size = resp.getheader("Content-Length")
            if (start or 0) == 0 and end is not None and _length(size, path) == end:
                return  # asked for the whole file: the answer is right either way
            self.range_support = False
            self._drop(parts)  # close now: never download what cannot be used
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
        self._drop(parts)
        if status in (404, 410):
            raise FileNotFoundError(2, f"not found (HTTP {status})", path)
        if status >= 500 or status in _RETRY_STATUS:
            raise _Retry(status, f"HTTP {status}", retry_after(resp.getheader("Retry-After")))
        raise RemoteReadError(
            f"{path}: {_span(start, end)}: HTTP {status} {resp.reason}",
            url=path,
            start=start,
            end=end,
            status=status,
        )

    def info(self, path: str) -> dict[str, Any]:
        """``{"type": "file", "size": bytes}`` from a HEAD request."""

        def once() -> dict[str, Any]:
            with _Watchdog(self.policy.deadline) as watch:
                try:
                    resp, parts = self._open("HEAD", path, {}, watch)
                except _Retry as exc:
                    if watch.expired:
                        raise _Retry(None, watch.why) from exc
                    raise
                try:
                    resp.read()
                except (OSError, http.client.HTTPException) as exc:
                    self._drop(parts)
                    raise _Retry(None, watch.why if watch.expired else _describe(exc)) from exc
            if resp.will_close or watch.expired:
                self._drop(parts)
            if resp.status in (404, 410):
                raise FileNotFoundError(2, f"not found (HTTP {resp.status})", path)
            if resp.status >= 500 or resp.status in _RETRY_STATUS:
                wait = retry_after(resp.getheader("Retry-After"))
                raise _Retry(resp.status, f"HTTP {resp.status}", wait)
            if resp.status >= 400:
                raise RemoteReadError(
                    f"{path}: HEAD: HTTP {resp.status} {resp.reason}", url=path, status=resp.status
                )
            size = resp.getheader("Content-Length")
            return {"name": path, "type": "file", "size": _length(size, path)}

        return with_retries(self.policy, once, path, on_retry=self._count_retry)

    def isfile(self, path: str) -> bool:
        """Whether a HEAD of *path* answers like a file (never for a folder URL)."""
        if path.endswith("/"):
            return False
        try:
            resp, parts = self._open("HEAD", path, {})
        except (_Retry, RemoteReadError):
            return False
        resp.read()
        self._drop(parts)
        ctype = resp.getheader("Content-Type", "")
        return resp.status == 200 and not ctype.startswith("text/html")

    def exists(self, path: str) -> bool:
        """Whether a HEAD of *path* (or of *path* + ``/``) answers below 400."""
        for p in (path, path.rstrip("/") + "/"):
            try:
                resp, parts = self._open("HEAD", p, {})
            except (_Retry, RemoteReadError):
                continue
            resp.read()
            self._drop(parts)
            if resp.status < 400:
                return True
        return False

    def ls(self, path: str, detail: bool = False) -> list[Any]:
        """HTTP has no listing.

        Raises
        ------
        OSError
            Always.
        """
        raise OSError(f"{path}: an HTTP server cannot list a folder")


def _check_content_range(
    resp: http.client.HTTPResponse,
    parts: urllib.parse.SplitResult,
    path: str,
    lo: int,
    end: int | None,
    drop: Callable[[urllib.parse.SplitResult], None],
) -> None:
    """A 206 must be the part asked for; anything else is another file's bytes.

    Checked before the body is read: a part longer than asked is refused
    without downloading it.
    """
    value = resp.getheader("Content-Range", "")
    unit, _, rest = value.partition(" ")
    first, _, last = rest.partition("/")[0].partition("-")
    length = resp.getheader("Content-Length")
    want = None if end is None else end - lo
    if (
        unit == "bytes"
        and first.isdigit()
        and int(first) == lo
        and (want is None or (last.isdigit() and int(last) == end - 1))  # type: ignore[operator]
        and (want is None or length is None or _length(length, path) == want)
    ):
        return
    drop(parts)
    raise RemoteReadError(
        f"{path}: asked for {_span(lo, end)}, the server sent a part it calls {value!r}"
        + (f" of {length} bytes" if length is not None else ""),
        url=path,
        start=lo,
        status=206,
    )


class _Watchdog:
    """Cuts the connection of an attempt that runs past *deadline* seconds.

    ``timeout`` bounds each wait for bytes; this bounds the whole attempt, as
    a server that sends a byte every second would otherwise keep one request
    alive for hours. On expiry the socket is shut down, so whatever call is
    blocked on it returns at once; the caller then sees :attr:`expired`.
    """

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.expired = False
        self._conn: http.client.HTTPConnection | None = None
        self._timer: threading.Timer | None = None

    @property
    def why(self) -> str:
        return f"timed out: no whole answer within the deadline of {self.deadline:g} s"

    def guard(self, conn: http.client.HTTPConnection) -> None:
        """Watch *conn* (the connection a redirect moved to, too)."""
        self._conn = conn
        if self._timer is None and self.deadline is not None:
            self._timer = threading.Timer(self.deadline, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        sock = getattr(self._conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> _Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _Retry):
        return exc.why
    if isinstance(exc, TimeoutError):
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
