"""The typed package: py.typed ships, and a store is anything with the five verbs of `Store`."""

from __future__ import annotations

import importlib.resources
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
from _pcr_data import random_dataset

import pcr_explore
from pcr_explore import open_dataset
from pcr_explore.read._fetch import FsspecStore, load_manifest, open_store
from pcr_explore.read.reader import PCRDataset
from pcr_explore.storage import Store
from pcr_explore.storage.remote import HTTPStore, RetryPolicy

ROOT = Path(pcr_explore.__file__).parent.parent


class DictStore:
    """A user's own store: every file's bytes in a dict, no base class."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[tuple[str, int | None, int | None]] = []

    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        self.asked.append((path, start, end))
        try:
            return self.files[path][start:end]
        except KeyError:
            raise FileNotFoundError(path) from None

    def info(self, path: str) -> Mapping[str, Any]:
        if path not in self.files:
            raise FileNotFoundError(path)
        return {"type": "file", "size": len(self.files[path])}

    def isfile(self, path: str) -> bool:
        return path in self.files

    def exists(self, path: str) -> bool:
        return path in self.files or any(p.startswith(path + "/") for p in self.files)

    def ls(self, path: str, detail: bool = False) -> Sequence[str]:
        return sorted(p for p in self.files if p.rpartition("/")[0] == path)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return random_dataset(tmp_path_factory.mktemp("store") / "ds", images=6, records=2)


def _in_memory(folder: Path) -> DictStore:
    return DictStore({f"mem/ds/{p.name}": p.read_bytes() for p in folder.iterdir()})


def _open_through(store: Store, path: str) -> PCRDataset:
    """What ``open_dataset(path, store=store)`` does (the reader's change, not made yet)."""
    fs, root = open_store(path, None, RetryPolicy(), store=store)
    manifest, _ = load_manifest(fs, root, path)
    return PCRDataset(fs, root, manifest, path)


def test_py_typed_ships_with_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    assert (importlib.resources.files("pcr_explore") / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["pcr_explore"]


def test_the_local_http_and_fsspec_stores_are_stores(local: Path) -> None:
    policy = RetryPolicy()
    fs, root = open_store(str(local), None, policy)
    assert isinstance(fs, Store) and root == str(local)
    assert isinstance(HTTPStore(policy), Store)
    memory = FsspecStore(fsspec.filesystem("memory"), policy)
    assert isinstance(memory, Store)
    assert not isinstance({}, Store)


def test_a_dict_store_reads_the_pixels_a_local_read_gives(local: Path) -> None:
    store = _in_memory(local)
    ds, plain = _open_through(store, "mem/ds/"), open_dataset(str(local))
    assert len(ds) == len(plain) == 6
    for scan in (1, 3, None):
        for i in range(len(ds)):
            np.testing.assert_array_equal(ds.image(i, scan), plain.image(i, scan))
    assert ds.bytes_at(1) < ds.bytes_at(None)
    assert ds.folder_files() == sorted(p.name for p in local.iterdir())
    # every byte came through the store: the manifest first, then prefixes of every record
    assert store.asked[0] == (
        "mem/ds/manifest.json",
        0,
        pcr_explore.read._fetch.MAX_MANIFEST_BYTES + 1,
    )
    assert {path for path, *_ in store.asked} == set(store.files)
    assert any(0 < (end or 0) < len(store.files[path]) for path, _, end in store.asked[1:])
    assert ds.stats.bytes_read == sum(len(store.files[p][a:b]) for p, a, b in store.asked[1:])


def test_a_dict_store_names_a_missing_dataset_and_a_truncated_record(local: Path) -> None:
    store = _in_memory(local)
    with pytest.raises(FileNotFoundError, match="mem/nothing: no such file or folder"):
        _open_through(store, "mem/nothing")
    record = next(p for p in store.files if p.endswith(".pcr"))
    store.files[record] = store.files[record][:-1]
    ds = _open_through(store, "mem/ds")
    with pytest.raises(pcr_explore.CorruptRecordError, match="truncated"):
        ds.read_record(next(r for r, e in enumerate(ds.records) if record.endswith(e.file)))


def test_a_store_without_every_verb_is_refused_by_name() -> None:
    class Half:
        def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
            return b""

    with pytest.raises(TypeError, match="Half lacks info, isfile, exists, ls"):
        open_store("ds", None, RetryPolicy(), store=Half())
    with pytest.raises(ValueError, match="used as it is"):
        open_store("ds", {"key": "k"}, RetryPolicy(), store=DictStore({}))


def test_open_dataset_takes_a_store(local: Path) -> None:
    ds = open_dataset("mem/ds", store=_in_memory(local))
    np.testing.assert_array_equal(ds.image(0, 2), open_dataset(str(local)).image(0, 2))


MYPY_SNIPPET = """
from collections.abc import Mapping, Sequence
from typing import Any

from pcr_explore.storage import Store


class DictStore:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        return self.files[path][start:end]

    def info(self, path: str) -> Mapping[str, Any]:
        return {"type": "file", "size": len(self.files[path])}

    def isfile(self, path: str) -> bool:
        return path in self.files

    def exists(self, path: str) -> bool:
        return path in self.files

    def ls(self, path: str, detail: bool = False) -> Sequence[str]:
        return sorted(self.files)


class NoListing:
    def cat_file(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        return b""

    def info(self, path: str) -> dict[str, Any]:
        return {}


good: Store = DictStore({})
bad: Store = NoListing()
"""


def test_mypy_takes_a_users_store_and_refuses_one_without_ls(tmp_path: Path) -> None:
    snippet = tmp_path / "user_store.py"
    code = textwrap.dedent(MYPY_SNIPPET)
    snippet.write_text(code, "utf-8")
    bad = code.splitlines().index("bad: Store = NoListing()") + 1
    # the protocol's modules only: the rest of the package is skipped (a run of seconds)
    package = ROOT / "pcr_explore"
    checked = [package / "storage" / "__init__.pyi", package / "storage" / "_store.py"]
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file=", "--strict", "--no-incremental"]
        + ["--follow-imports=skip", "--ignore-missing-imports", str(snippet)]
        + [str(p) for p in (*checked, package / "_public.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, out.stdout
    assert f"user_store.py:{bad}: error: Incompatible types in assignment" in errors[0]
    assert '"NoListing", variable has type "Store"' in errors[0]
