"""Export at one level: WebDataset shards read back by webdataset itself, and folders."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import photo
from PIL import Image, ImageOps

from pcr_explore import encode_dataset, export_dataset, open_dataset
from pcr_explore.errors import DatasetError

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
    export_dataset(dataset, busy, scan=1, overwrite=True, progress=False)
    assert (busy / "mine.txt").read_text() == "keep" and (busy / "shard-000000.tar").exists()


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
