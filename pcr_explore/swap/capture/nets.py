"""Small VGG-style and ResNet-style networks to capture real activations from (``[torch]``).

Defined here without torchvision, small enough to train on two CPU cores,
with every ReLU and pool a module of its own so a capture can tell which op
saves which tensor. ``"small-cnn"`` is the training harness's network
(:func:`pcr_explore.train.small_cnn`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..._public import public
from ...errors import SwapError
from ._torch_ops import require_torch

__all__ = ["NETS", "DEFAULT_LR", "vgg_small", "resnet_small", "build_net"]

#: Network names :func:`build_net` knows.
NETS: tuple[str, ...] = ("small-cnn", "vgg-small", "resnet-small")

#: SGD learning rates that train each network stably on flowers5 at 48 px
#: (measured: vgg-small, without batch norm, is unsteady at 0.02).
DEFAULT_LR: dict[str, float] = {"small-cnn": 0.05, "vgg-small": 0.01, "resnet-small": 0.05}


def vgg_small(num_classes: int, *, width: int = 16) -> Any:
    """A VGG-style network: 3x3 convolutions and ReLUs, max-pools, two fully connected layers.

    Configuration ``[w, w, M, 2w, 2w, M, 4w, 4w, M]`` as in VGG (no batch
    norm), then an adaptive average pool to 2x2 (any input size), ``fc6``
    (128 units, ReLU) and ``fc7`` (the classes). Each ReLU that precedes a
    max-pool is the case Gist's Binarize targets.

    Parameters
    ----------
    num_classes : int
        Outputs.
    width : int
        Channels of the first block.

    Returns
    -------
    torch.nn.Sequential
        Modules named ``conv1_1``, ``relu1_1``, ..., ``pool3``, ``fc6``.

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.
    SwapError
        If *num_classes* or *width* is below 1.

    Examples
    --------
    >>> import torch
    >>> net = vgg_small(5)
    >>> net(torch.zeros(2, 3, 48, 48)).shape
    torch.Size([2, 5])
    """
    torch = require_torch("vgg_small")
    nn = torch.nn
    _check(num_classes, width)
    layers: OrderedDict[str, Any] = OrderedDict()
    c_in = 3
    for block, c_out in enumerate((width, 2 * width, 4 * width), start=1):
        for i in (1, 2):
            layers[f"conv{block}_{i}"] = nn.Conv2d(c_in, c_out, 3, padding=1)
            layers[f"relu{block}_{i}"] = nn.ReLU()
            c_in = c_out
        layers[f"pool{block}"] = nn.MaxPool2d(2)
    layers["avgpool"] = nn.AdaptiveAvgPool2d(2)
    layers["flatten"] = nn.Flatten()
    layers["fc6"] = nn.Linear(4 * c_in, 128)
    layers["relu6"] = nn.ReLU()
    layers["fc7"] = nn.Linear(128, num_classes)
    net = nn.Sequential(layers)
    for m in net.modules():
        if isinstance(m, nn.Conv2d | nn.Linear):
            # He initialisation: without batch norm, PyTorch's default starts too small
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    return net


def _basic_block(nn: Any, c_in: int, c_out: int, stride: int) -> Any:
    class BasicBlock(nn.Module):
        """Two 3x3 conv-BN pairs and a shortcut, added, then a ReLU (ResNet v1)."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.relu1 = nn.ReLU()
            self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.shortcut = (
                nn.Sequential(
                    OrderedDict(
                        conv=nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                        bn=nn.BatchNorm2d(c_out),
                    )
                )
                if stride != 1 or c_in != c_out
                else nn.Identity()
            )
            self.relu2 = nn.ReLU()

        def forward(self, x: Any) -> Any:
            y = self.relu1(self.bn1(self.conv1(x)))
            return self.relu2(self.bn2(self.conv2(y)) + self.shortcut(x))

    return BasicBlock()


def resnet_small(num_classes: int, *, width: int = 16) -> Any:
    """A ResNet-style network: a strided stem, three basic blocks, global average pool.

    Stem: 3x3 convolution (stride 2), batch norm, ReLU. Then one basic
    block per stage at *width*, 2x and 4x channels (the last two strided,
    with 1x1 projection shortcuts), each ending in a residual add and a
    ReLU, as in ResNet-18; an adaptive average pool and a linear head.

    Parameters
    ----------
    num_classes : int
        Outputs.
    width : int
        Channels of the stem and the first stage.

    Returns
    -------
    torch.nn.Sequential
        Modules ``stem_conv``, ``stem_bn``, ``stem_relu``, ``layer1`` ...
        ``layer3``, ``avgpool``, ``flatten``, ``fc``.

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.
    SwapError
        If *num_classes* or *width* is below 1.

    Examples
    --------
    >>> import torch
    >>> net = resnet_small(5)
    >>> net(torch.zeros(2, 3, 48, 48)).shape
    torch.Size([2, 5])
    """
    torch = require_torch("resnet_small")
    nn = torch.nn
    _check(num_classes, width)
    layers: OrderedDict[str, Any] = OrderedDict(
        stem_conv=nn.Conv2d(3, width, 3, stride=2, padding=1, bias=False),
        stem_bn=nn.BatchNorm2d(width),
        stem_relu=nn.ReLU(),
    )
    c_in = width
    for stage, (c_out, stride) in enumerate(((width, 1), (2 * width, 2), (4 * width, 2)), 1):
        layers[f"layer{stage}"] = _basic_block(nn, c_in, c_out, stride)
        c_in = c_out
    layers["avgpool"] = nn.AdaptiveAvgPool2d(1)
    layers["flatten"] = nn.Flatten()
    layers["fc"] = nn.Linear(c_in, num_classes)
    return nn.Sequential(layers)


@public("pcr_explore.swap")
def build_net(name: str, *, num_classes: int, width: int = 16) -> Any:
    """A fresh network by name: ``"small-cnn"``, ``"vgg-small"`` or ``"resnet-small"``.

    Parameters
    ----------
    name : str
        One of :data:`NETS`.
    num_classes : int
        Outputs.
    width : int
        Channels of the first block.

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    SwapError
        For an unknown name.
    MissingExtraError
        If PyTorch is not installed.

    Examples
    --------
    >>> build_net("alexnet", num_classes=5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pcr_explore.SwapError: unknown network 'alexnet'; choose from small-cnn, ...
    """
    if name == "small-cnn":
        require_torch("build_net")
        from ...train.model import small_cnn

        return small_cnn(num_classes, width=width)
    if name == "vgg-small":
        return vgg_small(num_classes, width=width)
    if name == "resnet-small":
        return resnet_small(num_classes, width=width)
    raise SwapError(f"unknown network {name!r}; choose from {', '.join(NETS)}")


def _check(num_classes: int, width: int) -> None:
    if num_classes < 1 or width < 1:
        raise SwapError(f"need num_classes >= 1 and width >= 1, got {num_classes}, {width}")
