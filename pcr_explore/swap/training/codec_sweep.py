"""Accuracy against codec (ZFP rate) next to the bytes saved, over seeds (``[torch]``).

:func:`codec_sweep` trains the uncompressed run and one run per codec for
each seed, the same batches in the same order, and tabulates validation
accuracy, activation bytes saved and codec CPU time, all measured on this
machine. :meth:`CodecSweep.figure` draws accuracy and bytes saved against
the codec for a notebook.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._json import json_safe
from ..._public import public
from ..capture._images import LabelledImages
from ..codecs import ZFP, Codec, get_codec
from .codec_training import Net, TrainRun, activation_mean, train_runs

__all__ = ["CodecSweep", "codec_sweep"]


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class CodecSweep:
    """Runs per codec (``"none"`` first), one per seed, measured on this machine.

    Attributes
    ----------
    steps : int
    runs : dict of str to tuple of TrainRun
    """

    steps: int
    runs: dict[str, tuple[TrainRun, ...]]

    def rows(self) -> list[dict[str, Any]]:
        """One row per codec: mean accuracy, its change, bytes saved, codec ms per step.

        Returns
        -------
        list of dict
        """
        base = float(np.mean([r.val_accuracy for r in self.runs["none"]]))
        out = []
        for codec, runs in self.runs.items():
            acc = [r.val_accuracy for r in runs]
            out.append(
                {
                    "codec": "uncompressed" if codec == "none" else codec,
                    "val_accuracy": float(np.mean(acc)),
                    "per_seed": acc,
                    "accuracy_change": float(np.mean(acc)) - base,
                    "saved_fraction": activation_mean(runs, "saved_fraction"),
                    "codec_ms_per_step": activation_mean(runs, "encode_seconds", "decode_seconds")
                    / self.steps
                    * 1e3,
                    "identical_losses": all(
                        r.losses == b.losses for r, b in zip(runs, self.runs["none"])
                    ),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return the rows as JSON-ready data, marked measured.

        Returns
        -------
        dict
        """
        return json_safe(
            {"measured": "on this machine (CPU, PyTorch)", "steps": self.steps, "rows": self.rows()}
        )

    def to_text(self) -> str:
        """Format the rows as a table.

        Returns
        -------
        str
        """
        seeds = len(next(iter(self.runs.values())))
        lines = [
            f"validation accuracy after {self.steps} steps, mean of {seeds} seed(s), "
            "measured on this machine",
            f"{'codec':<14}{'val acc':>9}{'change':>9}{'bytes saved':>13}{'codec ms/step':>15}",
        ]
        for r in self.rows():
            lines.append(
                f"{r['codec']:<14}{r['val_accuracy']:>9.3f}{r['accuracy_change']:>+9.3f}"
                f"{r['saved_fraction']:>13.1%}{r['codec_ms_per_step']:>15.1f}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.to_text())}</pre>"

    def figure(self) -> Any:
        """Accuracy (left axis) and bytes saved (right) against the codec, as a Bokeh figure.

        Returns
        -------
        bokeh.plotting.figure
        """
        from bokeh.models import FactorRange, LinearAxis, Range1d
        from bokeh.plotting import figure

        rows = self.rows()
        names = [r["codec"] for r in rows]
        fig = figure(
            x_range=FactorRange(*names),
            height=300,
            width=560,
            title=f"Accuracy and bytes saved, {self.steps} steps (measured on this machine)",
            y_range=Range1d(start=0, end=1.05),
            y_axis_label="validation accuracy",
            toolbar_location=None,
        )
        fig.vbar(x=names, top=[r["val_accuracy"] for r in rows], width=0.5, legend_label="accuracy")
        for i, r in enumerate(rows):
            fig.scatter([names[i]] * len(r["per_seed"]), r["per_seed"], size=6, color="black")
        fig.extra_y_ranges = {"saved": Range1d(start=0, end=1.05)}
        fig.add_layout(
            LinearAxis(y_range_name="saved", axis_label="activation bytes saved"), "right"
        )
        fig.line(
            names,
            [r["saved_fraction"] for r in rows],
            y_range_name="saved",
            color="darkorange",
            line_width=2,
            legend_label="bytes saved",
        )
        legend = fig.legend[0]  # above the plot: a bar at 1.0 is not covered
        legend.orientation = "horizontal"
        fig.add_layout(legend, "above")
        return fig


def _label(codec: str | Codec) -> str:
    """The codec as the sweep shows it: a lossy codec with its rate, even the default one.

    Examples
    --------
    >>> _label("zfp"), _label("zfp:16"), _label("zvc")
    ('zfp:16', 'zfp:16', 'zvc')
    """
    c = get_codec(codec)
    return f"{c.spec}:{c.rate}" if isinstance(c, ZFP) else c.name


@public("pcr_explore.swap")
def codec_sweep(
    images: LabelledImages,
    *,
    codecs: Sequence[str] = ("zfp:16", "zfp:8", "zfp:4"),
    steps: int = 100,
    seeds: Sequence[int] = (0,),
    net: Net = "small-cnn",
    batch_size: int = 32,
    lr: float | None = None,
    threads: int | None = 1,
) -> CodecSweep:
    """Train uncompressed and with each codec, per seed, and compare accuracy and bytes.

    Parameters
    ----------
    images : LabelledImages
        From :func:`~pcr_explore.swap.load_labelled_images`.
    codecs : sequence of str
        Codecs for the saved activations.
    steps, net, batch_size, lr
        See :func:`~pcr_explore.swap.training.codec_training.train_run`.
    seeds : sequence of int
        Seeds; each codec runs once per seed, as does the uncompressed run.
    threads : int, optional
        PyTorch threads during the runs (restored after).

    Returns
    -------
    CodecSweep

    Raises
    ------
    SwapError
        For an unknown codec, no seeds, or bad training settings.
    MissingExtraError
        If PyTorch is not installed.

    Examples
    --------
    >>> from pcr_explore.swap import load_labelled_images
    >>> from pcr_explore import open_source
    >>> images = load_labelled_images(open_source("photos/"), size=48)
    >>> sweep = codec_sweep(images, codecs=["zfp:16", "zfp:4"], seeds=(0, 1), steps=5,
    ...                     batch_size=4)
    >>> print(sweep.to_text())
    validation accuracy after 5 steps, mean of 2 seed(s), measured on this machine
    codec           val acc   change  bytes saved  codec ms/step
    uncompressed ...
    zfp:16 ...
    zfp:4 ...
    """
    names = [_label(c) for c in codecs]
    kw: dict[str, Any] = dict(steps=steps, net=net, batch_size=batch_size, lr=lr)
    return CodecSweep(steps, train_runs(images, codecs=names, seeds=seeds, threads=threads, **kw))
