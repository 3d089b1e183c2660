"""The flowers loader: download over a real loopback HTTP server, checksum, cache, split."""

from __future__ import annotations

import errno
import functools
import hashlib
import http.server
import io
import json
import os
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pcr_explore.errors import DatasetError
from pcr_explore.read.reader import PCRDataset, open_dataset
from pcr_explore.train import (
    extract,
    load_flowers,
    prepare_split,
    split_folder,
    write_stand_in_archive,
)
from pcr_explore.train.archive import download, sha256_of
from pcr_explore.train.flowers import FLOWERS_ENV, FLOWERS_SHA256, FLOWERS_URL


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    return write_stand_in_archive(root / "flower_photos.tgz", per_class=6, side=24)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def server(archive: Path) -> Iterator[tuple[str, list[str]]]:
    """Serves the archive's folder on loopback; yields the base URL and the paths asked for."""
    asked: list[str] = []

    class Handler(_Quiet):
        def do_GET(self) -> None:
            asked.append(self.path)
            super().do_GET()

    handler = functools.partial(Handler, directory=str(archive.parent))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_constants_name_the_public_archive() -> None:
    assert FLOWERS_URL.endswith("/example_images/flower_photos.tgz")
    assert len(FLOWERS_SHA256) == 64 and int(FLOWERS_SHA256, 16) >= 0


def test_stand_in_archive_is_reproducible(archive: Path, tmp_path: Path) -> None:
    again = write_stand_in_archive(tmp_path / "again.tgz", per_class=6, side=24)
    assert sha256_of(again) == sha256_of(archive)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "flower_photos/LICENSE.txt" in names
    assert sum(n.endswith(".jpg") for n in names) == 30


def _coarse(ds: PCRDataset, scan: int) -> tuple[np.ndarray, np.ndarray]:
    """Each image at *scan* as an 8x8 grey thumbnail, its contrast normalised; and its label.

    The shape's and the background's colours are random (either may be the
    lighter), so the thumbnail's distance from its mean, not its sign, is kept.
    """
    x = []
    for img, _ in ds.iter(scan, size=(8, 8), mode="L"):
        a = np.asarray(img, np.float64).ravel()
        x.append(np.abs(a - a.mean()) / (a.std() + 1e-9))
    return np.array(x), ds.labels


def test_stand_in_classes_are_told_apart_by_their_coarse_layout(tmp_path: Path) -> None:
    src = write_stand_in_archive(tmp_path / "flower_photos.tgz", per_class=20, side=64)
    data = load_flowers(src, cache_dir=tmp_path, workers=1, progress=False)
    train, val = open_dataset(str(data.train)), open_dataset(str(data.val))
    # scan 1 (one value per 8x8 block) is a small share of the bytes: the fine texture,
    # the same in every class, is most of what the later scans send
    assert train.bytes_at(1) < 0.3 * train.bytes_at(None)
    # the nearest class mean of scan-1 thumbnails names most validation images, as it
    # does at full quality: the classes differ in what block averaging keeps
    x, y = _coarse(train, 1)
    means = np.stack([x[y == c].mean(axis=0) for c in range(len(data.classes))])
    for scan in (1, 10):
        xv, yv = _coarse(val, scan)
        guess = np.argmin(((xv[:, None] - means[None]) ** 2).sum(-1), axis=1)
        assert (guess == yv).mean() >= 0.8, scan


def test_download_checks_sha_and_caches(
    server: tuple[str, list[str]], archive: Path, tmp_path: Path
) -> None:
    base, asked = server
    sha = sha256_of(archive)
    cache = tmp_path / "cache"
    data = load_flowers(
        url=f"{base}/flower_photos.tgz", sha256=sha, cache_dir=cache, workers=1, progress=False
    )
    assert asked == ["/flower_photos.tgz"]
    assert (cache / "flower_photos.tgz").read_bytes() == archive.read_bytes()
    assert data.classes == ("band", "column", "cross", "disc", "frame")
    # round(6 * 0.2) = 1 validation image per class.
    assert (data.train_images, data.val_images) == (25, 5)
    train, val = open_dataset(str(data.train)), open_dataset(str(data.val))
    assert len(train) == 25 and len(val) == 5 and not set(train.names) & set(val.names)
    # A second call finds everything cached: no request, same datasets.
    again = load_flowers(
        url=f"{base}/flower_photos.tgz", sha256=sha, cache_dir=cache, workers=1, progress=False
    )
    assert asked == ["/flower_photos.tgz"] and again == data


