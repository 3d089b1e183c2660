"""Remote reads against real loopback servers that misbehave the ways real ones do."""

from __future__ import annotations

import json
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from _loopback import FileServer

from pcr_explore.cli import main
from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.errors import DatasetError, RangeIgnoredWarning, RemoteReadError
from pcr_explore.read.reader import PCRDataset, open_dataset
from pcr_explore.storage import _retry, remote


@pytest.fixture(scope="module")
def served(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the dataset ``ds`` (and, beside it, a file that must stay private)."""
    root = tmp_path_factory.mktemp("srv")
    encode_dataset(photo_folder, root / "ds", record_size=20_000, workers=1, progress=False)
    (root / "secret.pcr").write_bytes(b"password=hunter2")
    return root


@pytest.fixture(scope="module")
def local(served: Path) -> PCRDataset:
    return open_dataset(str(served / "ds"))


def _images(ds: PCRDataset, scan: int) -> list[np.ndarray]:
    return [img for img, _ in ds.iter(scan=scan, size=32)]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def _wait_for(cond: Callable[[], bool], what: str, limit: float = 20.0) -> None:
    """Wait until *cond* holds; fail, naming *what*, if it never does (not a timing assertion)."""
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.005)


@pytest.fixture
def server(served: Path, request: pytest.FixtureRequest) -> Iterator[FileServer]:
    with FileServer(served, **getattr(request, "param", {})) as srv:
        yield srv


def test_a_level_read_is_one_ranged_get_per_record(server: FileServer, local: PCRDataset) -> None:
    for k in (1, 3, 10):
        server.log.clear()
        ds = open_dataset(f"{server.url}/ds")
        assert _same(_images(ds, k), _images(local, k))
        gets = server.gets()
        assert len(gets) == len(ds.records) and all(g.status == 206 for g in gets)
        assert sum(g.sent for g in gets) == ds.stats.bytes_read == local.bytes_at(k)
        assert sorted(str(g.range) for g in gets) == sorted(  # read ahead: in any order
            f"bytes=0-{r.bytes_per_scan[k - 1] - 1}" for r in ds.records
        )


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``ds``: 2 records of about 1.3 MB (noisy 512x512 photos).

    Far larger than a socket's buffers once they are bounded (``sndbuf``):
    a read that hangs up after its first bytes leaves most of a record unsent.
    """
    from PIL import Image

    root = tmp_path_factory.mktemp("large")
    src = root / "src" / "a"
    src.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(24):
        ramp = np.linspace(0, 255, 512)[None, :, None] * rng.random(3)
        x = ramp + rng.integers(0, 60, (512, 512, 3))
        Image.fromarray(x.clip(0, 255).astype(np.uint8)).save(src / f"{i:02d}.jpg", quality=90)
    total = sum(f.stat().st_size for f in src.iterdir())
    encode_dataset(root / "src", root / "ds", record_size=total // 2 + 1, workers=1, progress=False)
    return root


# Python's http.server ignores Range: every GET is answered 200 with the whole file.
_NO_RANGE: dict[str, Any] = {"ranges": False, "sndbuf": 1 << 14, "only": ".pcr"}
# What a GET's `sent` may count past the bytes the reader took before it hung up: the
# server's 16 KiB send buffer (doubled by the kernel) and the client's receive window
# (which the kernel grows as bytes are read: a few hundred KiB for the reads here)
_SLACK = 1 << 20


@pytest.mark.parametrize("cached", [False, True])
def test_a_level_from_a_server_without_range_moves_about_its_own_bytes(
    large: Path, tmp_path: Path, cached: bool
) -> None:
    """Each record's GET takes the level's first bytes of the whole file, then hangs up."""
    local = open_dataset(str(large / "ds"))
    with FileServer(large, **_NO_RANGE) as srv:
        ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path if cached else None)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert _same(_images(ds, 3), _images(local, 3))
        gets = srv.gets()
        assert len(gets) == len(ds.records) and all(g.status == 200 for g in gets)
        assert ds.stats.bytes_read == local.bytes_at(3) < local.total_bytes / 8
        asked = {f"/ds/{r.file}": r.bytes_per_scan[2] for r in local.records}
        whole = min(r.bytes_per_scan[-1] for r in local.records)
        for g in gets:  # a write the hang-up cut is not counted: up to 64 KiB less than taken
            assert asked[g.path] - (1 << 16) < g.sent <= asked[g.path] + _SLACK < whole
        _wait_for(lambda: srv.dropped == len(gets), "the server sees each GET hang up")
    assert [w.category for w in seen] == [RangeIgnoredWarning]  # once, not once per record
    msg = str(seen[0].message)
    assert "ignores Range" in msg and "nginx" in msg and "=" not in msg  # no Python syntax


def test_a_raised_level_from_a_server_without_range_reads_from_byte_0(
    large: Path, tmp_path: Path
) -> None:
    """The groups a cached prefix lacks come with every byte before them: one GET a record."""
    local = open_dataset(str(large / "ds"))
    with FileServer(large, **_NO_RANGE) as srv:
        ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
        with pytest.warns(RangeIgnoredWarning):
            ds.prefetch(2)
        srv.log.clear()
        assert ds.prefetch(4).bytes_read == local.bytes_at(4)  # counted as moved: from byte 0
        assert len(srv.gets()) == len(ds.records)
        assert _same(_images(ds, 4), _images(local, 4)) and len(srv.gets()) == len(ds.records)


def test_the_cli_reads_a_level_from_a_server_without_range(
    served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m http.server``'s behaviour: the read works, with one line of advice."""
    with FileServer(served, ranges=False, protocol="HTTP/1.0") as srv:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            code = main(["read", f"{srv.url}/ds", "--scan", "3", "--quiet", "--json"])
        out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["images"] == 7
    (line,) = err.splitlines()
    assert line.startswith(f"pcr-explore: warning: {srv.url}/ds: the server ignores Range")
    assert "cache_dir" not in line and "npx http-server" in line


@pytest.mark.parametrize("server", [{"ranges": False}], indirect=True)
def test_a_read_from_a_later_byte_is_refused_unread_by_the_store(
    server: FileServer, served: Path
) -> None:
    """The store does not skip a whole file's first bytes itself: it says so, and why."""
    url = f"{server.url}/ds/record-00000.pcr"
    data = (served / "ds" / "record-00000.pcr").read_bytes()
    store = remote.HTTPStore()
    with pytest.raises(
        RemoteReadError, match=r"ignores Range .*not read\): read from byte 0"
    ) as info:
        store.cat_file(url, 100, 200)
    assert info.value.range_ignored and info.value.attempts == 1 and store.range_support is False
    assert store.cat_file(url, 0, 200) == data[:200]
    assert store.cat_file(url, 0, len(data)) == data


@pytest.mark.parametrize(
    "server",
    [{"ranges": False, "drop_every": 2}, {"ranges": True, "drop_every": 2}],
    indirect=True,
    ids=["no-range", "range"],
)
def test_a_whole_file_cut_short_starts_over_or_resumes_never_appends(
    server: FileServer, served: Path
) -> None:
    """The second GET is cut half-way: a 200 starts the file over, a 206 resumes it."""
    url = f"{server.url}/ds/record-00000.pcr"
    data = (served / "ds" / "record-00000.pcr").read_bytes()
    store = remote.HTTPStore()
    assert store.cat_file(url) == data and store.retried == 0
    assert store.cat_file(url) == data and store.retried == 1
    first, cut, again = server.gets()
    assert (first.range, cut.range, cut.sent) == (None, None, len(data) // 2)
    assert again.range == f"bytes={len(data) // 2}-"  # resumed where the server honours it
    if server.ranges:
        assert again.status == 206 and again.sent == len(data) - len(data) // 2
    else:  # ignored: the whole file again, and what the cut attempt kept is dropped
        assert again.status == 200 and again.sent == len(data)


@pytest.mark.parametrize("server", [{"ranges": False, "drop_every": 2}], indirect=True)
def test_a_cut_manifest_or_record_from_a_server_without_range_is_read_again_from_byte_0(
    server: FileServer, served: Path, local: PCRDataset, tmp_path: Path
) -> None:
    """Every second GET is cut half-way; each is read again whole, never appended to."""
    raw = (served / "ds" / "manifest.json").read_bytes()
    first = open_dataset(f"{server.url}/ds")  # GET 1: whole
    ds = open_dataset(f"{server.url}/ds", cache_dir=tmp_path, read_ahead=0)  # GET 2 cut, GET 3
    assert ds.manifest == first.manifest
    assert [(g.status, g.sent) for g in server.gets(".json")] == [
        (200, len(raw)),
        (200, len(raw) // 2),
        (200, len(raw)),
    ]
    assert _same(_images(ds, 10), _images(local, 10))  # the full level: the whole file asked
    sizes = [r.bytes_per_scan[-1] for r in local.records]
    assert [g.sent for g in server.gets()] == [n for size in sizes for n in (size // 2, size)]
    assert ds.stats.bytes_read == local.total_bytes and ds._fs.retried == 1 + len(sizes)


@pytest.mark.parametrize("server", [{"fail_every": 2}], indirect=True)
def test_5xx_answers_are_retried(server: FileServer, local: PCRDataset) -> None:
    ds = open_dataset(f"{server.url}/ds")
    assert _same(_images(ds, 5), _images(local, 5))
    assert any(r.status == 503 for r in server.log)
    assert ds._fs.retried >= 1
    assert ds.stats.bytes_read == local.bytes_at(5)


@pytest.mark.parametrize("server", [{"fail_every": 2, "retry_after": "2"}], indirect=True)
def test_a_retry_waits_as_long_as_the_server_asks(
    server: FileServer, local: PCRDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(_retry, "_pause", slept.append)  # the wait before a retry
    ds = open_dataset(f"{server.url}/ds")
    assert _same(_images(ds, 3), _images(local, 3))
    assert slept and set(slept) == {2.0}  # Retry-After, not the backoff


def test_backoff_has_jitter_and_a_bounded_retry_after() -> None:
    policy = remote.RetryPolicy(retries=3, backoff=0.2)
    random.seed(1)
    waits = [policy.wait(k) for k in range(3) for _ in range(20)]
    for k in range(3):
        mine = waits[20 * k : 20 * (k + 1)]
        base = 0.2 * 2**k
        assert all(base / 2 <= w <= base for w in mine) and len(set(mine)) > 1
    assert policy.wait(0, asked=5.0) == 5.0
    assert policy.wait(0, asked=3600.0) == remote.MAX_RETRY_AFTER  # a server that says "an hour"
    assert remote.retry_after("Thu, 01 Jan 1970 00:00:00 GMT") == 0.0  # in the past: at once


def test_s3_reads_retry_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("s3fs")
    from pcr_explore.read._fetch import open_store

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    fs, _ = open_store("s3://bucket/ds", {}, remote.RetryPolicy(retries=2, timeout=3))
    config = fs.fs.config_kwargs
    assert config["retries"] == {"max_attempts": 1, "mode": "standard"}  # botocore: no retries
    assert config["read_timeout"] == 3 and fs.policy.retries == 2  # ours: the only ones


@pytest.mark.parametrize("server", [{"fail_every": 1, "only": ".pcr"}], indirect=True)
def test_spent_retries_name_the_url_record_range_and_status(server: FileServer) -> None:
    ds = open_dataset(f"{server.url}/ds", retries=2)
    end = ds.records[1].bytes_per_scan[1]
    with pytest.raises(RemoteReadError) as info:
        ds.read_record(1, 2)
    msg = str(info.value)
    assert msg.startswith(f"record 1: {server.url}/ds/record-00001.pcr: bytes 0..{end}: ")
    assert "failed 3 times (last: HTTP 503)" in msg
    assert (info.value.status, info.value.attempts, info.value.end) == (503, 3, end)
    assert len(server.gets()) == 3


@pytest.mark.parametrize("server", [{"drop_every": 2}], indirect=True)
def test_a_body_cut_short_is_resumed_without_fetching_a_byte_twice(
    server: FileServer, local: PCRDataset
) -> None:
    ds = open_dataset(f"{server.url}/ds")
    assert _same(_images(ds, 6), _images(local, 6))
    gets = server.gets()
    resumed = [g for g in gets if g.range and not g.range.startswith("bytes=0-")]
    assert resumed and len(gets) == len(ds.records) + len(resumed)
    assert sum(g.sent for g in gets) == local.bytes_at(6) == ds.stats.bytes_read


@pytest.mark.parametrize("server", [{"stall": -1, "only": ".pcr"}], indirect=True)
def test_a_stalled_server_times_out(server: FileServer) -> None:
    ds = open_dataset(f"{server.url}/ds", timeout=0.3, retries=1)
    with pytest.raises(RemoteReadError, match=r"failed 2 times \(last: timed out\)") as info:
        ds.read_record(0, 1)
    assert info.value.status is None and info.value.attempts == 2
    assert len(server.gets()) == 2  # ours are the only retries: urllib3 makes none of its own


@pytest.mark.parametrize("server", [{"stall": 1, "only": ".pcr"}], indirect=True)
def test_one_stalled_request_is_retried(server: FileServer, local: PCRDataset) -> None:
    # 2 s of silence, not 0.3: the requests that are answered must never time out, even when
    # a busy machine keeps this process's server thread waiting
    ds = open_dataset(f"{server.url}/ds", timeout=2.0)
    assert _same(_images(ds, 2), _images(local, 2))
    assert ds._fs.retried == 1


def test_encoded_names_cannot_leave_the_dataset_folder(
    server: FileServer, served: Path, tmp_path: Path
) -> None:
    m = json.loads((served / "ds" / "manifest.json").read_text())
    m["records"][0]["file"] = "%2e%2e%2fsecret.pcr"
    bad = served / "bad"
    bad.mkdir(exist_ok=True)
    (bad / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DatasetError, match=r"unsafe file name .*URL-decodes to '\.\./secret\.pcr'"):
        open_dataset(f"{server.url}/bad")
    assert not [r for r in server.log if "secret" in r.path]


@pytest.mark.parametrize("server", [{"fail_every": 1, "only": ".pcr"}], indirect=True)
def test_cli_reports_a_failed_remote_read_in_one_line(
    server: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["read", f"{server.url}/ds", "--scan", "2", "--quiet", "--retries", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.startswith("pcr-explore: error: record 0: ") and "(last: HTTP 503)" in err


def test_a_remote_dataset_pickles_and_reads_in_the_copy(
    server: FileServer, local: PCRDataset, tmp_path: Path
) -> None:
    import pickle

    ds = open_dataset(f"{server.url}/ds", cache_dir=tmp_path, timeout=5.0)
    ds.prefetch(1)
    copy = pickle.loads(pickle.dumps(ds))
    assert copy._fs.policy.timeout == 5.0
    assert _same(_images(copy, 2), _images(local, 2))
    assert copy.stats.cache_bytes >= local.bytes_at(1)


@pytest.mark.parametrize("server", [{"trickle": 0.2, "only": ".pcr"}], indirect=True)
def test_the_deadline_bounds_the_whole_read_of_a_trickling_server(server: FileServer) -> None:
    """A byte every 0.2 s never trips the 5 s silence timeout; the 1 s deadline ends the read."""
    store = remote.HTTPStore(remote.RetryPolicy(retries=3, timeout=5, deadline=1.0))
    url = f"{server.url}/ds/record-00000.pcr"
    want = (
        rf"^{url}: bytes 0..1000: the deadline of 1 s for the whole read was reached after "
        r"1 attempt \(last: timed out at the deadline\)"
    )
    with pytest.raises(RemoteReadError, match=want) as info:
        store.cat_file(url, 0, 1000)
    assert (info.value.status, info.value.attempts, store.retried) == (206, 1, 0)
    (get,) = server.gets()  # no retry: none could finish before the deadline
    # cut short: the whole body would take 200 s (how many bytes came before the cut
    # depends on how busy the machine is, so it is not counted)
    assert get.sent < 1000


def _client_threads(server: FileServer) -> int:
    """Threads of this process, less the loopback server's own."""
    return len([t for t in threading.enumerate() if t.ident not in server.threads])


@pytest.mark.timeout(60)  # a hang guard: the read ends at its 3 s deadline
@pytest.mark.parametrize(
    "server", [{"trickle": 0.3, "only": ".pcr", "protocol": "HTTP/1.0"}], indirect=True
)
def test_a_trickling_http10_server_is_cut_at_the_deadline_by_the_reading_threads(
    server: FileServer,
) -> None:
    """Every read ahead ends at the deadline, and no thread is started per request."""
    from pcr_explore.read.pipeline import READ_AHEAD_THREADS

    ds = open_dataset(f"{server.url}/ds", timeout=2, retries=1, deadline=3)
    baseline, peak, done = _client_threads(server), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _client_threads(server))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with pytest.raises(RemoteReadError, match=r"the deadline of 3 s .*timed out at the dead"):
            list(ds.iter(1, size=16))
    finally:
        done.set()
        sampler.join()
    gets = server.gets()
    assert len(gets) == len(ds.records)  # each record's read once, all in flight together
    assert all(g.sent < ds.records[0].bytes_per_scan[0] for g in gets)  # cut short, every one
    assert not [t for t in threading.enumerate() if t.name.startswith("pcr-read-ahead")]
    # the sampler, the read-ahead's threads, and nothing per request (was one timer each)
    assert peak[0] <= baseline + 1 + READ_AHEAD_THREADS


@pytest.mark.parametrize(
    "server", [{"fail_every": 1, "retry_after": "3600", "only": ".pcr"}], indirect=True
)
def test_a_retry_after_past_the_deadline_fails_at_once_however_long_it_is(
    server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An hour asked: more than MAX_RETRY_AFTER, which must not hide that it ends past 120 s."""
    slept: list[float] = []
    monkeypatch.setattr(_retry, "_pause", slept.append)
    store = remote.HTTPStore(remote.RetryPolicy(retries=3, deadline=120))
    with pytest.raises(RemoteReadError, match=r"HTTP 503; the server asked to wait 3600 s\)"):
        store.cat_file(f"{server.url}/ds/record-00000.pcr", 0, 5000)
    assert slept == [] and len(server.gets()) == 1


@pytest.mark.parametrize("protocol", ["HTTP/1.1", "HTTP/1.0"])
def test_an_endless_body_is_not_read_past_the_bytes_asked_for(served: Path, protocol: str) -> None:
    """A 206 of the right part, then bytes without end: refused, naming the URL; no retry."""
    with FileServer(served, endless=True, only=".pcr", protocol=protocol) as srv:
        url = f"{srv.url}/ds/record-00000.pcr"
        store = remote.HTTPStore()
        want = rf"^{url}: bytes 100..1100: .*HTTP 206\) is longer than the 1,000 bytes asked for"
        with pytest.raises(RemoteReadError, match=want):
            store.cat_file(url, 100, 1100)
        with pytest.raises(remote.TooLargeError, match=rf"^{url}: longer than 5,000 bytes"):
            store.cat_file(url, 100, None, limit=5000)
        ds = open_dataset(f"{srv.url}/ds")
        with pytest.raises(RemoteReadError, match=r"record 0: .* is longer than the [\d,]+ bytes"):
            ds.read_record(0, 2)
        _wait_for(lambda: srv.dropped == 3, "the server sees each of the 3 reads hang up")
        assert len(srv.gets()) == 3


@pytest.mark.timeout(120)  # a hang guard
@pytest.mark.parametrize("protocol", ["HTTP/1.1", "HTTP/1.0"])
def test_an_endless_whole_file_is_read_no_further_than_the_bytes_asked_for(
    served: Path, local: PCRDataset, tmp_path: Path, protocol: str
) -> None:
    """No Range, no Content-Length, bytes without end: each read takes its own and hangs up.

    At the full level the reader asks for the whole record: it reads the manifest's
    size of it, never the 64 MiB the server has for it.
    """
    with FileServer(
        served, ranges=False, endless=True, only=".pcr", sndbuf=1 << 14, protocol=protocol
    ) as srv:
        ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RangeIgnoredWarning)
            for k in (1, 3, 10):  # at 10, the whole record: the manifest's size of it, no more
                assert _same(_images(ds, k), _images(local, k))
        gets = srv.gets()
        assert len(gets) == 3 * len(ds.records)
        size = {f"/ds/{r.file}": r.bytes_per_scan[-1] for r in ds.records}
        assert all(g.sent <= size[g.path] + _SLACK for g in gets)  # not the 64 MiB it has
        assert ds.stats.bytes_read == sum(local.bytes_at(k) for k in (1, 3, 10))
        _wait_for(lambda: srv.dropped == len(gets), "the server sees every GET hang up")


@pytest.mark.parametrize("protocol", ["HTTP/1.1", "HTTP/1.0"])
def test_the_store_reads_an_endless_whole_file_to_its_limit_or_the_bytes_asked_for(
    served: Path, protocol: str
) -> None:
    data = (served / "ds" / "record-00000.pcr").read_bytes()
    with FileServer(served, ranges=False, endless=True, only=".pcr", protocol=protocol) as srv:
        url = f"{srv.url}/ds/record-00000.pcr"
        store = remote.HTTPStore()
        with pytest.raises(remote.TooLargeError, match=rf"^{url}: longer than 5,000 bytes"):
            store.cat_file(url, limit=5000)
        assert store.cat_file(url, 0, 1000) == data[:1000]
        assert store.cat_file(url, 0, len(data)) == data
        _wait_for(lambda: srv.dropped == 3, "the server sees each of the 3 reads hang up")


@pytest.mark.timeout(60)  # a hang guard: without the cancel, each read waits 50 s
@pytest.mark.parametrize("fault", [{"stall": -1}, {"stall_mid": True}, {"trickle": 0.3}])
def test_a_cancel_ends_a_read_in_flight_and_every_later_one(
    served: Path, fault: dict[str, object]
) -> None:
    """No answer, half a body then silence, or a byte now and then: cancelled, it ends now."""
    stop = remote.Cancel()
    store = remote.HTTPStore(remote.RetryPolicy(timeout=50, deadline=None))
    with FileServer(served, only=".pcr", **fault) as srv:
        url = f"{srv.url}/ds/record-00000.pcr"
        ended: list[BaseException] = []

        def read() -> None:
            try:
                stop.run(store.cat_file, url, 0, 5000)
            except BaseException as exc:
                ended.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        _wait_for(lambda: len(srv.gets()) == 1, "the request")
        stop.cancel()
        reader.join(20)
        assert not reader.is_alive()
        assert [type(e) for e in ended] == [CancelledError]
        _wait_for(lambda: srv.dropped == 1, "the server sees the connection dropped")
        with pytest.raises(CancelledError):  # a read begun later makes no request
            stop.run(store.cat_file, url, 0, 5000)
        assert len(srv.gets()) == 1 and store.retried == 0


def _reading_threads() -> list[str]:
    """Names of the threads of this process that are inside a store's read now."""
    import sys
    import traceback

    names = {t.ident: t.name for t in threading.enumerate()}
    return [
        names.get(ident, str(ident))
        for ident, frame in sys._current_frames().items()
        if any(f.name == "cat_file" for f in traceback.extract_stack(frame))
    ]


@pytest.mark.timeout(60)  # a hang guard: without the cancel, closing waits out a 60 s timeout
def test_closing_a_pass_over_spans_ends_their_concurrent_requests_at_once(
    served: Path,
) -> None:
    """A span's scan groups are requested by other threads: the pass's cancel reaches them."""
    from pcr_explore.read import pipeline

    n = open_dataset(str(served / "ds")).records[0].images
    assert n >= 2
    # answered: record 0's header and the 2 groups of the first span; every later GET stalls
    with FileServer(served, stall=-1, spare=3, only=".pcr") as srv:
        ds = open_dataset(f"{srv.url}/ds", timeout=60, deadline=None)
        spans = [(0, 0, 1), (0, 1, n)]
        parts = pipeline.fetch(  # a generator: what a loop that stops early closes
            lambda s: ds.read_span(*s, 2),
            spans,
            on_error=pipeline.OnError(),
            where=str,
            cost=lambda s: 1,
            read_ahead=1,  # one span in flight at a time: the second starts as the first ends
        )
        assert next(parts)[0] == spans[0]
        _wait_for(lambda: len(srv.gets()) == 5, "the second span's 2 requests, in flight")
        cast(Generator[Any, None, None], parts).close()
        assert _reading_threads() == []  # close() returned: the requests ended, not awaited
        assert not [t for t in threading.enumerate() if t.name.startswith("pcr-read-ahead")]
        _wait_for(lambda: srv.dropped == 2, "the server sees the 2 stalled requests dropped")
        assert len(srv.gets()) == 5 and ds._fs.retried == 0


@pytest.mark.parametrize(
    "server", [{"fail_every": 1, "retry_after": "5", "only": ".pcr"}], indirect=True
)
def test_a_retry_that_would_wait_past_the_deadline_is_not_made(
    server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(_retry, "_pause", slept.append)  # the wait before a retry
    store = remote.HTTPStore(remote.RetryPolicy(retries=3, deadline=1.0))
    url = f"{server.url}/ds/record-00000.pcr"
    want = (
        r"bytes 0..5000: the deadline of 1 s for the whole read was reached after 1 attempt "
        r"\(last: HTTP 503; the server asked to wait 5 s\)"
    )
    with pytest.raises(RemoteReadError, match=want) as info:
        store.cat_file(url, 0, 5000)
    assert (info.value.status, info.value.attempts, info.value.url) == (503, 1, url)
    assert slept == [] and len(server.gets()) == 1


@pytest.mark.parametrize("server", [{"trickle": 0.02, "only": ".pcr"}], indirect=True)
def test_the_deadline_bounds_fsspec_backends_too(server: FileServer) -> None:
    fsspec = pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    from pcr_explore.read._fetch import FsspecStore

    fs = FsspecStore(fsspec.filesystem("http"), remote.RetryPolicy(retries=0, deadline=0.3))
    with pytest.raises(RemoteReadError, match=r"last: timed out: no whole answer within the dea"):
        fs.cat_file(f"{server.url}/ds/record-00000.pcr", start=0, end=5000)


def test_a_deadline_is_positive_or_none() -> None:
    assert remote.RetryPolicy(deadline=None).deadline is None
    with pytest.raises(ValueError, match="deadline must be a positive number of seconds or None"):
        remote.RetryPolicy(deadline=0)


@pytest.mark.parametrize("server", [{"stall_mid": True, "only": ".pcr"}], indirect=True)
def test_a_stall_mid_body_says_timed_out(server: FileServer) -> None:
    ds = open_dataset(f"{server.url}/ds", timeout=0.3, retries=1)
    with pytest.raises(RemoteReadError, match=r"failed 2 times \(last: timed out\)"):
        ds.read_record(0, 1)


@pytest.mark.parametrize("server", [{"extra": 4096, "only": ".pcr"}], indirect=True)
def test_a_206_longer_than_asked_is_refused_before_its_body(server: FileServer) -> None:
    ds = open_dataset(f"{server.url}/ds", retries=3)
    n = ds.records[0].header_bytes
    with pytest.raises(RemoteReadError, match=rf"asked for bytes 0..{n}, the server sent a part"):
        ds.header(0)
    assert len(server.gets()) == 1  # not retried: it is the server's answer, not a fault


@pytest.mark.parametrize("server", [{"shift": 100, "only": ".pcr"}], indirect=True)
def test_a_206_of_another_part_is_refused(server: FileServer) -> None:
    store = remote.HTTPStore()
    want = r"asked for bytes 0..1000, the server sent a part it calls 'bytes 100-1099/\d+'"
    with pytest.raises(RemoteReadError, match=want):
        store.cat_file(f"{server.url}/ds/record-00000.pcr", 0, 1000)
    assert len(server.gets()) == 1  # not retried: the same server would send the same part


def test_threads_share_one_pool_of_kept_alive_connections(server: FileServer, served: Path) -> None:
    """Sixteen reads from sixteen threads, at most eight at once, on at most eight connections."""
    data = (served / "ds" / "record-00000.pcr").read_bytes()
    cuts = [len(data) * i // 16 for i in range(17)]
    store = remote.HTTPStore()
    got: dict[int, bytes] = {}
    first, second, first_done = threading.Barrier(8), threading.Barrier(8), threading.Barrier(9)
    release = threading.Event()

    def read(i: int, together: threading.Barrier) -> None:
        together.wait(timeout=30)
        got[i] = store.cat_file(f"{server.url}/ds/record-00000.pcr", cuts[i], cuts[i + 1])

    def early(i: int) -> None:
        read(i, first)
        first_done.wait(timeout=30)
        release.wait(timeout=30)  # alive on: no later thread has the same thread id

    early_threads = [threading.Thread(target=early, args=(i,)) for i in range(8)]
    late_threads = [threading.Thread(target=read, args=(8 + i, second)) for i in range(8)]
    for t in early_threads:
        t.start()
    first_done.wait(timeout=30)
    for t in late_threads:
        t.start()
    for t in late_threads:
        t.join()
    release.set()
    for t in early_threads:
        t.join()
    assert [got[i] for i in range(16)] == [data[a:b] for a, b in zip(cuts, cuts[1:])]
    assert len(server.gets()) == 16 and server.connections <= 8


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_opens_its_own_connection(server: FileServer, served: Path) -> None:
    data = (served / "ds" / "record-00000.pcr").read_bytes()
    url = f"{server.url}/ds/record-00000.pcr"
    store = remote.HTTPStore()
    assert store.cat_file(url, 0, 100) == data[:100]  # leaves a kept-alive connection
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # the child: read through the store it inherited, report, leave
        code = 1
        try:
            os.write(w, store.cat_file(url, 100, 200))
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    child = os.read(r, 1000)
    os.close(r)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert child == data[100:200]
    assert store.cat_file(url, 200, 300) == data[200:300]
    # the child used a connection of its own; the parent's own is still kept alive
    assert [g.conn for g in server.gets()] == [1, 2, 1]


def test_credentials_never_follow_a_redirect_to_another_origin(
    served: Path, local: PCRDataset
) -> None:
    secrets = {"Authorization": "Bearer s3cret", "Cookie": "session=42", "X-Api-Key": "k-123"}
    with FileServer(served) as other, FileServer(served, redirect=f"{other.url}/") as first:
        ds = open_dataset(f"{first.url}/moved/ds", storage_options={"headers": secrets})
        assert _same(_images(ds, 2), _images(local, 2))
    assert first.log and all(r.status == 302 for r in first.log)
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in first.log)
    assert other.gets() and other.gets(".json")  # every read went on to the other server
    assert [r for r in other.log if {"authorization", "cookie", "x-api-key"} & set(r.headers)] == []


@pytest.mark.parametrize("server", [{"redirect": "/"}], indirect=True)
def test_a_redirect_on_the_same_origin_keeps_the_headers(server: FileServer, served: Path) -> None:
    data = (served / "ds" / "record-00000.pcr").read_bytes()
    store = remote.HTTPStore(headers={"Authorization": "Bearer s3cret"})
    assert store.cat_file(f"{server.url}/moved/ds/record-00000.pcr", 0, 1000) == data[:1000]
    assert [(r.status, r.path) for r in server.log] == [
        (302, "/moved/ds/record-00000.pcr"),
        (206, "/ds/record-00000.pcr"),
    ]
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in server.log)
