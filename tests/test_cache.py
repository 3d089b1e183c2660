"""The prefix cache: delta fetches, reads with no network, CRC checks, stale caches."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _loopback import FileServer

from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.errors import CacheTooSmallWarning, DatasetError
from pcr_explore.read.reader import PCRDataset, open_dataset
from pcr_explore.storage.cache import cache_folder

LEVELS = (1, 3, 5, 10)


@pytest.fixture
def served(photo_folder: Path, tmp_path: Path) -> Iterator[tuple[FileServer, Path]]:
    root = tmp_path / "srv"
    encode_dataset(photo_folder, root / "ds", record_size=20_000, workers=1, progress=False)
    with FileServer(root) as srv:
        yield srv, root / "ds"


def _images(ds: PCRDataset, scan: int) -> list[np.ndarray]:
    return [img for img, _ in ds.iter(scan=scan, size=32)]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_raising_the_level_fetches_only_the_missing_groups(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    srv, path = served
    local = open_dataset(str(path))
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path / "cache")
    srv.log.clear()
    prev = 0
    for k in LEVELS:
        got = ds.prefetch(k)
        assert got.bytes_read == local.bytes_at(k) - (local.bytes_at(prev) if prev else 0)
        assert got.requests == len(ds.records)  # one ranged request per record
        assert got.cache_bytes == (local.bytes_at(prev) if prev else 0)
        prev = k
    # each request started where the record's cached prefix ended (in each pass, in any
    # order: read-ahead keeps several records' requests in flight)
    starts = [int(str(g.range).split("=")[1].split("-")[0]) for g in srv.gets()]
    n = len(ds.records)
    assert [sorted(starts[i : i + n]) for i in range(0, len(starts), n)] == [
        sorted(r.bytes_per_scan[e - 1] if e else 0 for r in ds.records) for e in [0, 1, 3, 5]
    ]
    fetched = sum(g.sent for g in srv.gets())
    cold = sum(local.bytes_at(k) for k in LEVELS)
    assert fetched == local.bytes_at(10) < cold
    # lowering the level: no network at all, same pixels as a local read
    n = len(srv.log)
    for k in (3, 1, 7):
        ds.stats.reset()
        assert _same(_images(ds, k), _images(local, k))
        assert ds.stats.bytes_read == ds.stats.requests == 0
        assert ds.stats.cache_bytes == local.bytes_at(k)
    assert len(srv.log) == n
    # a new process (a new dataset object) finds the cache as it was left
    again = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path / "cache")
    assert again.prefetch(10).bytes_read == 0 and again.cache.stale_dropped == 0  # type: ignore[union-attr]


def test_cached_bytes_are_checked_and_refetched_when_bad(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    srv, path = served
    local = open_dataset(str(path))
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
    ds.prefetch(5)
    cache = ds.cache
    assert cache is not None
    f = cache.path(1)
    data = bytearray(f.read_bytes())
    data[ds.header(1).header_len + 5] ^= 0xFF  # inside scan group 1
    f.write_bytes(bytes(data))
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
    assert _same(_images(ds, 3), _images(local, 3))
    assert ds.stats.bytes_read == ds.records[1].bytes_per_scan[2]  # record 1, fetched again
    real = (path / "record-00001.pcr").read_bytes()
    assert cache.path(1).read_bytes() == real[: ds.records[1].bytes_per_scan[2]]


def test_a_cache_file_cut_short_is_trimmed_to_a_group_boundary(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    srv, path = served
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
    ds.prefetch(4)
    cache = ds.cache
    assert cache is not None
    cum = ds.records[0].bytes_per_scan
    with open(cache.path(0), "r+b") as f:
        f.truncate(cum[3] - 7)  # a crash in the middle of appending group 4
    assert cache.length(0) == cum[2] and cache.path(0).stat().st_size == cum[2]
    ds.stats.reset()
    ds.read_record(0, 4)
    assert ds.stats.bytes_read == cum[3] - cum[2] and ds.stats.requests == 1
    assert cache.path(0).read_bytes() == (path / "record-00000.pcr").read_bytes()[: cum[3]]


def test_a_changed_dataset_is_detected_and_refetched(
    served: tuple[FileServer, Path], photo_folder: Path, tmp_path: Path
) -> None:
    srv, path = served
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
    ds.prefetch(10)
    old = sorted(p.name for p in cache_folder(tmp_path, f"{srv.url}/ds").glob("record-*"))
    # the same URL now serves another encode (another shuffle)
    shutil.rmtree(path)
    encode_dataset(photo_folder, path, record_size=20_000, seed=1, workers=1, progress=False)
    fresh = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path)
    assert fresh.cache is not None and fresh.cache.stale_dropped == len(old)
    local = open_dataset(str(path))
    assert _same(_images(fresh, 3), _images(local, 3))
    assert fresh.stats.bytes_read == local.bytes_at(3)
    now = sorted(p.name for p in fresh.cache.folder.glob("record-*"))
    assert not set(now) & set(old)


def test_a_local_dataset_can_be_cached_too(photo_folder: Path, tmp_path: Path) -> None:
    encode_dataset(photo_folder, tmp_path / "ds", record_size=20_000, workers=1, progress=False)
    ds = open_dataset(str(tmp_path / "ds"), cache_dir=tmp_path / "c")
    assert [ds.prefetch(k).bytes_read for k in (2, 2, 6)] == [
        ds.bytes_at(2),
        0,
        ds.bytes_at(6) - ds.bytes_at(2),
    ]


def test_a_cache_entry_that_is_a_folder_is_named(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    srv, _ = served
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path / "c")
    ds.cache.path(0).mkdir(parents=True)  # not a file: nothing the cache wrote
    with pytest.raises(DatasetError, match="this cache entry is not a file"):
        ds.image(0, scan=1)


def test_a_damaged_cached_piece_is_fetched_again_on_a_single_image_read(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    srv, path = served
    local = open_dataset(str(path))
    cache = tmp_path / "cache"
    for read in ("jpeg_bytes", "image"):
        warm = open_dataset(f"{srv.url}/ds", cache_dir=cache)
        warm.prefetch(3)
        offs, _ = warm.header(0).piece_ranges(0, 3)
        entry = warm.cache.path(0)
        data = bytearray(entry.read_bytes())
        data[offs[-1]] ^= 0x10  # one bit of image 0's scan-3 piece, in the cached copy only
        entry.write_bytes(bytes(data))
        ds = open_dataset(f"{srv.url}/ds", cache_dir=cache)  # a new session, as after a restart
        got, want = getattr(ds, read)(0, scan=3), getattr(local, read)(0, scan=3)
        assert np.array_equal(np.asarray(got), np.asarray(want)), read
        assert ds.stats.bytes_read > 0  # the store served what the cache got wrong


def test_single_image_reads_at_a_raised_level_fetch_only_the_missing_groups(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    """What the widgets do: image(i, scan) one by one, after a lower level was read."""
    srv, path = served
    local = open_dataset(str(path))
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path / "cache")
    assert len(ds.records) > 1
    _images(ds, 1)
    ds.stats.reset()
    for i in range(len(ds)):
        assert np.array_equal(ds.image(i, scan=3), local.image(i, scan=3))
    assert ds.stats.bytes_read == local.bytes_at(3) - local.bytes_at(1)
    assert ds.stats.requests == len(ds.records)  # one delta request per record
    ds.stats.reset()
    for i in reversed(range(len(ds))):  # a second pass, and any lower level: all from disk
        ds.jpeg_bytes(i, scan=3)
        ds.jpeg_bytes(i, scan=2)
    assert ds.stats.bytes_read == ds.stats.requests == 0


def _held(cache: Path) -> dict[str, int]:
    """Cached prefix files and their sizes, by record file name."""
    return {
        p.name.split(".")[0]: p.stat().st_size
        for p in cache.glob("*/record-*.pcr.*")
        if p.is_file()
    }


def test_a_pass_that_cannot_fit_keeps_a_fixed_part_and_streams_the_rest(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    from pcr_explore.storage._cache_index import rank
    from pcr_explore.storage.cache import cache_usage

    srv, path = served
    local = open_dataset(str(path))
    full = [r.bytes_per_scan[-1] for r in local.records]
    assert len(full) == 3
    limit = sum(full) - min(full) // 2  # room for two and a half records
    cache = tmp_path / "cache"
    # one record at a time (no read-ahead), so that the order of use is known
    ds = open_dataset(f"{srv.url}/ds", cache_dir=cache, cache_max_bytes=limit, read_ahead=0)
    with pytest.warns(CacheTooSmallWarning, match="level 10 of every record takes"):
        assert _same(_images(ds, 10), _images(local, 10))  # records 0, 1, 2 in turn
    names = {r.file.split(".")[0]: f"{r.file}.{r.checksum}" for r in local.records}
    first = sorted(names, key=lambda f: rank(names[f]))
    held = _held(cache)
    assert sum(held.values()) <= limit and set(held) == set(first[:2])
    streamed = local.records[int(first[-1].split("-")[1])]
    # shuffled passes, whatever the order: the two ranked first stay, the third streams
    for order in ([1, 0, 2], [0, 2, 1], [2, 1, 0]):  # never the last one read first: it is held
        ds.stats.reset()
        for r in order:
            assert bytes(ds.read_record(r, 10).buffer) == bytes(local.read_record(r, 10).buffer)
        assert set(_held(cache)) == set(first[:2])
        assert ds.stats.bytes_read == streamed.bytes_per_scan[-1]
    assert sum(u["bytes"] for u in cache_usage(cache)) <= limit
    # a limit smaller than one record's header keeps nothing: the limit holds
    tiny = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path / "tiny", cache_max_bytes=10)
    with pytest.warns(CacheTooSmallWarning, match="not even level 1 fits"):
        assert _same(_images(tiny, 10), _images(local, 10))
    assert _held(tmp_path / "tiny") == {}


def test_a_cache_limit_is_checked_first(served: tuple[FileServer, Path], tmp_path: Path) -> None:
    srv, _ = served
    with pytest.raises(ValueError, match="not a size: '2 gigs'"):
        open_dataset(f"{srv.url}/ds", cache_dir=tmp_path, cache_max_bytes="2 gigs")
    with pytest.raises(ValueError, match="cache_max_bytes needs a cache_dir"):
        open_dataset(f"{srv.url}/ds", cache_max_bytes="1GB")
    ds = open_dataset(f"{srv.url}/ds", cache_dir=tmp_path / "c", cache_max_bytes="1MiB")
    assert ds.cache.max_bytes == 2**20  # type: ignore[union-attr]


def _read_all(url: str, cache: str, limit: int) -> list[str]:
    import hashlib

    ds = open_dataset(url, cache_dir=cache, cache_max_bytes=limit)
    return [
        hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest()
        for k in (1, 4, 10, 2, 10)
        for img in _images(ds, k)
    ]


def test_processes_sharing_a_bounded_cache(served: tuple[FileServer, Path], tmp_path: Path) -> None:
    import hashlib
    import multiprocessing as mp

    from pcr_explore.storage.cache import cache_usage

    srv, path = served
    local = open_dataset(str(path))
    want = [
        hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest()
        for k in (1, 4, 10, 2, 10)
        for img in _images(local, k)
    ]
    limit = max(r.bytes_per_scan[-1] for r in local.records) * 3 // 2
    args = (f"{srv.url}/ds", str(tmp_path / "shared"), limit)
    with mp.get_context("spawn").Pool(3) as pool:
        results = pool.starmap(_read_all, [args] * 3)
    assert all(r == want for r in results)  # evictions under a reader cost a refetch, never data
    largest = max(r.bytes_per_scan[-1] for r in local.records)
    assert sum(u["bytes"] for u in cache_usage(tmp_path / "shared")) <= limit + largest


def test_eviction_and_clear_touch_only_cached_prefixes(
    served: tuple[FileServer, Path], tmp_path: Path
) -> None:
    from pcr_explore.storage.cache import cache_usage, clear_cache

    srv, path = served
    cache = tmp_path / "cache"
    stranger = cache / "0123456789abcdef"  # looks like a dataset folder, has no source.json
    stranger.mkdir(parents=True)
    (stranger / "record-00000.pcr.deadbeef").write_bytes(b"x" * 100_000)
    (cache / "notes.txt").write_text("mine")
    limit = min(r.bytes_per_scan[-1] for r in open_dataset(str(path)).records)
    ds = open_dataset(f"{srv.url}/ds", cache_dir=cache, cache_max_bytes=limit)
    mine = ds.cache.folder / "keep-me.txt"  # type: ignore[union-attr]
    mine.write_text("mine too")
    with pytest.warns(CacheTooSmallWarning):
        _images(ds, 10)
    assert (stranger / "record-00000.pcr.deadbeef").stat().st_size == 100_000
    [usage] = cache_usage(cache)
    assert usage["url"] == f"{srv.url}/ds" and 1 <= usage["prefixes"] < len(ds.records)
    assert usage["bytes"] <= limit
    files, nbytes = clear_cache(cache)
    assert files == usage["prefixes"] and nbytes == usage["bytes"]
    assert cache_usage(cache) == []
    assert mine.read_text() == "mine too" and (cache / "notes.txt").exists()
    assert (stranger / "record-00000.pcr.deadbeef").exists()


def test_cli_cache_info_and_clear(served: tuple[FileServer, Path], tmp_path: Path) -> None:
    import subprocess
    import sys

    srv, path = served
    cache = tmp_path / "cache"
    cmd = [sys.executable, "-m", "pcr_explore"]
    read = [*cmd, "read", f"{srv.url}/ds", "--scan", "3", "--quiet", "--cache-dir", str(cache)]
    subprocess.run([*read, "--cache-max-bytes", "20kB"], check=True, capture_output=True)
    info = subprocess.run(
        [*cmd, "cache", "info", str(cache)], check=True, capture_output=True, text=True
    ).stdout
    assert info.startswith(f"{cache}: 1 dataset, ") and f"{srv.url}/ds: " in info
    record = json.loads(
        subprocess.run(
            [*cmd, "cache", "info", str(cache), "--json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    assert (
        0
        < record["bytes"]
        <= 20_000 + max(r.bytes_per_scan[2] for r in open_dataset(str(path)).records)
    )
    out = subprocess.run(
        [*cmd, "cache", "clear", str(cache)], check=True, capture_output=True, text=True
    ).stdout
    assert f"deleted {record['datasets'][0]['prefixes']} cached prefix" in out
    bad = subprocess.run([*read, "--cache-max-bytes", "lots"], capture_output=True, text=True)
    assert bad.returncode == 2 and "not a size: 'lots'" in bad.stderr


# -- a bounded cache trims before it evicts ------------------------------------


@pytest.fixture
def seven(tmp_path: Path) -> Path:
    """A local dataset of 24 small distinct images in 7 records."""
    from _pcr_data import random_dataset

    return random_dataset(tmp_path / "ds", images=24, records=8)


def _check_held(cache: Path, local: PCRDataset, at_least: int) -> int:
    """Assert every cached prefix ends at one of its record's boundaries; return their bytes."""
    bounds = {f"{r.file}.{r.checksum}": (r.header_bytes, *r.bytes_per_scan) for r in local.records}
    sizes = {p.name: p.stat().st_size for p in cache.glob("*/record-*")}
    assert sizes and set(sizes) <= set(bounds)
    for name, size in sizes.items():
        assert size in bounds[name][at_least:], (name, size)
    return sum(sizes.values())


