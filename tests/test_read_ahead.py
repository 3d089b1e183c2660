"""Read-ahead: the next records are requested while the current one is consumed.

Nothing here is timed. Overlap is shown by events: a read (or a request in
a real server's log) that starts while the consumer still holds an earlier
record's images; the bound, by which reads have started at that moment.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _loopback import FileServer
from _pcr_data import random_dataset

from pcr_explore import CorruptRecordError, DatasetError, SkippedWarning
from pcr_explore.read.pipeline import OnError, fetch
from pcr_explore.read.reader import open_dataset


def _wait_for(cond: Callable[[], bool], what: str, limit: float = 20.0) -> None:
    """Wait until *cond* holds; fail, naming *what*, if it never does (not a timing assertion)."""
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.005)


class _Reads:
    """A read function that logs which items it was called for."""

    def __init__(self, fail: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.called: list[int] = []
        self.fail = fail
        self._lock = threading.Lock()

    def __call__(self, r: int) -> str:
        with self._lock:
            self.called.append(r)
        if r in self.fail:
            raise DatasetError(f"record {r} is bad")
        return f"prefix {r}"

    def seen(self) -> set[int]:
        with self._lock:
            return set(self.called)


def test_the_next_reads_start_while_the_consumer_holds_one_and_stay_within_the_bound() -> None:
    reads = _Reads()
    out = fetch(
        reads,
        range(8),
        on_error=OnError(),
        where=str,
        cost=lambda r: 10,
        read_ahead=25,  # two more of 10 bytes fit beside the one handed out; a third does not
    )
    got = []
    for r, prefix in out:
        got.append((r, prefix))
        ahead = [x for x in (r + 1, r + 2) if x < 8]
        _wait_for(lambda a=ahead: set(a) <= reads.seen(), f"reads {ahead} while {r} is held")
        assert r + 3 not in reads.seen()
    assert got == [(r, f"prefix {r}") for r in range(8)]
    assert sorted(reads.called) == list(range(8))


def test_one_read_at_a_time_is_in_flight_and_the_next_starts_when_it_ends() -> None:
    """A sixteenth of the budget in flight: here one read, so the next one is never slowed."""
    gates = {r: threading.Event() for r in range(4)}
    reads = _Reads()

    def read(r: int) -> str:
        reads(r)
        assert gates[r].wait(20)
        return f"prefix {r}"

    gates[0].set()
    out = fetch(read, range(4), on_error=OnError(), where=str, cost=lambda r: 10, read_ahead=40)
    assert next(out) == (0, "prefix 0")
    _wait_for(lambda: 1 in reads.seen(), "read 1 after read 0 ended")
    assert 2 not in reads.seen()  # read 1 is in flight: nothing else shares the link
    gates[1].set()  # read 1 ends while the consumer still holds record 0
    _wait_for(lambda: 2 in reads.seen(), "read 2 started when read 1 ended")
    assert 3 not in reads.seen()
    gates[2].set()
    gates[3].set()
    assert [r for r, _ in out] == [1, 2, 3]


def test_a_record_larger_than_the_bound_is_still_read_one_ahead() -> None:
    reads = _Reads()
    out = fetch(reads, range(3), on_error=OnError(), where=str, cost=lambda r: 100, read_ahead=10)
    r, _ = next(out)
    _wait_for(lambda: 1 in reads.seen(), "record 1 read while record 0 is held")
    assert 2 not in reads.seen()
    assert [r for r, _ in out] == [1, 2]


def test_a_failed_read_is_handled_at_its_place_in_the_order() -> None:
    errors = OnError("skip")
    out = fetch(
        _Reads(fail={2}),
        range(5),
        on_error=errors,
        where=lambda r: f"record {r}",
        cost=lambda r: 1,
        read_ahead=100,
    )
    assert [r for r, _ in out] == [0, 1, 3, 4]
    assert [w for w, _ in errors.skipped] == ["record 2"]
    with pytest.raises(DatasetError, match="record 3 is bad"):
        list(
            fetch(_Reads(fail={3}), range(5), on_error=OnError(), where=str, cost=abs, read_ahead=9)
        )


def test_a_consumer_that_stops_early_leaves_no_read_running() -> None:
    reads = _Reads()
    out = fetch(reads, range(1000), on_error=OnError(), where=str, cost=lambda r: 1, read_ahead=4)
    next(out)
    out.close()  # returns once the reads in flight are done; the rest are never started
    before = len(reads.called)
    assert before <= 6
    time.sleep(0.05)
    assert len(reads.called) == before


@pytest.fixture(scope="module")
def six_records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = random_dataset(tmp_path_factory.mktemp("ahead") / "ds", images=24, records=6)
    assert len(open_dataset(str(out)).records) == 6
    return out


def test_over_http_the_next_record_is_requested_before_the_current_ones_last_image(
    six_records: Path,
) -> None:
    with FileServer(six_records) as srv:
        ds = open_dataset(srv.url)
        files = ["/" + rec.file for rec in ds.records]
        per = [rec.images for rec in ds.records]
        items = ds.iter_jpeg(scan=3)
        for r in range(len(files) - 1):
            for _ in range(per[r] - 1):
                next(items)
            # the consumer has not taken record r's last image yet
            _wait_for(
                lambda f=files[r + 1]: any(g.path == f for g in srv.gets()),
                f"a request for {files[r + 1]} before the last image of {files[r]} is taken",
            )
            next(items)
        assert len(list(items)) == per[-1]
        gets = srv.gets()
    assert sorted(g.path for g in gets) == sorted(files)  # one request per record, no more
    assert sum(g.sent for g in gets) == ds.bytes_at(3)


def test_read_ahead_is_on_for_urls_and_off_for_local_paths(six_records: Path) -> None:
    assert open_dataset(str(six_records)).read_ahead == 0
    with FileServer(six_records) as srv:
        assert open_dataset(srv.url).read_ahead == 32 << 20
    with pytest.raises(ValueError, match="not a size"):
        open_dataset(str(six_records), read_ahead="lots")


def test_read_ahead_zero_reads_one_record_at_a_time(six_records: Path) -> None:
    with FileServer(six_records) as srv:
        ds = open_dataset(srv.url, read_ahead=0)
        items = ds.iter_jpeg(scan=2)
        for _ in range(ds.records[0].images):
            next(items)
        time.sleep(0.05)
        assert {g.path for g in srv.gets()} == {"/" + ds.records[0].file}
        items.close()


def test_prefetch_and_verify_read_ahead_and_count_every_byte(six_records: Path) -> None:
    with FileServer(six_records) as srv:
        ds = open_dataset(srv.url, read_ahead="1MB")
        assert ds.read_ahead == 1_000_000
        stats = ds.prefetch(4)
        assert (stats.bytes_read, stats.requests) == (ds.bytes_at(4), len(ds.records))
        assert ds.verify() == len(ds)
        assert ds.stats.bytes_read == ds.bytes_at(4) + ds.bytes_at(None)


def test_a_corrupt_record_read_ahead_names_its_file(six_records: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "ds"
    shutil.copytree(six_records, bad)
    ds = open_dataset(str(bad))
    rec = ds.records[3]
    path = bad / rec.file
    data = bytearray(path.read_bytes())
    data[rec.header_bytes + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match=rec.file):
        list(open_dataset(str(bad), read_ahead="1MB").iter_jpeg(scan=1))
    with pytest.warns(SkippedWarning, match="1 unreadable item"):
        got = list(open_dataset(str(bad), read_ahead="1MB").iter(scan=1, on_error="skip"))
    assert len(got) == len(ds) - rec.images


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("pcr-read-ahead")]


def _stalling(folder: Path, records: range) -> FileServer:
    """A server that never answers the GETs of these records (until the client hangs up)."""
    return FileServer(folder, stall=-1, only=tuple(f"record-{r:05d}.pcr" for r in records))


# Hang guards: without the cancel, leaving a pass waits out each stalled read's 60 s timeout.
@pytest.mark.timeout(60)
def test_closing_a_pass_ends_its_reads_in_flight_at_once(six_records: Path) -> None:
    with _stalling(six_records, range(1, 6)) as srv:
        ds = open_dataset(srv.url, timeout=60, deadline=None)
        items = ds.iter_jpeg(scan=2)
        next(items)
        _wait_for(lambda: len(srv.gets()) == 6, "the requests of records 1..5, in flight")
        items.close()
        assert not _ahead_threads()  # close() returned: the reads were ended, not awaited
        _wait_for(lambda: srv.dropped == 5, "the server sees the 5 stalled requests dropped")
        assert len(srv.gets()) == 6 and ds._fs.retried == 0  # ended, not retried


@pytest.mark.timeout(60)
def test_an_error_reaches_the_consumer_without_waiting_for_the_reads_in_flight(
    six_records: Path, tmp_path: Path
) -> None:
    import shutil

    folder = shutil.copytree(six_records, tmp_path / "ds")
    ds = open_dataset(str(folder))
    (folder / ds.records[1].file).unlink()  # its HEAD answers 404 at once
    with _stalling(folder, range(2, 6)) as srv:
        ds = open_dataset(srv.url, timeout=60, deadline=None)
        items = ds.iter_jpeg(scan=2)
        next(items)
        _wait_for(lambda: len(srv.gets()) == 5, "the requests of records 0 and 2..5")
        with pytest.raises(DatasetError, match="record-00001.pcr: record file is missing"):
            list(items)
        assert not _ahead_threads()
        _wait_for(lambda: srv.dropped == 4, "the server sees the 4 stalled requests dropped")
        assert len(srv.gets()) == 5


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="no pthread_kill")
def test_ctrl_c_while_waiting_for_a_read_ends_the_reads_in_flight(six_records: Path) -> None:
    with _stalling(six_records, range(6)) as srv:
        ds = open_dataset(srv.url, timeout=60, deadline=None)
        items = ds.iter_jpeg(scan=2)
        main = threading.get_ident()

        def interrupt() -> None:  # as Ctrl-C does, once every read is in flight
            _wait_for(lambda: len(srv.gets()) == 6, "the requests of all 6 records")
            signal.pthread_kill(main, signal.SIGINT)

        threading.Thread(target=interrupt).start()
        with pytest.raises(KeyboardInterrupt):
            next(items)  # waits for record 0, which never comes
        assert not _ahead_threads()
        _wait_for(lambda: srv.dropped == 6, "the server sees the 6 stalled requests dropped")
        assert len(srv.gets()) == 6


def test_a_span_reads_its_groups_concurrently_and_joins_adjacent_ranges(six_records: Path) -> None:
    with FileServer(six_records) as srv:
        ds = open_dataset(srv.url)
        rec = ds.records[0]
        h = ds.header(0)
        srv.log.clear()
        span = ds.read_span(0, 1, rec.images - 1, 5)
        gets = srv.gets()
        assert len(gets) == 5  # one range per scan group: none of them adjacent
        for i in range(1, rec.images - 1):
            assert span.jpeg_bytes(i) == ds.jpeg_bytes(i, 5)
        srv.log.clear()
        size = rec.bytes_per_scan[-1]
        parts = ds._read_ranges(0, [(0, 10), (10, 25), (40, 50), (50, 50), (size - 4, size)])
        ranges = sorted(g.range or "" for g in srv.gets())
    whole = (six_records / rec.file).read_bytes()
    assert parts == (whole[:10], whole[10:25], whole[40:50], b"", whole[-4:])
    assert ranges == sorted(["bytes=0-24", "bytes=40-49", f"bytes={size - 4}-{size - 1}"])
    assert h.num_images == rec.images


def test_verify_over_http_reads_ahead_and_lists_each_damaged_record(
    six_records: Path, tmp_path: Path
) -> None:
    import shutil

    from pcr_explore.read.verify import verify_dataset

    bad = tmp_path / "ds"
    shutil.copytree(six_records, bad)
    ds = open_dataset(str(bad))
    for r in (1, 4):
        rec = ds.records[r]
        path = bad / rec.file
        data = bytearray(path.read_bytes())
        data[rec.bytes_per_scan[2] + 3] ^= 0xFF  # in scan group 4
        path.write_bytes(bytes(data))
    with FileServer(bad) as srv:
        report = verify_dataset(open_dataset(srv.url, read_ahead="1MB"))
        sent = sum(g.sent for g in srv.gets())
    assert [ds.records[r].file in p for p, r in zip(report.problems, (1, 4))] == [True, True]
    lost = ds.records[1].images + ds.records[4].images
    assert len(report.problems) == 2 and report.images == len(ds) - lost
    assert sent == ds.total_bytes  # every record read once
