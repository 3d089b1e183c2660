"""Activation sources: synthetic ReLU-like tensors, a tiny numpy CNN on real photos,
and an optional PyTorch capture of a real model's saved tensors.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MissingExtraError, SwapError
from ._codec_base import nonzero_mask
from .codecs import get_codec
from .traces import TensorRecord, Trace

__all__ = [
    "synthetic_activations",
    "sample_images",
    "cnn_activations",
    "cnn_trace",
    "SavedTensorCapture",
    "capture_saved_tensors",
    "bit_sparsity",
]

_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")


def bit_sparsity(array: np.ndarray) -> float:
    """Fraction of elements whose bit pattern is all zeros (-0.0 is not zero)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return 1.0 - float(np.count_nonzero(nonzero_mask(flat))) / flat.size if flat.size else 0.0


def synthetic_activations(
    shape: Sequence[int] = (8, 64, 56, 56),
    sparsity: float = 0.65,
    *,
    correlation: float = 2.0,
    seed: int = 0,
    dtype: str | np.dtype = "float32",
) -> np.ndarray:
    """ReLU-like activations with an exact sparsity and zeros in blobs.

    White noise is smoothed with a Gaussian of ``correlation`` pixels over
    the last two axes (an FFT filter, periodic borders), then the smallest
    ``round(sparsity * n)`` values are set to zero and the rest shifted to
    be positive, as a ReLU after a biased convolution would.

    Parameters
    ----------
    shape : sequence of int
        Tensor shape, NCHW by convention.
    sparsity : float
        Fraction of exact (+0.0) zeros, in [0, 1].
    correlation : float
        Gaussian sigma in pixels; 0 gives i.i.d. zeros.
    seed : int
    dtype : str or dtype
        A float dtype.

    Returns
    -------
    ndarray

    Raises
    ------
    SwapError
        For a negative dimension, a sparsity outside [0, 1], a negative
        correlation, or a non-float dtype.

    Examples
    --------
    >>> x = synthetic_activations((2, 4, 16, 16), 0.7)
    >>> round(bit_sparsity(x), 3)
    0.7
    """
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise SwapError(f"shape must have non-negative dimensions, got {shape}")
    if not 0.0 <= float(sparsity) <= 1.0:
        raise SwapError(f"sparsity must lie in [0, 1], got {sparsity}")
    if not correlation >= 0:
        raise SwapError(f"correlation must be >= 0, got {correlation}")
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise SwapError(f"dtype must be a float dtype, got {dt}")
    rng = np.random.default_rng(seed)
    field_ = rng.standard_normal(shape, dtype=np.float32)
    n = field_.size
    if n and correlation > 0 and len(shape) >= 1:
        axes = tuple(range(-min(2, len(shape)), 0))
        spec = np.fft.rfftn(field_, axes=axes)
        gain = np.ones((1,) * len(shape), dtype=np.float32)
        for ax in axes:
            f = np.fft.rfftfreq(shape[ax]) if ax == axes[-1] else np.fft.fftfreq(shape[ax])
            g = np.exp(-2.0 * (np.pi * correlation * f) ** 2).astype(np.float32)
            gain = gain * g.reshape([-1 if i == len(shape) + ax else 1 for i in range(len(shape))])
        field_ = np.fft.irfftn(spec * gain, s=[shape[a] for a in axes], axes=axes).astype(
            np.float32
        )
        std = field_.std()
        if std > 0:
            field_ /= std
    flat = field_.reshape(-1)
    k = int(round(float(sparsity) * n))
    tiny = np.finfo(dt).tiny
    if k == 0:
        out = flat - flat.min() if n else flat
    else:
        zero_idx = np.argpartition(flat, k - 1)[:k]
        thr = flat[zero_idx].max()
        out = flat - thr
        out[zero_idx] = 0.0
    out = out.astype(dt)
    positive = np.ones(n, dtype=bool)
    if k:
        positive[zero_idx] = False
    out[positive & (out <= 0)] = tiny  # ties at the threshold stay non-zero
    return out.reshape(shape)


def sample_images(size: int = 64, names: Sequence[str] = _PHOTOS) -> np.ndarray:
    """Bundled scikit-image photographs, centre-cropped and resized, as NCHW float32 in [0, 1].

    Parameters
    ----------
    size : int
        Output side in pixels.
    names : sequence of str
        ``skimage.data`` functions returning RGB photos.

    Returns
    -------
    ndarray, shape (len(names), 3, size, size)

    Raises
    ------
    SwapError
        For an unknown image name or a size below 8.
    """
    import skimage.data
    from skimage.transform import resize

    if size < 8:
        raise SwapError(f"size must be >= 8, got {size}")
    out = []
    for name in names:
        loader = getattr(skimage.data, name, None)
        if loader is None:
            raise SwapError(f"skimage.data has no image {name!r}")
        img = np.asarray(loader())
        if img.ndim == 2:
            img = np.stack([img] * 3, axis=-1)
        img = img[..., :3]
        h, w = img.shape[:2]
        side = min(h, w)
        top, left = (h - side) // 2, (w - side) // 2
        crop = img[top : top + side, left : left + side].astype(np.float32) / 255.0
        out.append(resize(crop, (size, size), anti_aliasing=True).astype(np.float32))
    return np.ascontiguousarray(np.stack(out).transpose(0, 3, 1, 2))


