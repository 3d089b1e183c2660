"""A loopback file server behind a slow link, for bench_link.py.

:class:`LinkServer` serves a folder over HTTP/1.1 (kept-alive connections,
``Range``, ``HEAD``) from a process of its own, so that its CPU time is not
counted as the client's. The link it models:

* bandwidth: one token bucket shared by every connection and thread; bodies
  go out in chunks of :data:`CHUNK` bytes, each waiting for its slot, so
  concurrent readers split the rate between them (``rate=0``: no limit);
* latency: each request waits ``latency`` seconds before its answer;
* counters: body bytes sent and requests answered, in shared memory the
  parent reads at any time (:meth:`LinkServer.counters`).

The rate can be changed while the server runs (:meth:`LinkServer.set_rate`);
chunks already waiting keep the slot they were given.

:class:`LinkProxy` puts the same link in front of a server this module does
not run (moto's S3 server for bench_epochs.py): a TCP proxy, in a process of
its own, whose answers to the client share one bucket and are counted.
"""

from __future__ import annotations

import contextlib
import http.server
import multiprocessing as mp
import os
import re
import socket
import socketserver
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Self

CHUNK = 16384  # bytes per slot of the bucket: 3 ms at 5 MB/s
BURST = 65536  # bytes an idle link may send at once


class _Bucket:
    """Slots on one shared link: each chunk reserves the next free interval of ``n / rate`` s."""

    def __init__(self, rate: Any) -> None:
        self.rate = rate  # a shared double: bytes/s, 0 for no limit
        self.free_at = 0.0  # when the link is next idle
        self.lock = threading.Lock()

    def wait(self, n: int) -> None:
        rate = self.rate.value
        if rate <= 0:
            return
        with self.lock:
            now = time.monotonic()
            start = max(self.free_at, now - BURST / rate)
            self.free_at = start + n / rate
        # the chunk may go once its interval has begun
        if start > now:
            time.sleep(start - now)


def _serve(root: str, latency: float, rate: Any, sent: Any, requests: Any, port: Any) -> None:
    """The server process: serve *root* until terminated."""
    bucket = _Bucket(rate)
    count = threading.Lock()
    base = Path(root).resolve()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            with count:
                requests.value += 1
            time.sleep(latency)
            path = (base / urllib.parse.unquote(self.path).lstrip("/")).resolve()
            if base not in path.parents or not path.is_file():
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            size = path.stat().st_size
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", (self.headers.get("Range") or "").strip())
            start, end = 0, size
            if m and int(m.group(1)) < size:
                start = int(m.group(1))
                end = min(int(m.group(2)) + 1 if m.group(2) else size, size)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(end - start))
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if not body:
                return
            fd = os.open(path, os.O_RDONLY)
            try:
                pos, pending = start, 0
                while pos < end:
                    n = min(CHUNK, end - pos)
                    bucket.wait(n)
                    data = os.pread(fd, n, pos)
                    # counted before the write: once the last byte is out, the
                    # client may finish and the parent read the counter
                    with count:
                        sent.value += n
                    pending = n
                    self.wfile.write(data)
                    pos, pending = pos + n, 0
            except OSError:  # the client hung up: this chunk did not go
                with count:
                    sent.value -= pending
                self.close_connection = True
            finally:
                os.close(fd)

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64

    server = Server(("127.0.0.1", 0), Handler)
    port.value = server.server_address[1]
    server.serve_forever()


