"""The folder the documented examples run in (``pytest --doctest-modules``).

Every example in ``pcr_explore/`` runs in a fresh working folder of its own
that holds the files the examples name, built once per test session from
scikit-image's photos (the bundled sample's photos, made smaller):

- ``photos/``: fourteen photos in three class folders (``scenes``, ``science``,
  ``textures``), colour and grayscale, the shorter side 176 px (enough for
  5-scale MS-SSIM); two are a stereo pair, near duplicates for the audit;
- ``photo.jpg``: one of them (``photos/scenes/chelsea.jpg``);
- ``photos.pcr``: ``photos/`` encoded, in five records;
- ``train.pcr``, ``val.pcr``: ``photos/`` split (a quarter of each class held out), encoded;
- ``sketches.pcr``: the outlines of four of the photos (another dataset, to mix).

The shared files are links into the session's folder, so an example may
write anything beside them; it must not change them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.doctest import DoctestItem
from PIL import Image, ImageFilter

# class -> photos of the bundled sample (pcr_explore.encode.sample.SAMPLE_CLASSES)
_PHOTOS = {
    "scenes": ["chelsea", "coffee", "astronaut", "camera", "motorcycle_left", "motorcycle_right"],
    "science": ["moon", "cell", "immunohistochemistry", "hubble_deep_field"],
    "textures": ["brick", "grass", "gravel", "coins"],
}
_SHORT_SIDE = 176  # 5-scale MS-SSIM needs 161 px; smaller warns (an error under pytest)
_RECORD = 40_000  # bytes of sources per record: several records, so shuffles and workers share them
_SHARED = ("photos", "photo.jpg", "photos.pcr", "train.pcr", "val.pcr", "sketches.pcr")
# where the quality runner and the audit decide to start worker processes
# (parallel_map), which the examples run without
_POOLED = "pcr_explore._pool.main_is_importable"
# Warnings of third parties that the examples meet (filterwarnings = error elsewhere)
_IGNORED = [
    # DataLoader(num_workers=2) on a machine with fewer cores
    "ignore:This DataLoader will create:UserWarning",
    # torchdata 0.11's StatefulDataLoader calls a function that newer torch deprecates
    "ignore:'set_vital' is deprecated:UserWarning",
]


def _write_photos(folder: Path) -> None:
    from pcr_explore.encode.sample import SAMPLE_CLASSES

    for cls, names in _PHOTOS.items():
        (folder / cls).mkdir(parents=True)
        for name in names:
            im = Image.fromarray(SAMPLE_CLASSES[cls][name]())
            scale = _SHORT_SIDE / min(im.size)
            size = (round(im.width * scale), round(im.height * scale))
            im = im.resize(size, Image.Resampling.LANCZOS)
            im.save(folder / cls / f"{name}.jpg", quality=90)


def _write_sketches(photos: Path, folder: Path) -> None:
    for cls in _PHOTOS:
        (folder / cls).mkdir(parents=True)
    for path in sorted(photos.glob("*/*.jpg"))[::3]:
        with Image.open(path) as im:
            sketch = im.convert("L").filter(ImageFilter.CONTOUR)
        sketch.save(folder / path.parent.name / path.name, quality=90)


def build_doctest_files(root: Path) -> Path:
    """Write the examples' files into *root* (about a second)."""
    from pcr_explore import encode_dataset
    from pcr_explore.train import prepare_split

    _write_photos(root / "photos")
    (root / "photo.jpg").write_bytes((root / "photos" / "scenes" / "chelsea.jpg").read_bytes())
    encode_dataset(
        root / "photos", root / "photos.pcr", record_size=_RECORD, workers=1, progress=False
    )
    split = prepare_split(
        root / "photos",
        root / "split",
        val_fraction=0.25,
        record_size=_RECORD,
        workers=1,
        progress=False,
    )
    os.symlink(split.train, root / "train.pcr")
    os.symlink(split.val, root / "val.pcr")
    _write_sketches(root / "photos", root / "sketches")
    encode_dataset(root / "sketches", root / "sketches.pcr", workers=1, progress=False)
    return root


@pytest.fixture(scope="session")
def doctest_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the examples name, built once per session."""
    return build_doctest_files(tmp_path_factory.mktemp("doctest-files"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Let the documented examples meet the warnings in ``_IGNORED``."""
    for item in items:
        if isinstance(item, DoctestItem):
            for rule in _IGNORED:
                item.add_marker(pytest.mark.filterwarnings(rule))


@pytest.fixture(autouse=True)
def _doctest_folder(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run each documented example in a fresh folder that holds :func:`doctest_files`."""
    if not isinstance(request.node, DoctestItem):
        yield
        return
    files: Path = request.getfixturevalue("doctest_files")
    work: Path = request.getfixturevalue("tmp_path")
    for name in _SHARED:
        os.symlink(files / name, work / name)
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    monkeypatch.chdir(work)
    # Per-image work runs in this process, as for a script read from stdin: a pool of
    # worker processes takes seconds to start on a busy machine, and the results are the
    # same (tests/test_pool.py, test_quality.py and test_audit.py run the pools).
    monkeypatch.setattr(_POOLED, lambda: False)
    torch = _torch()
    if torch is None:
        yield
        return
    # PyTorch on one thread: the examples' tensors are tiny, and on a busy machine two
    # threads wait on each other (tune_by_gradient on photos.pcr, measured on this 2-core
    # machine under a load of 8: 9 s on two threads, 1 s on one)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _torch() -> Any:
    """PyTorch, or None where it is not installed."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch
