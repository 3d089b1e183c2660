"""The small convolutional network the demos and benchmarks train."""

from __future__ import annotations

from typing import Any

from .._public import public
from ._torch import require_torch

__all__ = ["MODELS", "small_cnn", "build_model"]

MODELS: tuple[str, ...] = ("small-cnn",)


@public("pcr_explore.train")
def small_cnn(num_classes: int, *, width: int = 16, in_channels: int = 3) -> Any:
    """A four-block CNN (conv, batch norm, ReLU, pooling) for any input size.

    Each block doubles the channels and halves the resolution (the first by
    a strided convolution, the next two by max pooling); a global
    average pool makes the head independent of the input size, so the same
    network trains at 32, 64 or 224 pixels. About 100k parameters at the
    default width: minutes per run on two CPU cores at 64 pixels.

    Parameters
    ----------
    num_classes : int
        Outputs of the final layer.
    width : int
        Channels of the first block (then 2x, 4x, 8x).
    in_channels : int
        Input channels (3 for RGB).

    Returns
    -------
    torch.nn.Sequential

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.
    ValueError
        If *num_classes* or *width* is below 1.

    Examples
    --------
    >>> import torch
    >>> net = small_cnn(5)
    >>> net(torch.zeros(2, 3, 64, 64)).shape
    torch.Size([2, 5])
    """
    torch = require_torch("small_cnn")
    nn = torch.nn
    if num_classes < 1 or width < 1:
        raise ValueError(f"need num_classes >= 1 and width >= 1, got {num_classes}, {width}")
    layers: list[Any] = []
    c_in = in_channels
    for block in range(4):
        c_out = width * 2**block
        # A strided first convolution keeps 128-pixel inputs cheap on a CPU.
        stride = 2 if block == 0 else 1
        layers += [
            nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True),
        ]
        if block in (1, 2):
            layers.append(nn.MaxPool2d(2))
        c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, num_classes)]
    return nn.Sequential(*layers)


@public("pcr_explore.train")
def build_model(model: Any, *, num_classes: int) -> Any:
    """A fresh model from a name in :data:`MODELS` or a factory ``f(num_classes)``.

    Parameters
    ----------
    model : str or callable
        ``"small-cnn"``, or a callable returning a new ``torch.nn.Module``.
    num_classes : int
        Classes of the task.

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    ValueError
        If *model* is an unknown name.
    TypeError
        If the factory does not return a ``torch.nn.Module``.

    Examples
    --------
    >>> net = build_model("small-cnn", num_classes=5)
    >>> type(net).__name__, net[-1].out_features
    ('Sequential', 5)
    """
    torch = require_torch("build_model")
    if isinstance(model, str):
        if model != "small-cnn":
            raise ValueError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
        return small_cnn(num_classes)
    net = model(num_classes)
    if not isinstance(net, torch.nn.Module):
        raise TypeError(f"the model factory returned {type(net).__name__}, not a torch.nn.Module")
    return net
