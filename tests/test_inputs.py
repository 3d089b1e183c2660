"""Encode from WebDataset tar shards, Parquet files and a Hugging Face dataset, built here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _loopback import FileServer

from pcr_explore import EncodeOptions, encode_dataset, find_sources, open_dataset
from pcr_explore.errors import DatasetError

wds = pytest.importorskip("webdataset")


def _records(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.glob("record-*.pcr"))}


@pytest.fixture(scope="module")
def reference(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The photo folder encoded as it is."""
    out = tmp_path_factory.mktemp("ref") / "ds"
    encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    return out


def _samples(folder: Path) -> list[tuple[str, str, bytes]]:
    items, classes = find_sources(folder)
    return [(it.name, str(it.label), (folder / it.name).read_bytes()) for it in items]


def _write_shards(folder: Path, out: Path, maxcount: int = 3) -> list[str]:
    classes = sorted({c for _, c, _ in _samples(folder)})
    out.mkdir(parents=True, exist_ok=True)
    with wds.ShardWriter(str(out / "s-%04d.tar"), maxcount=maxcount, verbose=0) as sink:
        for name, cls, data in _samples(folder):
            sink.write(
                {
                    "__key__": name.rsplit(".", 1)[0],
                    "jpg": data,
                    "cls": classes.index(cls),
                    "json": {"class": cls},
                }
            )
    return sorted(str(p) for p in out.glob("*.tar"))