def test_a_lower_level_pass_trims_the_higher_levels_instead_of_evicting_records(
    seven: Path, tmp_path: Path
) -> None:
    local = open_dataset(str(seven))
    full = [r.bytes_per_scan[-1] for r in local.records]
    limit = local.bytes_at(5)  # level 5 of every record, and not one byte more
    assert len(full) >= 5 and limit < local.bytes_at(10)
    ds = open_dataset(str(seven), cache_dir=tmp_path / "c", cache_max_bytes=limit)
    cache = ds.cache
    assert cache is not None
    with pytest.warns(CacheTooSmallWarning):
        ds.prefetch(10)
    held = {r for r in range(len(full)) if cache.length(r)}
    assert held and len(held) < len(full)
    assert all(cache.length(r) == full[r] for r in held)
    evicted = cache.evicted
    five = [r.bytes_per_scan[4] for r in local.records]
    got = ds.prefetch(5)
    # the records held at level 10 were cut back to level 5, not refetched
    assert got.bytes_read == sum(five[r] for r in range(len(five)) if r not in held)
    assert got.cache_bytes == sum(five[r] for r in held)
    assert cache.trimmed >= 1 and cache.evicted == evicted
    again = ds.prefetch(5)
    assert again.bytes_read == again.requests == 0 and again.cache_bytes == limit
    assert _check_held(tmp_path / "c", local, at_least=5) <= limit + max(full)


