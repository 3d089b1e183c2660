"""Labelled images for the swap training runs: photos given by the caller, split, in memory.

The photos come from an object that lists their names, labels and classes
and yields them decoded (``iter``), as a PCR dataset or a folder of class
sub-folders does once :func:`pcr_explore.open_source` has opened it; given a
path, this module finds the sides (``train/`` and ``val/``) and asks the
caller's *opener* to open them, and reads no file itself. Photos given with
a validation side keep that split; otherwise they are split by a hash of
each image's name (the same on every machine). Images come at full quality,
squashed to ``size`` x ``size`` RGB.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..._public import public
from ...errors import DatasetError, SwapError, no_such_path
from ._torch_ops import require_torch

__all__ = [
    "LabelledImages",
    "LabelledPhotos",
    "load_labelled_images",
    "ImageBatches",
    "evaluate",
    "inputs",
]

_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)


class LabelledPhotos(Protocol):
    """Photos with class labels, as ``pcr_explore.open_source`` opens a dataset or a folder."""

    classes: list[str]

    @property
    def names(self) -> list[str]: ...

    @property
    def labels(self) -> np.ndarray: ...

    def iter(
        self, scan: None = None, *, size: tuple[int, int], mode: str, workers: int
    ) -> Iterator[tuple[np.ndarray, int]]: ...


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class LabelledImages:
    """Training and validation images in memory.

    Attributes
    ----------
    train_x, val_x : ndarray of uint8, shape (N, 3, size, size)
    train_y, val_y : ndarray of int64
    classes : tuple of str
    source : str
    """

    train_x: np.ndarray
    train_y: np.ndarray
    val_x: np.ndarray
    val_y: np.ndarray
    classes: tuple[str, ...]
    source: str

    def __repr__(self) -> str:
        return (
            f"<LabelledImages {self.source}: {len(self.train_y)} training, {len(self.val_y)} "
            f"validation images, {len(self.classes)} classes, {self.train_x.shape[-1]} px>"
        )


def _hash(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()


def _decoded(
    photos: LabelledPhotos, size: int, workers: int
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Images (N, 3, size, size), labels, names and classes of *photos*."""
    names, labels, classes = list(photos.names), np.asarray(photos.labels), list(photos.classes)
    where = getattr(photos, "url", type(photos).__name__)
    if not classes or (labels < 0).any():
        raise DatasetError(f"{where}: every image must sit in a class sub-folder")
    arrays = [img for img, _ in photos.iter(None, size=(size, size), mode="RGB", workers=workers)]
    if not arrays:
        raise DatasetError(f"{where}: no images")
    x = np.ascontiguousarray(np.stack(arrays).transpose(0, 3, 1, 2))
    return x, labels.astype(np.int64), names, classes


