"""Train with compressed saved activations and compare with the uncompressed run (``[torch]``).

:func:`swap_train` trains the same network twice per seed on the same
images in the same order: once as usual, once inside
:func:`~pcr_explore.swap.training.compressed.compressed_activations`. It reports the
final validation accuracy and loss of both, whether the loss sequences are
identical (they must be for a lossless codec), the activation bytes saved,
and the CPU time the codec added, all measured on this machine. This is
what ``pcr-explore swap-train`` prints.
"""

from __future__ import annotations

import contextlib
import html
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._json import json_safe
from ..._public import public
from ...errors import SwapError
from ..capture._images import ImageBatches, LabelledImages, Opener, evaluate, load_labelled_images
from ..capture._torch_ops import require_torch
from ..capture.nets import DEFAULT_LR, build_net
from ..capture.train_capture import cycle_batches
from ..codecs import get_codec
from .compressed import ActivationPolicy, compressed_activations

__all__ = [
    "TrainRun",
    "SwapTrainResult",
    "ImageBatches",
    "evaluate",
    "train_run",
    "train_runs",
    "swap_train",
]


@public("pcr_explore.swap")
@dataclass(frozen=True)
class TrainRun:
    """One training run, measured on this machine.

    Attributes
    ----------
    codec : str
        ``"none"`` for the uncompressed run.
    seed : int
    losses : tuple of float
        Training loss of every step.
    val_accuracy, val_loss : float
        On the validation images after the last step.
    seconds : float
        Wall time of the training steps (evaluation excluded).
    activations : dict or None
        :meth:`~pcr_explore.swap.training.compressed.ActivationLog.summary` of the
        compressed run.
    """

    codec: str
    seed: int
    losses: tuple[float, ...]
    val_accuracy: float
    val_loss: float
    seconds: float
    activations: dict[str, Any] | None = None


#: A network: a name of ``NETS``, or ``f(num_classes)`` returning a fresh module.
Net = str | Callable[[int], Any]


def _model(net: Net, num_classes: int) -> Any:
    return build_net(net, num_classes=num_classes) if isinstance(net, str) else net(num_classes)


def _lr(net: Net, lr: float | None) -> float:
    return (DEFAULT_LR.get(net, 0.05) if isinstance(net, str) else 0.05) if lr is None else lr


def activation_mean(runs: Sequence[TrainRun], *keys: str) -> float:
    """Mean over *runs* of the sum of *keys* of their activation summaries (0 when absent)."""
    return float(np.mean([sum((r.activations or {}).get(k, 0) for k in keys) for r in runs]))


def _net_name(net: Net) -> str:
    return net if isinstance(net, str) else getattr(net, "__name__", type(net).__name__)


