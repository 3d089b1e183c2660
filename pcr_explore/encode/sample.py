"""The bundled sample dataset: scikit-image's photographs as a small PCR dataset.

Nothing is downloaded: the photos ship inside scikit-image. They are saved
as baseline JPEGs (quality 90) in three class folders, mixing colour and
grayscale, then encoded, so every demo and notebook has real data to show.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from .._public import public
from .encoder import encode_dataset

__all__ = ["SAMPLE_CLASSES", "write_sample_images", "build_sample"]


def _photo(name: str, side: int | None = None) -> Callable[[], np.ndarray]:
    """A loader of scikit-image's photo *name* (of a stereo pair's *side*)."""

    def load() -> np.ndarray:
        from skimage import data

        photo = getattr(data, name)()
        return photo if side is None else photo[side]

    return load


# class -> {file stem: loader}; colour and grayscale photos mixed on purpose.
SAMPLE_CLASSES: dict[str, dict[str, Callable[[], np.ndarray]]] = {
    "scenes": {
        "astronaut": _photo("astronaut"),
        "coffee": _photo("coffee"),
        "rocket": _photo("rocket"),
        "chelsea": _photo("chelsea"),
        "motorcycle_left": _photo("stereo_motorcycle", 0),
        "motorcycle_right": _photo("stereo_motorcycle", 1),
        "camera": _photo("camera"),
    },
    "science": {
        "hubble_deep_field": _photo("hubble_deep_field"),
        "immunohistochemistry": _photo("immunohistochemistry"),
        "retina": _photo("retina"),
        "moon": _photo("moon"),
        "cell": _photo("cell"),
    },
    "textures": {
        "brick": _photo("brick"),
        "grass": _photo("grass"),
        "gravel": _photo("gravel"),
        "coins": _photo("coins"),
    },
}

_MAX_SIDE = 768  # keep the sample light: the retina photo is 1411 px square


def write_sample_images(folder: str | os.PathLike[str], quality: int = 90) -> Path:
    """Save the sample photos as baseline JPEGs under ``folder/<class>/``.

    Files that already exist are left alone, so this is cheap to repeat.
    """
    root = Path(folder)
    for cls, photos in SAMPLE_CLASSES.items():
        (root / cls).mkdir(parents=True, exist_ok=True)
        for stem, load in photos.items():
            path = root / cls / f"{stem}.jpg"
            if path.exists():
                continue
            im = Image.fromarray(load())
            if max(im.size) > _MAX_SIDE:
                im.thumbnail((_MAX_SIDE, _MAX_SIDE), Image.Resampling.LANCZOS)
            tmp = path.with_suffix(".tmp")
            im.save(tmp, "JPEG", quality=quality)
            os.replace(tmp, path)
    return root


@public("pcr_explore")
def build_sample(
    out: str | os.PathLike[str] = "data/sample",
    *,
    record_size: int = 256 * 1024,
    workers: int | None = None,
    progress: bool = True,
) -> Path:
    """Build the sample dataset: ``out/images`` (sources) and ``out/pcr``.

    An existing, complete ``out/pcr`` is kept as it is.

    Returns
    -------
    Path
        The PCR dataset folder (``out/pcr``).

    Examples
    --------
    >>> from pcr_explore import open_dataset
    >>> open_dataset(build_sample("data/sample"))
    <PCRDataset 'data/sample/pcr': 16 images, 4 records, 10 scans, 3 classes>
    """
    root = Path(out)
    images = write_sample_images(root / "images")
    pcr = root / "pcr"
    if not (pcr / "manifest.json").exists():
        encode_dataset(images, pcr, record_size=record_size, workers=workers, progress=progress)
    return pcr
