"""Remote stores that survive real servers: ranges checked, retries, a deadline, a cancel.

:class:`HTTPStore` has the few file-system verbs the reader uses (``cat_file``,
``info``, ``isfile``, ``exists``, ``ls``) and speaks HTTP(S) through urllib3:
one pool of kept-alive connections per store, shared by the threads that read
through it (a forked child opens its own). It reads the status line before
the body. A server that ignores Range answers with ``200`` and the whole
file: asked for bytes 0..*end*, the first *end* bytes of that body are read
and the connection is closed on the rest; asked for bytes from a later one,
the read fails (``range_ignored``) before the body is read, and the reader
asks for the bytes from 0 instead. No body is read past the bytes asked
for. A read that fails part-way resumes with a Range only where the
server honours it; a ``200`` starts it over from byte 0, never adding the
file again to what the failed attempt kept. A redirect to another origin
drops every header the caller gave: credentials never follow it.

Both stores try each read with :func:`with_retries` (of :mod:`._retry`, like
:class:`RetryPolicy` and :class:`Cancel`; all re-exported here);
:class:`FsspecStore` wraps it around an fsspec file system's reads
(``s3://``). urllib3's own retries are off but for redirects: its ``Retry``
would start a body cut short again instead of resuming it, count the
retries of a status apart from those of a timeout or a cut, and sleep what
``Retry-After`` asks whatever the deadline, and through a cancel.

``timeout`` (:data:`DEFAULT_TIMEOUT`) bounds each wait: to connect, and for the
next bytes. ``deadline`` (:data:`DEFAULT_DEADLINE`) bounds the whole read, from
its first request to its last byte, retries and their waits included: a body
is read a packet at a time, each wait for the next one cut to the time left,
so a server trickling a byte now and then is cut off at the deadline (by the
reading thread itself: no thread per request), and a retry whose wait would
end past it is not made. A :class:`Cancel` ends the reads made under it at
once, from another thread (the reader's read-ahead, when its consumer stops).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    HTTPError,
    LocationValueError,
    MaxRetryError,
    ProtocolError,
    ResponseError,
)
from urllib3.response import BaseHTTPResponse

from ..errors import RemoteReadError, TooLargeError
from ._retry import (
    _SCOPE,
    BACKOFF,
    DEFAULT_DEADLINE,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MAX_RETRY_AFTER,
    Cancel,
    RetryPolicy,
    _check_cancel,
    _describe,
    _Retry,
    _span,
    _until,
    retry_after,
    with_retries,
)

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = [
    "BACKOFF",
    "Cancel",
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

_REDIRECTS = 5
_RETRY_STATUS = frozenset({408, 429})
# Idle connections kept per host: more than a reader's threads (more threads
# still work; their extra connections are closed after use).
_POOL_SIZE = 16
# The most one read of a body asks for (it gets what one packet brings, up to this).
_CHUNK = 1 << 16
_T = TypeVar("_T")


def _length(value: str | None, url: str) -> int | None:
    """A ``Content-Length`` header's bytes (None when absent); a malformed one names the URL."""
    if value is None or value == "":
        return None
    if not value.strip().isdigit():
        raise RemoteReadError(f"{url}: the server sent Content-Length {value!r:.40}, not a number")
    return int(value)


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
                self._manager = urllib3.PoolManager(maxsize=_POOL_SIZE, retries=retries)
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

    def __reduce__(self) -> tuple[type[HTTPStore], tuple[RetryPolicy, dict[str, str]]]:
        return HTTPStore, (self.policy, self.headers)  # its settings, not its connections

    def _count_retry(self) -> None:
        with self._lock:
            self.retried += 1

    def _open(
        self, method: str, url: str, headers: dict[str, str], until: float | None
    ) -> BaseHTTPResponse:
        """Send one request, following redirects; a GET's body is left unread."""
        wait = _budget(self.policy.timeout, until)
        try:
            return self._pool().urlopen(
                method,
                url,
                headers={**self.headers, **headers},
                timeout=urllib3.Timeout(connect=wait, read=wait),
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
            A body longer than *end* - *start* is not read past that. A server
            that ignores Range, asked for bytes 0..*end*, sends the whole
            file: its first *end* bytes are read, the connection closed.
        limit : int, optional
            Without *end*: a body longer than this many bytes is not read further.

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
            4xx, on a 206 of another part, on a body longer than the bytes
            asked for, or (``range_ignored`` set) when the server answers a
            request for bytes from *start* > 0 with the whole file, whose
            body is not read.
        """
        got = bytearray()
        until = _until(self.policy)

        def once() -> bytes:
            if end is None or (start or 0) + len(got) < end:
                self._get(path, start, end, got, limit, until)
            return bytes(got)

        return with_retries(
            self.policy, once, path, start, end, on_retry=self._count_retry, until=until
        )

    def _get(
        self,
        path: str,
        start: int | None,
        end: int | None,
        got: bytearray,
        limit: int | None,
        until: float | None,
    ) -> None:
        """One GET of what *got* still lacks of bytes *start*..*end*, appended to it.

        A ``200`` is the file from its first byte, whatever was asked: it
        answers a read from byte 0 (of the whole file, or of its first *end*
        bytes: those are read and the connection closed on the rest), and it
        starts such a read over when an attempt failed part-way; what that
        attempt kept is dropped, never added to. A read from a later byte
        answered with the whole file fails (``range_ignored``), its body unread.
        """
        if got and self.range_support is False:
            del got[:]  # the server cannot resume: start again from the first byte
        lo = (start or 0) + len(got)
        whole = start is None and end is None
        # a resumed whole-file read asks for the rest where the server may honour Range
        ranged = not whole or bool(got)
        headers = {"Range": f"bytes={lo}-{'' if end is None else end - 1}"} if ranged else {}
        resp = self._open("GET", path, headers, until)
        try:
            head = self._accept(resp, path, lo, start, end, ranged)
            if resp.status == 200:
                del got[:]  # the body starts at byte 0: what an earlier attempt kept is dropped
            cap = limit if end is None else end - (start or 0)
            if head:  # the first *end* bytes of the whole file: the rest is left on the wire
                _read(resp, got, cap, self.policy.timeout, until)
                _let_go(resp)
                return
            _read(resp, got, None if cap is None else cap + 1, self.policy.timeout, until)
            if cap is not None and len(got) > cap:  # never read a body past the bytes asked for
                if end is None:
                    raise TooLargeError(f"{path}: longer than {limit:,} bytes")
                raise RemoteReadError(
                    f"{path}: {_span(start, end)}: the server's answer (HTTP {resp.status}) is "
                    f"longer than the {cap:,} bytes asked for",
                    url=path,
                    start=start,
                    end=end,
                    status=resp.status,
                )
        except BaseException:
            _let_go(resp)
            raise

    def _accept(
        self,
        resp: BaseHTTPResponse,
        path: str,
        lo: int,
        start: int | None,
        end: int | None,
        ranged: bool,
    ) -> bool:
        """Check the status line of the answer to a GET of bytes *lo*..*end* of *path*.

        Returns True for a ``200`` whose first *end* bytes are the ones asked
        for (a server that ignores Range, asked for bytes from 0 to *end*),
        False for a body that is the bytes asked for; raises otherwise.
        """
        if resp.status == 206:
            self.range_support = True
            _check_content_range(resp, path, lo, end)
            return False
        if resp.status != 200:
            _refuse(resp, path, _span(start, end), start, end)
        if not ranged or ((start or 0) == 0 and end is None):
            return False  # the whole file, from byte 0, was asked for
        size = resp.headers.get("Content-Length")
        if (start or 0) == 0 and _length(size, path) == end:
            return False  # asked for the whole file: the answer is right either way
        self.range_support = False
        if (start or 0) == 0:
            return True
        raise RemoteReadError(
            f"{path}: the server ignores Range requests (it answered a request for "
            f"{_span(start, end)} with the whole file, {size or 'unknown'} bytes, not read): "
            "read from byte 0 instead, or serve the file from a server that honours Range",
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
            resp = self._open("HEAD", path, {}, until)
            if resp.status >= 400:
                _refuse(resp, path, "HEAD")
            size = _length(resp.headers.get("Content-Length"), path)
            return {"name": path, "type": "file", "size": size}

        return with_retries(self.policy, once, path, on_retry=self._count_retry, until=until)

    def _status(self, path: str) -> tuple[int, str]:
        """The status and ``Content-Type`` of one HEAD of *path* (status 0: no answer)."""
        try:
            resp = self._open("HEAD", path, {}, _until(self.policy))
        except (_Retry, RemoteReadError):
            return 0, ""
        return resp.status, resp.headers.get("Content-Type", "")

    def isfile(self, path: str) -> bool:
        """Whether a HEAD of *path* answers like a file (never for a folder URL)."""
        if path.endswith("/"):
            return False
        status, kind = self._status(path)
        return status == 200 and not kind.startswith("text/html")

    def exists(self, path: str) -> bool:
        """Whether a HEAD of *path* (or of *path* + ``/``) answers below 400."""
        return any(0 < self._status(p)[0] < 400 for p in (path, path.rstrip("/") + "/"))

    def ls(self, path: str, detail: bool = False) -> list[str]:
        """HTTP has no listing.

        Raises
        ------
        OSError
            Always.
        """
        raise OSError(f"{path}: an HTTP server cannot list a folder")


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


def _budget(timeout: float, until: float | None, status: int | None = None) -> float:
    """Seconds the next wait (to connect, for bytes) may take: *timeout*, or the time left.

    At the deadline, the attempt fails.
    """
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise _Retry(status, "timed out at the deadline")
    return min(timeout, left)


def _read(
    resp: BaseHTTPResponse, got: bytearray, upto: int | None, timeout: float, until: float | None
) -> None:
    """Append *resp*'s body to *got* until it holds *upto* bytes or the body ends.

    A cut keeps what came. A packet at a time (``read1``), each wait cut to
    the time left: no read blocks past the deadline, however slowly the
    bytes come.
    """
    wire = getattr(resp.connection, "wire", None)
    while upto is None or len(got) < upto:
        wait = _budget(timeout, until, resp.status)
        if wire is not None and wire.fileno() != -1:  # -1: the body has ended, closing it
            wire.settimeout(wait)
        try:
            chunk = resp.read1(_CHUNK if upto is None else min(_CHUNK, upto - len(got)))
        except (HTTPError, OSError) as exc:
            _check_cancel()
            why = (
                "connection dropped mid-body" if isinstance(exc, ProtocolError) else _describe(exc)
            )
            if wait < timeout and why == "timed out":
                why = "timed out at the deadline"
            raise _Retry(resp.status, why) from exc
        _check_cancel()  # a socket shut by a cancel reads as the end of the body
        if not chunk:
            return
        got += chunk


def _let_go(resp: BaseHTTPResponse) -> None:
    """Hand *resp*'s connection back: kept if its body was all read, else closed.

    A closed connection reconnects on its next use; a body left on the wire
    is never drained (it may be a whole file, or never end).
    """
    if resp.length_remaining == 0:  # all read (an empty body, as of most errors): keep it
        resp.read()
    else:
        resp.close()
        resp.release_conn()


class _Conn(HTTPConnection):
    """A connection that a :class:`Cancel` can cut, and whose socket each body read can time.

    ``wire`` is the socket it connected: http.client hands an HTTP/1.0
    answer's socket over to the response and sets ``sock`` to None.
    """

    wire: socket.socket | None = None
    owner: Cancel | None = None

    def connect(self) -> None:
        super().connect()
        self.wire = self.sock
        self._watched()

    def request(self, *args: Any, **kwargs: Any) -> None:
        self._watched()  # a kept-alive connection does not connect() again
        super().request(*args, **kwargs)

    def _watched(self) -> None:
        """Let the :class:`Cancel` in force, if any, cut this connection (or fail if it has)."""
        self.owner = _SCOPE.get()
        if self.owner is not None:
            self.owner._watch(self)


class _ConnTLS(_Conn, HTTPSConnection):
    """The same over TLS (the method order puts HTTPSConnection's connect under ours)."""


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _Conn


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _ConnTLS


# fsspec's own backends for the schemes it knows; only s3 has an extra here.
_BACKENDS = {"gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs"}


def install_hint(scheme: str) -> str:
    """What to install for an fsspec URL scheme whose backend is missing."""
    if scheme in ("s3", "s3a"):
        return "pip install 'pcr-explore[s3]'"
    if scheme in _BACKENDS:
        return f"pip install {_BACKENDS[scheme]}"
    return f"install the fsspec backend for {scheme}://"
