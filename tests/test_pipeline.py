"""The staged read pipeline: each stage alone, and on_error through the reader and a folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from pcr_explore import CorruptRecordError, SkippedWarning, open_dataset, open_source
from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.errors import JPEGError
from pcr_explore.read import pipeline
from pcr_explore.read.pipeline import Encoded, OnError


@pytest.fixture(scope="module")
def dataset_dir(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pipe") / "ds"
    encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    return out


@pytest.fixture
def one_bad_record(dataset_dir: Path, tmp_path: Path) -> Path:
    """A copy whose first record has a flipped bit in scan group 2."""
    bad = tmp_path / "bad"
    shutil.copytree(dataset_dir, bad)
    ds = open_dataset(str(bad))
    rec = bad / ds.records[0].file
    buf = bytearray(rec.read_bytes())
    buf[int(ds.header(0).group_offsets[1]) + 3] ^= 0x40
    rec.write_bytes(bytes(buf))
    return bad


def test_record_order_and_shards_cover_every_record_once() -> None:
    order = pipeline.record_order(10, np.random.default_rng(3))
    assert sorted(order) == list(range(10)) and order != list(range(10))
    shards = [pipeline.shard(order, i, 3) for i in range(3)]
    assert sorted(r for s in shards for r in s) == list(range(10))
    with pytest.raises(ValueError, match="shard 3 out of range for 3 shards"):
        pipeline.shard(order, 3, 3)


def test_fetch_holds_one_record_and_split_gives_each_image(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    released: list[int] = []
    got = []
    for r, prefix in pipeline.fetch(
        lambda r: ds.read_record(r, 3),
        [1, 0],
        on_error=OnError(),
        where=str,
        release=lambda: released.append(len(got)),
    ):
        assert len(released) == len(got)  # the record before was let go first
        start = int(ds._starts[r])
        items = list(pipeline.split(prefix, first_index=start, where=lambda i: f"img {i}"))
        assert [e.index for e in items] == list(range(start, start + prefix.header.num_images))
        assert all(e.data == ds.jpeg_bytes(e.index, 3) for e in items)
        assert items[0].where == f"img {start}"
        got.append(r)
    assert got == [1, 0] and released == [1, 2]


def test_decode_keeps_order_in_threads_and_batches_stack(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    labels = [int(v) for v in ds.labels]
    items = [Encoded(i, ds.jpeg_bytes(i, 4), labels[i], 1, f"img {i}") for i in range(len(ds))]
    one = list(pipeline.decode(items, size=(32, 24), workers=1))
    two = list(pipeline.decode(items, size=(32, 24), workers=2, mode="RGB"))
    assert [label for _, label in one] == labels
    assert all(a.shape[:2] == (24, 32) for a, _ in one)
    batches = list(pipeline.batch(two, 3))
    assert [len(y) for _, y in batches] == [3, 3, 1]
    assert batches[0][0].shape == (3, 24, 32, 3)
    np.testing.assert_array_equal(batches[1][0][0], two[3][0])
    assert [len(y) for _, y in pipeline.batch(two, 3, drop_last=True)] == [3, 3]
    with pytest.raises(ValueError, match="cannot share a batch"):
        list(pipeline.batch([(np.zeros((2, 2)), 0), (np.zeros((3, 2)), 1)], 2))


def test_on_error_raise_skip_or_call(one_bad_record: Path) -> None:
    ds = open_dataset(str(one_bad_record))
    first = ds.header(0).num_images
    with pytest.raises(CorruptRecordError, match="scan group 2"):
        list(ds.iter(scan=3))
    with pytest.warns(SkippedWarning, match="1 unreadable item"):
        kept = list(ds.iter(scan=3, on_error="skip"))
    assert len(kept) == len(ds) - first  # the whole bad record, and nothing else
    assert len(list(ds.iter(scan=1, on_error="skip"))) == len(ds)  # group 1 is intact
    seen: list[str] = []
    errors = OnError(lambda where, exc: seen.append(where))
    assert len(list(ds.iter(scan=3, on_error=errors))) == len(ds) - first
    assert seen == [f"{ds.url} record 0"] and len(errors.skipped) == 1
    with pytest.raises(ValueError, match="on_error must be"):
        list(ds.iter(on_error="ignore"))  # type: ignore[arg-type]


def test_a_folder_skips_an_image_that_cannot_be_read(photo_copy: Path) -> None:
    (photo_copy / "things" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    src = open_source(photo_copy)
    with pytest.raises(Exception, match="broken.jpg"):
        list(src.iter(scan=2, size=16))
    with pytest.warns(SkippedWarning, match="broken.jpg"):
        kept = list(src.iter(scan=2, size=16, on_error="skip"))
    assert len(kept) == len(src) - 1


def test_a_decode_error_is_handled_per_image() -> None:
    good = Encoded(0, b"", 0, 1, "good")  # replaced below by a real JPEG
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 16), "red").save(buf, "JPEG")
    good = Encoded(0, buf.getvalue(), 3, 1, "good")
    bad = Encoded(1, b"\xff\xd8\xff\xc0 truncated", 4, 1, "bad one")
    errors = OnError("skip")
    out = list(pipeline.decode([good, bad, good], on_error=errors))
    assert [label for _, label in out] == [3, 3]
    assert [w for w, _ in errors.skipped] == ["bad one"]
    with pytest.raises(JPEGError, match="bad one"):
        list(pipeline.decode([bad]))


@pytest.mark.parametrize("counts", [[13, 11], [5], [3, 0, 9, 1, 7], [2, 2, 2, 2, 2, 2, 2]])
@pytest.mark.parametrize("shards", [1, 3, 4, 9])
def test_image_shards_are_equal_slices_that_cover_every_image_once(
    counts: list[int], shards: int
) -> None:
    order = pipeline.record_order(len(counts), np.random.default_rng(1))
    plans = [pipeline.image_shard(counts, order, s, shards) for s in range(shards)]
    sizes = [sum(b - a for _, a, b in plan) for plan in plans]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == sum(counts)
    taken = [(r, j) for plan in plans for r, a, b in plan for j in range(a, b)]
    assert sorted(taken) == [(r, j) for r in range(len(counts)) for j in range(counts[r])]
    flat = [r for plan in plans for r, _, _ in plan]
    assert [r for r in dict.fromkeys(flat)] == [r for r in order if counts[r]]  # in record order
    with pytest.raises(ValueError, match="shard 9 out of range for 9 shards"):
        pipeline.image_shard(counts, order, 9, 9)
