"""Export at one level: WebDataset shards read back by webdataset itself, and folders."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
from _pcr_data import random_dataset
from _photos import photo
from PIL import Image, ImageOps

from pcr_explore import PCRDataset, encode_dataset, export_dataset, open_dataset
from pcr_explore.errors import DatasetError
from pcr_explore.read.export import _folder_names, _keys

wds = pytest.importorskip("webdataset")


@pytest.fixture(scope="module")
def dataset(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The photo folder plus one image whose EXIF rotation is not block-aligned, encoded."""
    src = tmp_path_factory.mktemp("src")
    for p in photo_folder.rglob("*.jpg"):
        (src / p.parent.name).mkdir(exist_ok=True)
        (src / p.parent.name / p.name).write_bytes(p.read_bytes())
    im = Image.fromarray(photo("chelsea", 100)[:75, :100])  # 100 x 75: not 8- or 16-aligned
    exif = Image.Exif()
    exif[0x0112] = 6
    im.save(src / "animals" / "turned.jpg", quality=90, exif=exif.tobytes())
    out = tmp_path_factory.mktemp("ds") / "ds"
    encode_dataset(src, out, record_size=30_000, workers=1, progress=False)
    return out


def _upright(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(ImageOps.exif_transpose(im))


# webdataset leaves its shard files to the garbage collector
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_webdataset_reads_the_shards_back(dataset: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(dataset))
    turned = ds.names.index("animals/turned.jpg")
    assert ds.orientation(turned) == 6
    out = tmp_path / "wds"
    summary = export_dataset(ds, out, scan=3, shard_bytes=20_000, progress=False)
    index = json.loads((out / "export.json").read_text())
    assert summary.images == len(ds) and summary.files == len(index["files"]) > 1
    pattern = f"{out}/shard-{{000000..{len(index['files']) - 1:06d}}}.tar"
    samples = list(wds.WebDataset(pattern, shardshuffle=False, empty_check=False))
    assert len(samples) == len(ds)
    for s in samples:
        meta = json.loads(s["json"])
        i = ds.names.index(meta["name"])
        assert meta["scan"] == 3 and meta["class"] == ds.classes[int(s["cls"])]
        assert int(s["cls"]) == ds.labels[i]
        if i != turned:  # the level's JPEG exactly as the reader assembles it
            assert s["jpg"] == ds.jpeg_bytes(i, 3)
        np.testing.assert_array_equal(_upright(s["jpg"]), ds.image(i, scan=3))
    # the same images give the same bytes on every run
    again = export_dataset(ds, tmp_path / "again", scan=3, shard_bytes=20_000, progress=False)
    assert again.bytes == summary.bytes
    assert (out / "shard-000000.tar").read_bytes() == (
        tmp_path / "again" / "shard-000000.tar"
    ).read_bytes()


def test_a_folder_export_keeps_the_class_folders(dataset: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(dataset))
    summary = export_dataset(ds, tmp_path / "f", scan=2, to="folder", progress=False)
    assert summary.files == len(ds)
    for i, name in enumerate(ds.names):
        path = tmp_path / "f" / (name.rsplit(".", 1)[0] + ".jpg")
        np.testing.assert_array_equal(_upright(path.read_bytes()), ds.image(i, scan=2))
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == [
        "animals",
        "export.json",
        "things",
    ]


def test_bad_options_and_busy_folders_are_refused_before_writing(
    dataset: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"outside 1\.\.10"):
        export_dataset(dataset, tmp_path / "x", scan=11, progress=False)
    with pytest.raises(ValueError, match="to must be 'webdataset' or 'folder'"):
        export_dataset(dataset, tmp_path / "x", scan=1, to="parquet", progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep")
    with pytest.raises(
        DatasetError, match=r"already holds files; .*overwrite=True \(--overwrite\)"
    ):
        export_dataset(dataset, busy, scan=1, progress=False)
    assert sorted(p.name for p in busy.iterdir()) == ["mine.txt"]


def test_cli_export(dataset: Path, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pcr_explore", "export", str(dataset), str(tmp_path / "o")]
    r = subprocess.run(
        [*cmd, "--scan", "3", "--to", "webdataset", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert r.stdout.startswith(f"{len(open_dataset(str(dataset)))} images at scan 3 to ")
    assert "webdataset.WebDataset(" in r.stderr and "shard-000000.tar" in r.stderr
    bad = subprocess.run(
        [*cmd, "--scan", "3", "--shard-size", "big"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "not a size: 'big'" in bad.stderr


# c/a.jpg and c/a.png share the name c/a; with the image's index as the suffix, the second
# of them took c/a_<i>, which c/a_<i>.jpg already had
CLASHING = ["c/a.jpg", "c/a.png", *(f"c/a_{n}.jpg" for n in range(1, 10))]


@pytest.fixture(scope="module")
def clashing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("clash-src")
    (src / "c").mkdir()
    rng = np.random.default_rng(5)
    for name in CLASHING:
        pixels = rng.integers(0, 255, (16, 24, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(src / name, **({"quality": 90} if "jpg" in name else {}))
    out = tmp_path_factory.mktemp("clash") / "ds"
    encode_dataset(src, out, seed=14, workers=1, progress=False)
    names = open_dataset(str(out)).names
    second = max(names.index("c/a.jpg"), names.index("c/a.png"))
    # the order that made the old naming collide (the encoder's shuffle with seed 14)
    assert 1 <= second <= 9 and names.index(f"c/a_{second}.jpg") < second, names
    return out


def test_clashing_names_get_a_folder_file_each(clashing: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(clashing))
    summary = export_dataset(ds, tmp_path / "f", scan=2, to="folder", progress=False)
    files = json.loads((tmp_path / "f" / "export.json").read_text())["files"]
    written = sorted(
        p.relative_to(tmp_path / "f").as_posix() for p in (tmp_path / "f").rglob("*.jpg")
    )
    assert summary.files == len(set(files)) == len(written) == len(ds) == 11
    assert sorted(files) == written
    for i, rel in enumerate(files):  # listed in image order, each its own image's level-2 JPEG
        assert (tmp_path / "f" / rel).read_bytes() == ds.jpeg_bytes(i, 2), rel


# webdataset leaves its shard files to the garbage collector
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_clashing_names_get_a_webdataset_key_each(clashing: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(clashing))
    export_dataset(ds, tmp_path / "w", scan=3, progress=False)
    with tarfile.open(tmp_path / "w" / "shard-000000.tar") as tar:
        members = tar.getnames()
    keys = [m.rsplit(".", 1)[0] for m in members if m.endswith(".jpg")]
    assert len(keys) == len(set(keys)) == len(ds) == 11
    samples = list(wds.WebDataset(str(tmp_path / "w" / "shard-000000.tar"), shardshuffle=False))
    assert sorted(s["__key__"] for s in samples) == sorted(keys)
    for s in samples:
        i = ds.names.index(json.loads(s["json"])["name"])
        assert s["jpg"] == ds.jpeg_bytes(i, 3)


def test_names_are_unique_ignoring_case_and_folders() -> None:
    names = ["A.jpg", "a.png", "a_1.jpg", "x.jpg/y.jpg", "x.png", "b.c.jpg", "b_c.jpg"]
    folder = _folder_names(names)
    assert len({n.casefold() for n in folder}) == len(names)
    assert folder[:2] == ["A.jpg", "a_1.jpg"] and folder[2] == "a_1_2.jpg"
    assert folder[4] == "x_4.jpg"  # x.jpg is a folder
    keys = _keys(names)
    assert len({k.casefold() for k in keys}) == len(names)
    assert keys[5:] == ["b_c", "b_c_6"]


def _shards(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def fourteen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return random_dataset(tmp_path_factory.mktemp("fourteen") / "ds", images=14, records=2)


def _assert_holds(ds: PCRDataset, out: Path, scan: int) -> None:
    """*out* holds exactly one export of *ds* at *scan*: every image once, its level's bytes."""
    index = json.loads((out / "export.json").read_text())
    assert index["scan"] == scan and index.get("complete") is not False
    everything = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert everything == sorted([*index["files"], "export.json"])
    seen: list[str] = []
    for f in index["files"]:
        with tarfile.open(out / f) as tar:
            for m in tar.getmembers():
                if m.name.endswith(".json"):
                    meta = json.loads(tar.extractfile(m).read())  # type: ignore[union-attr]
                    jpg = tar.extractfile(m.name[: -len("json")] + "jpg").read()  # type: ignore[union-attr]
                    assert meta["scan"] == scan
                    assert jpg == ds.jpeg_bytes(ds.names.index(meta["name"]), scan)
                    seen.append(meta["name"])
    assert sorted(seen) == sorted(ds.names)


def test_overwrite_replaces_14_shards_by_one(fourteen: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(fourteen))
    out = tmp_path / "wds"
    first = export_dataset(ds, out, scan=2, shard_bytes=1, progress=False)
    assert first.files == 14
    _assert_holds(ds, out, 2)
    again = export_dataset(ds, out, scan=4, overwrite=True, progress=False)
    assert again.files == 1 and _shards(out) == ["export.json", "shard-000000.tar"]
    _assert_holds(ds, out, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wds"]  # no private folder left


def test_overwrite_a_folder_export_with_webdataset_leaves_no_jpegs(
    fourteen: Path, tmp_path: Path
) -> None:
    ds = open_dataset(str(fourteen))
    out = tmp_path / "o"
    export_dataset(ds, out, scan=3, to="folder", progress=False)
    assert len(list(out.rglob("*.jpg"))) == 14
    export_dataset(ds, out, scan=3, shard_bytes=4000, overwrite=True, progress=False)
    assert list(out.rglob("*.jpg")) == [] and all(p.is_file() for p in out.iterdir())
    _assert_holds(ds, out, 3)
    export_dataset(ds, out, scan=1, to="folder", overwrite=True, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["a", "b", "export.json"]
    assert len(list(out.rglob("*.jpg"))) == 14


def test_an_interrupted_export_leaves_the_earlier_one_whole(
    fourteen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pcr_explore.read.export as export

    ds = open_dataset(str(fourteen))
    out = tmp_path / "wds"
    export_dataset(ds, out, scan=2, shard_bytes=1, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    calls = []
    member = export._member

    def stopped(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        calls.append(name)
        if len(calls) == 7:  # the third shard, half written
            raise KeyboardInterrupt
        member(tar, name, data)

    monkeypatch.setattr(export, "_member", stopped)
    with pytest.raises(KeyboardInterrupt):
        export_dataset(ds, out, scan=5, shard_bytes=1, overwrite=True, progress=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wds"]


def test_the_next_run_removes_what_a_killed_export_left(fourteen: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(fourteen))
    out = tmp_path / "wds"
    export_dataset(ds, out, scan=2, shard_bytes=1, progress=False)
    # what a run killed outright leaves: its private folder beside the export, with a
    # half-written shard in it, and the temporary files its atomic writer made in the
    # folder itself (an earlier version wrote there directly)
    private = tmp_path / ".wds.pcr-export-k2j4h5g6"
    private.mkdir()
    (private / "shard-000000.tar").write_bytes(b"x" * 100)
    (private / ".shard-000001.tar.a1b2c3d4.tmp").write_bytes(b"half")
    (out / ".shard-000003.tar.x8k2j4_5.tmp").write_bytes(b"half")
    (out / ".export.json.qq0w9e8r.tmp").write_text('{"fi')
    export_dataset(ds, out, scan=4, overwrite=True, progress=False)
    assert _shards(out) == ["export.json", "shard-000000.tar"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wds"]
    _assert_holds(ds, out, 4)


def test_overwrite_refuses_a_folder_with_files_no_export_wrote(
    fourteen: Path, tmp_path: Path
) -> None:
    ds = open_dataset(str(fourteen))
    out = tmp_path / "wds"
    export_dataset(ds, out, scan=2, to="folder", progress=False)
    (out / "notes.txt").write_text("mine")
    (out / "a" / "extra.jpg").write_bytes(b"mine too")
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    with pytest.raises(
        DatasetError, match=r"wds: holds files no export wrote \(a/extra\.jpg, notes\.txt\)"
    ):
        export_dataset(ds, out, scan=3, overwrite=True, progress=False)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before
    assert (out / "notes.txt").read_text() == "mine"
    # an export.json that no export wrote is the user's file too
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "export.json").write_text('{"files": ["../../etc/passwd"], "to": "folder"}')
    with pytest.raises(DatasetError, match=r"holds files no export wrote \(export\.json\)"):
        export_dataset(ds, mine, scan=3, overwrite=True, progress=False)
    assert sorted(p.name for p in mine.iterdir()) == ["export.json"]


def test_cli_export_overwrite(fourteen: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    cmd = [sys.executable, "-m", "pcr_explore", "export", str(fourteen), str(out), "--quiet"]
    first = subprocess.run(
        [*cmd, "--scan", "2", "--shard-size", "1"], capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    assert len(list(out.glob("shard-*.tar"))) == 14
    busy = subprocess.run([*cmd, "--scan", "4"], capture_output=True, text=True)
    assert busy.returncode == 1 and "already holds files" in busy.stderr
    again = subprocess.run([*cmd, "--scan", "4", "--overwrite"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "shard-000000.tar'" in again.stderr
    assert _shards(out) == ["export.json", "shard-000000.tar"]
    _assert_holds(open_dataset(str(fourteen)), out, 4)
    (out / "keep.txt").write_text("mine")
    refused = subprocess.run([*cmd, "--scan", "1", "--overwrite"], capture_output=True, text=True)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"pcr-explore: error: {out}: holds files no export wrote (keep.txt); overwrite replaces "
        "only an earlier export (the files its export.json lists): move them or choose another "
        "folder"
    ]
    assert (out / "keep.txt").read_text() == "mine"
    assert _shards(out) == ["export.json", "keep.txt", "shard-000000.tar"]


def test_shards_are_written_as_they_fill_not_held_in_memory(
    fourteen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pcr_explore.read.export as export

    given, on_disk = [0], []
    member = export._member

    def watched(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        member(tar, name, data)
        given[0] += len(data)
        assert tar.fileobj is not None
        on_disk.append((given[0], os.path.getsize(tar.fileobj.name)))  # type: ignore[attr-defined]

    monkeypatch.setattr(export, "_member", watched)
    s = export_dataset(open_dataset(str(fourteen)), tmp_path / "wds", scan=10, progress=False)
    assert s.files == 1
    # the one shard of every image: on disk, less the file's write buffer, all along
    assert all(size >= total - io.DEFAULT_BUFFER_SIZE for total, size in on_disk)


# -- names longer than a tar header or a file system takes ------------------------------

LONG_CLASS = "c" * 255  # as long as a folder name may be
LONG_FILE = "g" * 251  # with .jpg, 255 bytes: as long as a file name may be


@pytest.fixture(scope="module")
def long_names(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Images whose names a USTAR header (100 bytes) or, once exported, a folder cannot take.

    ``LONG_FILE.jpg`` and ``LONG_FILE.png`` share the name ``LONG_FILE.jpg`` in a folder export:
    the second needs ``_<i>`` added, over the file system's 255 bytes.
    """
    src = tmp_path_factory.mktemp("long-src")
    rng = np.random.default_rng(3)
    files = [
        (f"{LONG_CLASS}/x.jpg", "JPEG"),
        (f"short/{'f' * 150}.jpg", "JPEG"),
        (f"short/{LONG_FILE}.jpg", "JPEG"),
        (f"short/{LONG_FILE}.png", "PNG"),
    ]
    for name, fmt in files:
        (src / name).parent.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (16, 24, 3), dtype=np.uint8)).save(
            src / name, format=fmt
        )
    out = tmp_path_factory.mktemp("long") / "ds"
    encode_dataset(src, out, workers=1, progress=False)
    return out


# webdataset leaves its shard files to the garbage collector
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_long_names_go_into_pax_shards_whole(long_names: Path, tmp_path: Path) -> None:
    ds = open_dataset(str(long_names))
    summary = export_dataset(ds, tmp_path / "w", scan=2, progress=False)
    assert summary.images == 4 and summary.pattern == f"{tmp_path / 'w'}/shard-000000.tar"
    with tarfile.open(tmp_path / "w" / "shard-000000.tar") as tar:
        names = tar.getnames()
    assert f"{LONG_CLASS}/x.jpg" in names and max(len(n) for n in names) > 255
    samples = list(wds.WebDataset(str(tmp_path / "w" / "shard-000000.tar"), shardshuffle=False))
    assert len(samples) == 4
    assert len({s["__key__"] for s in samples}) == 4
    for s in samples:  # each under its whole name, with its own level-2 bytes
        name = json.loads(s["json"])["name"]
        assert s["jpg"] == ds.jpeg_bytes(ds.names.index(name), 2)


def test_a_folder_export_shortens_names_too_long_for_the_file_system(
    long_names: Path, tmp_path: Path
) -> None:
    ds = open_dataset(str(long_names))
    with pytest.warns(UserWarning, match=r"1 image path\(s\) had a part longer than the file "
                      r"system's 255 bytes and were shortened") as caught:  # fmt: skip
        export_dataset(ds, tmp_path / "f", scan=2, to="folder", progress=False)
    assert len(caught) == 1
    index = json.loads((tmp_path / "f" / "export.json").read_text())
    files = index["files"]
    on_disk = sorted(
        p.relative_to(tmp_path / "f").as_posix() for p in (tmp_path / "f").rglob("*.jpg")
    )
    assert sorted(files) == on_disk and len(set(files)) == 4
    assert all(len(part.encode()) <= 255 for f in files for part in f.split("/"))
    assert f"{LONG_CLASS}/x.jpg" in files and f"short/{LONG_FILE}.jpg" in files  # 255 bytes: kept
    (short,) = index["shortened"]
    i = files.index(short)
    assert index["shortened"][short] == ds.names[i]
    assert short.startswith("short/g") and short.endswith(".jpg") and "~" in short
    for i, rel in enumerate(files):  # nothing lost: each file its own image's level-2 JPEG
        assert (tmp_path / "f" / rel).read_bytes() == ds.jpeg_bytes(i, 2), rel
    with pytest.warns(UserWarning, match="shortened"):
        export_dataset(ds, tmp_path / "again", scan=2, to="folder", progress=False)
    assert json.loads((tmp_path / "again" / "export.json").read_text())["files"] == files


def test_a_path_too_long_for_the_system_is_refused_naming_the_image(
    long_names: Path, tmp_path: Path
) -> None:
    deep = tmp_path
    while len(os.fsencode(str(deep))) < 3_600:  # each part fine, the whole near PATH_MAX
        deep = deep / ("d" * 200)
    deep = deep / ("d" * (3_850 - len(os.fsencode(str(deep))) - 1))
    deep.mkdir(parents=True)
    ds = open_dataset(str(long_names))
    with pytest.raises(DatasetError, match=r": its path in the export, .* bytes; the file "
                       r"system takes at most 4,095") as caught:  # fmt: skip
        export_dataset(ds, deep / "out", scan=2, to="folder", progress=False)
    assert str(caught.value).split(": its path")[0] in ds.names
    assert list((deep / "out").iterdir()) == [] and [p.name for p in deep.iterdir()] == ["out"]


@pytest.mark.parametrize("to", ["webdataset", "folder"])
def test_a_failed_write_names_the_file_and_the_image(
    fourteen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, to: str
) -> None:
    import errno

    import pcr_explore.read.export as export

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "_member" if to == "webdataset" else "_write_new", full)
    ds = open_dataset(str(fourteen))
    with pytest.raises(OSError, match="No space left on device") as caught:
        export_dataset(ds, tmp_path / "o", scan=2, to=to, progress=False)  # type: ignore[arg-type]
    first = ds.names[0]
    assert caught.value.errno == errno.ENOSPC and first in str(caught.value.strerror)
    expected = "shard-000000.tar" if to == "webdataset" else first.rsplit(".", 1)[0] + ".jpg"
    assert caught.value.filename == str(tmp_path / "o" / expected)
    assert list((tmp_path / "o").iterdir()) == [] and _shards(tmp_path) == ["o"]


# -- two exports into one folder ---------------------------------------------------------


def test_a_second_export_into_the_folder_is_refused_while_the_first_writes(
    fourteen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pcr_explore.read.export as export

    ds = open_dataset(str(fourteen))
    out = tmp_path / "wds"
    member = export._member
    second: list[BaseException] = []

    def racing(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        if not second:  # the first export has started writing: another one begins
            try:
                export_dataset(ds, out, scan=4, overwrite=True, progress=False)
            except DatasetError as exc:
                second.append(exc)
            else:
                second.append(AssertionError("the second export ran"))
        member(tar, name, data)

    monkeypatch.setattr(export, "_member", racing)
    first = export_dataset(ds, out, scan=2, shard_bytes=1, progress=False)
    assert str(second[0]).startswith(
        f"{out}: another export is writing to this folder (pid {os.getpid()} on "
    ) and str(second[0]).endswith("; wait for it to finish, then run again")
    assert first.files == 14  # the first is whole, alone, and its lock gone
    _assert_holds(ds, out, 2)


def test_cli_export_into_a_locked_folder_fails_naming_it(fourteen: Path, tmp_path: Path) -> None:
    from pcr_explore.storage._lock import FolderLock

    out = tmp_path / "o"
    out.mkdir()
    cmd = [sys.executable, "-m", "pcr_explore", "export", str(fourteen), str(out), "--quiet"]
    with FolderLock(out):  # as another export holds it while it writes
        busy = subprocess.run([*cmd, "--scan", "2"], capture_output=True, text=True)
    assert busy.returncode == 1 and busy.stdout == ""
    (line,) = busy.stderr.splitlines()
    assert line.startswith(f"pcr-explore: error: {out}: another export is writing to this folder")
    assert list(out.iterdir()) == []
    # a lock file left by a killed export holds nothing: the next export goes ahead
    (out / ".pcr-lock").write_text("pid 1 on gone, since 2020-01-01 00:00:00\n")
    done = subprocess.run([*cmd, "--scan", "2"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _shards(out) == ["export.json", "shard-000000.tar"]
    _assert_holds(open_dataset(str(fourteen)), out, 2)