def _digests(ds: PCRDataset, k: int) -> list[str]:
    import hashlib

    return [hashlib.sha256(data).hexdigest() for _, data, _ in ds.iter_jpeg(scan=k)]


def _read_high(path: str, cache: str, limit: int, start: Any, done: Any, out: Any) -> None:
    """Three passes at level 10 (more than the cache holds), then say so."""
    import warnings

    warnings.simplefilter("ignore", CacheTooSmallWarning)
    ds = open_dataset(path, cache_dir=cache, cache_max_bytes=limit)
    start.wait()
    passes = [_digests(ds, 10) for _ in range(3)]
    done.set()
    out.put(("high", passes, ds.cache.trimmed))  # type: ignore[union-attr]


def _read_low(path: str, cache: str, limit: int, start: Any, done: Any, out: Any) -> None:
    """Passes at level 5 while the other process reads, and one whole pass after it stopped."""
    # One record at a time here: the fill locks of two processes that each wait
    # in several threads can trip the kernel's deadlock detection (EDEADLK).
    ds = open_dataset(path, cache_dir=cache, cache_max_bytes=limit, read_ahead=0)
    start.wait()
    passes = []
    while True:
        finished = done.is_set()
        passes.append(_digests(ds, 5))
        if finished:
            break
    out.put(("low", passes, ds.cache.trimmed))  # type: ignore[union-attr]


