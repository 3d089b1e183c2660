"""The sharpness task: patches of photos, half blurred, split by photo and encoded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from pcr_explore.errors import DatasetError
from pcr_explore.read.reader import open_dataset
from pcr_explore.train import sharpness_task


def _detail(a: np.ndarray) -> float:
    """Mean absolute difference between horizontal neighbours: high-frequency energy."""
    g = a.astype(np.float64).mean(axis=2)
    return float(np.abs(np.diff(g, axis=1)).mean())


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four generated 'photos' of fine grey texture on a colour ramp, 64x48 px, as PNG."""
    root = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for i in range(4):
        smooth = np.linspace(0, 120, 64)[None, :, None] + np.zeros((48, 64, 3))
        noise = rng.integers(0, 120, (48, 64, 1))
        Image.fromarray((smooth + noise).astype(np.uint8)).save(root / f"photo{i}.png")
    return root


def test_patches_are_split_by_photo_half_softened_and_encoded(photos: Path, tmp_path: Path) -> None:
    data = sharpness_task(
        photos, tmp_path, patch=16, per_photo=6, sigma=1.0, val_photos=1, workers=1, progress=False
    )
    assert data.classes == ("sharp", "soft")
    assert (data.train_images, data.val_images) == (18, 6)
    train, val = open_dataset(str(data.train)), open_dataset(str(data.val))
    assert np.bincount(train.labels).tolist() == [9, 9] and np.bincount(val.labels).tolist() == [
        3,
        3,
    ]
    stems = {
        side: {p.name.split("-")[0] for p in (data.images / side).rglob("*.jpg")}
        for side in ("train", "val")
    }
    assert len(stems["val"]) == 1 and len(stems["train"]) == 3 and not stems["val"] & stems["train"]
    # A soft patch is the blurred photo's crop, a sharp one the photo's own (up to JPEG).
    for path in (data.images / "train").rglob("*.jpg"):
        stem, y, x = path.stem.split("-")
        photo = Image.open(photos / f"{stem}.png").convert("RGB")
        if path.parent.name == "soft":
            photo = photo.filter(ImageFilter.GaussianBlur(1.0))
        box = (int(x) * 16, int(y) * 16, int(x) * 16 + 16, int(y) * 16 + 16)
        want = np.asarray(photo.crop(box).convert("L"), np.float64)
        got = np.asarray(Image.open(path).convert("L"), np.float64)
        assert np.abs(got - want).mean() < 4.0
    detail = {
        c: np.mean(
            [_detail(np.asarray(Image.open(p))) for p in (data.images / "train" / c).glob("*")]
        )
        for c in ("sharp", "soft")
    }
    assert detail["soft"] < 0.5 * detail["sharp"]
    assert "sigma 1 px" in data.note
    # A second call opens what the first wrote.
    before = (tmp_path / "task.json").stat().st_mtime_ns
    again = sharpness_task(
        photos, tmp_path, patch=16, per_photo=6, sigma=1.0, val_photos=1, workers=1, progress=False
    )
    assert again == data and (tmp_path / "task.json").stat().st_mtime_ns == before


def test_bad_input_is_refused(photos: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not a folder"):
        sharpness_task(tmp_path / "missing", tmp_path / "out")
    with pytest.raises(DatasetError, match="4 photos, need more than val_photos=4"):
        sharpness_task(photos, tmp_path / "out", val_photos=4, patch=16)
    with pytest.raises(DatasetError, match="smaller than one patch"):
        sharpness_task(photos, tmp_path / "out", patch=128, val_photos=1, progress=False)
    with pytest.raises(ValueError, match="sigma > 0"):
        sharpness_task(photos, tmp_path / "out", sigma=0)


def test_without_photos_the_bundled_ones_are_cut(tmp_path: Path) -> None:
    data = sharpness_task(
        None, tmp_path, patch=32, per_photo=2, val_photos=2, workers=1, progress=False
    )
    # scikit-image's 16 photos, written once into out/photos: 14 to train on, 2 to validate
    assert len(list((tmp_path / "photos").rglob("*.jpg"))) == 16
    assert (data.train_images, data.val_images) == (28, 4)
    assert "scikit-image's 16 bundled photos" in data.note
    assert open_dataset(str(data.train)).classes == ["sharp", "soft"]