def _side(
    photos: LabelledPhotos, size: int, per_class: int | None, workers: int
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """One side of a given split: images, labels and classes, at most *per_class* a class."""
    x, y, names, classes = _decoded(photos, size, workers)
    if per_class is None:
        return x, y, classes
    order = np.array(sorted(range(len(names)), key=lambda i: _hash(names[i])), dtype=np.int64)
    keep = _at_most(order, y, len(classes), per_class)  # in hash order
    return x[keep], y[keep], classes


def _split(
    y: np.ndarray, names: list[str], classes: list[str], val_fraction: float, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation indices: per class, in hash order, the first share validates."""
    is_val = np.zeros(len(names), dtype=bool)
    for c in range(len(classes)):
        members = sorted(np.flatnonzero(y == c), key=lambda i: _hash("val:" + names[i]))
        k = max(1, int(round(len(members) * val_fraction)))
        if k >= len(members):
            raise DatasetError(
                f"{where}: class {classes[c]!r} has too few images ({len(members)}) for a split"
            )
        is_val[members[:k]] = True
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)


def _at_most(idx: np.ndarray, y: np.ndarray, classes: int, per_class: int) -> np.ndarray:
    """The first *per_class* of each class's indices in *idx*, sorted."""
    return np.sort(np.concatenate([idx[y[idx] == c][:per_class] for c in range(classes)]))


#: ``opener(path)`` -> the LabelledPhotos at *path* (typed loosely: ``open_source``
#: promises a LevelSource, whose protocol does not list ``iter``).
Opener = Callable[[Path], Any]


def _opened(
    path: str | os.PathLike[str], opener: Opener | None
) -> tuple[LabelledPhotos, LabelledPhotos | None]:
    """The photos of *path*, and its validation side if it has one, opened by *opener*."""
    if opener is None:
        raise SwapError(
            f"{os.fspath(path)}: a path needs opener= to open its photos, as in "
            "load_labelled_images(path, opener=pcr_explore.open_source), or open them first"
        )
    root = Path(path)
    sides = [(root / "train", root / "val"), (root / "train.pcr", root / "val.pcr")]
    split = next(((t, v) for t, v in sides if t.is_dir() and v.is_dir()), None)
    if split is not None:
        return opener(split[0]), opener(split[1])
    if not root.exists():
        raise no_such_path(root)
    if not root.is_dir():
        raise DatasetError(f"{root}: is a file, not a folder of images or a PCR dataset")
    return opener(root), None


@public("pcr_explore.swap")
def load_labelled_images(
    photos: LabelledPhotos | str | os.PathLike[str],
    *,
    opener: Opener | None = None,
    val: LabelledPhotos | None = None,
    size: int = 48,
    per_class: int | None = None,
    val_fraction: float = 0.2,
    workers: int = 2,
    source: str | None = None,
) -> LabelledImages:
    """Decode labelled photos into memory, split into training and validation.

    Parameters
    ----------
    photos : LabelledPhotos or path
        The photos: an object with ``names``, ``labels``, ``classes`` and
        ``iter(scan, size=, mode=, workers=)``, as
        :func:`pcr_explore.open_source` returns for a PCR dataset or a
        folder of class sub-folders; split by a hash of each name unless
        *val* is given. Or a path, opened by *opener*: a folder with
        ``train/`` and ``val/`` (each a folder of class sub-folders or a
        PCR dataset) or with ``train.pcr/`` and ``val.pcr/`` (as
        :func:`pcr_explore.train.prepare_split` writes), a folder of class
        sub-folders, or a PCR dataset.
    opener : callable, optional
        ``opener(path)`` returns the photos at *path*; needed for a path
        (pass :func:`pcr_explore.open_source`).
    val : LabelledPhotos, optional
        The validation photos, when they are kept apart (``train/`` and
        ``val/``, or ``train.pcr`` and ``val.pcr``); *photos* then trains.
    size : int
        Side of the square images, pixels.
    per_class : int, optional
        At most this many images per class on each side (hash order).
    val_fraction : float
        Share of each class kept for validation when there is no *val*.
    workers : int
        Decoding threads.
    source : str, optional
        What the images are called in reports (default: the path, or the
        photos' ``url``).

    Returns
    -------
    LabelledImages

    Raises
    ------
    DatasetError
        If an image has no class, a class has too few images to split, the
        two sides have different classes, *path* is a file, or *size* or
        *val_fraction* is out of range.
    FileNotFoundError
        If *path* does not exist.
    SwapError
        If *photos* is a path and no *opener* is given.

    Examples
    --------
    >>> from pcr_explore import open_source
    >>> images = load_labelled_images(open_source("photos/"), size=32)
    >>> images.classes, images.train_x.shape[1:]
    (('scenes', 'science', 'textures'), (3, 32, 32))
    >>> split = load_labelled_images(open_source("train.pcr"), val=open_source("val.pcr"))
    >>> len(split.train_y) + len(split.val_y)
    14
    >>> load_labelled_images("photos/", opener=open_source, size=32)  # a path, opened
    <LabelledImages photos: 11 training, 3 validation images, 3 classes, 32 px>
    """
    if size < 8:
        raise DatasetError(f"image size must be >= 8 pixels, got {size}")
    if not 0 < val_fraction < 1:
        raise DatasetError(f"val_fraction must lie in (0, 1), got {val_fraction}")
    if isinstance(photos, str | os.PathLike):
        source = source or str(Path(photos))
        photos, found = _opened(photos, opener)
        val = val if found is None else found
    name = source or str(getattr(photos, "url", "photos"))
    if val is not None:
        tx, ty, tc = _side(photos, size, per_class, workers)
        vx, vy, vc = _side(val, size, per_class, workers)
        if tc != vc:
            raise DatasetError(f"{name}: train and val classes differ: {tc} vs {vc}")
        return LabelledImages(tx, ty, vx, vy, tuple(tc), name)
    x, y, names, classes = _decoded(photos, size, workers)
    tr, va = _split(y, names, classes, val_fraction, name)
    if per_class is not None:
        tr, va = (_at_most(i, y, len(classes), per_class) for i in (tr, va))
    return LabelledImages(x[tr], y[tr], x[va], y[va], tuple(classes), name)


def inputs(torch: Any, x: np.ndarray) -> Any:
    """uint8 NCHW images as normalised float input (ImageNet mean and deviation)."""
    mean = torch.tensor(_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(_STD).view(1, 3, 1, 1)
    return (torch.from_numpy(x).float() / 255.0 - mean) / std


class ImageBatches:
    """Training batches of *images*, a new seeded order on each pass (the last partial dropped).

    Re-iterable, so :func:`~pcr_explore.swap.capture.train_capture.capture_training`
    can run several epochs over it; batches are normalised float tensors and
    labels, as :func:`~pcr_explore.swap.training.codec_training.train_run` feeds them.

    Parameters
    ----------
    images : LabelledImages
    batch_size : int
    seed : int

    Examples
    --------
    >>> from pcr_explore.swap import build_net, capture_training
    >>> from pcr_explore import open_source
    >>> images = load_labelled_images(open_source("photos/"), size=48)
    >>> batches = ImageBatches(images, 4)
    >>> len(batches)  # 11 training images: two whole batches a pass
    2
    >>> net = build_net("resnet-small", num_classes=3)
    >>> cap = capture_training(net, loader=batches, steps=4, every=3)
    """

    def __init__(self, images: LabelledImages, batch_size: int = 32, seed: int = 0) -> None:
        torch = require_torch("ImageBatches")
        n = len(images.train_y)
        if not 1 <= batch_size <= n:
            raise SwapError(f"batch_size must lie in [1, {n}] (training images), got {batch_size}")
        self._x, self._y = inputs(torch, images.train_x), torch.from_numpy(images.train_y)
        self._gen = torch.Generator().manual_seed(seed)
        self._torch, self.batch_size = torch, batch_size

    def __getstate__(self) -> dict[str, Any]:
        # the batches and the order's state, not the torch module: so a results cache
        # can key a capture by its batches, and a pickled copy goes on where this one is
        return {
            "x": self._x,
            "y": self._y,
            "generator": self._gen.get_state(),
            "batch_size": self.batch_size,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        torch = require_torch("ImageBatches")
        self._x, self._y, self.batch_size = state["x"], state["y"], state["batch_size"]
        self._gen = torch.Generator()
        self._gen.set_state(state["generator"])
        self._torch = torch

    def __len__(self) -> int:
        return len(self._y) // self.batch_size

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        order = self._torch.randperm(len(self._y), generator=self._gen)
        for k in range(len(self)):
            idx = order[k * self.batch_size : (k + 1) * self.batch_size]
            yield self._x[idx], self._y[idx]


def evaluate(model: Any, images: LabelledImages) -> tuple[float, float]:
    """Top-1 accuracy and mean cross-entropy of *model* on the validation images.

    Parameters
    ----------
    model : torch.nn.Module
    images : LabelledImages

    Returns
    -------
    accuracy, loss : float

    Examples
    --------
    >>> from pcr_explore.swap import build_net
    >>> from pcr_explore import open_source
    >>> images = load_labelled_images(open_source("photos/"), size=48)
    >>> accuracy, loss = evaluate(build_net("small-cnn", num_classes=3), images)
    >>> 0.0 <= accuracy <= 1.0 and loss > 0.0
    True
    """
    torch = require_torch("evaluate")
    model.eval()
    correct, total = 0, 0.0
    with torch.no_grad():
        for s in range(0, len(images.val_y), 256):
            out = model(inputs(torch, images.val_x[s : s + 256]))
            yy = torch.from_numpy(images.val_y[s : s + 256])
            correct += int((out.argmax(1) == yy).sum())
            total += float(torch.nn.functional.cross_entropy(out, yy, reduction="sum"))
    model.train()
    m = max(1, len(images.val_y))
    return correct / m, total / m
