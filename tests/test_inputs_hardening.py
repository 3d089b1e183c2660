"""Staged inputs under hostile data: labels that are paths, links, bombs, shared outputs.

Each test builds its tar shards, Parquet files or datasets here, and checks
both the error (which names the shard or file and the member or row) and
that nothing was written outside the output's staging folder, nor left.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcr_explore import EncodeOptions, encode_dataset, open_dataset
from pcr_explore.cli import main
from pcr_explore.encode import _braces, _staging, inputs
from pcr_explore.errors import DatasetError
from pcr_explore.storage._lock import FolderLock


@pytest.fixture(scope="module")
def jpg(encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]) -> bytes:
    """A small JPEG (about 1.5 kB)."""
    return encode_jpeg(sk_photo("chelsea", 32))


def _tar(path: Path, members: list[tuple[str, bytes] | tarfile.TarInfo]) -> str:
    """A tar shard of (name, bytes) files and ready-made members (links, folders)."""
    with tarfile.open(path, "w") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tar.addfile(info, io.BytesIO(m[1]))
    return str(path)


def _sample(key: str, data: bytes, label: object) -> list[tuple[str, bytes] | tarfile.TarInfo]:
    return [(f"{key}.jpg", data), (f"{key}.json", json.dumps({"class": label}).encode())]


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under *root* with its bytes (None: a folder)."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def _encode(src: object, out: Path, **kw: object) -> object:
    kw.setdefault("workers", 1)
    kw.setdefault("progress", False)
    return encode_dataset(src, out, **kw)  # type: ignore[arg-type]


_UNSAFE = [
    "../../X",
    "..",
    ".",
    "",
    "a/b",
    "a\\b",
    "a\x00b",
    "\x1b[2J",
    "x" * 300,
    "\ud800",  # a lone surrogate: not text a folder name can hold
]


# -- 1. a label never becomes a path ------------------------------------


@pytest.mark.parametrize("label", [*_UNSAFE, "ABSOLUTE"])
def test_a_tar_label_that_is_not_one_folder_name_is_refused(
    tmp_path: Path, jpg: bytes, label: str
) -> None:
    if label == "ABSOLUTE":
        label = str(tmp_path / "escaped")
    (tmp_path / "in").mkdir()
    shard = _tar(tmp_path / "in" / "s.tar", _sample("ok", jpg, "cat") + _sample("bad", jpg, label))
    out = tmp_path / "a" / "b" / "ds"  # "../../X" from a staging folder beside it: tmp/a/X
    out.parent.mkdir(parents=True)
    before = _tree(tmp_path)
    with pytest.raises(DatasetError, match=re.escape(f"{shard}: bad.json: class ")) as err:
        _encode(shard, out)
    assert "cannot be a class folder" in str(err.value)
    assert repr(label)[:20] in str(err.value)  # the label itself, shown (cut short)
    assert _tree(tmp_path) == before  # nothing written anywhere, nothing left


@pytest.mark.parametrize("label", [s for s in _UNSAFE if s != "\ud800"])
def test_a_parquet_label_that_is_not_one_folder_name_is_refused(
    tmp_path: Path, jpg: bytes, label: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "in" / "p.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"image": [jpg, jpg], "label": ["cat", label]}), path)
    out = tmp_path / "a" / "b" / "ds"
    out.parent.mkdir(parents=True)
    before = _tree(tmp_path)
    with pytest.raises(DatasetError, match=re.escape(f"{path}: row 1: column 'label': class ")):
        _encode(str(path), out)
    assert _tree(tmp_path) == before


def test_a_class_label_name_that_is_not_one_folder_name_is_refused(
    tmp_path: Path, jpg: bytes
) -> None:
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict(
        {"img": [{"bytes": jpg, "path": "a.jpg"}] * 2, "y": [0, 1]}
    ).cast_column("y", datasets.ClassLabel(names=["cat", "../../X"]))
    hf = hf.cast_column("img", datasets.Image())
    out = tmp_path / "a" / "b" / "ds"
    out.parent.mkdir(parents=True)
    before = _tree(tmp_path)
    opts = EncodeOptions(image_column="img", label_column="y")
    with pytest.raises(
        DatasetError,
        match=r"the dataset: column 'y': class index 1: class '\.\./\.\./X' cannot be a class",
    ):
        _encode(hf, out, options=opts)
    assert _tree(tmp_path) == before


def test_safe_labels_stay_the_class_names(tmp_path: Path, jpg: bytes) -> None:
    # a leading dot is fine: find_sources skips hidden files, not hidden folders
    shard = _tar(
        tmp_path / "s.tar",
        _sample("a", jpg, ".hidden") + _sample("b", jpg, "café au lait") + _sample("c", jpg, "z"),
    )
    _encode(shard, tmp_path / "ds")
    ds = open_dataset(str(tmp_path / "ds"))
    assert ds.classes == [".hidden", "café au lait", "z"] and len(ds) == 3


# -- 2 and 3. staging belongs to the output and its input -----------------


def test_a_second_encode_into_a_locked_output_changes_nothing(tmp_path: Path, jpg: bytes) -> None:
    good = _tar(tmp_path / "good.tar", _sample("a", jpg, "cat"))
    bad = _tar(tmp_path / "bad.tar", _sample("a", jpg, "../x"))
    out = tmp_path / "ds"
    out.mkdir()
    (out / "record-00000.pcr").write_bytes(b"the first run's record")
    # the first run's unpacked input, under the old shared name and a private one
    for staging in (tmp_path / ".ds.staging", tmp_path / ".ds.pcr-staging-first"):
        (staging / "cat").mkdir(parents=True)
        (staging / "cat" / "a.jpg").write_bytes(jpg)
    with FolderLock(out):  # the first run, still encoding
        before = _tree(tmp_path)
        for src in (good, bad):  # bad: the lock is checked before anything is unpacked
            with pytest.raises(DatasetError, match="another encode is writing to this folder"):
                _encode(src, out)
            assert _tree(tmp_path) == before


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_named_like_the_staging_folder_survives(
    tmp_path: Path, jpg: bytes, overwrite: bool
) -> None:
    shard = _tar(tmp_path / "s.tar", _sample("a", jpg, "cat"))
    mine = tmp_path / ".ds.staging"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    _encode(shard, tmp_path / "ds")
    if overwrite:
        _encode(shard, tmp_path / "ds", overwrite=True)
    assert (mine / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ds.staging", "ds", "s.tar"]


def test_staging_lies_beside_the_output_named_by_the_output_and_the_input(
    tmp_path: Path, jpg: bytes
) -> None:
    shard = _tar(tmp_path / "s.tar", _sample("a", jpg, "cat"))
    during: list[list[str]] = []

    def look(_: int) -> None:
        during.append(sorted(p.name for p in tmp_path.iterdir() if p.is_dir()))

    _encode(shard, tmp_path / "ds", options=EncodeOptions(on_record=look))
    _encode(shard, tmp_path / "ds", options=EncodeOptions(on_record=look), overwrite=True)
    _tar(tmp_path / "s.tar", _sample("a", jpg, "cat") + _sample("b", jpg, "dog"))  # changed
    _encode(shard, tmp_path / "ds", options=EncodeOptions(on_record=look), overwrite=True)
    [(first, ds), (again, _), (changed, _)] = during
    assert ds == "ds" and re.fullmatch(r"\.ds\.pcr-staging-[0-9a-f]{16}", first)
    assert again == first and changed != first  # the same input finds the same folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "s.tar"]


def _interrupted(shard: str, out: Path) -> None:
    """Encode *shard* into *out* and stop after its first record, as a killed run would."""

    def stop(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _encode(shard, out, options=EncodeOptions(on_record=stop))


def test_overwrite_removes_the_staging_a_killed_run_left(tmp_path: Path, jpg: bytes) -> None:
    old = _tar(tmp_path / "old.tar", _sample("a", jpg, "cat"))
    new = _tar(tmp_path / "new.tar", _sample("b", jpg, "dog"))
    _interrupted(old, tmp_path / "ds")
    assert len(list(tmp_path.glob(".ds.pcr-staging-*"))) == 1  # the whole unpacked input
    lookalike = tmp_path / ".ds.pcr-staging-0123456789abcdef"  # no marker: not the encoder's
    lookalike.mkdir()
    with pytest.raises(DatasetError, match="interrupted encode of different sources"):
        _encode(new, tmp_path / "ds")
    _encode(new, tmp_path / "ds", overwrite=True)
    assert open_dataset(str(tmp_path / "ds")).classes == ["dog"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        lookalike.name,
        "ds",
        "new.tar",
        "old.tar",
    ]


def test_a_folder_staged_in_part_is_staged_again(tmp_path: Path, jpg: bytes) -> None:
    shard = _tar(tmp_path / "s.tar", _sample("a", jpg, "cat") + _sample("b", jpg, "dog"))
    _encode(shard, tmp_path / "ref")
    reference = {p.name: p.read_bytes() for p in (tmp_path / "ref").glob("record-*.pcr")}
    # what a run killed while unpacking leaves: a marker saying so, and part of the input
    out = (tmp_path / "ds").resolve()
    folder = _staging.staging_path(out, inputs.identity(shard, "image", "label"))
    (folder / "cat").mkdir(parents=True)
    (folder / "cat" / "stray.jpg").write_bytes(jpg)
    (folder / _staging.MARKER).write_text(json.dumps({"output": str(out), "complete": False}))
    _encode(shard, out)
    assert {p.name: p.read_bytes() for p in out.glob("record-*.pcr")} == reference
    assert not folder.exists()


# -- 8. nothing lost or merged without a word ---------------------------


def test_integer_labels_and_names_in_one_tar_are_refused(tmp_path: Path, jpg: bytes) -> None:
    # cls 2 and 10 are stored as "02" and "10": the name "02" would merge with 2
    members = [("a.jpg", jpg), ("a.cls", b"2"), ("b.jpg", jpg), ("b.cls", b"10")]
    shard = _tar(tmp_path / "s.tar", members + _sample("c", jpg, "02"))
    with pytest.raises(DatasetError, match=r"s\.tar: c\.json: class name '02'.*s\.tar: a\.cls: 2"):
        _encode(shard, tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.tar"]


def test_integer_labels_and_names_in_parquet_files_are_refused(tmp_path: Path, jpg: bytes) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"image": [jpg, jpg], "label": [2, 10]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"image": [jpg], "label": ["02"]}), tmp_path / "b.parquet")
    paths = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    with pytest.raises(DatasetError, match=r"b\.parquet: row 0: .*'02'.*a\.parquet: row 0"):
        _encode(paths, tmp_path / "ds")


def test_a_label_column_named_but_absent_is_an_error(tmp_path: Path, jpg: bytes) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"image": [jpg], "label": ["cat"]}), path)
    typo = EncodeOptions(label_column="lable")
    with pytest.raises(DatasetError, match=r"p\.parquet: no label column 'lable' \(columns: "):
        _encode(str(path), tmp_path / "o1", options=typo)
    hf = datasets.Dataset.from_dict({"image": [jpg], "label": [0]})
    with pytest.raises(DatasetError, match=r"the dataset: no label column 'lable'"):
        _encode(hf, tmp_path / "o2", options=typo)
    # the default column may be absent: the images are unlabelled
    pq.write_table(pa.table({"image": [jpg]}), path)
    _encode(str(path), tmp_path / "o3")
    ds = open_dataset(str(tmp_path / "o3"))
    assert len(ds) == 1 and ds.classes == []


def test_a_second_member_of_one_extension_is_an_error(tmp_path: Path, jpg: bytes) -> None:
    shard = _tar(tmp_path / "s.tar", [("a.jpg", jpg), ("a.cls", b"0"), ("a.JPG", jpg)])
    with pytest.raises(
        DatasetError, match=r"s\.tar: member 'a\.JPG': sample 'a' already has a 'jpg' member"
    ):
        _encode(shard, tmp_path / "ds")
    shard = _tar(tmp_path / "two.tar", [("a.jpg", jpg), ("a.png", jpg)])
    with pytest.raises(DatasetError, match=r"two\.tar: sample 'a' has more than one image member"):
        _encode(shard, tmp_path / "ds")


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE])
def test_a_link_or_device_member_is_an_error(tmp_path: Path, jpg: bytes, kind: bytes) -> None:
    link = tarfile.TarInfo("b.jpg")
    link.type, link.linkname = kind, "a.jpg"
    shard = _tar(tmp_path / "s.tar", [("a.jpg", jpg), link, ("b.cls", b"1")])
    with pytest.raises(DatasetError, match=r"s\.tar: member 'b\.jpg' is a .*not a regular file"):
        _encode(shard, tmp_path / "ds")


def test_a_folder_member_is_ignored(tmp_path: Path, jpg: bytes) -> None:
    folder = tarfile.TarInfo("imgs")
    folder.type = tarfile.DIRTYPE
    shard = _tar(tmp_path / "s.tar", [folder, ("imgs/a.jpg", jpg), ("imgs/a.cls", b"3")])
    _encode(shard, tmp_path / "ds")
    ds = open_dataset(str(tmp_path / "ds"))
    assert ds.names == ["3/a.jpg"] and ds.classes == ["3"]


# -- 9. bounded memory --------------------------------------------------


def test_a_member_larger_than_the_source_limit_is_refused_unread(tmp_path: Path) -> None:
    # a header claiming 1.5 GiB, and no data at all: the size is checked first
    big = tarfile.TarInfo("big.jpg")
    big.size = 3 << 29
    shard = tmp_path / "bomb.tar"
    with gzip.open(shard, "wb") as f:
        f.write(big.tobuf(format=tarfile.GNU_FORMAT))
    assert shard.stat().st_size < 1000
    with pytest.raises(
        DatasetError,
        match=r"bomb\.tar: member 'big\.jpg': 1,610,612,736 bytes is larger than any image",
    ):
        _encode(str(shard), tmp_path / "ds")


def test_the_source_limit_applies_to_each_member(
    tmp_path: Path, jpg: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "MAX_SOURCE_BYTES", len(jpg) - 1)
    shard = _tar(tmp_path / "s.tar", [("a.jpg", jpg), ("a.cls", b"0")])
    with pytest.raises(DatasetError, match=r"s\.tar: member 'a\.jpg': .* is larger than any"):
        _encode(shard, tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.tar"]


def test_samples_are_staged_as_they_are_read(
    tmp_path: Path, jpg: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = [
        _tar(tmp_path / f"s{i}.tar", [(f"k{i}.jpg", jpg), (f"k{i}.cls", b"0")]) for i in (0, 1)
    ]
    staged_when_opened: list[list[str]] = []
    real_open = inputs._open

    def spy(url: str) -> object:
        staged_when_opened.append(sorted(p.name for p in tmp_path.glob(".*staging*/*/*.jpg")))
        return real_open(url)

    monkeypatch.setattr(inputs, "_open", spy)
    _encode(shards, tmp_path / "ds")
    assert staged_when_opened == [[], ["k0.jpg"]]  # the first shard's image is on disk already


@pytest.mark.timeout(30)  # a guard: braceexpand alone lists the names
def test_a_brace_pattern_of_too_many_shards_is_refused_before_expanding(tmp_path: Path) -> None:
    pattern = str(tmp_path / "s-{0000000000..9999999999}.tar")
    with pytest.raises(
        DatasetError, match=re.escape(pattern) + r": the brace pattern stands for 10,000,000,000"
    ):
        _encode(pattern, tmp_path / "ds")


@given(st.text(alphabet="{},.ab1-\\", max_size=10))
def test_a_pattern_expands_to_the_names_braceexpand_makes(pattern: str) -> None:
    from braceexpand import UnbalancedBracesError, braceexpand

    try:
        expected: list[str] | None = list(braceexpand(pattern))
    except UnbalancedBracesError:
        expected = None
    try:
        got: list[str] | None = _braces.expand(pattern)
    except DatasetError:
        got = None
    assert got == expected


@pytest.mark.timeout(30)
@pytest.mark.parametrize("pattern", ["s-{0..999}-{0..999}-{0..1}.tar", "{a,b}{0..999999}.tar"])
def test_a_product_of_ranges_over_the_limit_is_refused(pattern: str) -> None:
    with pytest.raises(DatasetError, match=r"stands for more than the 1,000,000 shards allowed"):
        _braces.expand(pattern)


def test_a_malformed_pattern_is_refused() -> None:
    with pytest.raises(DatasetError, match=r"s-\{0\.\.2\.tar\}\}: not a usable brace pattern"):
        _braces.expand("s-{0..2.tar}}")


# -- 11. one-line errors, never a foreign exception ---------------------


@pytest.mark.parametrize("label", [[1, 2], {"name": "cat"}, 1.5, True])
def test_a_label_of_the_wrong_type_names_the_file_and_row(
    tmp_path: Path, jpg: bytes, label: object, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"image": [jpg], "label": [label]}), path)
    kind = type(label).__name__
    with pytest.raises(DatasetError, match=rf"n\.parquet: row 0: column 'label': label .* {kind},"):
        _encode(str(path), tmp_path / "ds")
    assert main(["encode", str(path), str(tmp_path / "ds"), "--quiet", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "n.parquet: row 0: column 'label'" in err
    assert "Traceback" not in err


def test_an_image_file_name_never_becomes_a_path(tmp_path: Path, jpg: bytes) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    paths = ["..", ".", "", "a\x00.jpg", ".hidden.jpg", "noext", "../../up.jpg"]
    paths += [str(tmp_path / "abs.jpg"), "ok.jpg", "ok.jpg"]
    images = [{"bytes": jpg, "path": p} for p in paths]
    path = tmp_path / "in" / "p.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"image": images}), path)
    out = tmp_path / "a" / "b" / "ds"
    out.parent.mkdir(parents=True)
    before = _tree(tmp_path)
    _encode(str(path), out, options=EncodeOptions(shuffle=False))
    assert sorted(open_dataset(str(out)).names) == [
        "abs.jpg",
        "noext.jpg",
        "ok-9.jpg",
        "ok.jpg",
        "p-00000000.jpg",
        "p-00000001.jpg",
        "p-00000002.jpg",
        "p-00000003.jpg",
        "p-00000004.jpg",
        "up.jpg",
    ]
    after = {k for k in _tree(tmp_path) if k not in before}
    assert after and all(k == "a/b/ds" or k.startswith("a/b/ds/") for k in after)


def test_a_file_that_is_not_parquet_is_named(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 but not really")
    with pytest.raises(DatasetError, match=r"x\.parquet: not a readable Parquet file"):
        _encode(str(path), tmp_path / "ds")


def test_a_dataset_image_path_that_cannot_be_read_is_named(tmp_path: Path, jpg: bytes) -> None:
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({"image": [{"bytes": None, "path": str(tmp_path)}]})
    hf = hf.cast_column("image", datasets.Image())
    with pytest.raises(
        DatasetError,
        match=r"the dataset: row 0: column 'image': cannot read .*: not a regular file",
    ):
        _encode(hf, tmp_path / "ds")
    hf = datasets.Dataset.from_dict({"image": [{"bytes": None, "path": str(tmp_path / "gone")}]})
    hf = hf.cast_column("image", datasets.Image())
    with pytest.raises(DatasetError, match=r"row 0: column 'image': cannot read the image file"):
        _encode(hf, tmp_path / "ds")


def test_cls_text_that_is_not_an_ascii_integer_is_an_error(tmp_path: Path, jpg: bytes) -> None:
    # "²".isdigit() is true but int("²") fails; 5000 digits exceed int()'s limit
    for i, text in enumerate(["²", "9" * 5000, "-7"]):
        shard = _tar(tmp_path / f"s{i}.tar", [("a.jpg", jpg), ("a.cls", text.encode())])
        with pytest.raises(DatasetError, match=rf"s{i}\.tar: a\.cls"):
            _encode(shard, tmp_path / "ds")


def test_ranges_too_large_together_are_refused_before_any_is_expanded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four ranges of a million names each: braceexpand would hold all four million names
    before yielding one, so the pattern is refused without calling it."""
    import braceexpand

    def never(pattern: str) -> None:
        raise AssertionError(f"braceexpand called on {pattern}")

    monkeypatch.setattr(braceexpand, "braceexpand", never)
    pattern = "s-{000000..999999}-{000000..999999}-{000000..999999}-{000000..999999}.tar"
    with pytest.raises(DatasetError, match=r"ranges hold 4,000,000 names together"):
        _braces.expand(pattern)