def test_processes_reading_one_bounded_cache_at_two_levels(seven: Path, tmp_path: Path) -> None:
    import multiprocessing as mp
    import queue

    local = open_dataset(str(seven))
    limit = local.bytes_at(5)
    ctx = mp.get_context("spawn")
    start, done, out = ctx.Barrier(2), ctx.Event(), ctx.Queue()
    args = (str(seven), str(tmp_path / "shared"), limit, start, done, out)
    procs = [ctx.Process(target=f, args=args) for f in (_read_high, _read_low)]
    results: dict[str, tuple[list[list[str]], int]] = {}
    try:
        for p in procs:
            p.start()
        for _ in range(600):  # a guard against a hang, not a timing
            if len(results) == 2:
                break
            try:
                name, passes, trimmed = out.get(timeout=1)
                results[name] = (passes, trimmed)
            except queue.Empty:
                failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                assert not failed, f"a reader process failed (exit codes {failed})"
    finally:
        for p in procs:
            if p.is_alive() and len(results) < 2:
                p.terminate()
            p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    (high, high_trimmed), (low, low_trimmed) = results["high"], results["low"]
    # a prefix trimmed or evicted under a reader costs a refetch, never a wrong byte
    assert high == [_digests(local, 10)] * 3
    assert len(low) >= 2 and all(p == _digests(local, 5) for p in low)
    # the level-5 reader cut the level-10 reader's prefixes back to level 5 (its last pass
    # began after the other stopped, so it met at least one); reading at the top level
    # has nothing above it to cut
    assert low_trimmed >= 1 and high_trimmed == 0
    full = max(r.bytes_per_scan[-1] for r in local.records)
    assert _check_held(tmp_path / "shared", local, at_least=0) <= limit + full


