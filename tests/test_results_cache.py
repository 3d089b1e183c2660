"""The results cache: hits without recomputing, misses on changed data or settings, corruption."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pcr_data import random_dataset

from pcr_explore import open_dataset, quality_curve
from pcr_explore.budgeting.decode import measure_decode
from pcr_explore.storage import ResultsCache, _atomic, content_identity
from pcr_explore.storage.results import ENV_VAR, default_results_dir

CALLS: list[tuple[Any, dict[str, Any]]] = []


def counted_curve(source: Any, **settings: Any) -> Any:
    """quality_curve, counting its calls (module level: the cache keys it by name)."""
    CALLS.append((source, settings))
    return quality_curve(source, **settings)


@pytest.fixture(autouse=True)
def _no_calls() -> None:
    CALLS.clear()


@pytest.fixture
def folder(photo_folder: Path, tmp_path: Path) -> Path:
    """A private copy of the photos, to rewrite."""
    out = tmp_path / "photos"
    for p in photo_folder.rglob("*.jpg"):
        (out / p.parent.name).mkdir(parents=True, exist_ok=True)
        (out / p.parent.name / p.name).write_bytes(p.read_bytes())
    return out


def _curve(cache: ResultsCache, source: Any, sample: int = 3) -> Any:
    return cache.call(counted_curve, source, sample=sample, workers=1, progress=False)


def test_a_hit_returns_the_same_curve_without_measuring(folder: Path, tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path / "results")
    first = _curve(cache, folder)
    again = ResultsCache(tmp_path / "results")  # a new kernel: only the disk is shared
    second = _curve(again, folder)
    assert len(CALLS) == 1
    assert (cache.misses, again.hits, again.misses) == (1, 1, 0)
    assert pickle.dumps(second) == pickle.dumps(first)
    np.testing.assert_array_equal(second.p5, first.p5)
    assert len(again) == 1


def test_a_rewritten_file_or_a_changed_setting_misses(folder: Path, tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path / "results")
    _curve(cache, folder)
    _curve(cache, folder, sample=4)  # another setting
    assert len(CALLS) == 2
    _curve(cache, folder, sample=3)  # a hit again
    assert len(CALLS) == 2
    photo = next(folder.rglob("*.jpg"))
    data = photo.read_bytes()
    photo.write_bytes(data[:-2] + b"\x00\xff\xd9")  # same size, other bytes
    st = photo.stat()
    os.utime(photo, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    _curve(cache, folder)
    assert len(CALLS) == 3
    (folder / "animals" / "new.jpg").write_bytes(data)  # a file added
    _curve(cache, folder)
    assert len(CALLS) == 4


def test_progress_is_not_part_of_the_key(folder: Path, tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path)
    cache.call(counted_curve, folder, sample=3, workers=1, progress=False)
    cache.call(counted_curve, folder, sample=3, workers=1, progress=True)
    assert len(CALLS) == 1
    cache.call(counted_curve, folder, sample=3, workers=2, progress=False, ignore=("workers",))
    cache.call(counted_curve, folder, sample=3, workers=1, progress=True, ignore=("workers",))
    assert len(CALLS) == 2  # workers ignored: one more entry, then a hit


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "not-a-pickle"])
def test_a_corrupt_entry_is_measured_again(folder: Path, tmp_path: Path, damage: str) -> None:
    cache = ResultsCache(tmp_path / "results")
    first = _curve(cache, folder)
    (entry,) = (tmp_path / "results").rglob("*.pickle")
    data = entry.read_bytes()
    if damage == "flip":
        data = data[:-10] + bytes([data[-10] ^ 1]) + data[-9:]
    elif damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    else:  # a whole entry whose checksum holds but whose payload does not unpickle
        import hashlib

        from pcr_explore.storage.results import _MAGIC

        payload = b"\x80\x05not a pickle"
        data = _MAGIC + hashlib.sha256(payload).digest() + payload
    entry.write_bytes(data)
    second = _curve(cache, folder)
    assert len(CALLS) == 2 and cache.misses == 2 and cache.hits == 0
    assert pickle.dumps(second) == pickle.dumps(first)
    _curve(cache, folder)  # the entry was replaced by a whole one
    assert len(CALLS) == 2 and cache.hits == 1


def test_a_failed_write_leaves_no_entry_and_no_temporary_file(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ResultsCache(tmp_path / "results")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_atomic.os, "fsync", full_disk)
    with pytest.raises(OSError, match="cannot write"):
        _curve(cache, folder)
    assert [p.name for p in (tmp_path / "results").rglob("*") if p.is_file()] == []
    monkeypatch.undo()
    _curve(cache, folder)
    files = [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
    assert [p.suffix for p in files] == [".pickle"]
    assert len(CALLS) == 2


def test_a_pcr_dataset_is_keyed_by_its_manifest(tmp_path: Path) -> None:
    url = random_dataset(tmp_path / "ds", images=6, records=2)
    cache = ResultsCache(tmp_path / "results")
    key = cache.key(measure_decode, open_dataset(str(url)), sample=2, repeats=1)
    assert cache.key(measure_decode, open_dataset(str(url)), sample=2, repeats=1) == key
    assert cache.key(measure_decode, open_dataset(str(url)), sample=3, repeats=1) != key
    machine = cache.key(measure_decode, open_dataset(str(url)), sample=2, per_machine=True)
    assert machine != cache.key(measure_decode, open_dataset(str(url)), sample=2)
    other = random_dataset(tmp_path / "ds2", images=6, records=2, seed=1)
    assert cache.key(measure_decode, open_dataset(str(other)), sample=2, repeats=1) != key
    cost = cache.call(measure_decode, open_dataset(str(url)), sample=2, repeats=1)
    again = cache.call(measure_decode, open_dataset(str(url)), sample=2, repeats=1)
    assert cache.hits == 1 and pickle.dumps(again) == pickle.dumps(cost)


def test_identity_of_values() -> None:
    a = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert content_identity(a) == content_identity(a.copy())
    assert content_identity(a) != content_identity(a.astype(np.int16))
    b = a.copy()
    b[1, 1] = 0
    assert content_identity(a) != content_identity(b)
    assert content_identity({"x": 1, "y": (2, 3)}) == content_identity({"y": (2, 3), "x": 1})
    assert content_identity([1, 2]) != content_identity((1, 2))
    with pytest.raises(TypeError, match="does not pickle"):
        content_identity(lambda_holder())


class _Unpicklable:
    def __reduce__(self) -> Any:
        raise pickle.PicklingError("no")


def lambda_holder() -> Any:
    return [_Unpicklable()]


def test_location_disabled_and_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: Path
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "from-env"))
    assert default_results_dir() == tmp_path / "from-env"
    cache = ResultsCache()
    assert cache.path == tmp_path / "from-env"
    off = ResultsCache(enabled=False)
    _curve(off, folder)
    assert not (tmp_path / "from-env").exists() and len(CALLS) == 1
    _curve(cache, folder)
    _curve(cache, folder, sample=4)
    assert len(cache) == 2 and cache.clear() == 2 and len(cache) == 0
    _curve(cache, folder)
    assert len(CALLS) == 4
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_results_dir() == tmp_path / "xdg" / "pcr-explore" / "results"


def test_a_model_and_its_batches_are_keyed_by_weights_and_pixels(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from pcr_explore.swap import LabelledImages, build_net
    from pcr_explore.swap.training.codec_training import ImageBatches

    def net() -> Any:
        torch.manual_seed(0)
        return build_net("small-cnn", num_classes=2)

    # the same weights built twice: one key (torch's own pickle differs each time)
    assert content_identity(net()) == content_identity(net())
    changed = net()
    with torch.no_grad():
        next(changed.parameters()).view(-1)[0] += 1.0
    assert content_identity(changed) != content_identity(net())
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (8, 3, 16, 16), dtype=np.uint8)
    y = np.arange(8, dtype=np.int64) % 2
    images = LabelledImages(x, y, x[:2], y[:2], ("a", "b"), "generated")
    batches = ImageBatches(images, 4, seed=1)
    assert content_identity(batches) == content_identity(ImageBatches(images, 4, seed=1))
    assert content_identity(batches) != content_identity(ImageBatches(images, 4, seed=2))
    next(iter(batches))  # the order moved on: so does the key
    assert content_identity(batches) != content_identity(ImageBatches(images, 4, seed=1))
    copy = pickle.loads(pickle.dumps(batches))  # and a copy goes on where it stood
    for (xa, ya), (xb, yb) in zip(batches, copy):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_a_folder_source_is_keyed_by_its_files_and_transcoding(folder: Path) -> None:
    from pcr_explore import FolderSource

    same = content_identity(FolderSource(folder))
    assert content_identity(FolderSource(folder)) == same
    assert content_identity(FolderSource(folder, quality=80)) != same
    assert content_identity(FolderSource(folder, scan_script="spectral")) != same
    next(folder.rglob("*.jpg")).unlink()
    assert content_identity(FolderSource(folder)) != same


def _returns_a_lambda(n: int) -> Any:
    return lambda: n


def test_clear_deletes_entries_only_and_an_unpicklable_result_is_an_error(
    folder: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    (shared / "notes").mkdir(parents=True)
    (shared / "notes" / "keep.txt").write_text("mine")
    (shared / "keep.pickle").write_bytes(b"not the cache's")
    cache = ResultsCache(shared)
    _curve(cache, folder)
    (entry,) = shared.glob("*/*.pickle")
    (entry.parent / f".{entry.name}.abc.tmp").write_bytes(b"torn")  # an unfinished write
    assert cache.clear() == 1
    assert sorted(p.relative_to(shared).as_posix() for p in shared.rglob("*")) == [
        "keep.pickle",
        "notes",
        "notes/keep.txt",
    ]
    with pytest.raises(TypeError, match="_returns_a_lambda.*does not pickle"):
        cache.call(_returns_a_lambda, 3)
