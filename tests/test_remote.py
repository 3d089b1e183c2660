"""Remote reads against real loopback servers that misbehave the ways real ones do."""

from __future__ import annotations

import json
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from pathlib import Path

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


@pytest.mark.parametrize("server", [{"ranges": False}], indirect=True)
def test_no_range_server_without_a_cache_fails_at_the_first_answer(
    server: FileServer, local: PCRDataset
) -> None:
    ds = open_dataset(f"{server.url}/ds")
    with pytest.raises(RemoteReadError, match=r"record 0: .*ignores Range.*cache_dir") as info:
        ds.read_record(0, 2)
    assert info.value.attempts == 1  # no retries: another try cannot help
    assert info.value.range_ignored and info.value.status == 200
    assert ds.stats.bytes_read == 0 and len(server.gets()) == 1
    # The full level asks for the whole file: a 200 with all of it is the right answer.
    assert ds.read_record(0).header.num_images == local.records[0].images


@pytest.mark.parametrize("server", [{"ranges": False}], indirect=True)
def test_no_range_server_with_a_cache_downloads_each_record_once(
    server: FileServer, local: PCRDataset, tmp_path: Path
) -> None:
    ds = open_dataset(f"{server.url}/ds", cache_dir=tmp_path)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert _same(_images(ds, 1), _images(local, 1))
    assert [w.category for w in seen] == [RangeIgnoredWarning]
    assert "ignores Range" in str(seen[0].message) and f"{local.total_bytes:,}" in str(
        seen[0].message
    )
    assert ds.stats.bytes_read == local.total_bytes
    # the first answer was refused unread; every record then came whole, once
    assert len(server.gets()) == len(ds.records) + 1
    n = len(server.log)
    ds.stats.reset()
    assert _same(_images(ds, 10), _images(local, 10)) and _same(_images(ds, 3), _images(local, 3))
    assert ds.stats.bytes_read == 0 and len(server.log) == n


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