def test_a_cache_entry_that_is_a_link_is_never_followed(seven: Path, tmp_path: Path) -> None:
    local = open_dataset(str(seven))
    cache = tmp_path / "c"
    open_dataset(str(seven), cache_dir=cache).prefetch(3)
    ds = open_dataset(str(seven), cache_dir=cache, cache_max_bytes=10**9)
    assert ds.cache is not None
    outside = []
    for r, cut in ((0, 0), (1, 7)):  # a link to a whole level-3 prefix, and to one cut short
        real = (seven / local.records[r].file).read_bytes()
        target = tmp_path / f"outside-{r}"
        target.write_bytes(real[: local.records[r].bytes_per_scan[2] - cut])
        ds.cache.path(r).unlink()
        ds.cache.path(r).symlink_to(target)
        outside.append((target, target.read_bytes()))
    got = ds.prefetch(5)
    five = [r.bytes_per_scan[4] for r in local.records]
    three = [r.bytes_per_scan[2] for r in local.records]
    # records 0 and 1 came whole from the store; the others only from level 3 up
    assert got.bytes_read == five[0] + five[1] + sum(five[2:]) - sum(three[2:])
    for target, before in outside:
        assert target.read_bytes() == before  # neither appended to nor truncated
    for r in (0, 1):
        p = ds.cache.path(r)
        assert not p.is_symlink()
        assert p.read_bytes() == (seven / local.records[r].file).read_bytes()[: five[r]]
    assert _same(_images(ds, 5), _images(local, 5))
    # a link appearing between the size check and the append is deleted, not written through
    link = ds.cache.path(2)
    link.unlink()
    link.symlink_to(outside[0][0])
    ds.cache.extend(2, 0, b"x" * 10)
    assert not link.exists() and outside[0][0].read_bytes() == outside[0][1]
    # a dataset folder that is a link would grow where eviction never looks
    other = tmp_path / "other"
    other.mkdir()
    linked = cache_folder(tmp_path / "c2", str(seven))
    linked.parent.mkdir()
    linked.symlink_to(other)
    with pytest.raises(DatasetError, match="cache folder is a symbolic link"):
        open_dataset(str(seven), cache_dir=tmp_path / "c2")


