"""Where a read's time goes: seconds per stage and level in ReadStats, summed over workers.

Times are never held to an upper bound: a test counts images, batches,
bytes and requests, and holds waiting to a lower bound a server's delay
sets (which holds on any machine, however busy).
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import pytest
from _loopback import FileServer
from _pcr_data import random_dataset

from pcr_explore.read import ReadStats, StageSeconds
from pcr_explore.read.reader import open_dataset

# more DataLoader workers than this machine's cores is allowed here
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")

DELAY = 0.05  # seconds the server waits before answering each record GET


@pytest.fixture(scope="module")
def two_records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 distinct small photos in 2 records."""
    return random_dataset(tmp_path_factory.mktemp("stages") / "ds", images=24, records=2)


def test_each_level_read_has_its_stage_seconds(two_records: Path) -> None:
    ds = open_dataset(str(two_records))
    assert ds.stats.stages == {}
    assert sum(1 for _ in ds.iter(1, size=16)) == 24
    assert sum(1 for _ in ds.iter(3, size=16, workers=2)) == 24
    assert sum(1 for _ in ds.iter_jpeg(5)) == 24
    stages = ds.stats.stages
    assert list(stages) == [1, 3, 5]
    for k in (1, 3):  # decoded, in this thread and in two decoding threads
        assert stages[k].images == 24 and stages[k].batches == 0
        assert stages[k].waiting > 0 and stages[k].decode > 0 and stages[k].decode_cpu > 0
        assert stages[k].batch == 0
    assert stages[5] == StageSeconds(waiting=stages[5].waiting)  # bytes only: nothing decoded
    assert stages[5].waiting > 0


def test_reset_clears_the_seconds_and_a_pass_under_way_counts_on(two_records: Path) -> None:
    ds = open_dataset(str(two_records))
    it = ds.iter(2, size=16)
    for _ in range(10):
        next(it)
    ds.stats.reset()
    assert ds.stats.stages == {} and ds.stats.to_dict()["stages"] == []
    assert sum(1 for _ in it) == 14
    assert ds.stats.stages[2].images == 14  # the images decoded after the reset, and no others


def test_an_image_that_fails_to_decode_is_timed_but_not_counted(two_records: Path) -> None:
    from pcr_explore.read.pipeline import Encoded, OnError, decode

    ds = open_dataset(str(two_records))
    items = [
        Encoded(i, b"\xff\xd8 not a jpeg" if i == 5 else data, label, 1, f"image {i}")
        for i, data, label in ds.iter_jpeg(4)
    ]
    stats, errors = ReadStats(), OnError("skip")
    assert len(list(decode(items, size=16, on_error=errors, clock=stats.clock(4)))) == 23
    assert [where for where, _ in errors.skipped] == ["image 5"]
    assert stats.stages[4].images == 23 and stats.stages[4].decode > 0


def test_prefetch_returns_the_seconds_it_waited(two_records: Path) -> None:
    ds = open_dataset(str(two_records))
    sum(1 for _ in ds.iter(1, size=16))
    got = ds.prefetch(4)
    assert got.bytes_read == ds.bytes_at(4) and got.requests == 2
    assert list(got.stages) == [4] and got.stages[4].waiting > 0 and got.stages[4].images == 0
    assert ds.stats.stages[1].images == 24  # the handle's own counts keep the earlier pass


def test_waiting_is_at_least_the_delay_of_each_answer(two_records: Path) -> None:
    with FileServer(two_records, delay=DELAY, only=".pcr") as srv:
        ds = open_dataset(srv.url, read_ahead=0)  # one read at a time: every answer waited for
        assert sum(1 for _ in ds.iter(3, size=16)) == 24
        gets = srv.gets()
    assert len(gets) == ds.stats.requests == 2
    assert ds.stats.stages[3].waiting >= len(gets) * DELAY


def test_with_read_ahead_the_first_answer_is_still_waited_for(two_records: Path) -> None:
    with FileServer(two_records, delay=DELAY, only=".pcr") as srv:
        ds = open_dataset(srv.url, read_ahead="1MB")
        assert sum(1 for _ in ds.iter(3, size=16)) == 24
        gets = srv.gets()
    assert len(gets) == 2
    # nothing was in flight when the pass began: the first record's whole delay is waited for
    assert ds.stats.stages[3].waiting >= DELAY


def test_batches_made_by_the_adapter_are_timed_and_counted(two_records: Path) -> None:
    pytest.importorskip("torch")
    from pcr_explore.read.loader import torch_dataset

    tds = torch_dataset(str(two_records), scan=2, size=(16, 16), batch_size=5)
    assert [len(y) for _, y in tds] == [5, 5, 5, 5, 4]
    s = tds.stats.stages[2]
    assert (s.images, s.batches) == (24, 5) and s.batch > 0 and s.decode > 0 and s.waiting > 0
    tds.reset_stats()
    assert tds.stats.stages == {} and tds.stats.bytes_read == 0


