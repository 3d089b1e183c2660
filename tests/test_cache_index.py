"""The prefix cache's shared index: no listing per write, LRU order, processes, recovery.

Records here are synthetic (a manifest entry is four fields) and written
straight through :class:`PrefixCache`, so that thousands of prefixes cost
no encoding. Every check counts events or compares bytes: listings of a
folder, rows of the index against the files on disk, traced memory.
"""

from __future__ import annotations

import hashlib
import os
import random
import tracemalloc
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pcr_explore.storage import _cache_index as ix
from pcr_explore.storage._cache_index import INDEX
from pcr_explore.storage.cache import PrefixCache, cache_usage, clear_cache

URL = "https://example.org/ds"
SCANS = 3


@dataclass(frozen=True)
class Rec:
    """A manifest's record entry, as much of it as the cache reads."""

    file: str
    checksum: str
    header_bytes: int
    bytes_per_scan: tuple[int, ...]


def _records(n: int, seed: int = 0) -> list[Rec]:
    """*n* records of 3 scan groups, 40 to 119 bytes whole."""
    rng = random.Random(seed)
    out = []
    for r in range(n):
        header = 16 + rng.randrange(8)
        cum = [header + 8 + rng.randrange(16)]
        for _ in range(SCANS - 1):
            cum.append(cum[-1] + 8 + rng.randrange(40))
        out.append(Rec(f"record-{r:06d}.pcr", f"{r:08x}", header, tuple(cum)))
    return out


