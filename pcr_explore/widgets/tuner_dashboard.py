"""TunerDashboard: set a quality target, get the scan level, the saving and the worst images."""

from __future__ import annotations

import functools
import html
import io
import os
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, cast

import ipywidgets as w
import numpy as np
from PIL import Image

from .._public import public
from ..plots import quality_figure
from ..plots._quality import recommended_data, target_location
from ..plots._scales import axis_label, drawable
from ..quality import QualityCurve, quality_curve
from ..quality.compare import LevelCache
from ..quality.compare._views import encode_jpeg, jpeg_size, worst_detail
from ..quality.metrics import METRIC_LABELS
from ..quality.metrics._names import format_value
from ..quality.tune import DEFAULT_STATISTIC, STATISTICS, TuneResult, recommend
from ..read.sources import LevelSource, open_source
from ._demo import data_uri
from ._explorer import Explorer
from ._figures import update_source
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["TunerDashboard"]

# Target slider per metric: (min, max, step, default, readout format).
_TARGETS = {
    "mssim": (0.80, 0.999, 0.001, 0.95, ".3f"),
    "ssim": (0.70, 0.999, 0.001, 0.90, ".3f"),
    "psnr": (20.0, 50.0, 0.5, 35.0, ".1f"),
}
_ROW = w.Layout(flex_flow="row wrap", align_items="center", width="100%")


@dataclass(frozen=True)
class GalleryCard:
    """One image of the gallery: its three crops (JPEG bytes) and its caption (HTML)."""

    full: bytes
    level: bytes
    difference: bytes
    caption: str


def _img(data: bytes, alt: str) -> str:
    w_, h_ = jpeg_size(data)
    return (
        f"<img src='{data_uri(data)}' width='{w_}' height='{h_}' alt='{alt}' "
        "style='max-width:none'>"
    )


def gallery_html(title: str, cards: list[GalleryCard], column: str) -> str:
    """The gallery as one piece of HTML, pictures inlined: the page gets it in one message.

    A widget per picture and caption would cost the page a message each,
    which made up most of the time of a statistic or metric switch.
    """
    items = "".join(
        "<div style='margin:0 12px 8px 0'>"
        f"<div>{c.caption}</div>"
        "<div style='display:flex;gap:2px'>"
        f"{_img(c.full, 'full')}{_img(c.level, 'level')}{_img(c.difference, 'difference x4')}"
        "</div></div>"
        for c in cards
    )
    grid = f"display:grid;grid-template-columns:repeat(auto-fill, {column});width:100%"
    return f"<div>{title}</div><div style='{grid}'>{items}</div>"