def _conv3x3(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Same-padded 3x3 convolution of NCHW ``x`` with OIHW ``w`` (im2col via strides)."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # N C H W 3 3
    out = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # N H W O
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def _bn_relu(x: np.ndarray, shift: float) -> np.ndarray:
    """Per-channel normalisation (training-mode BN) then ReLU(x - shift)."""
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = x.std(axis=(0, 2, 3), keepdims=True) + 1e-5
    y = (x - mean) / std - shift
    np.maximum(y, 0.0, out=y)
    y[y == 0] = 0.0  # -0.0 from the shift becomes +0.0, as a ReLU kernel writes
    return y.astype(np.float32)


def _maxpool2(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    x = x[:, :, : h - h % 2, : w - w % 2]
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


#: (output channels, BN shift) per conv; "M" is a 2x2 max-pool. The shifts
#: imitate the negative BN offsets trained networks learn (assumption).
_CNN: list[tuple[int, float] | str] = [
    (16, 0.0),
    (16, 0.25),
    "M",
    (32, 0.25),
    (32, 0.5),
    "M",
    (64, 0.5),
    (64, 0.75),
    "M",
]


def cnn_activations(
    images: np.ndarray | None = None, *, size: int = 64, seed: int = 0
) -> list[tuple[str, np.ndarray, float]]:
    """Run a small fixed-weight CNN over photos and return each ReLU and pool output.

    Six 3x3 convolutions (16-16-32-32-64-64 channels, He-initialised with a
    fixed seed, filters made zero-mean so flat image regions give no
    response), each followed by batch normalisation and a ReLU with a
    depth-growing negative shift, and a 2x2 max-pool after every second
    conv. Zeros therefore fall where the photo is flat, in blobs.

    Parameters
    ----------
    images : ndarray, shape (N, 3, H, W), optional
        Float images in [0, 1]; default: :func:`sample_images` at ``size``.
    size : int
        Image side when ``images`` is not given.
    seed : int
        Weight seed.

    Returns
    -------
    list of (name, activation, forward FLOPs of the producing op)

    Raises
    ------
    SwapError
        If ``images`` is not an (N, 3, H, W) array with H, W >= 8.
    """
    x = sample_images(size) if images is None else np.asarray(images, dtype=np.float32)
    if x.ndim != 4 or x.shape[1] != 3 or min(x.shape[2:]) < 8:
        raise SwapError(f"images must be (N, 3, H, W) with H, W >= 8, got {x.shape}")
    x = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / (x.std(axis=(0, 2, 3), keepdims=True) + 1e-6)
    rng = np.random.default_rng(seed)
    out: list[tuple[str, np.ndarray, float]] = []
    c, block, idx = 3, 1, 1
    for spec in _CNN:
        if isinstance(spec, str):
            x = _maxpool2(x)
            out.append((f"pool{block}", x, float(x.size * 3)))
            block, idx = block + 1, 1
            continue
        cout, shift = spec
        w = rng.standard_normal((cout, c, 3, 3)).astype(np.float32) * math.sqrt(2.0 / (9 * c))
        w -= w.mean(axis=(1, 2, 3), keepdims=True)
        n_, _, h, wd = x.shape
        flops = 2.0 * n_ * cout * h * wd * c * 9
        x = _bn_relu(_conv3x3(x, w), shift)
        out.append((f"conv{block}_{idx}", x, flops))
        c, idx = cout, idx + 1
    return out


def cnn_trace(
    images: np.ndarray | None = None,
    *,
    size: int = 64,
    seed: int = 0,
    codecs: Sequence[str] = ("zvc", "bitmap", "csr", "delta8", "rle"),
) -> Trace:
    """A :class:`Trace` of the small CNN's activations, with measured codec sizes.

    Parameters
    ----------
    images, size, seed
        See :func:`cnn_activations`.
    codecs : sequence of str
        Codecs whose encoded size is measured on each real tensor and
        stored in ``measured_bytes`` (the simulator then uses them).

    Returns
    -------
    Trace
    """
    acts = cnn_activations(images, size=size, seed=seed)
    x0 = sample_images(size) if images is None else np.asarray(images, dtype=np.float32)
    cs = [get_codec(c) for c in codecs]
    recs = [
        TensorRecord(
            "input",
            x0.shape,
            kind="input",
            measured_bytes={c.name: c.encode(x0).nbytes for c in cs},
        )
    ]
    sp = [bit_sparsity(x0)]
    for i, (name, a, flops) in enumerate(acts):
        feeds_pool = i + 1 < len(acts) and acts[i + 1][0].startswith("pool")
        recs.append(
            TensorRecord(
                name,
                a.shape,
                fwd_flops=flops,
                fwd_mem_bytes=4.0 * 3 * a.size,
                kind="pool" if name.startswith("pool") else "relu",
                binarizable=feeds_pool,
                measured_bytes={c.name: c.encode(a).nbytes for c in cs},
            )
        )
        sp.append(bit_sparsity(a))
    meta = {
        "model": "numpy-cnn",
        "images": int(x0.shape[0]),
        "size": int(x0.shape[-1]),
        "seed": seed,
    }
    return Trace(f"cnn-{x0.shape[-1]}px", tuple(recs), np.array(sp)[None], meta=meta)


# --- optional PyTorch capture --------------------------------------------------

_TORCH_DTYPES = {
    "torch.float32": "float32",
    "torch.float16": "float16",
    "torch.bfloat16": "float16",  # same width; numpy has no bfloat16
    "torch.float64": "float64",
    "torch.int64": "int64",
    "torch.int32": "int32",
    "torch.uint8": "uint8",
    "torch.int8": "int8",
    "torch.bool": "uint8",
}


@dataclass
class SavedTensorCapture:
    """What :func:`capture_saved_tensors` recorded.

    Attributes
    ----------
    records : list of dict
        ``name``, ``shape``, ``dtype``, ``bytes``, ``sparsity``, ``kind``
        and ``op`` (the autograd node that produced the tensor) per saved
        tensor, in save order, each distinct tensor once.
    tensors : list
        The tensors themselves (detached CPU numpy copies) when
        ``keep_tensors`` was set.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    tensors: list[np.ndarray] = field(default_factory=list)

    def trace(self, name: str = "torch-capture") -> Trace:
        """The capture as a :class:`Trace` (FLOPs unknown: recorded as 0).

        Raises
        ------
        SwapError
            If nothing was captured.
        """
        if not self.records:
            raise SwapError("the capture recorded no saved tensors (was backward-able work run?)")
        recs = tuple(
            TensorRecord(r["name"], tuple(r["shape"]), r["dtype"], kind=r["kind"])
            for r in self.records
        )
        sp = np.array([[r["sparsity"] for r in self.records]])
        return Trace(name, recs, sp, meta={"source": "torch.saved_tensors_hooks"})


@contextlib.contextmanager
def capture_saved_tensors(
    *, keep_tensors: bool = False, include_parameters: bool = False
) -> Iterator[SavedTensorCapture]:
    """Record every tensor autograd saves for backward inside the ``with`` block.

    Built on ``torch.autograd.graph.saved_tensors_hooks``; the tensors are
    returned unchanged, so training proceeds as usual. Parameters (weights)
    are skipped unless asked for, as swapping systems keep them resident.

    Parameters
    ----------
    keep_tensors : bool
        Also keep a numpy copy of each tensor (for measuring codecs).
    include_parameters : bool
        Record saved parameters too.

    Yields
    ------
    SavedTensorCapture

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).

    Examples
    --------
    >>> with capture_saved_tensors() as cap:  # doctest: +SKIP
    ...     loss = model(x).sum()
    >>> trace = cap.trace("my-model")  # doctest: +SKIP
    """
    try:
        import torch
    except ImportError as exc:
        raise MissingExtraError(
            "capture_saved_tensors needs PyTorch: pip install 'pcr-explore[torch]'"
        ) from exc
    cap = SavedTensorCapture()
    seen: set[tuple[Any, ...]] = set()

    def pack(t):
        base = getattr(t, "_base", None)  # the transposed weight a Linear saves is a view
        is_param = isinstance(t, torch.nn.Parameter) or isinstance(base, torch.nn.Parameter)
        if is_param and not include_parameters:
            return t
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype))
        if key in seen:
            return t
        seen.add(key)
        d = t.detach()
        if d.is_floating_point():
            zeros = int(((d == 0) & ~torch.signbit(d)).sum())
        else:
            zeros = int((d == 0).sum())
        n = d.numel()
        op = type(t.grad_fn).__name__ if t.grad_fn is not None else "leaf"
        low = op.lower()
        if "relu" in low:
            kind = "relu"
        elif "pool" in low:
            kind = "pool"
        elif op == "leaf" and d.is_floating_point():
            kind = "input"
        else:
            kind = "activation"
        dtype = _TORCH_DTYPES.get(str(t.dtype), "float32")
        cap.records.append(
            {
                "name": f"{len(cap.records):03d}.{op.removesuffix('Backward0').lower()}",
                "shape": list(t.shape),
                "dtype": dtype,
                "bytes": n * t.element_size(),
                "sparsity": zeros / n if n else 0.0,
                "kind": kind,
                "op": op,
            }
        )
        if keep_tensors:
            host = d.to("cpu")
            if host.dtype == torch.bfloat16:
                host = host.float()
            cap.tensors.append(host.numpy().copy())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield cap