def test_wrong_sha_fails_and_leaves_nothing(server: tuple[str, list[str]], tmp_path: Path) -> None:
    base, _ = server
    with pytest.raises(DatasetError, match="SHA-256 .* does not match the expected 0000"):
        download(f"{base}/flower_photos.tgz", tmp_path / "f.tgz", sha256="0" * 64, progress=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(DatasetError, match="download failed"):
        download(f"{base}/missing.tgz", tmp_path / "m.tgz", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_split_is_reproducible_and_stable(archive: Path, tmp_path: Path) -> None:
    src = extract(archive, tmp_path / "unpacked")
    assert src.name == "flower_photos" and (src / "disc").is_dir()

    def listing(out: Path) -> dict[str, list[str]]:
        train, val = split_folder(src, out, val_fraction=0.34)
        return {
            side.name: sorted(p.relative_to(side).as_posix() for p in side.rglob("*.jpg"))
            for side in (train, val)
        }

    a, b = listing(tmp_path / "a"), listing(tmp_path / "b")
    assert a == b and len(a["val"]) == 10 and len(a["train"]) == 20
    # A file's side depends only on its name: removing other files keeps it.
    (src / "disc" / "disc_0000.jpg").unlink()
    c = listing(tmp_path / "c")
    keep = [n for n in a["val"] if n != "disc/disc_0000.jpg"]
    assert set(keep) <= set(c["val"])
    other_seed = split_folder(src, tmp_path / "d", val_fraction=0.34, seed=1)[1]
    assert sorted(p.name for p in other_seed.rglob("*.jpg")) != [Path(n).name for n in c["val"]]


def test_local_copy_from_env_and_split_folder(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = extract(archive, tmp_path / "unpacked")
    monkeypatch.setenv(FLOWERS_ENV, str(src))
    data = load_flowers(cache_dir=tmp_path / "cache", workers=1, progress=False, per_class=4)
    assert (data.train_images, data.val_images) == (15, 5)
    # A folder already split into train/ and val/ keeps its split.
    monkeypatch.delenv(FLOWERS_ENV)
    presplit = load_flowers(data.images, cache_dir=tmp_path / "cache2", workers=1, progress=False)
    assert (presplit.train_images, presplit.val_images) == (15, 5)
    with pytest.raises(DatasetError, match="no such folder or archive"):
        load_flowers(tmp_path / "nowhere", cache_dir=tmp_path / "cache3", progress=False)


def test_unsafe_archive_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tgz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(DatasetError, match="refusing unsafe member '../escape.txt'"):
        extract(bad, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out").exists()
    assert hashlib.sha256(b"hi").hexdigest() != sha256_of(bad)


def test_without_a_network_a_stand_in_is_built_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PCR_FLOWERS_DIR", raising=False)
    nowhere = "http://127.0.0.1:9/flower_photos.tgz"  # the discard port: refused at once
    with pytest.raises(DatasetError, match="download failed"):
        load_flowers(cache_dir=tmp_path, url=nowhere, progress=False)
    data = load_flowers(
        cache_dir=tmp_path, url=nowhere, offline="stand-in", workers=1, progress=False
    )
    assert data.classes == ("band", "column", "cross", "disc", "frame")
    assert data.train_images + data.val_images == 500
    assert "could not be downloaded" in data.note and "make flowers" in data.note
    assert "not photographs" in str(data)
    # the reason in plain words, whole: not urlopen's own text, not cut mid-word
    assert "(no network: connection refused)" in data.note
    assert "urlopen" not in data.note and "Errno" not in data.note
    page = data._repr_html_()
    assert page.count("could not be downloaded") == 1 and "<b>Note:</b>" in page
    assert load_flowers(cache_dir=tmp_path / "x", path=data.images).note == ""


def test_the_split_stamp_is_written_atomically(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = extract(archive, tmp_path / "unpacked")
    out = tmp_path / "split"
    replace = os.replace

    def full_disk(a: str, b: str) -> None:  # the stamp's rename fails, as on a full disk
        if Path(b).name == "split.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(a, b)

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="split.json"):
        prepare_split(src, out, val_fraction=0.34, workers=1, progress=False)
    assert not [p for p in out.iterdir() if "split.json" in p.name]  # no stamp, no temporary
    monkeypatch.setattr(os, "replace", replace)
    # a torn stamp (an earlier version wrote it in place) means: split again, not a crash
    (out / "split.json").write_text('{"version": ')
    data = prepare_split(src, out, val_fraction=0.34, workers=1, progress=False)
    assert (data.train_images, data.val_images) == (20, 10)
    assert json.loads((out / "split.json").read_text())["val_fraction"] == 0.34
