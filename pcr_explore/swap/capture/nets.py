"""Small networks to capture real activations from (``[torch]``), by name.

Defined here without torchvision, small enough to train on two CPU cores,
with every ReLU and pool a module of its own so a capture can tell which op
saves which tensor. ``"small-cnn"`` is the training harness's network
(:func:`pcr_explore.train.small_cnn`, layer for layer and weight for weight
under the same seed); ``"vgg-small"`` and ``"resnet-small"`` are VGG- and
ResNet-style.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..._public import public
from ...errors import SwapError
from ._torch_ops import require_torch

__all__ = ["NETS", "DEFAULT_LR", "build_net"]

#: Network names :func:`build_net` knows.
NETS: tuple[str, ...] = ("small-cnn", "vgg-small", "resnet-small")

#: SGD learning rates that train each network stably on flowers5 at 48 px
#: (measured: vgg-small, without batch norm, is unsteady at 0.02).
DEFAULT_LR: dict[str, float] = {"small-cnn": 0.05, "vgg-small": 0.01, "resnet-small": 0.05}


def _small_cnn(nn: Any, num_classes: int, width: int) -> Any:
    """Four conv-BN-ReLU blocks (the first strided, the middle two pooled), global pool, linear."""
    layers: list[Any] = []
    c_in = 3
    for block in range(4):
        c_out = width * 2**block
        layers += [
            nn.Conv2d(c_in, c_out, 3, stride=2 if block == 0 else 1, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True),
        ]
        if block in (1, 2):
            layers.append(nn.MaxPool2d(2))
        c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, num_classes)]
    return nn.Sequential(*layers)


def _vgg_small(nn: Any, num_classes: int, width: int) -> Any:
    """``[w, w, M, 2w, 2w, M, 4w, 4w, M]`` as in VGG (no batch norm), a 2x2 pool, fc6, fc7."""
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


def _resnet_small(nn: Any, num_classes: int, width: int) -> Any:
    """A strided conv-BN-ReLU stem, one basic block per stage (w, 2w, 4w), global pool, fc."""
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


_BUILDERS: dict[str, Callable[[Any, int, int], Any]] = {
    "small-cnn": _small_cnn,
    "vgg-small": _vgg_small,
    "resnet-small": _resnet_small,
}


@public("pcr_explore.swap")
def build_net(name: str, *, num_classes: int, width: int = 16) -> Any:
    """A fresh network by name: ``"small-cnn"``, ``"vgg-small"`` or ``"resnet-small"``.

    ``small-cnn``: four conv, batch norm, ReLU blocks doubling the channels
    (the first convolution strided, max-pools after the second and third),
    a global average pool and a linear head; the same network as
    :func:`pcr_explore.train.small_cnn`. ``vgg-small``: VGG's
    configuration ``[w, w, M, 2w, 2w, M, 4w, 4w, M]`` without batch norm,
    an adaptive average pool to 2x2, ``fc6`` (128 units, ReLU) and ``fc7``;
    modules named ``conv1_1``, ``relu1_1``, ..., ``pool3``, ``fc6``; each
    ReLU before a max-pool is the case Gist's Binarize targets.
    ``resnet-small``: a strided 3x3 stem with batch norm and ReLU, then one
    basic block per stage at *width*, 2x and 4x channels (the last two
    strided, with 1x1 projection shortcuts), each ending in a residual add
    and a ReLU as in ResNet-18; modules ``stem_conv`` ... ``layer3``,
    ``avgpool``, ``flatten``, ``fc``. All take any input size.

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
        For an unknown name, or *num_classes* or *width* below 1.
    MissingExtraError
        If PyTorch is not installed.

    Examples
    --------
    >>> import torch
    >>> [tuple(build_net(n, num_classes=5)(torch.zeros(2, 3, 48, 48)).shape) for n in NETS]
    [(2, 5), (2, 5), (2, 5)]
    >>> build_net("alexnet", num_classes=5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pcr_explore.SwapError: unknown network 'alexnet'; choose from small-cnn, ...
    """
    if name not in _BUILDERS:
        raise SwapError(f"unknown network {name!r}; choose from {', '.join(NETS)}")
    torch = require_torch("build_net")
    if num_classes < 1 or width < 1:
        raise SwapError(f"need num_classes >= 1 and width >= 1, got {num_classes}, {width}")
    return _BUILDERS[name](torch.nn, num_classes, width)