def test_webdataset_shards_give_the_folders_records(
    photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    shards = _write_shards(photo_folder, tmp_path / "wds")
    assert len(shards) == 3
    out = tmp_path / "from-wds"
    summary = encode_dataset(shards, out, record_size=20_000, workers=1, progress=False)
    assert summary.images == len(open_dataset(str(reference)))
    assert _records(out) == _records(reference)  # byte-identical records
    text = (out / "manifest.json").read_text()
    manifest = json.loads(text)
    # portable: the shards' names, no path of this machine
    assert manifest["source"] == "s-0000.tar, s-0001.tar, s-0002.tar"
    assert manifest["classes"] == ["animals", "things"] and str(tmp_path) not in text
    assert not list(tmp_path.glob(".*staging*"))  # the unpacked copy is gone
    # a brace pattern, and the same shards over HTTP
    pattern = str(tmp_path / "wds" / "s-{0000..0002}.tar")
    encode_dataset(pattern, tmp_path / "brace", record_size=20_000, workers=1, progress=False)
    assert _records(tmp_path / "brace") == _records(reference)
    with FileServer(tmp_path / "wds") as srv:
        urls = [f"{srv.url}/{Path(s).name}" for s in shards]
        encode_dataset(urls, tmp_path / "http", record_size=20_000, workers=1, progress=False)
    assert _records(tmp_path / "http") == _records(reference)


def test_cls_only_labels_sort_as_numbers(photo_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "wds"
    out.mkdir()
    with wds.ShardWriter(str(out / "s-%04d.tar"), maxcount=100, verbose=0) as sink:
        for i, (_, _, data) in enumerate(_samples(photo_folder)):
            sink.write({"__key__": f"img{i}", "jpg": data, "cls": [2, 10, 1][i % 3]})
    encode_dataset(str(out / "s-0000.tar"), tmp_path / "ds", workers=1, progress=False)
    ds = open_dataset(str(tmp_path / "ds"))
    assert ds.classes == ["01", "02", "10"]  # zero-padded: the integer order is kept


def test_parquet_and_a_hugging_face_dataset_give_the_folders_records(
    photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    datasets = pytest.importorskip("datasets")
    rows = _samples(photo_folder)
    images = [{"bytes": data, "path": name} for name, _, data in rows]
    table = pa.table({"image": images, "label": [c for _, c, _ in rows]})
    half = len(rows) // 2
    pq.write_table(table.slice(0, half), tmp_path / "a.parquet")
    pq.write_table(table.slice(half), tmp_path / "b.parquet")
    paths = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    encode_dataset(paths, tmp_path / "pq", record_size=20_000, workers=1, progress=False)
    assert _records(tmp_path / "pq") == _records(reference)

    names = sorted({c for _, c, _ in rows})
    hf = (
        datasets.Dataset.from_dict({"img": images, "y": [names.index(c) for _, c, _ in rows]})
        .cast_column("img", datasets.Image())
        .cast_column("y", datasets.ClassLabel(names=names))
    )
    opts = EncodeOptions(image_column="img", label_column="y")
    encode_dataset(hf, tmp_path / "hf", record_size=20_000, workers=1, progress=False, options=opts)
    assert _records(tmp_path / "hf") == _records(reference)


def test_a_hugging_face_image_column_of_file_paths_gives_the_folders_records(
    photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    # datasets stores an Image() built from files as paths, without the bytes
    datasets = pytest.importorskip("datasets")
    rows = _samples(photo_folder)
    names = sorted({c for _, c, _ in rows})
    hf = (
        datasets.Dataset.from_dict(
            {
                "img": [str(photo_folder / name) for name, _, _ in rows],
                "y": [names.index(c) for _, c, _ in rows],
            }
        )
        .cast_column("img", datasets.Image())
        .cast_column("y", datasets.ClassLabel(names=names))
    )
    opts = EncodeOptions(image_column="img", label_column="y")
    encode_dataset(hf, tmp_path / "hf", record_size=20_000, workers=1, progress=False, options=opts)
    assert _records(tmp_path / "hf") == _records(reference)


def test_bad_inputs_name_the_shard_and_the_member(photo_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "bad"
    out.mkdir()
    data = next(iter(_samples(photo_folder)))[2]
    with wds.TarWriter(str(out / "nolabel.tar")) as sink:
        sink.write({"__key__": "a", "jpg": data})
        sink.write({"__key__": "b", "txt": "no image here"})
    with pytest.raises(DatasetError, match=r"nolabel\.tar: sample 'b' has no image member \(txt;"):
        encode_dataset(str(out / "nolabel.tar"), tmp_path / "o1", workers=1, progress=False)
    with wds.TarWriter(str(out / "badcls.tar")) as sink:
        sink.write({"__key__": "a", "jpg": data, "cls": "tulip"})
    with pytest.raises(DatasetError, match=r"badcls\.tar: a\.cls is 'tulip', not an integer"):
        encode_dataset(str(out / "badcls.tar"), tmp_path / "o2", workers=1, progress=False)
    with FileServer(out) as srv:
        with pytest.raises(DatasetError, match=rf"{srv.url}/missing\.tar: shard not found"):
            encode_dataset(f"{srv.url}/missing.tar", tmp_path / "o3", workers=1, progress=False)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"image": [1, 2], "label": ["a", "b"]}), out / "ints.parquet")
    with pytest.raises(DatasetError, match=r"ints\.parquet: row 0: column 'image' holds int"):
        encode_dataset(str(out / "ints.parquet"), tmp_path / "o4", workers=1, progress=False)
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name]


def _stop_after_first(i: int) -> None:
    if i == 0:
        raise KeyboardInterrupt


def _staging(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob(".*staging*"))


def test_an_interrupted_tar_encode_resumes(
    photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    shards = _write_shards(photo_folder, tmp_path / "wds")
    out, kw = tmp_path / "ds", {"record_size": 20_000, "workers": 1, "progress": False}
    stop = EncodeOptions(on_record=_stop_after_first)
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(shards, out, options=stop, **kw)  # type: ignore[arg-type]
    [staged] = _staging(tmp_path)  # kept for the re-run, beside the output
    written: list[int] = []
    summary = encode_dataset(
        shards,
        out,
        options=EncodeOptions(on_record=written.append),
        **kw,  # type: ignore[arg-type]
    )
    assert summary.resumed_records == 1 and written[0] == 1  # record 0 was not redone
    assert _records(out) == _records(reference)
    assert _staging(tmp_path) == []  # removed once the manifest is written


def test_an_interrupted_parquet_or_dataset_encode_resumes(
    photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    datasets = pytest.importorskip("datasets")
    rows = _samples(photo_folder)
    images = [{"bytes": data, "path": name} for name, _, data in rows]
    pq.write_table(
        pa.table({"image": images, "label": [c for _, c, _ in rows]}), tmp_path / "a.parquet"
    )
    kw = {"record_size": 20_000, "workers": 1, "progress": False}
    stop = EncodeOptions(on_record=_stop_after_first)

    def hf() -> object:  # as a new process would build it again
        return datasets.Dataset.from_dict({"image": images, "label": [c for _, c, _ in rows]})

    for src, out in ((str(tmp_path / "a.parquet"), tmp_path / "pq"), (hf(), tmp_path / "hf")):
        with pytest.raises(KeyboardInterrupt):
            encode_dataset(src, out, options=stop, **kw)  # type: ignore[arg-type]
        again = hf() if out.name == "hf" else src
        summary = encode_dataset(again, out, **kw)  # type: ignore[arg-type]
        assert summary.resumed_records == 1 and _records(out) == _records(reference)
        assert _staging(tmp_path) == []


def test_shards_encoded_to_object_storage_stage_in_a_temporary_folder(
    photo_folder: Path, reference: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    import tempfile

    from _loopback import s3_server

    shards = _write_shards(photo_folder, tmp_path / "wds")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # the temporary folder, watched
    with s3_server() as s3:
        url = f"s3://{s3.bucket}/from-wds"
        encode_dataset(
            shards, url, storage_options=s3.storage_options, record_size=20_000, workers=1,
            progress=False,
        )  # fmt: skip
        ds = open_dataset(url, storage_options=s3.storage_options)
        same = [
            (r.file, r.checksum, r.bytes_per_scan) for r in open_dataset(str(reference)).records
        ]
        assert [(r.file, r.checksum, r.bytes_per_scan) for r in ds.records] == same
    assert list(scratch.iterdir()) == [] and _staging(tmp_path) == []