@public("pcr_explore.widgets")
class TunerDashboard(Explorer):
    """Pick the scan level for a quality target, and see what it costs.

    Controls: the target, the metric, the statistic (the 5th percentile over
    images, as :func:`~pcr_explore.tune` and :func:`~pcr_explore.budget` take
    by default, or their mean) and the sample size. Shows the recommended level
    with its bandwidth saving and bootstrap confidence
    (:func:`~pcr_explore.quality.tune.recommend`), the sample's bytes-vs-quality
    curve with its p5-p95 band and the recommended level on the chosen
    statistic's line (:func:`~pcr_explore.plots.quality_figure`), and the
    images that suffer most at that level, zoomed where they differ most
    from their full versions (:func:`~pcr_explore.quality.compare.worst_detail`).

    Moving the target or switching metric or statistic reuses the measured
    sample (no decoding); a new sample size measures once (the dashboard
    says so while it works) and is cached.

    Parameters
    ----------
    source : path or LevelSource
        A PCR dataset, a folder of images or one image file.
    target : float, optional
        Starting target (default: 0.95 MS-SSIM, 0.90 SSIM, 35 dB PSNR).
    metric : {"mssim", "ssim", "psnr"}
    statistic : {"p5", "mean"}
    sample : int
        Images measured at the start.
    worst : int
        Images in the gallery.
    thumb_side : int
        Side of each gallery crop, in pixels.
    zoom : float
        Magnification of the gallery crops.
    seed : int
        Seed of the sample and of the bootstrap.
    workers : int, optional
        Processes measuring the sample (default: all cores).
    curve : QualityCurve, optional
        A sample measured already by :func:`~pcr_explore.quality_curve` on
        *source*: shown at once as the sample of its size, never measured
        again (other sizes are measured when picked).

    Attributes
    ----------
    target : ipywidgets.FloatSlider
        The target slider of the chosen metric (``targets`` holds one per
        metric; each keeps its own value).
    metric, statistic, sample, scale
        The other controls (``scale``: the metric, or SSIM/MS-SSIM in dB).
    readout : ipywidgets.HTML
        The recommendation (its ``_repr_html_``).
    result : TuneResult
        The recommendation shown.
    curve_figure : pcr_explore.plots.CurveFigure
        The Bokeh figure and its sources; ``plot`` is its widget.
    gallery : ipywidgets.HTML
        The images that suffer most at the recommended level, one card each:
        crops of the full image, of the level and of their amplified
        difference, inlined so that a new level reaches the page in one
        message; ``gallery_cards`` holds each card's crops and caption.

    Examples
    --------
    >>> from pcr_explore.widgets import TunerDashboard
    >>> dash = TunerDashboard("photos.pcr", sample=16)
    >>> dash.target.value = 0.99   # the 5th percentile of 16 images at 0.99
    >>> dash.result.scan
    9
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | LevelSource,
        *,
        target: float | None = None,
        metric: str = "mssim",
        statistic: str = DEFAULT_STATISTIC,
        sample: int = 64,
        worst: int = 4,
        thumb_side: int = 160,
        zoom: float = 3.0,
        seed: int = 0,
        workers: int | None = None,
        curve: QualityCurve | None = None,
    ) -> None:
        super().__init__()
        if metric not in _TARGETS:
            raise ValueError(f"metric must be one of {sorted(_TARGETS)}, got {metric!r}")
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
        self.source = open_source(source)
        self.seed, self.workers = seed, workers
        self.thumb_side, self.zoom = thumb_side, zoom
        # Pictures big enough that a zoomed crop shows the stored pixels.
        self.pictures = LevelCache(self.source, max_side=round(thumb_side * zoom))
        n = len(self.source)
        if curve is not None and curve.population != n:
            raise ValueError(
                f"the curve was measured on {curve.population} images, {source!r} holds {n}"
            )
        self._given = curve
        sample = sample if curve is None else curve.sample_size
        sizes = sorted({min(n, s) for s in (8, 16, 32, 64, 128, 256, 512)} | {min(n, sample)})

        self._build_controls(metric, statistic, target, sizes, min(n, sample))
        self.readout = w.HTML()
        self.curve_figure = quality_figure(
            title="Quality per scan level over the sample",
            sizing_mode="stretch_width",
            height=340,
        )
        self.plot = self._plot(self.curve_figure.figure)
        self._worst = worst
        self.gallery = w.HTML()
        self.gallery_cards: list[GalleryCard] = []
        self._curves = functools.lru_cache(maxsize=16)(self._measure)
        self._measured: set[int] = set()  # sample sizes measured (no wait to show)
        self._gallery_shows: tuple[int, str, int] | None = None
        self._curve_drawn: tuple[int, str, str] | None = None  # sample, metric, scale drawn

        self._column = f"minmax({3 * thumb_side + 20}px, 1fr)"
        self.view = self._layout()
        self.plot.add_class("pcr-dim")
        self.gallery.add_class("pcr-dim")
        self.gallery.add_class("pcr-gallery")
        self.result: TuneResult = self._recommend()
        self._show()
        self._connect()

    def _build_controls(
        self, metric: str, statistic: str, target: float | None, sizes: list[int], sample: int
    ) -> None:
        """The metric, target, statistic, sample-size and scale controls."""
        self.metric = w.Dropdown(
            options=[(label, m) for m, label in METRIC_LABELS.items()],
            value=metric,
            description="metric",
            layout=w.Layout(width="200px"),
        )
        # One target slider per metric, only the chosen one shown: switching
        # metric never changes a slider's range, which the page would answer
        # by snapping the value to the old range and sending it back.
        self.targets = {
            m: w.FloatSlider(
                value=(t_default if target is None or m != metric else target),
                min=t_lo,
                max=t_hi,
                step=t_step,
                readout_format=t_fmt,
                description="target",
                continuous_update=True,
                layout=w.Layout(width="340px", display=None if m == metric else "none"),
            )
            for m, (t_lo, t_hi, t_step, t_default, t_fmt) in _TARGETS.items()
        }
        self.statistic = w.ToggleButtons(
            options=[("5th percentile", "p5"), ("mean of images", "mean")],
            value=statistic,
            style={"button_width": "auto"},
        )
        self.sample = w.SelectionSlider(
            options=sizes,
            value=sample,
            description="sample",
            continuous_update=False,
            layout=w.Layout(width="280px"),
        )
        self.scale = w.ToggleButtons(
            options=[("value", "value"), ("in dB", "db")],
            value="value",
            tooltips=["the metric itself", "-10 log10(1 - value): spreads the upper levels"],
            style={"button_width": "auto"},
        )

    def _layout(self) -> w.VBox:
        """Controls on top, the curve and readout, then the gallery of worst images."""
        side = w.VBox(
            [self.scale, self.readout], layout=w.Layout(flex="1 1 32%", min_width="300px")
        )
        return w.VBox(
            [
                w.HBox([self.metric, self.statistic, self.presentation], layout=_ROW),
                w.HBox([*self.targets.values(), self.sample], layout=_ROW),
                self.status,
                w.HBox(
                    [w.Box([self.plot], layout=w.Layout(flex="1 1 60%", min_width="320px")), side],
                    layout=w.Layout(flex_flow="row wrap", width="100%"),
                ),
                self.gallery,
                self.errors,
            ],
            layout=w.Layout(width="100%"),
        )

    def _connect(self) -> None:
        """Every control to what it redraws."""
        on_target = self._guarded(self._update)
        for slider in self.targets.values():
            slider.observe(on_target, names="value")
        self.statistic.observe(on_target, names="value")
        self.scale.observe(on_target, names="value")
        self.sample.observe(self._guarded(self._on_sample), names="value")
        self.metric.observe(self._guarded(self._on_metric), names="value")

    # -- what is computed ----------------------------------------------------------

    @property
    def target(self) -> w.FloatSlider:
        """The target slider of the chosen metric."""
        return self.targets[str(self.metric.value)]

    def _measure(self, sample: int) -> QualityCurve:
        if self._given is not None and sample == self._given.sample_size:
            self._measured.add(sample)
            return self._given
        curve = quality_curve(
            self.source, sample=sample, seed=self.seed, workers=self.workers, progress=False
        )
        self._measured.add(sample)
        return curve

    def curve(self) -> QualityCurve:
        """Return the sample's quality curve for the chosen metric (measured once per size)."""
        base = self._curves(int(self.sample.value))
        m = self.metric.value
        return base if base.metric == m else base.with_metric(m)

    def _recommend(self) -> TuneResult:
        return recommend(
            self.curve(),
            target=float(self.target.value),
            statistic=self.statistic.value,
            seed=self.seed,
        )

    # -- updates ---------------------------------------------------------------------

    def _on_metric(self, change: Any = None) -> None:
        for m, slider in self.targets.items():
            slider.layout.display = None if m == self.metric.value else "none"
        self.scale.layout.display = "none" if self.metric.value == "psnr" else None
        self._update()

    def _on_sample(self, change: Any = None) -> None:
        n = int(self.sample.value)
        if n not in self._measured:
            with self.busy(f"measuring {n} images at every level..."):
                self.curve()
        self._update()

    def _update(self, change: Any = None) -> None:
        self.result = self._recommend()
        self._show()

    def _show(self) -> None:
        r = self.result
        scale = "value" if r.metric == "psnr" else str(self.scale.value)
        shown = (int(self.sample.value), r.metric, r.scan)
        # New lines or new pictures take the page a few hundred milliseconds to draw: it
        # says so (the messages arrive in order, so the note goes when the last one is in).
        slow = shown != self._gallery_shows or shown[:2] + (scale,) != self._curve_drawn
        with self.busy(f"drawing scan {r.scan}...") if slow else nullcontext():
            self.readout.value = r._repr_html_()
            self._draw_curve(r, scale)
            if shown != self._gallery_shows:  # the same level shows the same images
                self._gallery_shows = shown
                self._show_gallery(r)

    def _draw_curve(self, r: TuneResult, scale: str) -> None:
        """Update the figure; a new target or statistic moves only the rule and the star.

        The sample's lines (every image's, the band, the statistics) are sent
        again only when the sample, the metric or the scale changes: replacing
        them makes the page recompute and repaint every line, which took most
        of the time of a step of the target slider.
        """
        fig = self.curve_figure
        drawn = (int(self.sample.value), r.metric, scale)
        if drawn != self._curve_drawn:
            self._curve_drawn = drawn
            fig.update(
                r.curve, target=r.target, recommended=r.scan, statistic=r.statistic, scale=scale
            )
            return
        update_source(fig.recommended, recommended_data(r.curve, r.scan, r.statistic, scale))
        where = target_location(r.target, r.metric, scale)
        fig.target.location = where
        fig.target.visible = where is not None

    def _show_gallery(self, r: TuneResult) -> None:
        title = (
            f"<b>The images that suffer most at scan {r.scan}</b>, zoomed x{self.zoom:g} where "
            f"they differ most (left to right: full, scan {r.scan}, difference x4)"
        )
        self.gallery_cards = []
        for row in r.curve.per_image.worst(r.scan, n=self._worst):
            full, level, diff, (cx, cy) = self._crops(row["index"], r.scan)
            caption = (
                f"<b>{html.escape(str(row['name']))}</b>: {METRIC_LABELS[r.metric]} "
                f"{format_value(row['value'], r.metric)}, {row['bytes_fraction']:.0%} of its "
                f"bytes; window at ({cx:.0%}, {cy:.0%})"
            )
            self.gallery_cards.append(GalleryCard(full, level, diff, caption))
        self.gallery.value = gallery_html(title, self.gallery_cards, self._column)

    def _crops(self, i: int, scan: int) -> tuple[bytes, bytes, bytes, tuple[float, float]]:
        """JPEGs of image *i*'s worst window (full, level, difference) and its centre, cached."""

        def make() -> tuple[bytes, bytes, bytes, tuple[float, float]]:
            level, full = self.pictures.pixels(i, scan), self.pictures.pixels(i, None)
            h, wd = full.shape[:2]
            size = (self.thumb_side, max(1, round(self.thumb_side * h / wd)))
            d = worst_detail(level, full, self.zoom, size)
            jpegs = [encode_jpeg(cast(np.ndarray, d[k])) for k in ("full", "level", "difference")]
            return jpegs[0], jpegs[1], jpegs[2], cast(tuple[float, float], d["center"])

        return self.pictures.per_image(("crops", scan), i, make)

    def worst_images(self) -> list[dict[str, Any]]:
        """Return the gallery's rows: index, name, label, bytes, bytes_fraction, value."""
        return self.result.curve.per_image.worst(self.result.scan, n=self._worst)

    # -- static picture ----------------------------------------------------------------

    def snapshot(self) -> bytes:
        """Draw the curve, the recommendation and the gallery with Pillow.

        Returns
        -------
        bytes
            A JPEG, for places where widgets cannot run.
        """
        return tuner_picture(self)