def test_cache_usage_and_cache_info_tell_the_level_of_each_prefix(
    seven: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcr_explore.cli import main
    from pcr_explore.storage.cache import cache_usage

    cache = tmp_path / "c"
    ds = open_dataset(str(seven), cache_dir=cache, read_ahead=0)
    recs = ds.records
    ds.prefetch(2)
    ds.read_record(0, 7)
    ds.read_record(1, 10)
    ds.read_record(2, 10)
    empty = open_dataset(str(seven), cache_dir=tmp_path / "c-other")
    empty.header(3)  # the header alone: level 0
    n = len(recs)
    want = [
        {"level": 2, "records": n - 3, "bytes": sum(r.bytes_per_scan[1] for r in recs[3:])},
        {"level": 7, "records": 1, "bytes": recs[0].bytes_per_scan[6]},
        {"level": 10, "records": 2, "bytes": recs[1].bytes_per_scan[9] + recs[2].bytes_per_scan[9]},
    ]
    [row] = cache_usage(cache)
    assert row["levels"] == want and row["prefixes"] == n and row["url"] == str(seven)
    assert row["bytes"] == sum(w["bytes"] for w in want)
    [other] = cache_usage(tmp_path / "c-other")
    assert other["levels"] == [{"level": 0, "records": 1, "bytes": recs[3].header_bytes}]
    assert main(["cache", "info", str(cache)]) == 0
    text = capsys.readouterr().out
    assert f"    level 2: {n - 3} records, {want[0]['bytes']:,} bytes" in text
    assert f"    level 7: 1 record, {want[1]['bytes']:,} bytes" in text
    assert main(["cache", "info", str(tmp_path / "c-other")]) == 0
    assert f"level 0 (header only): 1 record, {recs[3].header_bytes:,} bytes" in (
        capsys.readouterr().out
    )
    assert main(["cache", "info", str(cache), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["datasets"][0]["levels"] == want
    # an index lost (or a cache written before the levels were kept): unknown, until the
    # dataset is opened again
    ds.cache.close()  # type: ignore[union-attr]
    (cache / ".pcr-cache.sqlite").unlink()
    assert cache_usage(cache)[0]["levels"] == [{"level": None, "records": n, "bytes": row["bytes"]}]
    assert main(["cache", "info", str(cache)]) == 0
    assert f"    level unknown: {n} records" in capsys.readouterr().out
    open_dataset(str(seven), cache_dir=cache)
    assert cache_usage(cache)[0]["levels"] == want


def test_cache_plan_tells_which_level_a_size_holds(
    seven: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcr_explore.cli import main

    ds = open_dataset(str(seven))
    size = ds.bytes_at(4) + 1
    assert main(["cache", "plan", str(seven), "--size", str(size)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(
        f"{seven}: a cache of {size:,} bytes: level 4 of every record fits "
        f"({ds.bytes_at(4):,} bytes)"
    )
    assert f"  level 4: {ds.bytes_at(4):,} bytes, fits\n" in text
    assert f"  level 5: {ds.bytes_at(5):,} bytes, does not fit\n" in text
    assert main(["cache", "plan", str(seven), "--size", str(size), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["level"] == 4 == ds.level_that_fits(size)
    assert [row["fits"] for row in got["levels"]] == [k <= 4 for k in range(1, ds.num_scans + 1)]
    assert main(["cache", "plan", str(seven), "--size", "1"]) == 0
    assert "not even level 1 fits" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["cache", "plan", str(seven), "--size", "lots"])
    assert "not a size: 'lots'" in capsys.readouterr().err


# -- links where the cache keeps its own files; a full disk -----------------------------


@pytest.mark.parametrize("where", ["index files", "fill locks"])
def test_lock_and_journal_files_that_are_dangling_links_are_refused(
    seven: Path, tmp_path: Path, where: str
) -> None:
    local = open_dataset(str(seven))
    cache, outside = tmp_path / "c", tmp_path / "outside"
    folder = cache_folder(cache, str(seven))
    folder.mkdir(parents=True)
    outside.mkdir()
    if where == "index files":  # what SQLite and the locks would open with O_CREAT
        names = [".pcr-cache.sqlite-journal", ".pcr-cache.lock", ".pcr-cache.sqlite.lock"]
        names += [".pcr-fetch.lock"]
        links = [cache / name for name in names]
    else:
        links = [folder / f".fill-{r.file}.{r.checksum}" for r in local.records]
    for i, link in enumerate(links):
        link.symlink_to(outside / f"made-{i}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = open_dataset(str(seven), cache_dir=cache, cache_max_bytes=10**9)
        assert _digests(ds, 3) == _digests(local, 3)
    assert list(outside.iterdir()) == []  # nothing made where the links point
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "prefix cache cannot be written" in said[0], said


def _read_on_a_full_disk(path: str, cache: str, out: Any) -> None:
    """Read level 3 with every file this process writes limited to one byte (a full disk)."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ds = open_dataset(path, cache_dir=cache, cache_max_bytes=10**9)
            out.put((_digests(ds, 3), [str(w.message) for w in caught]))
        except Exception as exc:  # what the test reports
            out.put((repr(exc), [str(w.message) for w in caught]))


@pytest.mark.parametrize("before", ["nothing cached", "level 1 cached"])
def test_a_full_disk_warns_once_and_reads_go_on(seven: Path, tmp_path: Path, before: str) -> None:
    import multiprocessing as mp

    local = open_dataset(str(seven))
    cache = tmp_path / "c"
    if before == "level 1 cached":
        open_dataset(str(seven), cache_dir=cache, cache_max_bytes=10**9).prefetch(1)
    held = sorted((p.name, p.stat().st_size) for p in cache.glob("*/record-*"))
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_read_on_a_full_disk, args=(str(seven), str(cache), out))
    child.start()
    got, said = out.get(timeout=300)  # a guard against a hang, not a timing
    child.join()
    assert got == _digests(local, 3)
    assert len(said) == 1 and "prefix cache cannot be written" in said[0], said
    assert sorted((p.name, p.stat().st_size) for p in cache.glob("*/record-*")) == held
