"""The pieces of a training run: read a level into memory, one epoch, evaluate.

:func:`train_at_levels` is built from these; they are public so that a test
(or a user) can feed the same loop with images from anywhere, for example
source JPEGs decoded by Pillow, and compare loss for loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_scan
from .._public import public
from ..read.reader import PCRDataset
from ._torch import require_torch

__all__ = ["LevelImages", "read_level", "stack_images", "to_input", "train_epoch", "evaluate"]

# ImageNet statistics: a common, fixed normalisation for 8-bit RGB input.
_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)


@public("pcr_explore.train")
@dataclass(frozen=True)
class LevelImages:
    """A dataset read at one level, decoded into memory.

    Attributes
    ----------
    images : torch.Tensor
        ``uint8`` of shape (N, 3, size, size), in dataset order.
    labels : torch.Tensor
        ``int64`` of shape (N,).
    scan : int
        The level read.
    bytes_read : int
        Bytes fetched from storage for this pass (headers included).
    seconds : float
        Wall time of reading and decoding.
    """

    images: Any
    labels: Any
    scan: int
    bytes_read: int
    seconds: float


@public("pcr_explore.train")
def stack_images(arrays: list[np.ndarray], labels: list[int]) -> tuple[Any, Any]:
    """Stack (H, W, 3) ``uint8`` arrays and labels into NCHW and label tensors.

    Parameters
    ----------
    arrays : list of numpy.ndarray
        Images of one shape (H, W, 3), ``uint8``.
    labels : list of int
        One label per image.

    Returns
    -------
    images : torch.Tensor
        ``uint8`` (N, 3, H, W).
    labels : torch.Tensor
        ``int64`` (N,).

    Raises
    ------
    ValueError
        If *arrays* is empty or the counts differ.

    Examples
    --------
    >>> x, y = stack_images([np.zeros((4, 4, 3), np.uint8)], [1])
    >>> tuple(x.shape), y.tolist()
    ((1, 3, 4, 4), [1])
    """
    torch = require_torch("stack_images")
    if not arrays or len(arrays) != len(labels):
        raise ValueError(
            f"need one label per image and at least one image, got "
            f"{len(arrays)} images and {len(labels)} labels"
        )
    batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).contiguous()
    return batch, torch.as_tensor(labels, dtype=torch.int64)


@public("pcr_explore.train")
def read_level(
    dataset: PCRDataset, *, scan: int | None, size: int, workers: int = 2
) -> LevelImages:
    """Read and decode every image of *dataset* at level *scan*, as tensors.

    One pass through the reader: each record is one prefix read of its header
    and scan groups ``1..scan``; images are decoded to *size* x *size* RGB in
    *workers* threads (in the DCT domain when they shrink by half or more).

    Parameters
    ----------
    dataset : PCRDataset
        An open dataset (possibly :func:`~pcr_explore.train.throttled`).
    scan : int or None
        Level to read (None: full quality).
    size : int
        Side of the square output images, in pixels.
    workers : int
        Decoding threads.

    Returns
    -------
    LevelImages

    Raises
    ------
    ValueError
        If *scan* is out of range or the dataset is empty.

    Examples
    --------
    >>> from pcr_explore import open_dataset
    >>> level = read_level(open_dataset("photos.pcr"), scan=2, size=64)
    >>> level.bytes_read == open_dataset("photos.pcr").bytes_at(2)
    True
    """
    k = check_scan(scan, dataset.num_scans, where=dataset.url, full=True)
    before = dataset.stats.bytes_read
    t0 = time.perf_counter()
    pairs = list(dataset.iter(k, size=(size, size), mode="RGB", workers=workers))
    images, targets = stack_images([img for img, _ in pairs], [label for _, label in pairs])
    seconds = time.perf_counter() - t0
    return LevelImages(images, targets, k, dataset.stats.bytes_read - before, seconds)


@public("pcr_explore.train")
def to_input(images: Any) -> Any:
    """``uint8`` NCHW images as the normalised float tensor a model takes.

    Parameters
    ----------
    images : torch.Tensor
        ``uint8`` (N, 3, H, W).

    Returns
    -------
    torch.Tensor
        ``float32``, each channel shifted and scaled by ImageNet's mean and
        standard deviation.

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.

    Examples
    --------
    >>> import torch
    >>> x = to_input(torch.full((1, 3, 2, 2), 255, dtype=torch.uint8))
    >>> round(float(x[0, 0, 0, 0]), 3)
    2.249
    """
    torch = require_torch("to_input")
    mean = torch.tensor(_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(_STD).view(1, 3, 1, 1)
    return (images.float() / 255.0 - mean) / std


@public("pcr_explore.train")
def train_epoch(
    model: Any,
    optimizer: Any,
    images: Any,
    labels: Any,
    *,
    batch_size: int,
    generator: Any,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    flip: bool = True,
    on_step: Callable[[Any, Any, Any], None] | None = None,
) -> float:
    """One epoch of mini-batch training in the order *generator* draws.

    Parameters
    ----------
    model : torch.nn.Module
        Trained in place.
    optimizer : torch.optim.Optimizer
        Stepped once per batch.
    images, labels : torch.Tensor
        ``uint8`` (N, 3, H, W) and ``int64`` (N,).
    batch_size : int
        Images per step (the last batch may be smaller).
    generator : torch.Generator
        Draws the epoch's order and the flips: the same generator state gives
        the same epoch.
    loss_fn : callable, optional
        ``loss_fn(logits, labels)``; default cross-entropy.
    flip : bool
        Flip a random half of each batch horizontally (augmentation).
    on_step : callable, optional
        ``on_step(indices, flips, rng_state)``, called after each batch's
        backward pass and before the optimiser steps, while every parameter's
        ``.grad`` holds the batch's gradient at the current weights: the
        batch's image indices, its flip mask (None without *flip*) and the
        CPU random state the forward pass started from (for example a
        :class:`~pcr_explore.train.StepTuner`).

    Returns
    -------
    float
        Mean training loss over the epoch's images.

    Examples
    --------
    >>> import torch
    >>> from pcr_explore import open_dataset
    >>> from pcr_explore.train import small_cnn
    >>> train = read_level(open_dataset("train.pcr"), scan=5, size=64)
    >>> net = small_cnn(3)
    >>> opt = torch.optim.SGD(net.parameters(), lr=0.01)
    >>> g = torch.Generator().manual_seed(0)
    >>> loss = train_epoch(net, opt, train.images, train.labels, batch_size=32, generator=g)
    >>> print(f"mean loss {loss:.2f}")
    mean loss ...
    """
    torch = require_torch("train_epoch")
    loss_fn = loss_fn or torch.nn.functional.cross_entropy
    n = len(labels)
    order = torch.randperm(n, generator=generator)
    flips = torch.rand(n, generator=generator) < 0.5 if flip else None
    model.train()
    total = 0.0
    for start in range(0, n, batch_size):
        idx = order[start : start + batch_size]
        x = to_input(images[idx])
        if flips is not None:
            f = flips[start : start + batch_size]
            x[f] = x[f].flip(-1)
        optimizer.zero_grad(set_to_none=True)
        rng = torch.get_rng_state() if on_step is not None else None
        loss = loss_fn(model(x), labels[idx])
        loss.backward()
        if on_step is not None:
            on_step(idx, None if flips is None else flips[start : start + batch_size], rng)
        optimizer.step()
        total += float(loss.detach()) * len(idx)
    return total / n


@public("pcr_explore.train")
def evaluate(model: Any, images: Any, labels: Any, *, batch_size: int = 256) -> float:
    """Top-1 accuracy of *model* on *images* (evaluation mode, no gradients).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier.
    images, labels : torch.Tensor
        ``uint8`` (N, 3, H, W) and ``int64`` (N,).
    batch_size : int
        Images per forward pass.

    Returns
    -------
    float
        Fraction of images whose top-scoring class is the label.

    Examples
    --------
    >>> from pcr_explore import open_dataset
    >>> from pcr_explore.train import small_cnn
    >>> val = read_level(open_dataset("val.pcr"), scan=None, size=64)
    >>> accuracy = evaluate(small_cnn(3), val.images, val.labels)  # untrained: about 1 in 3
    >>> 0.0 <= accuracy <= 1.0
    True
    """
    torch = require_torch("evaluate")
    was_training = model.training
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(labels), batch_size):
            logits = model(to_input(images[start : start + batch_size]))
            correct += int((logits.argmax(1) == labels[start : start + batch_size]).sum())
    model.train(was_training)
    return correct / max(1, len(labels))
