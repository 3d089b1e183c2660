"""Sharding image ranges across DataLoader workers and ranks; the torch adapter."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _loopback import FileServer, Request
from _pcr_data import digest, random_dataset

from pcr_explore import CorruptRecordError, RemoteReadError
from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.jpeg import decode
from pcr_explore.read.loader import batch_counts
from pcr_explore.read.pipeline import RecordSpan
from pcr_explore.read.reader import open_dataset

# more DataLoader workers than this machine's cores is the point of these tests
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


@pytest.fixture(scope="module")
def two_records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 distinct photos in 2 records."""
    out = random_dataset(tmp_path_factory.mktemp("loader") / "ds", images=24, records=2)
    assert len(open_dataset(str(out)).records) == 2
    return out


def test_torch_dataset_reads_every_image_once(photo_folder: Path, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    encode_dataset(photo_folder, tmp_path / "ds", record_size=20_000, workers=1, progress=False)
    ds = open_dataset(str(tmp_path / "ds"))
    tds = torch_dataset(str(tmp_path / "ds"), scan=2, size=(32, 24), shuffle=True, seed=1)
    loader = DataLoader(tds, batch_size=4, num_workers=2, multiprocessing_context="forkserver")
    labels = []
    for images, lab in loader:
        assert images.dtype == torch.uint8 and images.shape[1:] == (3, 24, 32)
        labels.extend(lab.tolist())
    assert sorted(labels) == sorted(ds.labels.tolist()) and len(labels) == len(ds)
    ref = [decode(b, size=(32, 24), mode="RGB") for _, b, _ in ds.iter_jpeg(scan=2)]
    one = next(iter(torch_dataset(str(tmp_path / "ds"), scan=2, size=(32, 24))))[0]
    np.testing.assert_array_equal(one.permute(1, 2, 0).numpy(), ref[0])


def test_a_span_reads_only_its_images_bytes(two_records: Path) -> None:
    ds, ref = open_dataset(str(two_records)), open_dataset(str(two_records))
    n = ds.records[0].images
    cuts = [0, 4, 9, n]
    spans = [ds.read_span(0, a, b, 3) for a, b in zip(cuts, cuts[1:])]
    assert all(isinstance(s, RecordSpan) for s in spans)
    # the parts of a record read its level-3 prefix once: the header, then 3 ranges each
    assert ds.stats.bytes_read == ds.header(0).prefix_length(3)
    assert ds.stats.requests == 1 + 3 * len(spans)
    for s in spans:
        for j in range(s.start, s.stop):
            assert s.jpeg_bytes(j) == ref.jpeg_bytes(j, 3)
    with pytest.raises(IndexError, match="image 4 is not in this span"):
        spans[0].jpeg_bytes(4)
    assert ds.read_span(1, 0, ds.records[1].images, 2) == ds.read_record(1, 2)  # whole: a prefix
    with pytest.raises(
        IndexError,
        match=r"record-00000.pcr: the image range 3:3 is empty or not within its 13 images",
    ):
        ds.read_span(0, 3, 3, 1)


def test_a_span_checks_the_pieces_it_read(two_records: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(two_records, bad)
    ds = open_dataset(str(bad))
    h = ds.header(0)
    offs, lens = h.piece_ranges(5, 3)
    path = bad / ds.records[0].file
    data = bytearray(path.read_bytes())
    data[offs[1] + lens[1] // 2] ^= 0xFF  # image 5, scan group 2
    path.write_bytes(bytes(data))
    fresh = open_dataset(str(bad))
    with pytest.raises(CorruptRecordError, match=r"image 5 .*scan group 2: piece checksum"):
        fresh.read_span(0, 4, 9, 3)
    assert fresh.read_span(0, 0, 4, 3).jpeg_bytes(3)  # the images around it still read


def test_with_a_cache_the_parts_of_a_record_fetch_its_prefix_once(
    two_records: Path, tmp_path: Path
) -> None:
    first = open_dataset(str(two_records), cache_dir=tmp_path / "c")
    second = open_dataset(str(two_records), cache_dir=tmp_path / "c")
    a = first.read_span(0, 0, 4, 3)
    b = second.read_span(0, 4, 9, 3)
    prefix = first.header(0).prefix_length(3)
    assert first.stats.bytes_read == prefix and second.stats.bytes_read == 0
    assert second.stats.cache_bytes == prefix
    ref = open_dataset(str(two_records))
    assert a.jpeg_bytes(2) == ref.jpeg_bytes(2, 3) and b.jpeg_bytes(7) == ref.jpeg_bytes(7, 3)


def _indices(tds: Any, url: str, scan: int, **loader: Any) -> list[int]:
    """What a DataLoader over *tds* yields, as dataset indices (each image's pixels told apart)."""
    from torch.utils.data import DataLoader

    ds = open_dataset(url)
    ref = {
        decode(ds.jpeg_bytes(i, scan), size=(16, 16), mode="RGB").tobytes(): i
        for i in range(len(ds))
    }
    out = []
    for images, _ in DataLoader(tds, multiprocessing_context="forkserver", **loader):
        out += [ref[x.permute(1, 2, 0).numpy().tobytes()] for x in images]
    return out


def _interleave(seqs: list[list[int]], batch: int) -> list[int]:
    """The order a DataLoader gives: a batch from each worker in turn, skipping those run out."""
    chunks = [[s[i : i + batch] for i in range(0, len(s), batch)] for s in seqs]
    out: list[int] = []
    for k in range(max(len(c) for c in chunks)):
        out += [x for c in chunks if k < len(c) for x in c[k]]
    return out


def test_four_workers_on_two_records_are_all_busy_and_resume_exactly(two_records: Path) -> None:
    from pcr_explore.read.loader import torch_dataset

    url, kw = str(two_records), dict(scan=3, size=(16, 16), shuffle=True, seed=2)
    tds = torch_dataset(url, **kw)  # type: ignore[arg-type]
    tds.set_epoch(1)
    plans = [tds.sequence(1, w, 4) for w in range(4)]
    assert [len(p) for p in plans] == [6, 6, 6, 6]  # 24 images, 2 records: every worker a quarter
    whole = torch_dataset(url, whole_records=True, **kw)  # type: ignore[arg-type]
    assert [len(whole.spans(1, w, 4)) for w in range(4)] == [1, 1, 0, 0]  # two would idle
    full = _indices(tds, url, 3, batch_size=2, num_workers=4)
    assert full == _interleave(plans, 2)  # each worker its own slice, in its planned order
    assert sorted(full) == list(range(24))

    from torch.utils.data import DataLoader

    stopped = torch_dataset(url, **kw)  # type: ignore[arg-type]
    stopped.set_epoch(1)
    seen: list[str] = []
    loader = DataLoader(stopped, batch_size=2, num_workers=4, multiprocessing_context="forkserver")
    for n, (images, _) in enumerate(loader, 1):
        seen += [digest(x) for x in images]
        if n == 5:
            break
    state = json.loads(json.dumps(stopped.state_dict(batches=5, batch_size=2, num_workers=4)))
    assert state["delivered"] == {"0": 4, "1": 2, "2": 2, "3": 2} and state["next"] == 1
    resumed = torch_dataset(url, **kw)  # type: ignore[arg-type]
    resumed.load_state_dict(state)
    rest = _indices(resumed, url, 3, batch_size=2, num_workers=4)
    assert rest == full[10:]  # the same samples in the same order
    other = torch_dataset(url, **kw)  # type: ignore[arg-type]
    other.load_state_dict(state)
    three = _indices(other, url, 3, batch_size=2, num_workers=3)
    assert sorted(three) == sorted(full[10:])  # every sample not yet delivered, once
    # a state of whole-record shards resumes into image ranges
    dealt = dict(state, whole_records=True, delivered={"0": 4, "1": 2}, num_workers=2)
    want = set(whole.sequence(1, 0, 2)[:4] + whole.sequence(1, 1, 2)[:2])
    assert resumed.delivered(dealt) == want


def test_a_resumed_pass_stopped_again_resumes_exactly_again(two_records: Path) -> None:
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    url, kw = str(two_records), dict(scan=3, size=(16, 16), shuffle=True, seed=5)
    tds = torch_dataset(url, **kw)  # type: ignore[arg-type]
    tds.set_epoch(2)
    full = _indices(tds, url, 3, batch_size=2, num_workers=4)

    def stop_after(ds: Any, n: int) -> None:
        loader = DataLoader(ds, batch_size=2, num_workers=4, multiprocessing_context="forkserver")
        for k, _ in enumerate(loader, 1):
            if k == n:
                break

    first = torch_dataset(url, **kw)  # type: ignore[arg-type]
    first.set_epoch(2)
    stop_after(first, 5)
    state = json.loads(json.dumps(first.state_dict(batches=5, batch_size=2, num_workers=4)))
    second = torch_dataset(url, **kw)  # type: ignore[arg-type]
    second.load_state_dict(state)
    second.set_epoch(2)  # a loop that sets the epoch it resumes keeps the resume
    stop_after(second, 3)  # a second stop, in the resumed pass
    again = json.loads(json.dumps(second.state_dict(batches=3, batch_size=2, num_workers=4)))
    assert sum(again["delivered"].values()) == 16
    third = torch_dataset(url, **kw)  # type: ignore[arg-type]
    third.load_state_dict(again)
    assert _indices(third, url, 3, batch_size=2, num_workers=4) == full[16:]
    with pytest.raises(ValueError, match="resumed epoch 2 with another sharding"):
        second.state_dict(batches=1, batch_size=2, num_workers=3)
    second.set_epoch(3)  # the next epoch counts from its start again
    assert sum(second.state_dict(batches=1, batch_size=2, num_workers=4)["delivered"].values()) == 2


def test_batch_counts_follow_the_dataloaders_turns() -> None:
    assert batch_counts([6, 6, 6, 6], 5, 2) == ([4, 2, 2, 2], 1)
    assert batch_counts([1, 6], 4, 2) == ([1, 6], 0)  # the first ran out: the second has the turns
    with pytest.raises(ValueError, match="5 batches is more than this epoch holds"):
        batch_counts([1, 6], 5, 2)


def test_workers_sharing_a_cache_fetch_each_prefix_once(two_records: Path, tmp_path: Path) -> None:
    from pcr_explore.read.loader import torch_dataset

    with FileServer(two_records) as srv:
        tds = torch_dataset(srv.url, scan=4, size=(16, 16), cache_dir=tmp_path / "cache")
        got = _indices(tds, str(two_records), 4, batch_size=3, num_workers=4)
        sent = {}
        for r in srv.gets():
            sent[r.path] = sent.get(r.path, 0) + r.sent
    assert sorted(got) == list(range(24))
    ds = open_dataset(str(two_records))
    want = {"/" + rec.file: ds.header(r).prefix_length(4) for r, rec in enumerate(ds.records)}
    assert sent == want  # four workers, two records: each level-4 prefix crossed the network once


@dataclass
class _TokenServer(FileServer):
    """A file server that answers 403 to any request without its token header."""

    token: str = "let-me-in"

    def _serve(self, h: Any, body: bool) -> None:
        if h.headers.get("X-Token") != self.token:
            self.log.append(Request(h.command, h.path, h.headers.get("Range"), 403))
            h.send_response(403)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        super()._serve(h, body)


@pytest.mark.parametrize("given_as", ["keywords", "dataset"])
def test_workers_carry_the_storage_settings_and_open_the_manifest_once(
    two_records: Path, given_as: str
) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    settings: dict[str, Any] = {
        "storage_options": {"headers": {"X-Token": "let-me-in"}},
        "retries": 1,
        "deadline": 60.0,
        "timeout": 30.0,
        "read_ahead": "64kB",
    }
    with _TokenServer(two_records) as srv:
        with pytest.raises(RemoteReadError, match="HTTP 403"):
            open_dataset(srv.url)  # the server does refuse a request without the header
        srv.log.clear()
        if given_as == "dataset":
            tds = torch_dataset(open_dataset(srv.url, **settings), scan=2, size=(16, 16))
            assert tds.options == open_dataset(srv.url, **settings).options
        else:
            tds = torch_dataset(srv.url, scan=2, size=(16, 16), **settings)
        srv.log.clear()  # this process has opened the dataset
        assert tds.options["retries"] == 1 and tds.options["read_ahead"] == "64kB"
        loader = DataLoader(
            tds,
            batch_size=5,
            num_workers=2,
            persistent_workers=True,
            multiprocessing_context="forkserver",
        )
        for _ in range(3):  # three passes of the same two workers
            assert sum(len(y) for _, y in loader) == 24
        log = list(srv.log)
    assert [r for r in log if r.status == 403] == []
    manifests = [r for r in log if r.method == "GET" and r.path.endswith("manifest.json")]
    assert len(manifests) == 2  # once per worker, not once per pass (this process had it)


def test_torch_dataset_names_the_settings_it_takes(two_records: Path) -> None:
    pytest.importorskip("torch")
    from pcr_explore.read.loader import torch_dataset

    with pytest.raises(TypeError, match=r"unexpected keyword\(s\) \['retry'\].*'retries'"):
        torch_dataset(str(two_records), retry=3)
    with pytest.raises(ValueError, match="cache_max_bytes needs a cache_dir"):
        torch_dataset(str(two_records), cache_max_bytes="1MB")


def test_mix_carries_the_storage_settings_into_its_workers(two_records: Path) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.mix import mix

    with _TokenServer(two_records) as srv:
        m = mix(
            [srv.url, srv.url],
            scans=[1, 3],
            size=(16, 16),
            storage_options={"headers": {"X-Token": "let-me-in"}},
        )
        got = list(DataLoader(m, batch_size=6, num_workers=2, multiprocessing_context="forkserver"))
        log = list(srv.log)
    assert sum(len(y) for _, y, _ in got) == len(m)
    assert [r for r in log if r.status == 403] == []