def _content(r: int, size: int) -> bytes:
    """Record *r*'s bytes: distinct per record, so a byte at a wrong place shows."""
    seed = hashlib.sha256(str(r).encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def _fill(cache: PrefixCache, recs: list[Rec], r: int, level: int = SCANS) -> None:
    """Cache record *r* up to *level* (0: the header) as a reader would: the missing part."""
    end = (recs[r].header_bytes, *recs[r].bytes_per_scan)[level]
    have = cache.length(r)
    if have < end:
        cache.extend(r, have, _content(r, end)[have:])


def _open(root: Path, recs: list[Rec], limit: int | None = None, url: str = URL) -> PrefixCache:
    return PrefixCache(root, url, b"manifest " + url.encode(), recs, max_bytes=limit)


def _on_disk(root: Path) -> dict[tuple[str, str], int]:
    """Every cached prefix file's size, by (dataset folder, name)."""
    out = {}
    for p in root.glob("*/record-*"):
        try:
            out[p.parent.name, p.name] = p.lstat().st_size
        except FileNotFoundError:  # evicted by another process meanwhile
            pass
    return out


def _rows(cache: PrefixCache) -> dict[tuple[str, str], int]:
    assert cache._index is not None
    return {k: size for k, (size, _, _) in cache._index.run(ix.rows).items()}


def _check_agrees(cache: PrefixCache, root: Path) -> None:
    """The index holds exactly the files on disk, with their sizes, and their total."""
    disk = _on_disk(root)
    assert _rows(cache) == disk
    assert cache._index is not None and cache._index.run(ix.total) == sum(disk.values())


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each folder listing this process makes (os.scandir and os.listdir), by path."""
    seen: list[str] = []
    scandir, listdir = os.scandir, os.listdir

    def counted_scandir(path: Any = ".") -> Any:
        seen.append(str(path))
        return scandir(path)

    def counted_listdir(path: Any = ".") -> list[str]:
        seen.append(str(path))
        return listdir(path)

    monkeypatch.setattr(os, "scandir", counted_scandir)
    monkeypatch.setattr(os, "listdir", counted_listdir)
    yield seen


# -- cost flat in the number of prefixes ---------------------------------------------


def _evicting_writes(root: Path, n: int, writes: int) -> PrefixCache:
    """A cache of *n* whole records at its limit, reopened: the next writes each evict."""
    recs = _records(n + writes)
    fill = _open(root, recs)
    for r in range(n):
        _fill(fill, recs, r)
    fill.close()
    limit = sum(recs[r].bytes_per_scan[-1] for r in range(n))
    return _open(root, recs, limit)


@pytest.mark.parametrize("n", [50, 1000])
def test_a_write_lists_no_folder_however_many_prefixes(
    tmp_path: Path, listings: list[str], n: int
) -> None:
    writes = 40
    cache = _evicting_writes(tmp_path, n, writes)
    recs = _records(n + writes)
    del listings[:]  # opening may list (the cache folder, once); writing never
    for r in range(n, n + writes):
        _fill(cache, recs, r)
        if cache.length(r - 1):  # kept (a pass does not fit: some records stream)
            cache.read(r - 1, recs[r - 1].bytes_per_scan[-1])
    assert listings == []
    assert cache.evicted >= writes // 2  # the writes made room
    _check_agrees(cache, tmp_path)


def test_memory_of_a_write_does_not_grow_with_the_prefixes(tmp_path: Path) -> None:
    peaks = {}
    for n in (200, 4000):
        cache = _evicting_writes(tmp_path / str(n), n, 30)
        recs = _records(n + 30)
        _fill(cache, recs, n)  # the connection and its statements are made
        tracemalloc.start()
        for r in range(n + 1, n + 30):
            _fill(cache, recs, r)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert cache.evicted >= 15
        cache.close()
    # 20 times the prefixes: the same peak within a margin (a listing would be 20x)
    assert peaks[4000] < 2 * peaks[200] + 20_000, peaks


# -- what is evicted, and when -------------------------------------------------------


def test_where_a_pass_fits_eviction_follows_the_last_use_the_index_keeps(
    tmp_path: Path,
) -> None:
    recs = {url: _records(8, seed=i) for i, url in enumerate((URL, URL + "/other"))}
    full = {(u, r): rec.bytes_per_scan[-1] for u in recs for r, rec in enumerate(recs[u])}
    limit = max(sum(full[u, r] for r in range(8)) for u in recs) + 40  # one dataset fits
    assert limit < sum(full.values())
    caches = {u: _open(tmp_path, recs[u], limit, url=u) for u in recs}
    model: OrderedDict[tuple[str, int], int] = OrderedDict()  # least recently used first
    rng = random.Random(7)
    for _ in range(300):
        u, r = rng.choice(list(recs)), rng.randrange(8)
        if (u, r) in model:  # held: a read, which marks it used
            assert caches[u].read(r, full[u, r]) == _content(r, full[u, r])
            model.move_to_end((u, r))
            continue
        _fill(caches[u], recs[u], r)
        model[u, r] = full[u, r]
        for old in list(model):  # the least recently used go first; the one written stays
            if sum(model.values()) <= limit:
                break
            if old != (u, r):
                del model[old]
        held = {(f, int(n.split("-")[1][:6])) for f, n in _on_disk(tmp_path)}
        assert held == {(caches[u].folder.name, r) for u, r in model}
    for cache in caches.values():
        _check_agrees(cache, tmp_path)
    assert sum(_on_disk(tmp_path).values()) <= limit


def test_where_a_pass_cannot_fit_the_records_ranked_first_stay(tmp_path: Path) -> None:
    recs = _records(40, seed=3)
    full = [r.bytes_per_scan[-1] for r in recs]
    rank = [ix.rank(f"{r.file}.{r.checksum}") for r in recs]
    limit = 600  # about a fifth of a pass
    cache = _open(tmp_path, recs, limit)
    model: dict[int, int] = {}
    rng = random.Random(7)
    fetched = []
    for _ in range(4):  # shuffled passes
        order = rng.sample(range(len(recs)), len(recs))
        fetched.append(sum(full[r] for r in order if r not in model))
        for r in order:
            if r in model:
                assert cache.read(r, full[r]) == _content(r, full[r])
                continue
            _fill(cache, recs, r)
            over = sum(model.values()) + full[r] - limit
            while over > 0:  # the last ranked go, while they rank after the one written
                worse = [x for x in model if rank[x] > rank[r]]
                if not worse:
                    break
                last = max(worse, key=rank.__getitem__)
                over -= model.pop(last)
            if over <= 0:
                model[r] = full[r]
            held = {int(n.split("-")[1][:6]) for _, n in _on_disk(tmp_path)}
            assert held == set(model)
    _check_agrees(cache, tmp_path)
    assert sum(_on_disk(tmp_path).values()) <= limit
    # after the first pass, each fetches what the kept records leave out, and they are
    # the first ranked: no record outside ranks before one inside
    cannot_fit = sum(full) - sum(model.values())
    assert fetched[2] == fetched[3] == cannot_fit
    assert max(rank[r] for r in model) < min(rank[r] for r in range(40) if r not in model)


def test_a_lower_level_trims_the_oldest_prefixes_above_it_first(tmp_path: Path) -> None:
    recs = _records(30, seed=5)
    three = sum(r.bytes_per_scan[-1] for r in recs[:10])
    one = [r.bytes_per_scan[0] for r in recs]
    cache = _open(tmp_path, recs, three)
    for r in range(10):
        _fill(cache, recs, r, level=3)
    # level 1 of other records, as many as fit when records 0-9 are cut to level 1
    more = max(m for m in range(10, 31) if sum(one[:m]) <= three)
    assert more > 12
    for r in range(10, more):  # records 0.. are cut to level 1, the oldest first
        _fill(cache, recs, r, level=1)
    assert cache.evicted == 0 and cache.trimmed >= 1
    held = {r: cache.length(r) for r in range(30)}
    cut = [r for r in range(10) if held[r] == one[r]]
    assert cut == list(range(len(cut)))  # the oldest were cut
    assert all(held[r] == recs[r].bytes_per_scan[-1] for r in range(len(cut), 10))
    assert sum(held.values()) <= three
    _check_agrees(cache, tmp_path)


# -- several processes ---------------------------------------------------------------


def _writer(root: str, n: int, limit: int, seed: int, slack: int) -> tuple[int, int]:
    """Random reads and writes; (writes, the largest total seen right after one of them)."""
    recs = _records(n)
    cache = _open(Path(root), recs, limit)
    rng = random.Random(seed)
    worst = writes = 0
    for _ in range(300):
        r = rng.randrange(n)
        level = rng.choice((1, 2, 3))
        end = (recs[r].header_bytes, *recs[r].bytes_per_scan)[level]
        try:
            have = cache.length(r)
            if have >= end:
                assert cache.read(r, end) == _content(r, end)
                continue
        except FileNotFoundError:  # evicted by another process meanwhile
            continue
        cache.extend(r, have, _content(r, end)[have:])
        writes += 1
        worst = max(worst, sum(_on_disk(Path(root)).values()))  # the test's own look
    assert worst <= limit + slack
    cache.close()
    return writes, worst


def test_processes_sharing_an_index_hold_the_limit_and_agree(tmp_path: Path) -> None:
    import multiprocessing as mp

    n, procs = 60, 3
    recs = _records(n)
    largest = max(r.bytes_per_scan[-1] for r in recs)
    limit = 1500
    # each process writing at that moment may hold one prefix beyond the limit
    args = [(str(tmp_path), n, limit, seed, procs * largest) for seed in range(procs)]
    with mp.get_context("spawn").Pool(procs) as pool:
        results = pool.starmap(_writer, args)
    assert all(writes > 20 for writes, _ in results)
    disk = _on_disk(tmp_path)
    assert sum(disk.values()) <= limit + largest
    for (_, name), size in disk.items():  # every byte where it belongs, every prefix whole
        r = int(name.split("-")[1][:6])
        assert size in (recs[r].header_bytes, *recs[r].bytes_per_scan)
        assert (tmp_path / cache_folder_name() / name).read_bytes() == _content(r, size)
    cache = _open(tmp_path, recs, limit)
    assert cache.reconciled == 0  # the index needed no listing: it agrees already
    _check_agrees(cache, tmp_path)


def cache_folder_name() -> str:
    from pcr_explore.storage.cache import cache_folder

    return cache_folder("/", URL).name


def _forked_write(cache: PrefixCache, recs: list[Rec], first: int) -> None:
    for r in range(first, first + 10):
        _fill(cache, recs, r)
    os._exit(0)


def test_a_forked_child_connects_anew_and_the_parent_goes_on(tmp_path: Path) -> None:
    import multiprocessing as mp

    recs = _records(40)
    cache = _open(tmp_path, recs, 10**6)
    for r in range(10):
        _fill(cache, recs, r)
    child = mp.get_context("fork").Process(target=_forked_write, args=(cache, recs, 10))
    child.start()
    child.join()
    assert child.exitcode == 0
    for r in range(20, 30):  # the parent's connection still works after the child closed
        _fill(cache, recs, r)
    assert len(_on_disk(tmp_path)) == 30
    _check_agrees(cache, tmp_path)


# -- a missing, damaged or stale index -------------------------------------------------


def _filled(root: Path, n: int = 30) -> tuple[list[Rec], dict[tuple[str, str], int]]:
    recs = _records(n)
    cache = _open(root, recs, 10**9)  # bounded: reads mark their prefix used
    for r in range(n):
        _fill(cache, recs, r, level=1 + r % 3)
    for r in range(0, n, 2):  # even records used last
        cache.read(r, cache.length(r))
    rows = _rows(cache)
    cache.close()
    return recs, rows


@pytest.mark.parametrize("damage", ["deleted", "garbage", "truncated", "other layout"])
def test_an_index_missing_or_damaged_is_rebuilt_from_the_folders(
    tmp_path: Path, damage: str
) -> None:
    import sqlite3

    recs, before = _filled(tmp_path)
    index = tmp_path / INDEX
    if damage == "deleted":
        for p in tmp_path.glob(f"{INDEX}*"):
            p.unlink()
    elif damage == "garbage":
        index.write_bytes(b"not a database at all " * 200)
    elif damage == "truncated":
        with open(index, "r+b") as f:
            f.truncate(100)
    else:
        db = sqlite3.connect(index)
        db.execute("PRAGMA user_version = 1")
        db.close()
    cache = _open(tmp_path, recs, 10**6)
    assert cache._index is not None and cache._index.rebuilt == 1
    assert _rows(cache) == before
    _check_agrees(cache, tmp_path)
    # and it holds the limit again: the files' times are the last use
    limit = cache._index.run(ix.total) - 1
    cache.close()
    cache = _open(tmp_path, recs, limit)
    _fill(cache, recs, 0)  # grows record 0, making room first
    gone = [r for r in range(len(recs)) if cache.length(r) == 0]
    assert gone and 0 not in gone and sum(_on_disk(tmp_path).values()) <= limit
    _check_agrees(cache, tmp_path)


def test_an_index_removed_while_another_process_uses_it_is_made_anew_for_both(
    tmp_path: Path,
) -> None:
    recs, _ = _filled(tmp_path)
    user = _open(tmp_path, recs, 10**6)  # holds the index (as another process would)
    (tmp_path / INDEX).unlink()
    fresh = _open(tmp_path, recs, 10**6)  # finds none: fills a new one from the folders
    assert fresh._index is not None and fresh._index.rebuilt == 1
    _fill(user, recs, 1)  # the old holder writes on, into the new index
    _fill(fresh, recs, 2)
    _check_agrees(user, tmp_path)
    _check_agrees(fresh, tmp_path)


def _spoil(cache: PrefixCache, root: Path) -> None:
    """Overwrite the index's database file while *cache* has it open."""
    assert cache._index is not None
    cache._index.run(ix.total)  # connected
    with open(root / INDEX, "r+b") as f:
        f.write(b"garbage!" * 1000)


def test_an_index_damaged_while_open_is_made_anew_and_every_holder_goes_on(
    tmp_path: Path,
) -> None:
    recs, _ = _filled(tmp_path)
    cache = _open(tmp_path, recs, 10**6)
    other = _open(tmp_path, recs, 10**6)
    other._index.run(ix.total)  # type: ignore[union-attr]
    _spoil(cache, tmp_path)
    _fill(cache, recs, 0)  # finds it damaged: makes it anew from the folders, writes on
    assert cache._index is not None and cache._index.rebuilt == 1
    _check_agrees(cache, tmp_path)
    _fill(other, recs, 2)  # connected to the damaged file: goes over to the new one
    _check_agrees(other, tmp_path)
    other.close()


def test_prefixes_removed_by_hand_are_uncounted_as_eviction_meets_them(tmp_path: Path) -> None:
    recs, _ = _filled(tmp_path)
    folder = tmp_path / cache_folder_name()
    # a pass does not fit the limit below: the records ranked last go first
    order = sorted(range(30), key=lambda r: ix.rank(f"{recs[r].file}.{recs[r].checksum}"))
    first = next(r for r in order if r % 3 == 0)  # held at level 1
    for r in order[15:]:  # the half ranked last, by hand
        (folder / f"{recs[r].file}.{recs[r].checksum}").unlink()
    left = sum(_on_disk(tmp_path).values())
    grows = recs[first].bytes_per_scan[-1] - recs[first].bytes_per_scan[0]
    cache = _open(tmp_path, recs, left + grows)  # the index still counts the removed ones
    assert cache.reconciled == 0
    _fill(cache, recs, first)  # level 1 to 3, over the stale total: rows of missing files go
    assert cache.evicted == 0  # no prefix on disk had to go for them
    assert all(cache.length(r) for r in order[:15])
    _check_agrees(cache, tmp_path)


def test_a_row_that_lags_its_file_is_found_and_the_folder_listed_once(
    tmp_path: Path, listings: list[str]
) -> None:
    recs, _ = _filled(tmp_path)
    folder = tmp_path / cache_folder_name()
    cache = _open(tmp_path, recs, 10**6)
    # an older version (no index) wrote record 1 whole and a new record 30's header
    more = _records(31)
    for r, end in ((1, more[1].bytes_per_scan[-1]), (30, more[30].header_bytes)):
        (folder / f"{more[r].file}.{more[r].checksum}").write_bytes(_content(r, end))
    # and record 3's row was left saying more than its file holds
    assert cache._index is not None
    name = f"{recs[3].file}.{recs[3].checksum}"
    cache._index.run(lambda db: ix.put(db, folder.name, name, 10**5, 3, 0), write=True)
    del listings[:]
    _fill(cache, recs, 6)  # agrees with its row: nothing listed
    assert cache.reconciled == 0 and listings == []
    _fill(cache, recs, 3)  # its row said 100,000 bytes, the file fewer: one listing
    assert cache.reconciled == 1 and listings == [str(folder)]
    assert _rows(cache) == _on_disk(tmp_path)  # record 1 and 30's files counted too
    _check_agrees(cache, tmp_path)


def test_a_dataset_folder_the_index_does_not_know_is_listed_on_opening(tmp_path: Path) -> None:
    import sqlite3

    recs, _ = _filled(tmp_path)
    other = _records(5, seed=9)
    cache = _open(tmp_path, other, url="https://example.org/other")
    for r in range(5):
        _fill(cache, other, r)
    cache.close()
    with sqlite3.connect(tmp_path / INDEX) as db:  # as an older version left it
        db.execute("DELETE FROM prefixes WHERE folder != ?", (cache_folder_name(),))
        db.execute("DELETE FROM datasets WHERE folder != ?", (cache_folder_name(),))
    db.close()
    mine = _open(tmp_path, recs, 10**6)
    assert mine.reconciled == 0  # its own folder was known
    _check_agrees(mine, tmp_path)  # the other one's prefixes are counted again


# -- clearing while in use -----------------------------------------------------------


def test_a_handle_open_across_clear_cache_keeps_nothing_and_reads_on(tmp_path: Path) -> None:
    recs = _records(10)
    reader = _open(tmp_path, recs, 10**6)
    for r in range(10):
        _fill(reader, recs, r, level=1)
    other = _open(tmp_path, _records(3, seed=4), 10**6, url="https://example.org/other")
    _fill(other, _records(3, seed=4), 0)
    files, _ = clear_cache(tmp_path, URL)
    assert files == 10
    for r in range(10):  # what a reader does next: nothing cached, nothing kept, no error
        assert reader.length(r) == 0
        _fill(reader, recs, r, level=2)
        assert reader.length(r) == 0
    assert [u["url"] for u in cache_usage(tmp_path)] == ["https://example.org/other"]
    _check_agrees(other, tmp_path)
    fresh = _open(tmp_path, recs, 10**6)  # opened again: cached again
    _fill(fresh, recs, 0)
    assert fresh.length(0) == recs[0].bytes_per_scan[-1]
    _check_agrees(fresh, tmp_path)


def test_cache_usage_agrees_with_the_index(tmp_path: Path) -> None:
    recs, _ = _filled(tmp_path)
    cache = _open(tmp_path, recs, 10**6)
    [row] = cache_usage(tmp_path)
    assert cache._index is not None and row["bytes"] == cache._index.run(ix.total)
    assert row["prefixes"] == len(_rows(cache))
    assert sum(level["records"] for level in row["levels"]) == len(recs)


# -- a row is data, a link is refused, the limit holds -------------------------------


def _tamper(root: Path, sql: str, *args: Any) -> None:
    """Run *sql* on the index's row table, whatever its name in this layout."""
    import sqlite3

    db = sqlite3.connect(root / INDEX)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.execute(sql.format(rows="prefixes" if "prefixes" in tables else "entries"), args)
    db.commit()
    db.close()


@pytest.mark.parametrize("where", ["parent", "absolute"])
def test_a_row_naming_a_file_outside_the_cache_never_deletes_it(tmp_path: Path, where: str) -> None:
    root = tmp_path / "cache"
    recs = _records(10)
    cache = _open(root, recs)
    for r in range(3):
        _fill(cache, recs, r)
    cache.close()
    outside = tmp_path / "precious"
    outside.mkdir()
    victim = (tmp_path if where == "parent" else outside) / "notes.txt"
    victim.write_bytes(b"mine")
    folder = ".." if where == "parent" else str(outside)
    # the oldest row of the shared index, and big enough to be evicted first
    _tamper(root, "INSERT INTO {rows} VALUES (?, 'notes.txt', 100000, NULL, 0, 0)", folder)
    limit = sum(recs[r].bytes_per_scan[-1] for r in range(4))
    cache = _open(root, recs, limit)
    _fill(cache, recs, 3)  # over the limit by the row's count: makes room
    assert victim.read_bytes() == b"mine"
    assert all(cache.length(r) for r in range(4))  # the row went, not a prefix
    _check_agrees(cache, root)


def test_an_index_that_is_a_link_is_refused_and_reads_go_on(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    target = tmp_path / "elsewhere.db"
    target.write_bytes(b"")  # what SQLite would take for a new database and write into
    (root / INDEX).symlink_to(target)
    recs = _records(5)
    with pytest.warns(UserWarning, match="prefix cache cannot be written") as caught:
        cache = _open(root, recs, 10**6)
        for r in range(5):
            _fill(cache, recs, r)
            assert cache.length(r) == 0  # nothing kept
    assert len(caught) == 1
    assert target.read_bytes() == b"" and (root / INDEX).is_symlink()


def test_a_password_in_the_url_reaches_neither_the_disk_nor_cache_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcr_explore.cli import main
    from pcr_explore.storage.cache import cache_folder

    recs = _records(3)
    plain = "https://example.org/ds"
    cache = _open(tmp_path, recs, 10**6, url="https://ann:s3cret@example.org/ds")
    _fill(cache, recs, 0)
    cache.close()
    assert cache.folder == cache_folder(tmp_path, plain)
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert b"s3cret" not in p.read_bytes(), p
    # and a source.json that an older version wrote with it is not printed
    old = tmp_path / "0123456789abcdef"
    old.mkdir()
    (old / "source.json").write_text('{"url": "s3://key:s3cret@bucket/ds", "manifest_sha256": "0"}')
    assert [u["url"] for u in cache_usage(tmp_path)] == ["s3://bucket/ds", plain]
    assert main(["cache", "info", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "s3cret" not in text and f"{plain}: 1 record prefix" in text


def test_a_tampered_total_does_not_lift_the_limit(tmp_path: Path) -> None:
    recs = _records(60)
    limit = 1000
    cache = _open(tmp_path, recs, limit)
    _fill(cache, recs, 0)
    # a row that says the cache is a gigabyte smaller than it is, never the oldest
    _tamper(
        tmp_path,
        "INSERT INTO {rows} VALUES (?, 'x.00000000', -1000000000, NULL, ?, 0)",
        "f",
        2**62,
    )
    for r in range(1, 60):
        _fill(cache, recs, r)
    assert sum(_on_disk(tmp_path).values()) <= limit
    assert cache.evicted > 10  # room was made: the row did not lift the limit


def test_a_record_larger_than_the_limit_keeps_only_the_levels_that_fit(tmp_path: Path) -> None:
    recs = _records(4)
    bounds = (recs[0].header_bytes, *recs[0].bytes_per_scan)
    cache = _open(tmp_path / "one", recs, bounds[2] - 1)  # level 1 of record 0 fits, not 2
    _fill(cache, recs, 0)
    assert _on_disk(tmp_path / "one") == {(cache.folder.name, cache.path(0).name): bounds[1]}
    assert cache.path(0).read_bytes() == _content(0, bounds[1])
    _fill(cache, recs, 1)  # room made first: the folder never holds more than the limit
    assert sum(_on_disk(tmp_path / "one").values()) <= bounds[2] - 1
    _check_agrees(cache, tmp_path / "one")
    tiny = _open(tmp_path / "none", recs, bounds[0] - 1)  # not even the header
    _fill(tiny, recs, 0)
    assert _on_disk(tmp_path / "none") == {}
