"""PyTorch plumbing shared by the training capture and the compressed-activation hooks.

Which op produced a saved tensor (its ``grad_fn``), which op saves it (the
leaf module running when autograd calls the pack hook), and the FLOPs of
each leaf module, so a captured step can be priced by the simulator.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ...errors import MissingExtraError

INSTALL = "pip install 'pcr-explore[torch]'"

# short op label -> the grad_fn class names (without the trailing "Backward<k>") of that op
_OPS = {
    "conv": ("Convolution", "MkldnnConvolution", "ConvolutionOverrideable"),
    "bn": ("NativeBatchNorm", "CudnnBatchNorm", "MiopenBatchNorm"),
    "relu": ("Relu", "Threshold"),
    "maxpool": ("MaxPool1DWithIndices", "MaxPool2DWithIndices", "MaxPool3DWithIndices"),
    "avgpool": ("AvgPool2D", "AdaptiveAvgPool2D", "Mean"),
    "add": ("Add",),
    "linear": ("Addmm", "Mm", "Linear"),
    "view": ("View", "UnsafeView", "ReshapeAlias"),
    "log_softmax": ("LogSoftmax",),
}
_OP_OF_GRAD_FN = {name: op for op, names in _OPS.items() for name in names}

# short op label -> the leaf module classes that run it
_MODULES = {
    "conv": ("Conv1d", "Conv2d", "Conv3d"),
    "bn": ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"),
    "relu": ("ReLU",),
    "maxpool": ("MaxPool1d", "MaxPool2d", "MaxPool3d"),
    "avgpool": ("AvgPool2d", "AdaptiveAvgPool2d"),
    "linear": ("Linear",),
    "view": ("Flatten",),
}
_OP_OF_MODULE = {name: op for op, names in _MODULES.items() for name in names}

# op label -> the TensorRecord kind of its output, where not "activation"
_KIND_OF_OP = {"relu": "relu", "maxpool": "pool", "avgpool": "pool", "input": "input"}

#: Ops whose backward reads only where a ReLU output was positive (the ReLU)
#: or nothing of the values at all (a max-pool reads its saved indices).
MASK_SAVERS = frozenset({"relu", "maxpool"})


def require_torch(what: str) -> ModuleType:
    """Return ``torch``, or raise :class:`MissingExtraError` naming the extra."""
    try:
        import torch
    except ImportError as exc:
        raise MissingExtraError(f"{what} needs PyTorch: {INSTALL}") from exc
    return torch


def op_label(tensor: Any) -> str:
    """Short label of the op that produced *tensor* (``"input"`` for a leaf)."""
    fn = tensor.grad_fn
    if fn is None:
        return "input"
    name = type(fn).__name__
    base = name[: name.rfind("Backward")] if "Backward" in name else name
    return _OP_OF_GRAD_FN.get(base, base.lower())


def kind_of(op: str) -> str:
    """The :class:`~pcr_explore.swap.traces.TensorRecord` kind of a tensor made by *op*."""
    return _KIND_OF_OP.get(op, "activation")


def zero_count(torch: ModuleType, t: Any) -> int:
    """Elements whose bit pattern is zero (+0.0 for floats), as the codecs count them."""
    d = t.detach()
    if d.is_floating_point():
        return int(((d == 0) & ~torch.signbit(d)).sum())
    return int((d == 0).sum())


def numpy_dtype(t: Any) -> str:
    """The numpy dtype name a trace records for *t*.

    Always one of the same width, so that byte counts hold: bfloat16, which
    numpy lacks, as float16, bool as uint8, and any other type numpy cannot
    name (the float8 ones, say) as the unsigned integer of its width.
    """
    import numpy as np  # here: the command line's help imports this module, and no numpy

    name = str(t.dtype).removeprefix("torch.")
    name = {"bfloat16": "float16", "bool": "uint8"}.get(name, name)
    try:
        if np.dtype(name).kind in "fiuc":
            return name
    except TypeError:
        pass
    return f"uint{8 * t.element_size()}"


def host_copy(torch: ModuleType, t: Any) -> Any:
    """A numpy copy of *t* on the CPU (bfloat16, which numpy lacks, as float32)."""
    host = t.detach().to("cpu")
    return (host.float() if host.dtype == torch.bfloat16 else host).numpy().copy()


def module_cost(module: Any, inputs: tuple[Any, ...], output: Any) -> tuple[float, float]:
    """Forward FLOPs (a multiply-add counts 2) and bytes moved by one leaf module call."""
    out_n = int(output.numel()) if hasattr(output, "numel") else 0
    in_n = sum(int(x.numel()) for x in inputs if hasattr(x, "numel"))
    width = output.element_size() if hasattr(output, "element_size") else 4
    name = type(module).__name__
    if name.startswith("Conv"):
        k = math.prod(int(d) for d in module.kernel_size)
        flops = 2.0 * out_n * (module.in_channels // module.groups) * k
    elif name == "Linear":
        flops = 2.0 * out_n * module.in_features
    elif name.startswith("BatchNorm"):
        flops = 4.0 * out_n
    else:
        flops = float(out_n)
    return flops, float(width * (in_n + out_n))


@dataclass
class ModuleTracker:
    """Which leaf module runs now, the last one that finished, and FLOPs since a mark.

    Installed with :func:`track_modules` as global module hooks, so it sees
    every ``torch.nn.Module`` call without being handed the model.
    """

    stack: list[tuple[str, str]] = field(default_factory=list)
    last: str = ""
    flops: float = 0.0
    mem_bytes: float = 0.0
    names: weakref.WeakKeyDictionary[Any, str] = field(default_factory=weakref.WeakKeyDictionary)

    @property
    def saver(self) -> str:
        """Label of the leaf module running now (``"functional"`` outside any)."""
        return self.stack[-1][1] if self.stack else "functional"

    def take(self) -> tuple[float, float]:
        """FLOPs and bytes since the last call, and start counting again."""
        out = (self.flops, self.mem_bytes)
        self.flops = self.mem_bytes = 0.0
        return out


def _is_leaf(module: Any) -> bool:
    return next(iter(module.children()), None) is None


@contextlib.contextmanager
def track_modules(torch: ModuleType, model: Any = None) -> Iterator[ModuleTracker]:
    """Follow leaf module calls with global forward hooks inside the ``with`` block.

    Parameters
    ----------
    torch : module
        The imported ``torch``.
    model : torch.nn.Module, optional
        Names the modules by their path in *model* (``"features.3"``);
        without it they are named by class.
    """
    tr = ModuleTracker()
    if model is not None:
        for name, mod in model.named_modules():
            tr.names[mod] = name or type(mod).__name__.lower()

    def pre(module: Any, inputs: Any) -> None:
        if _is_leaf(module):
            label = _OP_OF_MODULE.get(type(module).__name__, type(module).__name__.lower())
            tr.stack.append((tr.names.get(module, type(module).__name__.lower()), label))

    def post(module: Any, inputs: Any, output: Any) -> None:
        if _is_leaf(module) and tr.stack:
            tr.last = tr.stack.pop()[0]
            flops, mem = module_cost(module, inputs, output)
            tr.flops += flops
            tr.mem_bytes += mem

    hooks = torch.nn.modules.module
    h1 = hooks.register_module_forward_pre_hook(pre)
    h2 = hooks.register_module_forward_hook(post)
    try:
        yield tr
    finally:
        h1.remove()
        h2.remove()


def is_weight(torch: ModuleType, t: Any, skip: set[int]) -> bool:
    """Whether *t* is a parameter, a view of one, or a tensor whose storage is in *skip*."""
    base = getattr(t, "_base", None)
    if isinstance(t, torch.nn.Parameter) or isinstance(base, torch.nn.Parameter):
        return True
    return bool(skip) and t.data_ptr() in skip


def weight_pointers(model: Any) -> set[int]:
    """Storage addresses of *model*'s parameters and buffers (never swapped)."""
    if model is None:
        return set()
    return {p.data_ptr() for p in model.parameters()} | {b.data_ptr() for b in model.buffers()}
