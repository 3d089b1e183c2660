"""Real servers on loopback for remote-read tests and benchmarks.

* :class:`FileServer`: static files over HTTP/1.1 (kept-alive connections),
  with switches for the faults real servers show: no Range support, a 503 on
  every Nth request, a connection dropped half-way through every Nth body,
  requests that stall without an answer, answers that come late, a part
  other than the one asked for, a body that never ends, a redirect; HTTP/1.1 or, as
  Python's ``http.server`` answers by default, HTTP/1.0. Every request is logged with its
  headers, the TCP connection it came on and the bytes of body actually written.
* :func:`s3_server`: moto's S3 API (its server mode, a real HTTP server on
  loopback) behind a WSGI layer that logs each request and the body bytes
  it sent.

Both listen on 127.0.0.1 only and stop when their ``with`` block ends.
"""

from __future__ import annotations

import http.server
import itertools
import logging
import os
import re
import select
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The bytes an ``endless`` answer sends at most: far more than any test asks for.
ENDLESS_STOP = 64 << 20


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    status: int
    sent: int = 0
    conn: int = 0  # the server's count of TCP connections when this one was accepted
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case


@dataclass
class FileServer:
    """Serve *root* on a free loopback port; use as a context manager.

    Parameters
    ----------
    root : Path
        Folder served.
    ranges : bool
        Honour ``Range`` (False: answer 200 with the whole file).
    fail_every : int
        Answer 503 to every Nth request (0: never).
    retry_after : str, optional
        The ``Retry-After`` header sent with those 503 answers.
    drop_every : int
        Close the connection half-way through every Nth GET body (0: never).
    stall : int
        The first *stall* requests get no answer until the server stops
        (-1: all of them).
    trickle : float
        Send GET bodies one byte at a time, this many seconds apart (0: at once).
    delay : float
        Wait this many seconds before answering each GET (0: answer at once).
    stall_mid : bool
        Send half of each GET body, then nothing until the server stops.
    extra : int
        Answer range requests with this many bytes past the range asked for
        (Content-Range and Content-Length saying so).
    shift : int
        Answer range requests with the part starting this many bytes later
        than asked (Content-Range saying so).
    redirect : str
        Answer every request under ``/moved/`` with a 302 to this URL prefix
        followed by the rest of the path (``"/"``: this server; another
        server's URL and ``/``: another origin).
    endless : bool
        Answer GETs with no Content-Length, the part asked for (Content-Range
        saying so) or, with *ranges* False, the whole file, and then send
        bytes without end (:data:`ENDLESS_STOP` at most, so that a client
        that reads them all fails instead of filling memory).
    only : str or tuple of str
        Faults hit only GETs of paths ending with this, or with one of these
        (default: every GET).
    spare : int
        The first *spare* of those GETs get no fault (they are counted, and
        *stall* counts on from them).
        HEAD requests are always answered.
    protocol : str
        ``"HTTP/1.1"`` (kept-alive connections) or ``"HTTP/1.0"`` (one
        connection per request, as ``http.server`` answers by default).
    sndbuf : int
        The send buffer of each connection's socket, in bytes (0: the
        system's, which grows to megabytes on loopback): what a body's
        ``sent`` may count past the bytes the client took before hanging up.

    Attributes
    ----------
    connections : int
        TCP connections accepted so far.
    dropped : int
        Connections whose client hung up before its answer was all sent.
    threads : set of int
        Idents of the server's own threads alive now (to tell them from the client's).
    """

    root: Path
    ranges: bool = True
    fail_every: int = 0
    retry_after: str | None = None
    drop_every: int = 0
    stall: int = 0
    trickle: float = 0.0
    delay: float = 0.0
    stall_mid: bool = False
    extra: int = 0
    shift: int = 0
    redirect: str = ""
    endless: bool = False
    only: str | tuple[str, ...] = ""
    spare: int = 0
    protocol: str = "HTTP/1.1"
    sndbuf: int = 0
    log: list[Request] = field(default_factory=list)
    url: str = ""
    connections: int = 0
    dropped: int = 0
    threads: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def gets(self, suffix: str = ".pcr") -> list[Request]:
        """Logged GETs of files whose path ends with *suffix*."""
        return [r for r in self.log if r.method == "GET" and r.path.endswith(suffix)]

    def __enter__(self) -> FileServer:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = self.protocol
            conn = 0

            def setup(self) -> None:
                if owner.sndbuf:
                    self.request.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, owner.sndbuf)
                super().setup()
                with owner._lock:
                    owner.connections += 1
                    owner.threads.add(threading.get_ident())
                    self.conn = owner.connections

            def handle(self) -> None:
                try:
                    super().handle()
                except ConnectionResetError:  # the client hung up on an answer it did not read
                    with owner._lock:
                        owner.dropped += 1

            def finish(self) -> None:
                with owner._lock:
                    owner.threads.discard(threading.get_ident())
                try:
                    super().finish()
                except OSError:  # the client hung up
                    pass

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                owner._serve(self, body=False)

            def do_GET(self) -> None:
                owner._serve(self, body=True)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.threads.add(self._thread.ident or 0)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _serve(self, h: http.server.BaseHTTPRequestHandler, body: bool) -> None:
        rng = h.headers.get("Range")
        req = Request(h.command, urllib.parse.unquote(h.path), rng, 0)
        req.conn = getattr(h, "conn", 0)
        req.headers = {k.lower(): v for k, v in h.headers.items()}
        self.log.append(req)
        if self.redirect and h.path.startswith("/moved/"):
            req.status = 302
            h.send_response(302)
            h.send_header("Location", self.redirect + h.path[len("/moved/") :])
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        n = 0
        if body and req.path.endswith(self.only):
            with self._lock:
                self._count += 1
                n = self._count
        if n and n <= self.spare:
            n = 0
        if n and self.delay:
            self._stop.wait(self.delay)
        if n and self.stall and (self.stall < 0 or n <= self.stall):
            self._stall(h)
            return
        if n and self.fail_every and n % self.fail_every == 0:
            req.status = 503
            h.send_response(503)
            if self.retry_after is not None:
                h.send_header("Retry-After", self.retry_after)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        # Naive path handling on purpose (as many static servers): the
        # reader, not the server, must keep names inside the dataset.
        path = Path(os.path.normpath(str(self.root) + req.path))
        if not path.is_file():
            req.status = 404
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        data = path.read_bytes()
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", (rng or "").strip())
        if self.ranges and m:
            start = int(m.group(1))
            end = min(int(m.group(2)) + 1 if m.group(2) else len(data), len(data))
            if n:
                end = min(end + self.extra + self.shift, len(data))
                start = min(start + self.shift, end)
            payload = data[start:end]
            req.status = 206
            h.send_response(206)
            h.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            if n and self.endless:
                self._endless(h, req, payload if body else b"")
                return
        else:
            payload = data
            req.status = 200
            h.send_response(200)
            if n and self.endless:
                self._endless(h, req, payload if body else b"")
                return
        h.send_header("Content-Length", str(len(payload)))
        h.send_header("Content-Type", "application/octet-stream")
        if self.ranges:
            h.send_header("Accept-Ranges", "bytes")
        h.end_headers()
        if not body:
            return
        if n and self.drop_every and n % self.drop_every == 0 and len(payload) > 1:
            half = payload[: len(payload) // 2]
            req.sent = len(half)  # counted first: the client may act on the bytes at once
            h.wfile.write(half)
            h.wfile.flush()
            h.close_connection = True
            return
        if n and (self.trickle or self.stall_mid):
            self._slow(h, req, payload)
            return
        chunk = b""
        try:
            for i in range(0, len(payload), 65536):
                chunk = payload[i : i + 65536]
                # counted before the write: once the last byte is out, the client
                # may finish and a test read the log before this thread runs on
                req.sent += len(chunk)
                h.wfile.write(chunk)
        except OSError:  # the client hung up (as a reader that takes a file's first bytes does)
            req.sent -= len(chunk)
            h.close_connection = True
            with self._lock:
                self.dropped += 1

    def _stall(self, h: http.server.BaseHTTPRequestHandler) -> None:
        """No answer until the client hangs up (then counted in ``dropped``) or the server stops."""
        h.close_connection = True
        for _ in range(600):  # 60 s at most; the client must give up first
            if self._stop.wait(0.1):
                return
            try:  # a read that finds the end of the stream: the client is gone
                readable, _, _ = select.select([h.connection], [], [], 0)
                if readable and not h.connection.recv(1, socket.MSG_PEEK):
                    with self._lock:
                        self.dropped += 1
                    return
            except OSError:
                with self._lock:
                    self.dropped += 1
                return

    def _endless(self, h: http.server.BaseHTTPRequestHandler, req: Request, part: bytes) -> None:
        """The part asked for, then more bytes until the client hangs up or the server stops."""
        h.close_connection = True
        h.end_headers()  # no Content-Length: the body ends when the connection does
        chunks = (part[i : i + 65536] for i in range(0, len(part), 65536))
        filler = (b"\0" * 65536 for _ in iter(int, 1))
        chunk = b""
        try:
            for chunk in itertools.chain(chunks, filler if part else ()):
                if self._stop.is_set() or req.sent >= ENDLESS_STOP:
                    return
                req.sent += len(chunk)  # counted first, as in _serve
                h.wfile.write(chunk)
        except OSError:
            req.sent -= len(chunk)
            with self._lock:
                self.dropped += 1

    def _slow(self, h: http.server.BaseHTTPRequestHandler, req: Request, payload: bytes) -> None:
        """A body that trickles, or stops half-way and then says nothing."""
        h.close_connection = True
        try:
            if self.stall_mid:
                req.sent = len(payload) // 2
                h.wfile.write(payload[: req.sent])
                h.wfile.flush()
                self._stall(h)
                return
            for i in range(len(payload)):
                if self._stop.wait(self.trickle):
                    return
                h.wfile.write(payload[i : i + 1])
                h.wfile.flush()
                req.sent += 1
        except OSError:  # the client gave up
            with self._lock:
                self.dropped += 1


class _Counting:
    """WSGI layer: log each request and the body bytes the app sent."""

    def __init__(self, app: Any, log: list[Request]) -> None:
        self.app = app
        self.log = log

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        req = Request(
            environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("HTTP_RANGE"), 0
        )

        def start(status: str, headers: Any, *rest: Any) -> Any:
            req.status = int(status.split()[0])
            return start_response(status, headers, *rest)

        body = self.app(environ, start)
        try:
            chunks = [bytes(c) for c in body]
        finally:
            if hasattr(body, "close"):
                body.close()
        if req.method != "HEAD":
            req.sent = sum(len(c) for c in chunks)
        self.log.append(req)
        return chunks


@dataclass
class S3:
    endpoint: str
    log: list[Request]
    bucket: str = "pcr"

    @property
    def storage_options(self) -> dict[str, Any]:
        return {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"},
        }

    def gets(self, suffix: str = ".pcr") -> list[Request]:
        return [r for r in self.log if r.method == "GET" and r.path.endswith(suffix)]


@contextmanager
def s3_server() -> Iterator[S3]:
    """moto's S3 server on a free loopback port, with one bucket, ``pcr``."""
    import boto3
    from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    # Credentials are given explicitly; never look for instance metadata.
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    log: list[Request] = []
    app = _Counting(DomainDispatcherApplication(create_backend_app), log)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    s3 = S3(f"http://127.0.0.1:{server.server_address[1]}", log)
    try:
        boto3.client(
            "s3",
            endpoint_url=s3.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=s3.bucket)
        yield s3
    finally:
        server.shutdown()
        server.server_close()
