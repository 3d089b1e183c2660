"""Every trace a user can pick: built-in analytic, built-in measured, or a saved file.

Analytic traces (:mod:`.architectures`) compute VGG-16 and ResNet-50 shapes
and FLOPs and take an assumed sparsity. Measured traces were captured from
real training on flowers5 (:func:`~pcr_explore.swap.capture.train_capture.capture_training`,
by ``bench/make_swap_traces.py``) and ship with the package as small JSON
files: their sparsity per tensor and step is what the networks produced.
:func:`list_traces` lists them all (with a user's own files) for a picker;
:func:`load_trace` loads one by name or path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..._public import public
from ...errors import SwapError
from ._trace import Trace
from .architectures import BUILTIN_MODELS, builtin_trace

__all__ = ["TraceOption", "measured_trace_names", "measured_trace", "list_traces", "load_trace"]

_DIR = "measured_traces"


@public("pcr_explore.swap")
def measured_trace_names() -> list[str]:
    """Names of the measured traces shipped with the package, sorted.

    Returns
    -------
    list of str

    Examples
    --------
    >>> "small-cnn-flowers5" in measured_trace_names()
    True
    """
    root = resources.files("pcr_explore.swap.traces") / _DIR
    return sorted(p.name[: -len(".json")] for p in root.iterdir() if p.name.endswith(".json"))


@public("pcr_explore.swap")
def measured_trace(name: str) -> Trace:
    """Load a shipped measured trace by name.

    Parameters
    ----------
    name : str
        One of :func:`measured_trace_names` (``"measured:"`` prefix allowed).

    Returns
    -------
    Trace
        One iteration per captured training step; ``meta`` says how it was
        made (network, data, image size, batch, steps, losses, script).

    Raises
    ------
    SwapError
        For an unknown name.

    Examples
    --------
    >>> t = measured_trace("small-cnn-flowers5")
    >>> t.iterations > 1, t.meta["dataset"]
    (True, 'flowers5')
    """
    key = name.removeprefix("measured:")
    if key not in measured_trace_names():
        raise SwapError(f"no measured trace {name!r}; shipped: {', '.join(measured_trace_names())}")
    text = (resources.files("pcr_explore.swap.traces") / _DIR / f"{key}.json").read_text("utf-8")
    return Trace.from_json(json.loads(text), source=f"measured trace {key}")


@public("pcr_explore.swap")
@dataclass(frozen=True)
class TraceOption:
    """One entry of a trace picker.

    Attributes
    ----------
    kind : str
        ``"analytic"`` (shapes computed, sparsity assumed), ``"measured"``
        (captured from real training, shipped) or ``"file"`` (a user's).
    name : str
        What :func:`load_trace` takes.
    label : str
        Text for a drop-down.
    description : str
        One sentence on where the numbers come from.
    """

    kind: str
    name: str
    label: str
    description: str

    def load(self) -> Trace:
        """Load the trace (analytic ones at batch 64, 224 px, sparsity 0.65)."""
        return load_trace(self.name)


@public("pcr_explore.swap")
def list_traces(files: Iterable[str | os.PathLike[str]] = ()) -> list[TraceOption]:
    """List the traces to choose from: analytic, measured, then the given files.

    Parameters
    ----------
    files : iterable of path
        A user's trace files (``Trace.save`` or ``capture_training(...).trace.save``).

    Returns
    -------
    list of TraceOption

    Examples
    --------
    >>> [(o.kind, o.name) for o in list_traces(["mine.json"])]  # doctest: +NORMALIZE_WHITESPACE
    [('analytic', 'vgg16'), ('analytic', 'resnet50'),
     ('measured', 'measured:resnet-small-flowers5'), ('measured', 'measured:small-cnn-flowers5'),
     ('measured', 'measured:vgg-small-flowers5'), ('file', 'mine.json')]
    """
    out = [
        TraceOption(
            "analytic",
            m,
            f"{m} (analytic)",
            f"{m} shapes and FLOPs computed for batch 64 at 224 px; every ReLU and pool "
            "output assumed 65% zeros",
        )
        for m in BUILTIN_MODELS
    ]
    for name in measured_trace_names():
        meta = measured_trace(name).meta
        out.append(
            TraceOption(
                "measured",
                f"measured:{name}",
                f"{name} (measured)",
                f"{meta.get('net', name)} trained on {meta.get('dataset', '?')} at "
                f"{meta.get('size', '?')} px, batch {meta.get('batch', '?')}: sparsity measured "
                f"at steps {meta.get('steps')}",
            )
        )
    for f in files:
        p = Path(f)
        out.append(TraceOption("file", str(p), f"{p.name} (file)", f"trace file {p}"))
    return out


@public("pcr_explore.swap")
def load_trace(spec: str | os.PathLike[str] | Trace) -> Trace:
    """Load a trace by name or path.

    Parameters
    ----------
    spec : str, path or Trace
        ``"vgg16"`` / ``"resnet50"`` (analytic, batch 64, 224 px, sparsity
        0.65), ``"measured:<name>"`` or a bare measured name, or a trace
        JSON file; a Trace is returned as is.

    Returns
    -------
    Trace

    Raises
    ------
    SwapError
        If the name is unknown and no such file exists, or the file is not
        a trace.

    Examples
    --------
    >>> load_trace("vgg16").name, load_trace("measured:vgg-small-flowers5").meta["net"]
    ('vgg16-b64-r224', 'vgg-small')
    """
    if isinstance(spec, Trace):
        return spec
    text = os.fspath(spec)
    if text.lower() in BUILTIN_MODELS:
        return builtin_trace(text.lower())
    if text.startswith("measured:") or (text in measured_trace_names() and not Path(text).exists()):
        return measured_trace(text)
    return Trace.load(text)