@public("pcr_explore.swap")
def train_run(
    images: LabelledImages,
    *,
    codec: str | None,
    steps: int,
    net: Net = "small-cnn",
    batch_size: int = 32,
    lr: float | None = None,
    seed: int = 0,
    policy: ActivationPolicy | None = None,
    min_bytes: int = 4096,
) -> TrainRun:
    """Train a fresh network for *steps* steps, its saved activations through *codec*.

    The initial weights come from ``torch.manual_seed(seed)`` and the batch
    order (a new permutation each epoch, the last partial batch dropped)
    from a generator seeded with *seed*, so two runs with the same seed see
    the same batches in the same order. SGD with momentum 0.9, cross-entropy.

    Parameters
    ----------
    images : LabelledImages
        Training and validation images.
    codec : str or None
        Codec for the saved activations; None trains without hooks.
    steps : int
        Optimizer steps, >= 1.
    net : str or callable
        A name of :data:`~pcr_explore.swap.capture.nets.NETS`, or a function
        ``net(num_classes)`` returning a fresh ``torch.nn.Module``.
    batch_size : int
        Images per step; at most the number of training images.
    lr : float, optional
        Learning rate; default :data:`~pcr_explore.swap.capture.nets.DEFAULT_LR` of
        the network (0.05; 0.01 for ``vgg-small``, which has no batch norm;
        0.05 for a network passed in).
    seed : int
        Seed of the weights and of the batch order.
    policy : callable, optional
        Per-tensor decisions (see :func:`compressed_activations`).
    min_bytes : int
        Smaller saved tensors stay raw.

    Returns
    -------
    TrainRun

    Raises
    ------
    SwapError
        For bad steps or batch size, or an unknown network or codec.
    MissingExtraError
        If PyTorch is not installed.

    Examples
    --------
    >>> from pcr_explore import open_source
    >>> images = load_labelled_images(open_source("photos/"), size=48)
    >>> run = train_run(images, codec="zfp:8", steps=5, batch_size=4)
    >>> len(run.losses), run.activations["tensors"]
    (5, 55)
    >>> round(run.activations["saved_fraction"], 2)  # zfp:8 keeps 8 bits a value
    0.73
    """
    torch = require_torch("train_run")
    if not isinstance(steps, int) or steps < 1:
        raise SwapError(f"steps must be an integer >= 1, got {steps!r}")
    next_batch = cycle_batches(ImageBatches(images, batch_size, seed=seed))
    name = "policy" if policy is not None else "none" if codec is None else get_codec(codec).name
    torch.manual_seed(seed)
    model = _model(net, len(images.classes))
    opt = torch.optim.SGD(model.parameters(), lr=_lr(net, lr), momentum=0.9)
    losses: list[float] = []
    ctx: Any = (
        contextlib.nullcontext(None)
        if name == "none"
        else compressed_activations(codec, policy=policy, model=model, min_bytes=min_bytes)
    )
    model.train()
    t0 = time.perf_counter()
    with ctx as log:
        for _ in range(steps):
            x, y = next_batch()
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    seconds = time.perf_counter() - t0
    acc, vloss = evaluate(model, images)
    return TrainRun(
        name, seed, tuple(losses), acc, vloss, seconds, log.summary() if log is not None else None
    )


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class SwapTrainResult:
    """Training with a codec on the saved activations next to the uncompressed run.

    Attributes
    ----------
    settings : dict
        Dataset, network, codec, steps, batch size, image size, learning rate.
    baseline, compressed : tuple of TrainRun
        One run per seed each.
    """

    settings: dict[str, Any]
    baseline: tuple[TrainRun, ...]
    compressed: tuple[TrainRun, ...]

    @property
    def identical_losses(self) -> bool:
        """Every seed's compressed run gave exactly the uncompressed run's losses."""
        return all(b.losses == c.losses for b, c in zip(self.baseline, self.compressed))

    def _mean(self, runs: Sequence[TrainRun], attr: str) -> float:
        return float(np.mean([getattr(r, attr) for r in runs]))

    def to_dict(self) -> dict[str, Any]:
        """Return the comparison as JSON-ready data (what ``swap-train --json`` writes).

        Returns
        -------
        dict
            ``measured`` (where), ``settings``, ``uncompressed`` and
            ``compressed`` (mean final accuracy and loss, per-seed values),
            ``identical_losses``, ``activation_bytes`` (raw and stored per
            step, fraction saved) and ``overhead`` (codec seconds per step,
            step time of both runs).
        """
        steps, compressed = self.settings["steps"], self.compressed
        raw = activation_mean(compressed, "raw_bytes") / steps
        stored = activation_mean(compressed, "stored_bytes") / steps
        codec_s = activation_mean(compressed, "encode_seconds", "decode_seconds")
        by_codec = (compressed[0].activations or {}).get("by_codec", {}) if compressed else {}

        def side(runs: tuple[TrainRun, ...]) -> dict[str, Any]:
            return {
                "val_accuracy": self._mean(runs, "val_accuracy"),
                "val_loss": self._mean(runs, "val_loss"),
                "final_train_loss": float(np.mean([np.mean(r.losses[-10:]) for r in runs])),
                "per_seed": [
                    {"seed": r.seed, "val_accuracy": r.val_accuracy, "val_loss": r.val_loss}
                    for r in runs
                ],
                "seconds_per_step": self._mean(runs, "seconds") / steps,
            }

        base, comp = side(self.baseline), side(self.compressed)
        return json_safe(
            {
                "measured": "on this machine (CPU, PyTorch)",
                "settings": self.settings,
                "uncompressed": base,
                "compressed": comp,
                "accuracy_change": comp["val_accuracy"] - base["val_accuracy"],
                "identical_losses": self.identical_losses,
                "activation_bytes": {
                    "raw_per_step": raw,
                    "stored_per_step": stored,
                    "saved_fraction": 1 - stored / raw if raw else 0.0,
                },
                "overhead": {
                    "codec_seconds_per_step": codec_s / steps,
                    "step_seconds_uncompressed": base["seconds_per_step"],
                    "step_seconds_compressed": comp["seconds_per_step"],
                    "step_time_ratio": comp["seconds_per_step"] / base["seconds_per_step"]
                    if base["seconds_per_step"]
                    else None,
                },
                "by_codec": by_codec,
            }
        )

    def to_text(self) -> str:
        """Format the comparison as a few lines (figures measured on this machine).

        Returns
        -------
        str
        """
        d = self.to_dict()
        s = d["settings"]
        b, c, a, o = d["uncompressed"], d["compressed"], d["activation_bytes"], d["overhead"]
        same = "identical" if d["identical_losses"] else "different"

        def f(v: float | None, spec: str) -> str:
            return "nan" if v is None else format(v, spec)

        def row(label: str, r: dict[str, Any]) -> str:
            return (
                f"{label:<14}{f(r['val_accuracy'], '.3f'):>9}{f(r['val_loss'], '.3f'):>10}"
                f"{f(r['final_train_loss'], '.3f'):>12}{r['seconds_per_step'] * 1e3:>9.1f}"
            )

        change = f(d["accuracy_change"], "+.3f")
        return "\n".join(
            [
                f"{s['net']} on {s['dataset']}: {s['steps']} steps, batch {s['batch_size']}, "
                f"{s['size']} px, seeds {s['seeds']} (measured on this machine, CPU)",
                f"{'run':<14}{'val acc':>9}{'val loss':>10}{'train loss':>12}{'ms/step':>9}",
                row("uncompressed", b),
                row(s["codec"], c),
                f"loss sequences: {same}; accuracy change {change}",
                f"saved activations: {a['raw_per_step'] / 2**20:.2f} MiB -> "
                f"{a['stored_per_step'] / 2**20:.2f} MiB per step "
                f"({a['saved_fraction']:.1%} saved); codec CPU time "
                f"{o['codec_seconds_per_step'] * 1e3:.1f} ms per step",
            ]
        )

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.to_text())}</pre>"