@pytest.mark.slow
def test_dataloader_workers_stats_are_summed(two_records: Path) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    manifest = (two_records / "manifest.json").stat().st_size
    with FileServer(two_records, delay=DELAY, only=".pcr") as srv:
        # whole records, one at a time: each worker's reads are one GET per record, in turn
        tds = torch_dataset(
            srv.url, scan=3, size=(16, 16), batch_size=4, read_ahead=0, whole_records=True
        )
        loader = DataLoader(
            tds,
            batch_size=None,
            num_workers=2,
            persistent_workers=True,
            multiprocessing_context="forkserver",
        )
        batches = sum(math.ceil(r.images / 4) for r in open_dataset(str(two_records)).records)
        srv.log.clear()
        assert sum(len(y) for _, y in loader) == 24
        gets = srv.gets()
        stats = tds.stats
        # every byte and request the two workers made, as the server saw them
        assert stats.bytes_read == sum(g.sent for g in gets) > 0
        assert stats.requests == len(gets)
        assert stats.metadata_bytes == 3 * manifest  # this process and each worker, once
        s = stats.stages[3]
        assert (s.images, s.batches) == (24, batches)  # a worker's last batch may be short
        assert len(gets) == 2 and s.waiting >= len(gets) * DELAY  # each answer waited for
        assert s.decode > 0 and s.batch > 0
        tds.reset_stats()
        assert tds.stats.stages == {} and tds.stats.requests == 0
        srv.log.clear()
        assert sum(len(y) for _, y in loader) == 24  # the same two workers, counting from zero
        again = tds.stats
        assert again.requests == len(srv.gets()) and again.metadata_bytes == 0
        assert (again.stages[3].images, again.stages[3].batches) == (24, batches)


@pytest.mark.slow
def test_a_mix_sums_each_datasets_stages_over_workers(two_records: Path) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.mix import mix

    m = mix([str(two_records), str(two_records)], scans=[1, 4], size=(16, 16), seed=3)
    got = list(DataLoader(m, batch_size=6, num_workers=2, multiprocessing_context="forkserver"))
    sources = [int(k) for _, _, ks in got for k in ks]
    a, b = m.stats
    assert list(a.stages) == [1] and list(b.stages) == [4]
    # a stream decodes ahead of nothing: every image drawn from a dataset was decoded once
    assert a.stages[1].images == sources.count(0) and b.stages[4].images == sources.count(1)
    m.reset_stats()
    assert all(s.stages == {} for s in m.stats)


def test_stats_add_subtract_pickle_and_print() -> None:
    a, b = ReadStats(bytes_read=10, requests=1), ReadStats(bytes_read=5, cache_bytes=7)
    a.clock(2).waited(0.5)
    a.clock(2).decoded(0.25, 0.125)
    b.clock(2).batched(0.5)
    b.clock(9).decoded(1.0, 1.0, images=2)
    total = a + b
    assert (total.bytes_read, total.requests, total.cache_bytes) == (15, 1, 7)
    assert total.stages == {
        2: StageSeconds(waiting=0.5, decode=0.25, decode_cpu=0.125, batch=0.5, images=1, batches=1),
        9: StageSeconds(decode=1.0, decode_cpu=1.0, images=2),
    }
    assert (total - b).stages == a.stages and (total - b).bytes_read == 10
    copy = pickle.loads(pickle.dumps(total))
    assert copy.stages == total.stages and copy == total
    copy.clock(9).decoded(1.0, 1.0)  # its clocks work (their locks made anew)
    assert copy.stages[9].images == 3
    d = json.loads(json.dumps(total.to_dict()))
    assert d["stages"][0] == {"level": 2, **total.stages[2].to_dict()}
    text = str(total).splitlines()
    assert text[0] == "15 bytes read in 1 requests, 7 from the cache, 0 of metadata"
    assert text[1].split() == ["level", "images", "batches", "waiting", "s", "decode", "s"] + [
        "decode",
        "CPU",
        "s",
        "batch",
        "s",
    ]
    assert text[2].split() == ["2", "1", "1", "0.500", "0.250", "0.125", "0.500"]
    assert "<td>9</td>" in total._repr_html_()
    assert str(ReadStats()) == "0 bytes read in 0 requests, 0 from the cache, 0 of metadata"
    assert math.isclose(sum(s.decode for s in total.stages.values()), 1.25)