def tuner_picture(dash: TunerDashboard) -> bytes:
    """The curve of the chosen statistic, the recommendation, and the gallery's crops."""
    r = dash.result
    c = r.curve
    # The full level's capped PSNR (identical images) would flatten the chart.
    keep = ~np.isnan(drawable(c.statistic(r.statistic), r.metric))
    x = c.bytes_fraction[keep]
    chart = line_chart(
        [
            (
                "mean" if r.statistic == "mean" else "5th percentile",
                x,
                c.statistic(r.statistic)[keep],
            )
        ],
        band=(x, c.p5[keep], c.p95[keep]),
        highlight=(r.bytes_fraction, r.value),
        title=f"{axis_label(r.metric)} per scan level, sample of {r.sample_size}",
        xlabel="bytes read (% of the full images)",
        ylabel=axis_label(r.metric),
        xfmt="{:.0%}",
    )
    label = axis_label(r.metric).removesuffix(" (dB)")
    stat = "mean" if r.statistic == "mean" else "5th percentile"
    target = format_value(r.target, r.metric) if r.metric == "psnr" else f"{r.target:g}"
    lines = [
        f"recommended: scan {r.scan} of {c.num_scans}",
        f"{stat} {label} {format_value(r.value, r.metric)} (target {target})",
        f"{r.bytes_fraction:.1%} of the bytes ({r.bandwidth_saving:.1%} saved)",
        f"sample: {r.sample_size} of {r.population} images",
        *r.explanation.split("; "),
    ]
    text = text_panel(lines, 520)
    cards = []
    for card in dash.gallery_cards:
        pics = [Image.open(io.BytesIO(b)) for b in (card.full, card.level, card.difference)]
        cards.append(hstack(pics, gap=2))
    parts = [hstack([chart, text])]
    parts += [hstack(cards[j : j + 2], gap=16) for j in range(0, len(cards), 2)]
    return to_jpeg(vstack(parts))
