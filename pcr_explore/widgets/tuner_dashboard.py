"""TunerDashboard: set a quality target, get the scan level, the saving and the worst images."""

from __future__ import annotations

import functools
import html
import io
import os
from typing import Any

import ipywidgets as w
import numpy as np
from PIL import Image

from ..compare import LevelCache
from ..metrics import METRIC_LABELS
from ..plots import drawable, quality_figure
from ..quality import QualityCurve, quality_curve
from ..sources import LevelSource, open_source
from ..tuner import STATISTICS, TuneResult, recommend
from ._explorer import Explorer
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["TunerDashboard"]

# Target slider per metric: (min, max, step, default).
_TARGETS = {
    "mssim": (0.80, 0.999, 0.001, 0.95),
    "ssim": (0.70, 0.999, 0.001, 0.90),
    "psnr": (20.0, 50.0, 0.5, 35.0),
}


class TunerDashboard(Explorer):
    """Pick the scan level for a quality target, and see what it costs.

    Controls: the target, the metric, the statistic (the mean over images, or
    their 5th percentile) and the sample size. Shows the recommended level
    with its bandwidth saving and bootstrap confidence
    (:func:`~pcr_explore.tuner.recommend`), the sample's bytes-vs-quality
    curve with its p5-p95 band (:func:`~pcr_explore.plots.quality_figure`),
    and the images that suffer most at that level next to their full
    versions.

    Moving the target or switching metric or statistic reuses the measured
    sample (no decoding); a new sample size measures once and is cached.

    Parameters
    ----------
    source : path or LevelSource
        A PCR dataset, a folder of images or one image file.
    target : float, optional
        Starting target (default: 0.95 MS-SSIM, 0.90 SSIM, 35 dB PSNR).
    metric : {"mssim", "ssim", "psnr"}
    statistic : {"mean", "p5"}
    sample : int
        Images measured at the start.
    worst : int
        Images in the gallery.
    thumb_side : int
        Longer side of the gallery pictures, in pixels.
    seed : int
        Seed of the sample and of the bootstrap.
    workers : int, optional
        Processes measuring the sample (default: all cores).

    Attributes
    ----------
    target, metric, statistic, sample
        The controls.
    readout : ipywidgets.HTML
        The recommendation (its ``_repr_html_``).
    result : TuneResult
        The recommendation shown.
    curve_figure : pcr_explore.plots.CurveFigure
        The Bokeh figure and its sources; ``plot`` is its widget.
    gallery_level, gallery_full : list of ipywidgets.Image
        The worst images at the recommended level, and in full.
    gallery_captions : list of ipywidgets.HTML

    Examples
    --------
    >>> from pcr_explore.widgets import TunerDashboard
    >>> dash = TunerDashboard("data/sample/pcr", sample=16)  # doctest: +SKIP
    >>> dash.target.value = 0.99  # doctest: +SKIP
    >>> dash.result.scan  # doctest: +SKIP
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | LevelSource,
        *,
        target: float | None = None,
        metric: str = "mssim",
        statistic: str = "mean",
        sample: int = 64,
        worst: int = 4,
        thumb_side: int = 200,
        seed: int = 0,
        workers: int | None = None,
    ) -> None:
        super().__init__()
        if metric not in _TARGETS:
            raise ValueError(f"metric must be one of {sorted(_TARGETS)}, got {metric!r}")
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
        self.source = open_source(source)
        self.seed, self.workers = seed, workers
        self.thumbs = LevelCache(self.source, max_side=thumb_side)
        lo, hi, step, default = _TARGETS[metric]
        n = len(self.source)
        sizes = sorted({min(n, s) for s in (8, 16, 32, 64, 128, 256, 512)} | {min(n, sample)})

        self.metric = w.Dropdown(
            options=[(label, m) for m, label in METRIC_LABELS.items()],
            value=metric,
            description="metric",
            layout=w.Layout(width="200px"),
        )
        self.target = w.FloatSlider(
            value=default if target is None else target,
            min=lo,
            max=hi,
            step=step,
            readout_format=".3f",
            description="target",
            continuous_update=True,
            layout=w.Layout(width="380px"),
        )
        self.statistic = w.ToggleButtons(
            options=[("mean of images", "mean"), ("5th percentile", "p5")],
            value=statistic,
            style={"button_width": "140px"},
        )
        self.sample = w.SelectionSlider(
            options=sizes,
            value=min(n, sample),
            description="sample",
            continuous_update=False,
            layout=w.Layout(width="300px"),
        )
        self.readout = w.HTML()
        self.curve_figure = quality_figure(title="Quality per scan level over the sample")
        self.plot = self._plot(self.curve_figure.figure)
        self.gallery_level = [w.Image(format="jpeg") for _ in range(worst)]
        self.gallery_full = [w.Image(format="jpeg") for _ in range(worst)]
        self.gallery_captions = [w.HTML() for _ in range(worst)]
        self.gallery_title = w.HTML()
        cards = [
            w.VBox(
                [cap, w.HBox([full, lvl])],  # full left, as in the audit report
                layout=w.Layout(margin="0 12px 8px 0"),
            )
            for cap, lvl, full in zip(self.gallery_captions, self.gallery_level, self.gallery_full)
        ]
        self._cards = cards
        self._curves = functools.lru_cache(maxsize=16)(self._measure)

        self.view = w.VBox(
            [
                w.HBox([self.metric, self.statistic]),
                w.HBox([self.target, self.sample]),
                w.HBox([self.plot, self.readout]),
                self.gallery_title,
                w.GridBox(cards, layout=w.Layout(grid_template_columns="repeat(2, max-content)")),
                self.errors,
            ]
        )
        self.result: TuneResult = self._recommend()
        self._show()
        on_target = self._guarded(self._update)
        self.target.observe(on_target, names="value")
        self.statistic.observe(on_target, names="value")
        self.sample.observe(on_target, names="value")
        self.metric.observe(self._guarded(self._on_metric), names="value")

    # -- what is computed ----------------------------------------------------------

    def _measure(self, sample: int) -> QualityCurve:
        return quality_curve(self.source, sample=sample, seed=self.seed, workers=self.workers)

    def curve(self) -> QualityCurve:
        """Return the sample's quality curve for the chosen metric (measured once per size)."""
        base = self._curves(int(self.sample.value))
        m = self.metric.value
        return base if base.metric == m else base.with_metric(m)

    def _recommend(self) -> TuneResult:
        return recommend(
            self.curve(), float(self.target.value), self.statistic.value, seed=self.seed
        )

    # -- updates ---------------------------------------------------------------------

    def _on_metric(self, change: Any = None) -> None:
        lo, hi, step, default = _TARGETS[self.metric.value]
        with self.target.hold_trait_notifications():
            # Widen first so that the new value is never clipped on the way.
            self.target.min, self.target.max = min(lo, self.target.min), max(hi, self.target.max)
            self.target.value = default
            self.target.min, self.target.max, self.target.step = lo, hi, step
        self._update()

    def _update(self, change: Any = None) -> None:
        self.result = self._recommend()
        self._show()

    def _show(self) -> None:
        r = self.result
        self.readout.value = r._repr_html_()
        self.curve_figure.update(r.curve, target=r.target, recommended=r.scan)
        self.gallery_title.value = (
            f"<b>The images that suffer most at scan {r.scan}</b> "
            f"(left: full, right: scan {r.scan})"
        )
        rows = r.curve.per_image.worst(r.scan, len(self.gallery_level))
        for slot, card in enumerate(self._cards):
            if slot >= len(rows):
                card.layout.display = "none"
                continue
            row = rows[slot]
            card.layout.display = None
            self.gallery_level[slot].value = self.thumbs.display(row["index"], r.scan)
            self.gallery_full[slot].value = self.thumbs.display(row["index"], None)
            self.gallery_captions[slot].value = (
                f"{html.escape(str(row['name']))}: {METRIC_LABELS[r.metric]} "
                f"{row['value']:.4f}, {row['bytes_fraction']:.0%} of its bytes"
            )

    def worst_images(self) -> list[dict[str, Any]]:
        """Return the gallery's rows: index, name, label, bytes, bytes_fraction, value."""
        return self.result.curve.per_image.worst(self.result.scan, len(self.gallery_level))

    # -- static picture ----------------------------------------------------------------

    def snapshot(self) -> bytes:
        """Draw the curve, the recommendation and the gallery with Pillow.

        Returns
        -------
        bytes
            A JPEG, for places where widgets cannot run.
        """
        r = self.result
        c = r.curve
        # The full level's capped PSNR (identical images) would flatten the chart.
        keep = ~np.isnan(drawable(c.statistic(r.statistic), r.metric))
        x = c.bytes_fraction[keep]
        chart = line_chart(
            [(r.statistic, x, c.statistic(r.statistic)[keep])],
            band=(x, c.p5[keep], c.p95[keep]),
            highlight=(r.bytes_fraction, r.value),
            title=f"{METRIC_LABELS[r.metric]} per scan level, sample of {r.sample_size}",
            xlabel="fraction of the full bytes",
            ylabel=METRIC_LABELS[r.metric],
        )
        text = text_panel(r.summary().split("; "), 520)
        pairs = []
        for slot, _ in enumerate(self.worst_images()):
            pics = [
                Image.open(io.BytesIO(self.gallery_full[slot].value)),
                Image.open(io.BytesIO(self.gallery_level[slot].value)),
            ]
            pairs.append(hstack(pics, gap=2))
        parts = [hstack([chart, text])]
        parts += [hstack(pairs[j : j + 2], gap=16) for j in range(0, len(pairs), 2)]
        return to_jpeg(vstack(parts))
