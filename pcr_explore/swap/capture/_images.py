"""Labelled images for the swap training runs: a folder or a PCR dataset, decoded small.

A folder with ``train/`` and ``val/`` keeps that split; a folder of class
sub-folders or a PCR dataset is split by a hash of each image's name (the
same on every machine). Images are decoded at full quality, squashed to
``size`` x ``size`` RGB (DCT-domain scaling where they shrink by half).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._public import public
from ...encode.discover import find_sources
from ...errors import DatasetError, SwapError, no_such_path
from ...jpeg import decode
from ...read.reader import open_dataset
from ...records.manifest import MANIFEST
from ._torch_ops import require_torch

__all__ = ["LabelledImages", "load_labelled_images", "ImageBatches", "evaluate", "inputs"]

_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)


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


def _pick(names: list[str], labels: list[int], per_class: int | None) -> list[int]:
    """Indices in hash order per class, at most *per_class* of each."""
    order = sorted(range(len(names)), key=lambda i: _hash(names[i]))
    if per_class is None:
        return sorted(order)
    count: dict[int, int] = {}
    keep = []
    for i in order:
        if count.get(labels[i], 0) < per_class:
            count[labels[i]] = count.get(labels[i], 0) + 1
            keep.append(i)
    return sorted(keep)


def _decode_all(blobs: Iterable[tuple[str, bytes]], size: int, workers: int) -> np.ndarray:
    def one(item: tuple[str, bytes]) -> np.ndarray:
        return decode(item[1], size=(size, size), mode="RGB", source=item[0])

    with ThreadPoolExecutor(max(1, workers)) as pool:
        arrays = list(pool.map(one, blobs))
    return np.ascontiguousarray(np.stack(arrays).transpose(0, 3, 1, 2))


def _side(root: Path, size: int, per_class: int | None, workers: int) -> tuple:
    """Images, labels, names and classes of a folder or a PCR dataset."""
    if (root / MANIFEST).exists():
        ds = open_dataset(str(root))
        names, labels = list(ds.names), [int(v) for v in ds.labels]
        idx = _pick(names, labels, per_class)
        blobs = ((names[i], ds.jpeg_bytes(i)) for i in idx)
        classes = list(ds.classes)
    else:
        items, classes = find_sources(root)
        if not classes or any(it.label is None for it in items):
            raise DatasetError(f"{root}: every image must sit in a class sub-folder")
        names = [it.name for it in items]
        labels = [classes.index(str(it.label)) for it in items]
        idx = _pick(names, labels, per_class)
        blobs = ((names[i], (root / names[i]).read_bytes()) for i in idx)
    x = _decode_all(blobs, size, workers)
    return x, np.array([labels[i] for i in idx], dtype=np.int64), [names[i] for i in idx], classes


@public("pcr_explore.swap")
def load_labelled_images(
    path: str | os.PathLike[str],
    *,
    size: int = 48,
    per_class: int | None = None,
    val_fraction: float = 0.2,
    workers: int = 2,
) -> LabelledImages:
    """Decode a labelled image set into memory, split into training and validation.

    Parameters
    ----------
    path : path
        A folder with ``train/`` and ``val/`` (each a folder of class
        sub-folders or a PCR dataset) or with ``train.pcr/`` and
        ``val.pcr/`` (as :func:`pcr_explore.train.prepare_split` writes), a
        folder of class sub-folders, or a PCR dataset.
    size : int
        Side of the square images, pixels.
    per_class : int, optional
        At most this many images per class on each side (hash order).
    val_fraction : float
        Share of each class kept for validation when *path* is not split.
    workers : int
        Decoding threads.

    Returns
    -------
    LabelledImages

    Raises
    ------
    DatasetError
        If *path* is not one of those, an image does not decode, or the two
        sides have different classes.
    """
    root = Path(path)
    if size < 8:
        raise DatasetError(f"image size must be >= 8 pixels, got {size}")
    if not 0 < val_fraction < 1:
        raise DatasetError(f"val_fraction must lie in (0, 1), got {val_fraction}")
    sides = [(root / "train", root / "val"), (root / "train.pcr", root / "val.pcr")]
    split = next(((t, v) for t, v in sides if t.is_dir() and v.is_dir()), None)
    if split is not None:
        tx, ty, _, tc = _side(split[0], size, per_class, workers)
        vx, vy, _, vc = _side(split[1], size, per_class, workers)
        if tc != vc:
            raise DatasetError(f"{root}: train and val classes differ: {tc} vs {vc}")
        return LabelledImages(tx, ty, vx, vy, tuple(tc), str(root))
    if not root.exists():
        raise no_such_path(root)
    if not root.is_dir():
        raise DatasetError(f"{root}: is a file, not a folder of images or a PCR dataset")
    x, y, names, classes = _side(root, size, None, workers)
    # per class, in hash order: the first round(n * val_fraction) (at least one) validate
    is_val = np.zeros(len(names), dtype=bool)
    for c in range(len(classes)):
        members = sorted(np.flatnonzero(y == c), key=lambda i: _hash("val:" + names[i]))
        k = max(1, int(round(len(members) * val_fraction)))
        if k >= len(members):
            raise DatasetError(
                f"{root}: class {classes[c]!r} has too few images ({len(members)}) for a split"
            )
        is_val[members[:k]] = True
    tr, va = np.flatnonzero(~is_val), np.flatnonzero(is_val)
    if per_class is not None:
        tr = np.concatenate([tr[y[tr] == c][:per_class] for c in range(len(classes))])
        va = np.concatenate([va[y[va] == c][:per_class] for c in range(len(classes))])
        tr.sort()
        va.sort()
    return LabelledImages(x[tr], y[tr], x[va], y[va], tuple(classes), str(root))


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
    >>> images = load_labelled_images("photos/", size=48)
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
    >>> images = load_labelled_images("photos/", size=48)
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
