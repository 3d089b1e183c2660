"""A task where fine detail decides: sharp photo patches against slightly softened ones.

Patches are cut from real photographs (the Kodak set, say); each is kept as
the camera gave it ("sharp") or taken from the same photo blurred by a small
Gaussian ("soft"). Telling them apart needs the finest detail, the high
frequencies the first scan levels leave out, so there the low levels cost
accuracy: the counterpart of the flower photos, where level 1 is enough.
Photos are split between training and validation whole, so no validation
patch shares a photo with a training one. Without a folder of photos,
scikit-image's bundled ones (the sample dataset's) are used: nothing is
downloaded.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from pathlib import Path

import numpy as np

from .._public import public
from ..encode.sample import write_sample_images
from ..errors import DatasetError
from ..storage._atomic import atomic_write
from .flowers import SplitDatasets, _read_stamp, prepare_split

__all__ = ["sharpness_task"]

CLASSES = ("sharp", "soft")
_PHOTO_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")
_TASK_VERSION = 1


def _photos(folder: Path, *, nested: bool = False) -> list[Path]:
    """The photos in *folder* (and, *nested*, in its sub-folders), by name."""
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a folder of photos")
    found = folder.rglob("*") if nested else folder.iterdir()
    return sorted(
        (p for p in found if p.is_file() and p.suffix.lower() in _PHOTO_SUFFIXES),
        key=lambda p: p.name,
    )


def _cut(
    photo: Path, out: Path, *, patch: int, count: int, sigma: float, quality: int, seed: int
) -> None:
    """*count* patches of *photo*, each sharp or soft at random, as JPEGs in out/<class>/."""
    from PIL import Image, ImageFilter

    with Image.open(photo) as im:
        sharp = im.convert("RGB")
    soft = sharp.filter(ImageFilter.GaussianBlur(sigma))  # the whole photo: no edge effects
    cols, rows = sharp.width // patch, sharp.height // patch
    if cols * rows == 0:
        raise DatasetError(f"{photo}: {sharp.width}x{sharp.height} px, smaller than one patch")
    rng = np.random.default_rng([seed, *photo.name.encode()])
    cells = rng.permutation(cols * rows)[:count]
    kinds = rng.permutation(np.arange(len(cells)) % 2)  # as many sharp as soft
    for c in CLASSES:
        (out / c).mkdir(parents=True, exist_ok=True)
    for cell, kind in zip(cells.tolist(), kinds.tolist()):
        y, x = divmod(cell, cols)
        box = (x * patch, y * patch, (x + 1) * patch, (y + 1) * patch)
        buf = io.BytesIO()
        (sharp, soft)[kind].crop(box).save(buf, "JPEG", quality=quality)
        name = f"{photo.stem}-{y:02d}-{x:02d}.jpg"
        atomic_write(out / CLASSES[kind] / name, buf.getvalue())


@public("pcr_explore.train")
def sharpness_task(
    photos: str | os.PathLike[str] | None,
    out: str | os.PathLike[str],
    *,
    patch: int = 64,
    per_photo: int = 48,
    sigma: float = 1.0,
    val_photos: int = 6,
    quality: int = 90,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
) -> SplitDatasets:
    """Sharp against softened patches of photos, as training and validation PCR datasets.

    Every photo gives *per_photo* patches of *patch* x *patch* pixels from a
    grid over it, half of them ("soft") from the photo blurred by a Gaussian
    of *sigma* pixels, half ("sharp") untouched; each is saved as a JPEG of
    *quality* and encoded. *val_photos* photos, drawn by *seed*, give the
    validation patches. Train at ``size=patch``, so that no resizing blurs
    the sharp ones too. The result is cached in *out*.

    Parameters
    ----------
    photos : path or None
        A folder of photographs (PNG, JPEG, TIFF, BMP), each at least one
        patch wide and high. None: scikit-image's 16 bundled photographs
        (:func:`~pcr_explore.build_sample`'s), written once into
        ``out/photos``; no network needed.
    out : path
        Folder for ``images/train``, ``images/val``, ``train.pcr``, ``val.pcr``.
    patch : int
        Side of a patch, in pixels.
    per_photo : int
        Patches per photo (at most the grid's cells).
    sigma : float
        Standard deviation of the blur, in pixels: the smaller, the finer
        the detail that tells the classes apart.
    val_photos : int
        Photos whose patches are the validation set.
    quality : int
        JPEG quality of the patches.
    seed : int
        Draws the validation photos, the patches and their classes.
    workers : int, optional
        Encoder processes.
    progress : bool
        Show the encoder's progress bars.

    Returns
    -------
    SplitDatasets
        Classes ``("sharp", "soft")``.

    Raises
    ------
    DatasetError
        If *photos* is not a folder, has too few photos for the split, or
        holds one smaller than a patch.
    ValueError
        If *patch*, *per_photo*, *sigma*, *val_photos* or *quality* is out of
        range.

    Examples
    --------
    >>> data = sharpness_task("photos/scenes", "sharpness", patch=64, per_photo=4, val_photos=2)
    >>> print(data)
    16 training and 8 validation images in 2 classes (sharp, soft): sharpness/train.pcr, ...
    >>> from pcr_explore import budget
    >>> report = budget(data.train, val=data.val, size=64, train_epochs=1)
    """
    if patch < 8 or per_photo < 2 or sigma <= 0 or val_photos < 1 or not 1 <= quality <= 100:
        raise ValueError(
            "need patch >= 8, per_photo >= 2, sigma > 0, val_photos >= 1 and quality in 1..100; "
            f"got {patch}, {per_photo}, {sigma}, {val_photos}, {quality}"
        )
    dst = Path(out)
    if photos is None:
        src = write_sample_images(dst / "photos")
        found = _photos(src, nested=True)
    else:
        src = Path(photos)
        found = _photos(src)
    if len(found) <= val_photos:
        raise DatasetError(
            f"{src}: {len(found)} photos, need more than val_photos={val_photos} to split"
        )
    stamp = {
        "version": _TASK_VERSION,
        "photos": [p.name for p in found],
        "source": str(src.resolve()),
        **dict(patch=patch, per_photo=per_photo, sigma=sigma, val_photos=val_photos),
        **dict(quality=quality, seed=seed),
    }
    images = dst / "images"
    stamp_file = dst / "task.json"
    if _read_stamp(stamp_file) != stamp:
        import shutil

        shutil.rmtree(images, ignore_errors=True)
        val = set(np.random.default_rng(seed).permutation(len(found))[:val_photos].tolist())
        for i, photo in enumerate(found):
            side = images / ("val" if i in val else "train")
            _cut(photo, side, patch=patch, count=per_photo, sigma=sigma, quality=quality, seed=seed)
        atomic_write(stamp_file, json.dumps(stamp, indent=1).encode())
    data = prepare_split(images, dst, seed=seed, workers=workers, progress=progress)
    where = (
        f"scikit-image's {len(found)} bundled photos"
        if photos is None
        else f"{len(found)} photos in {src}"
    )
    note = (
        f"{patch}x{patch} px patches of {where}, half blurred by a "
        f"Gaussian of sigma {sigma:g} px; validation from {val_photos} photos not trained on"
    )
    return dataclasses.replace(data, images=images, note=note)
