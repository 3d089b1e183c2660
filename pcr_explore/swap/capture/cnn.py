"""A small fixed-weight numpy CNN run on bundled photos: real activations without a GPU.

Six 3x3 convolutions with training-mode batch norm, ReLU and 2x2 max-pools,
in numpy (im2col through ``sliding_window_view`` and ``tensordot``), on
scikit-image's bundled photographs. The photos decide where the zeros fall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..codecs import get_codec
from ..codecs.activations import bit_sparsity
from ..traces import TensorRecord, Trace

__all__ = ["sample_images", "cnn_activations", "cnn_trace"]

_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")


def sample_images(size: int = 64, names: Sequence[str] = _PHOTOS) -> np.ndarray:
    """Load bundled scikit-image photographs, centre-cropped and resized, as NCHW float32.

    Parameters
    ----------
    size : int
        Output side in pixels.
    names : sequence of str
        ``skimage.data`` functions returning RGB photos.

    Returns
    -------
    ndarray, shape (len(names), 3, size, size)
        Values in [0, 1].

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
    list of (str, ndarray, float)
        Name, activation and forward FLOPs of the producing op, per ReLU
        and pool output in forward order.

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


@public("pcr_explore.swap")
def cnn_trace(
    images: np.ndarray | None = None,
    *,
    size: int = 64,
    seed: int = 0,
    codecs: Sequence[str] = ("zvc", "bitmap", "csr", "delta8", "rle"),
) -> Trace:
    """Build a :class:`~pcr_explore.swap.traces.Trace` of the small CNN's activations.

    Each record carries the codecs' sizes measured on the real tensor.

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
        The input and the nine ReLU/pool outputs, one iteration, with
        ``measured_bytes`` per codec.

    Raises
    ------
    SwapError
        For bad images or an unknown codec.

    Examples
    --------
    >>> t = cnn_trace(size=16, codecs=("zvc",))
    >>> len(t), t.tensors[1].name, t.tensors[1].shape
    (10, 'conv1_1', (4, 16, 16, 16))
    """
    x0 = sample_images(size) if images is None else np.asarray(images, dtype=np.float32)
    acts = cnn_activations(x0, seed=seed)  # the photos loaded once, for the input record too
    cs = [get_codec(c) for c in codecs]
    layers = [("input", x0, 0.0), *acts]
    recs = [
        TensorRecord(
            name,
            a.shape,
            fwd_flops=flops,
            fwd_mem_bytes=4.0 * 3 * a.size if i else 0.0,
            kind="input" if i == 0 else "pool" if name.startswith("pool") else "relu",
            binarizable=i + 1 < len(layers) and layers[i + 1][0].startswith("pool"),
            measured_bytes={c.name: c.encode(a).nbytes for c in cs},
        )
        for i, (name, a, flops) in enumerate(layers)
    ]
    sp = [bit_sparsity(a) for _, a, _ in layers]
    meta = {
        "model": "numpy-cnn",
        "images": int(x0.shape[0]),
        "size": int(x0.shape[-1]),
        "seed": seed,
    }
    return Trace(f"cnn-{x0.shape[-1]}px", tuple(recs), np.array(sp)[None], meta=meta)