def train_runs(
    images: LabelledImages,
    *,
    codecs: Sequence[str],
    seeds: Sequence[int],
    threads: int | None,
    policy: ActivationPolicy | None = None,
    **settings: Any,
) -> dict[str, tuple[TrainRun, ...]]:
    """The uncompressed run (key ``"none"``) and one run per codec, each once per seed.

    *settings* are :func:`train_run`'s; PyTorch runs on *threads* threads
    meanwhile (restored after). *policy* applies to the codecs' runs.
    """
    torch = require_torch("train_runs")
    if not seeds:
        raise SwapError("at least one seed is needed")
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return {
            c: tuple(
                train_run(
                    images,
                    codec=None if c == "none" else c,
                    seed=s,
                    policy=None if c == "none" else policy,
                    **settings,
                )
                for s in seeds
            )
            for c in ["none", *codecs]
        }
    finally:
        torch.set_num_threads(before)


@public("pcr_explore.swap")
def swap_train(
    data: LabelledImages | str | os.PathLike[str],
    *,
    codec: str = "zfp:8",
    steps: int = 100,
    net: Net = "small-cnn",
    size: int = 48,
    batch_size: int = 32,
    lr: float | None = None,
    seeds: Sequence[int] = (0,),
    per_class: int | None = None,
    opener: Opener | None = None,
    policy: ActivationPolicy | None = None,
    min_bytes: int = 4096,
    threads: int | None = None,
) -> SwapTrainResult:
    """Train with *codec* on the saved activations and without, same seeds, and compare.

    Parameters
    ----------
    data : LabelledImages or path
        Images already loaded, or a path to load them from with *opener*
        (see :func:`~pcr_explore.swap.load_labelled_images`).
    codec : str
        Codec spec (``"zvc"``, ``"zfp:8"``, ``"binarize"``, ...).
    steps, net, batch_size, lr, policy, min_bytes
        See :func:`train_run`.
    size : int
        Image side in pixels when *data* is a path.
    seeds : sequence of int
        One pair of runs (uncompressed, compressed) per seed.
    per_class : int, optional
        At most this many images per class and side, when *data* is a path.
    opener : callable, optional
        Opens the photos of a path (:func:`pcr_explore.open_source`).
    threads : int, optional
        PyTorch threads during the runs (restored after); one thread makes
        CPU timings steadier on a shared machine.

    Returns
    -------
    SwapTrainResult

    Raises
    ------
    SwapError
        For bad settings, an unknown codec or network, or a path without
        an *opener*.
    DatasetError, FileNotFoundError
        If the photos of a path cannot be read.
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).

    Examples
    --------
    >>> from pcr_explore import open_source
    >>> res = swap_train("photos/", opener=open_source, codec="zfp:8", steps=5, batch_size=4)
    >>> print(res.to_text())
    small-cnn on photos: 5 steps, batch 4, 48 px, seeds [0] (measured on this machine, CPU)
    ...
    saved activations: 1.48 MiB -> 0.40 MiB per step (72.7% saved); codec CPU time ...
    """
    require_torch("swap_train")
    name = get_codec(codec).name
    images = (
        data
        if isinstance(data, LabelledImages)
        else load_labelled_images(data, opener=opener, size=size, per_class=per_class)
    )
    kw = dict(steps=steps, net=net, batch_size=batch_size, lr=lr, min_bytes=min_bytes)
    runs = train_runs(images, codecs=[name], seeds=seeds, threads=threads, policy=policy, **kw)
    settings = {
        "dataset": images.source,
        "net": _net_name(net),
        "codec": name if policy is None else "policy",
        "steps": steps,
        "batch_size": batch_size,
        "size": int(images.train_x.shape[-1]),
        "lr": _lr(net, lr),
        "seeds": list(seeds),
        "train_images": len(images.train_y),
        "val_images": len(images.val_y),
        "min_bytes": min_bytes,
    }
    return SwapTrainResult(settings, runs["none"], runs[name])
