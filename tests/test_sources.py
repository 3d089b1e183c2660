"""One interface over datasets, folders and single files."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pcr_explore.encode.encoder import EncodeOptions, encode_dataset
from pcr_explore.read.reader import PCRDataset
from pcr_explore.read.sources import FolderSource, gray_scans_at, open_source


def test_gray_levels_map_onto_colour_levels() -> None:
    assert [gray_scans_at(k) for k in range(1, 11)] == [1, 2, 2, 2, 3, 4, 5, 5, 5, 6]


def test_folder_and_dataset_agree_level_by_level(photo_folder: Path, tmp_path: Path) -> None:
    encode_dataset(
        photo_folder,
        tmp_path / "ds",
        workers=1,
        progress=False,
        options=EncodeOptions(shuffle=False),
    )
    folder, ds = open_source(photo_folder), open_source(tmp_path / "ds")
    assert isinstance(folder, FolderSource) and isinstance(ds, PCRDataset)
    assert folder.names == ds.names and folder.classes == ds.classes
    np.testing.assert_array_equal(folder.labels, ds.labels)
    for i in range(len(folder)):
        np.testing.assert_array_equal(folder.level_bytes(i), ds.level_bytes(i))
        for k in (1, 3, 10):
            assert folder.jpeg_bytes(i, k) == ds.jpeg_bytes(i, k)
        np.testing.assert_array_equal(folder.image(i, 2, size=48), ds.image(i, 2, size=48))
    # The reading verbs agree too: iteration (with a seeded shuffle) and byte totals.
    a = list(folder.iter(scan=4, size=32, shuffle=True, seed=5))
    b = list(ds.iter(scan=4, size=32, shuffle=True, seed=5))
    assert [lab for _, lab in a] == [lab for _, lab in b]
    assert all(np.array_equal(x, y) for (x, _), (y, _) in zip(a, b))
    headers = [ds.header(r).header_len for r in range(len(ds.records))]
    per_level = [ds.bytes_at(k) - sum(headers) for k in range(1, 11)]
    # a dataset's bytes hold each image's pieces; a folder's count whole JPEG files
    # (the pieces plus the EOI marker each)
    assert [folder.bytes_at(k) - 2 * len(folder) for k in range(1, 11)] == per_level
    assert folder.bytes_at(None) == folder.bytes_per_scan()[-1]


def test_single_file_source(
    tmp_path: Path, encode_jpeg: Callable[..., bytes], sk_photo: Callable[..., np.ndarray]
) -> None:
    f = tmp_path / "one.jpg"
    f.write_bytes(encode_jpeg(sk_photo("coffee", 100)))
    src = open_source(f)
    assert isinstance(src, FolderSource) and len(src) == 1 and src.names == ["one.jpg"]
    sizes = src.level_bytes(0)
    assert [len(src.jpeg_bytes(0, k)) for k in range(1, 11)] == sizes.tolist()
    with pytest.raises(ValueError, match="outside 1..10"):
        src.jpeg_bytes(0, 11)
    with pytest.raises(FileNotFoundError):
        open_source(tmp_path / "nope")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not an image file"):
        open_source(tmp_path / "notes.txt")


def test_folder_takes_settings_as_keywords_as_a_dataset_does(photo_folder: Path) -> None:
    folder = open_source(photo_folder)
    assert isinstance(folder, FolderSource)
    with pytest.raises(TypeError, match=r"iter\(\) takes from 1 to 2 positional arguments"):
        folder.iter(3, True)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments"):
        folder.image(0, 3, 64)  # type: ignore[misc]
    assert folder.image(0, 3, size=20).shape[:2] == next(folder.iter(3, size=20))[0].shape[:2]
    # one reading interface: the same names, kinds and defaults as PCRDataset.iter
    assert inspect.signature(FolderSource.iter) == inspect.signature(PCRDataset.iter)
    assert inspect.signature(FolderSource.image) == inspect.signature(PCRDataset.image)