class _LinkProcess:
    """A process of this module behind the link, on the loopback port it reports.

    Subclasses set ``_proc`` (not started), ``_port`` and ``_rate`` (shared
    values) in ``__init__``; entering starts the process and waits for its port.
    """

    _proc: Any
    _port: Any
    _rate: Any
    url = ""

    def __enter__(self) -> Self:
        self._proc.start()
        t = time.monotonic()
        while not self._port.value:
            if not self._proc.is_alive() or time.monotonic() - t > 60:
                raise RuntimeError(f"the {type(self).__name__} process did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self._port.value}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        self._proc.join(10)

    def set_rate(self, rate: float) -> None:
        """Bytes per second from now on (0: no limit)."""
        self._rate.value = float(rate)


class LinkServer(_LinkProcess):
    """Serve *root* on a free loopback port through a modelled link; use as a context manager.

    Parameters
    ----------
    root : path
        Folder served (paths outside it get 404).
    rate : float
        Bytes per second shared by all connections (0: no limit).
    latency : float
        Seconds each request waits before its answer.
    """

    def __init__(self, root: str | os.PathLike[str], rate: float = 0.0, latency: float = 0.01):
        ctx = mp.get_context("spawn")
        self._rate = ctx.RawValue("d", float(rate))
        self._sent = ctx.RawValue("q", 0)
        self._requests = ctx.RawValue("q", 0)
        self._port = ctx.RawValue("i", 0)
        self._proc = ctx.Process(
            target=_serve,
            args=(str(root), float(latency), self._rate, self._sent, self._requests, self._port),
            daemon=True,
        )
        self.latency = float(latency)
        self.url = ""

    @property
    def pid(self) -> int:
        assert self._proc.pid is not None
        return self._proc.pid

    @property
    def rate(self) -> float:
        return float(self._rate.value)

    def counters(self) -> tuple[int, int]:
        """(body bytes sent, requests answered) since the server started."""
        return int(self._sent.value), int(self._requests.value)


# -- a TCP proxy through the same link, for servers this module does not run ----------------


def _pump_up(src: socket.socket, dst: socket.socket) -> None:
    """Client to server, unthrottled: requests are small, the link models the answers."""
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _forward(target: tuple[str, int], rate: Any, sent: Any, port: Any) -> None:
    """The proxy process: forward every connection to *target* until terminated."""
    bucket = _Bucket(rate)
    count = threading.Lock()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            client: socket.socket = self.request
            try:
                upstream = socket.create_connection(target)
            except OSError:
                return
            up = threading.Thread(target=_pump_up, args=(client, upstream), daemon=True)
            up.start()
            pending = 0
            try:
                while data := upstream.recv(CHUNK):
                    bucket.wait(len(data))
                    with count:  # counted before the write, as LinkServer does
                        sent.value += len(data)
                    pending = len(data)
                    client.sendall(data)
                    pending = 0
                client.shutdown(socket.SHUT_WR)
            except OSError:  # the client hung up: this chunk did not go
                with count:
                    sent.value -= pending
            finally:
                upstream.close()
                up.join(10)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 64

    server = Server(("127.0.0.1", 0), Handler)
    port.value = server.server_address[1]
    server.serve_forever()


class LinkProxy(_LinkProcess):
    """Forward a free loopback port to *target* through a modelled link; use as a context manager.

    For servers this module does not run (moto's S3 server, say): the bytes
    the server sends back go through one token bucket shared by every
    connection, as :class:`LinkServer`'s bodies do, and are counted; what
    the client sends goes through as it is. The count is of every byte
    forwarded, the answers' status lines and headers with their bodies.

    Parameters
    ----------
    target : (host, port)
        Where each connection is forwarded to.
    rate : float
        Bytes per second shared by all connections (0: no limit).
    """

    def __init__(self, target: tuple[str, int], rate: float = 0.0) -> None:
        ctx = mp.get_context("spawn")
        self._rate = ctx.RawValue("d", float(rate))
        self._sent = ctx.RawValue("q", 0)
        self._port = ctx.RawValue("i", 0)
        self._proc = ctx.Process(
            target=_forward, args=(tuple(target), self._rate, self._sent, self._port), daemon=True
        )
        self.url = ""

    def sent(self) -> int:
        """Bytes forwarded to clients since the proxy started."""
        return int(self._sent.value)
