"""The results cache: hits without recomputing, misses on changed data or settings, corruption."""

from __future__ import annotations

import functools
import os
import pickle
import subprocess
import sys
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


def _defined(source: str) -> Any:
    """``measure`` as a notebook cell running *source* defines it (same name, same module)."""
    namespace: dict[str, Any] = {"__name__": "notebook", "offset": 1, "scale": 100}
    exec(source, namespace)
    return namespace["measure"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("def measure(x):\n    return x + 1\n", "def measure(x):\n    return x * 100\n"),
        ("def measure(x):\n    return x + 1\n", "def measure(x):\n    return x + 2\n"),
        ("def measure(x):\n    return x + offset\n", "def measure(x):\n    return x + scale\n"),
        ("def measure(x, k=1):\n    return x + k\n", "def measure(x, k=2):\n    return x + k\n"),
        (
            "def measure(x, *, k=1):\n    return x + k\n",
            "def measure(x, *, k=5):\n    return x + k\n",
        ),
        (  # a change inside a nested function: a constant of a constant
            "def measure(x):\n    return (lambda: x + 1)()\n",
            "def measure(x):\n    return (lambda: x + 3)()\n",
        ),
    ],
    ids=["operation", "constant", "global name", "default", "keyword default", "nested code"],
)
def test_a_redefined_function_is_computed_again(tmp_path: Path, before: str, after: str) -> None:
    cache = ResultsCache(tmp_path)
    old, new = _defined(before), _defined(after)
    assert (old.__module__, old.__qualname__) == (new.__module__, new.__qualname__)
    assert cache.call(old, 2) == old(2)
    assert cache.call(new, 2) == new(2) != old(2)
    assert cache.call(_defined(before), 2) == old(2)  # the same text again: a hit
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)


def test_a_blank_line_above_a_function_keeps_its_key(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path)
    source = "def measure(x):\n    return {x} <= {'a', 'b', 'c'}\n"
    key = cache.key(_defined(source), "a")
    assert cache.key(_defined("\n\n" + source), "a") == key
    assert cache.key(_defined(source.replace("'c'", "'d'")), "a") != key
    # another kernel, where sets iterate in another order: the same key
    script = (
        "import sys; from pcr_explore.storage import ResultsCache; ns = {'__name__': 'notebook'}; "
        "exec(sys.argv[1], ns); print(ResultsCache(sys.argv[2]).key(ns['measure'], 'a'))"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script, source, str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == key


class Box:
    """Bytes with a method to read them (module level: it pickles)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def bytes_at(self, i: int) -> int:
        return self.data[i]


def _make(n: int) -> Any:
    def add(x: int) -> int:
        return x + n

    return add


def _scale(x: int, k: int = 1) -> int:
    return x * k


def test_bound_methods_closures_lambdas_and_partials_are_keyed_by_what_they_compute(
    tmp_path: Path,
) -> None:
    cache = ResultsCache(tmp_path)
    a, b = Box(b"a" * 16), Box(b"b" * 16)
    assert (cache.call(a.bytes_at, 10), cache.call(b.bytes_at, 10)) == (ord("a"), ord("b"))
    assert cache.call(Box(b"a" * 16).bytes_at, 10) == ord("a")  # another object, same bytes
    assert (cache.call(_make(2), 1), cache.call(_make(3), 1), cache.call(_make(2), 1)) == (3, 4, 3)
    assert cache.call(lambda x: x + 1, 3) == 4
    assert cache.call(lambda x: x * 7, 3) == 21
    half, third = functools.partial(_scale, k=2), functools.partial(_scale, k=3)
    assert (cache.call(half, 5), cache.call(third, 5)) == (10, 15)
    assert cache.call(functools.partial(_scale, 5), 4) == 20  # by args too
    assert cache.call(functools.partial(_scale, k=2), 5) == 10  # a new partial: a hit
    assert (cache.hits, cache.misses) == (3, 9)
    # and as arguments: a lambda passed to a function is its code too
    assert content_identity(lambda x: x + 1) != content_identity(lambda x: x + 2)


def _factorial() -> Any:
    def fact(n: int) -> int:
        return 1 if n < 2 else n * fact(n - 1)

    return fact


def _holding(thing: Any) -> Any:
    def use(x: int) -> Any:
        return (thing, x)

    return use


def test_a_closure_that_calls_itself_or_holds_what_cannot_be_identified(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path)
    assert cache.call(_factorial(), 5) == 120
    assert cache.call(_factorial(), 5) == 120 and cache.hits == 1
    with pytest.raises(TypeError, match="thing in _holding.<locals>.use.*does not pickle"):
        cache.call(_holding(_Unpicklable()), 1)


def test_clear_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    mine = outside / ("b" * 64 + ".pickle")  # named like an entry, but not the cache's
    mine.write_bytes(b"someone else's")
    cache = ResultsCache(tmp_path / "results")
    cache.call(_scale, 3, k=2)
    (entry,) = (tmp_path / "results").glob("*/*.pickle")
    (tmp_path / "results" / "linked").symlink_to(outside, target_is_directory=True)
    (entry.parent / ("c" * 64 + ".pickle")).symlink_to(mine)
    (entry.parent / "notes.pickle").write_bytes(b"not an entry: not a key's name")
    assert len(cache) == 1
    assert cache.clear() == 1
    assert mine.read_bytes() == b"someone else's"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "outside",
        f"outside/{mine.name}",
        "results",
        "results/_scale",
        f"results/_scale/{'c' * 64}.pickle",
        "results/_scale/notes.pickle",
        "results/linked",
    ]
    assert (len(cache), cache.clear()) == (0, 0)
