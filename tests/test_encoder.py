"""Encoding folders into datasets: levels, labels, sharding, skipping, resuming."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from PIL import Image

from pcr_explore.encode.discover import find_sources
from pcr_explore.encode.encoder import EncodeOptions, encode_dataset
from pcr_explore.errors import DatasetError
from pcr_explore.jpeg import decode
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.read.reader import open_dataset
from pcr_explore.read.sources import gray_scans_at


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def encoded(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("enc") / "ds"
    encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    return out


def test_every_level_of_every_image_round_trips(photo_folder: Path, encoded: Path) -> None:
    ds = open_dataset(str(encoded))
    assert len(ds) == 7 and ds.num_scans == 10
    for i, name in enumerate(ds.names):
        pj = transcode(photo_folder / name).jpeg
        for k in range(1, 11):
            want = pj.level(gray_scans_at(k) if pj.num_components == 1 else k)
            assert ds.jpeg_bytes(i, scan=k) == want, (name, k)


@pytest.mark.jpegtran
def test_full_level_is_the_source_pixels(photo_folder: Path, encoded: Path) -> None:
    ds = open_dataset(str(encoded))
    for i, name in enumerate(ds.names):
        src = (photo_folder / name).read_bytes()
        np.testing.assert_array_equal(ds.image(i), decode(src))
    assert ds.total_bytes <= 0.97 * ds.source_bytes


def test_labels_from_class_folders(encoded: Path) -> None:
    ds = open_dataset(str(encoded))
    assert ds.classes == ["animals", "things"]
    for name, label in zip(ds.names, ds.labels.tolist()):
        assert ds.classes[label] == name.split("/")[0]


def test_labels_from_csv_and_none(
    photo_folder: Path,
    tmp_path: Path,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text("file,label\nanimals/chelsea.jpg,cat\nthings/rocket.jpg,vehicle\n")
    items, classes = find_sources(photo_folder, labels=csv)
    assert classes == ["cat", "vehicle"]
    assert {i.name: i.label for i in items}["things/coins.jpg"] is None
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "a.jpg").write_bytes(encode_jpeg(sk_photo("coffee", 64)))
    encode_dataset(flat, tmp_path / "o", workers=1, progress=False)
    ds = open_dataset(str(tmp_path / "o"))
    assert ds.classes == [] and ds.labels.tolist() == [-1]
    bad = tmp_path / "bad.csv"
    bad.write_text("name,class\n")
    with pytest.raises(DatasetError, match="bad.csv: label CSV needs"):
        find_sources(photo_folder, labels=bad)


def test_shuffle_is_seeded_and_sharding_keeps_the_last_record(
    photo_folder: Path, tmp_path: Path, encoded: Path
) -> None:
    ds = open_dataset(str(encoded))
    assert len(ds.records) >= 3
    assert sum(r.images for r in ds.records) == 7
    assert ds.names != sorted(ds.names)  # shuffled (seed 0)
    encode_dataset(
        photo_folder,
        tmp_path / "b",
        record_size=10**9,
        workers=1,
        progress=False,
        options=EncodeOptions(shuffle=False),
    )
    plain = open_dataset(str(tmp_path / "b"))
    assert plain.names == sorted(plain.names) and len(plain.records) == 1
    encode_dataset(
        photo_folder, tmp_path / "c", seed=0, record_size=20_000, workers=1, progress=False
    )
    assert open_dataset(str(tmp_path / "c")).names == ds.names


@pytest.mark.parametrize("parallel", ["threads", "processes"])
def test_parallel_output_equals_serial(
    photo_folder: Path, tmp_path: Path, encoded: Path, parallel: Literal["threads", "processes"]
) -> None:
    out = tmp_path / "p"
    encode_dataset(
        photo_folder,
        out,
        record_size=20000,
        workers=2,
        progress=False,
        options=EncodeOptions(parallel=parallel),
    )
    assert _tree_digest(out) == _tree_digest(encoded)


def test_bad_sources_are_skipped_and_reported(
    photo_copy: Path,
    tmp_path: Path,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> None:
    (photo_copy / "things" / "empty.png").write_bytes(b"")
    (photo_copy / "things" / "trunc.jpg").write_bytes(encode_jpeg(sk_photo("coffee", 200))[:2500])
    before = _tree_digest(photo_copy)
    summary = encode_dataset(photo_copy, tmp_path / "o", workers=2, progress=False)
    assert summary.images == 7 and summary.skipped == 2
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert sorted(s["file"] for s in m["skipped"]) == ["things/empty.png", "things/trunc.jpg"]
    assert all(s["issue"] for s in m["skipped"])
    assert _tree_digest(photo_copy) == before  # sources untouched
    with pytest.raises(DatasetError, match="empty.png"):
        encode_dataset(
            photo_copy,
            tmp_path / "s",
            workers=1,
            progress=False,
            options=EncodeOptions(strict=True),
        )


def test_interrupted_encode_resumes(photo_folder: Path, tmp_path: Path, encoded: Path) -> None:
    out = tmp_path / "r"

    def stop_after_second(idx: int) -> None:
        if idx == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        encode_dataset(
            photo_folder,
            out,
            record_size=20000,
            workers=1,
            progress=False,
            options=EncodeOptions(on_record=stop_after_second),
        )
    assert not (out / "manifest.json").exists()
    assert len(list(out.glob("*.pcr"))) == 2
    written: list[int] = []
    summary = encode_dataset(
        photo_folder,
        out,
        record_size=20000,
        workers=1,
        progress=False,
        options=EncodeOptions(on_record=written.append),
    )
    assert summary.resumed_records == 2 and written[0] == 2
    assert _tree_digest(out) == _tree_digest(encoded)


def test_refuses_to_clobber_or_mix(photo_folder: Path, tmp_path: Path, encoded: Path) -> None:
    with pytest.raises(DatasetError, match="already holds a dataset"):
        encode_dataset(photo_folder, encoded, progress=False)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(
            photo_folder,
            out,
            record_size=20000,
            workers=1,
            progress=False,
            options=EncodeOptions(on_record=lambda i: (_ for _ in ()).throw(KeyboardInterrupt)),
        )
    with pytest.raises(DatasetError, match="interrupted encode of different sources or options"):
        encode_dataset(photo_folder, out, record_size=30_000, workers=1, progress=False)
    encode_dataset(photo_folder, out, record_size=30_000, workers=1, progress=False, overwrite=True)
    assert len(open_dataset(str(out))) == 7
    with pytest.raises(DatasetError, match="must not be inside the source"):
        encode_dataset(photo_folder, photo_folder / "out", progress=False)
    with pytest.raises(DatasetError, match="no image files"):
        encode_dataset(tmp_path / "o", tmp_path / "x", progress=False)


def test_png_sources_and_grayscale_mapping(
    tmp_path: Path, sk_photo: Callable[..., np.ndarray]
) -> None:
    src = tmp_path / "png"
    src.mkdir()
    Image.fromarray(sk_photo("camera", 128)).save(src / "gray.png")
    Image.fromarray(sk_photo("coffee", 128)).save(src / "colour.png")
    encode_dataset(
        src, tmp_path / "o", workers=1, progress=False, options=EncodeOptions(quality=85)
    )
    ds = open_dataset(str(tmp_path / "o"))
    g = ds.names.index("gray.png")
    sizes = ds.level_bytes(g)
    # a grayscale image adds nothing at the chroma-only levels 3, 4, 8, 9
    assert sizes[1] == sizes[2] == sizes[3] and sizes[6] == sizes[7] == sizes[8]
    assert sizes[4] > sizes[3] and sizes[9] > sizes[8]
    assert ds.image(g, scan=3).ndim == 2


def _interrupt_after(idx_stop: int):  # type: ignore[no-untyped-def]
    def stop(idx: int) -> None:
        if idx == idx_stop:
            raise KeyboardInterrupt

    return stop


def test_resume_after_a_run_of_skipped_sources(
    photo_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unreadable files sorted last, unshuffled, one planned record each: the
    # run ends with journal entries that have no record file ("file": null).
    # Killed before the manifest is written, a resume must accept them.
    for i in range(3):
        (photo_copy / "things" / f"zz-broken-{i}.jpg").write_bytes(b"not a jpeg")
    out = tmp_path / "o"
    kw: dict[str, Any] = dict(
        record_size=1, workers=1, progress=False, options=EncodeOptions(shuffle=False)
    )
    ref = encode_dataset(photo_copy, tmp_path / "ref", **kw)
    assert ref.skipped == 3

    from pcr_explore.storage._output import FolderOutput

    publish = FolderOutput.write

    def killed(self: FolderOutput, name: str, data: bytes) -> None:
        if name == "manifest.json":
            raise KeyboardInterrupt
        publish(self, name, data)

    with monkeypatch.context() as m:
        m.setattr(FolderOutput, "write", killed)
        with pytest.raises(KeyboardInterrupt):
            encode_dataset(photo_copy, out, **kw)
    lines = [json.loads(x) for x in (out / ".pcr-journal.jsonl").read_text().splitlines()]
    assert [(e["file"], len(e["skipped"])) for e in lines[-3:]] == [(None, 1)] * 3
    written: list[int] = []
    kw["options"] = EncodeOptions(shuffle=False, on_record=written.append)
    summary = encode_dataset(photo_copy, out, **kw)
    assert written == [] and summary.resumed_records == ref.records == 7
    assert summary.images == ref.images and summary.skipped == 3
    assert not (out / ".pcr-journal.jsonl").exists() and not (out / ".pcr-plan.json").exists()
    m = json.loads((out / "manifest.json").read_text())
    assert [s["file"] for s in m["skipped"]] == [f"things/zz-broken-{i}.jpg" for i in range(3)]


@pytest.mark.parametrize("bad_line", ["{}", "[]", '{"start": 0, "end": "x"}', "null"])
def test_a_damaged_journal_line_redoes_from_there(
    photo_folder: Path, tmp_path: Path, encoded: Path, bad_line: str
) -> None:
    out = tmp_path / "d"
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(
            photo_folder,
            out,
            record_size=20000,
            workers=1,
            progress=False,
            options=EncodeOptions(on_record=_interrupt_after(2)),
        )
    lines = (out / ".pcr-journal.jsonl").read_text().splitlines()
    assert len(lines) == 3
    (out / ".pcr-journal.jsonl").write_text("\n".join([lines[0], bad_line, lines[2]]) + "\n")
    summary = encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    assert summary.resumed_records == 1  # only the lines before the damage are trusted
    assert _tree_digest(out) == _tree_digest(encoded)


def test_lossy_re_encodes_and_animations_are_said_where_the_user_looks(
    sk_photo: Callable[..., np.ndarray], tmp_path: Path
) -> None:
    """A PNG re-encoded at quality 90 and a GIF cut to its first frame: encode, inspect, audit."""
    from pcr_explore.auditing import audit

    src = tmp_path / "src"
    src.mkdir()
    img = sk_photo("astronaut", 96)
    Image.fromarray(img).save(src / "a.png")
    frames = [Image.fromarray(np.roll(img, 8 * i, axis=0)) for i in range(3)]
    frames[0].save(src / "anim.gif", save_all=True, append_images=frames[1:])
    Image.fromarray(img).save(src / "b.jpg", quality=85)
    summary = encode_dataset(src, tmp_path / "ds", workers=1, progress=False)
    assert summary.lossy == 2
    assert "2 re-encoded with loss (not JPEG, or CMYK" in str(summary)
    ds = open_dataset(str(tmp_path / "ds"))
    notes = {c["file"]: c for c in ds.manifest.conversions}
    assert set(notes) == {"a.png", "anim.gif"}  # the JPEG went through losslessly, no note
    assert notes["a.png"]["note"].startswith("PNG RGB source re-encoded as JPEG at quality 90")
    assert notes["anim.gif"]["note"].startswith("GIF with 3 frames: the first kept; ")
    assert not any(c["lossless"] for c in notes.values())
    assert "2 re-encoded with loss" in str(ds.summary())
    assert "lossy: 2 sources" in str(ds.summary())
    text = audit(str(tmp_path / "ds"), progress=False).summary()
    assert "note: 2 images re-encoded with loss at encode" in text
    assert "1.0 at the full level is not lossless): a.png, anim.gif" in text


def test_a_label_csv_over_the_limit_is_refused_unread(
    photo_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pcr_explore.encode import discover

    monkeypatch.setattr(discover, "MAX_LABELS_BYTES", 1000)
    big = tmp_path / "big.csv"
    big.write_text("file,label\n" + "animals/chelsea.jpg,cat\n" * 50)  # 1,211 bytes
    for path in (big, Path("/dev/zero")):  # a file's size, or a stream that never ends
        with pytest.raises(DatasetError, match=f"{path}: label CSV is larger than 1,000 bytes"):
            find_sources(photo_folder, labels=path)
    big.write_bytes(b"file,label\nanimals/chelsea.jpg,\xff\n")
    with pytest.raises(DatasetError, match=r"big\.csv: label CSV is not UTF-8 comma-separated"):
        find_sources(photo_folder, labels=big)


def test_the_manifest_holds_no_path_of_this_machine(photo_folder: Path, tmp_path: Path) -> None:
    from pcr_explore.read.verify import verify_dataset

    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\nanimals/chelsea.jpg,cat\n")
    out = tmp_path / "ds"
    encode_dataset(photo_folder, out, labels=labels, workers=1, progress=False)
    text = (out / "manifest.json").read_text()
    manifest = json.loads(text)
    assert manifest["source"] == photo_folder.name and manifest["options"]["labels"] == "labels.csv"
    assert str(tmp_path) not in text and str(photo_folder.parent) not in text
    # still a manifest every reader takes
    assert len(open_dataset(str(out))) == 7 and verify_dataset(str(out)).ok
