"""TunerDashboard: set a quality target, get the scan level, the saving and the worst images."""

from __future__ import annotations

import functools
import html
import io
import os
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import traitlets as t
from PIL import Image

from .._public import public
from ..plots._quality import images_data
from ..plots._scales import axis_label, drawable
from ..quality import QualityCurve, quality_curve
from ..quality.compare import LevelCache
from ..quality.compare._views import encode_jpeg, worst_detail
from ..quality.metrics import METRIC_LABELS
from ..quality.metrics._names import format_value
from ..quality.tune import DEFAULT_STATISTIC, STATISTICS, TuneResult, _stat, recommend
from ..read.sources import LevelSource, open_source
from ._demo import static_text
from ._module_widget import ModuleWidget, module_text
from ._scan_readout import finite_list
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["GalleryCard", "TunerDashboard", "curve_lines"]

# Target slider per metric: (min, max, step, default, decimals shown).
_TARGETS = {
    "mssim": (0.80, 0.999, 0.001, 0.95, 3),
    "ssim": (0.70, 0.999, 0.001, 0.90, 3),
    "psnr": (20.0, 50.0, 0.5, 35.0, 1),
}
_STATISTIC_NAMES = {"p5": "5th percentile", "mean": "mean"}


@dataclass(frozen=True)
class GalleryCard:
    """One image of the gallery: its three crops (JPEG bytes) and its caption (HTML)."""

    full: bytes
    level: bytes
    difference: bytes
    caption: str


def curve_lines(curve: QualityCurve, max_images: int = 64) -> dict[str, Any]:
    """What the page draws of a sample's curve, on both quality scales.

    Keys: ``x`` (bytes read as a share of the full images), ``scans``, the
    statistics' lines ``mean_value``, ``mean_db``, ``p5_*``, ``p50_*``,
    ``p95_*`` (identical images left out, None for a gap), ``images`` (one
    faint line per image, at most *max_images*), the axis ``labels`` per
    scale, ``db`` (whether the metric has a dB scale) and ``stats``: the
    per-level statistics :func:`~pcr_explore.quality.tune.recommend` decides
    on, so the page places the recommended level as the kernel does.
    """
    m = curve.metric
    out: dict[str, Any] = {
        "x": finite_list(curve.bytes_fraction),
        "scans": [int(k) for k in curve.scans],
        # short enough for a projector's font; the dB toggle's tip gives the formula
        "labels": {s: axis_label(m, s).split(":")[0] for s in ("value", "db")},
        "db": m != "psnr",
        "stats": {s: finite_list(_stat(curve.per_image.values, s)) for s in STATISTICS},
    }
    for key in ("mean", "p5", "p50", "p95"):
        for scale in ("value", "db"):
            out[f"{key}_{scale}"] = finite_list(drawable(curve.statistic(key), m, scale))
    per = {s: images_data(curve, max_images, s) for s in ("value", "db")}
    out["images"] = [
        {"x": finite_list(xs), "y_value": finite_list(yv), "y_db": finite_list(yd)}
        for xs, yv, yd in zip(per["value"]["xs"], per["value"]["ys"], per["db"]["ys"], strict=True)
    ]
    return out


@public("pcr_explore.widgets")
class TunerDashboard(ModuleWidget):
    """Pick the scan level for a quality target, and see what it costs.

    Controls: the target, the metric, the statistic (the 5th percentile over
    images, as :func:`~pcr_explore.tune` and :func:`~pcr_explore.budget` take
    by default, or their mean) and the sample size. Shows the recommended level
    with its bandwidth saving and bootstrap confidence
    (:func:`~pcr_explore.quality.tune.recommend`), the sample's bytes-vs-quality
    curve with its p5-p95 band, the target as a line across it and the
    recommended level marked on the chosen statistic's line, and the images
    that suffer most at that level, zoomed where they differ most from their
    full versions (:func:`~pcr_explore.quality.compare.worst_detail`).

    Moving the target or switching metric or statistic reuses the measured
    sample (no decoding); a new sample size measures once (the dashboard
    says so while it works) and is cached. The front end is one ES module
    (``static/tuner_dashboard.js``, on anywidget): it draws the curve, moves
    the target line and the marker while the slider is dragged and switches
    the quality axis with no round trip to the kernel.

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
    target : float
        The quality target of the chosen metric (a traitlet: set
        ``dash.target = 0.99`` from code, or observe it); kept within the
        metric's range (``target_ranges``). Each metric keeps its own
        target (``targets``): switching metric brings its target back.
    metric : {"mssim", "ssim", "psnr"}
    statistic : {"p5", "mean"}
    sample : int
        The sample size, one of ``sizes``.
    scale : {"value", "db"}
        The quality axis: the metric, or SSIM/MS-SSIM in dB (drawn in the page).
    presentation : bool
        Larger text for a projector.
    readout : str
        The recommendation, as HTML (its ``_repr_html_``).
    recommended : int
        The recommended level shown.
    result : TuneResult
        The recommendation shown.
    lines : dict
        The sample's curve as the page draws it (:func:`curve_lines`).
    gallery, crops, gallery_title
        The images that suffer most at the recommended level: per card its
        caption and the pictures' names, and three JPEG crops per card (the
        full image, the level and their amplified difference);
        ``gallery_cards`` holds them as :class:`GalleryCard`.

    Examples
    --------
    >>> from pcr_explore.widgets import TunerDashboard
    >>> dash = TunerDashboard("photos.pcr", sample=16)
    >>> dash.target = 0.99   # the 5th percentile of 16 images at 0.99
    >>> dash.result.scan
    9
    """

    _esm = module_text("tuner_dashboard.js")
    _css = static_text("explorer.css") + static_text("tuner_dashboard.css")

    metrics = t.List(t.List(t.Unicode())).tag(sync=True)
    metric = t.Enum(list(_TARGETS), "mssim").tag(sync=True)
    target = t.Float(0.95).tag(sync=True)
    targets = t.Dict(value_trait=t.Float()).tag(sync=True)
    target_ranges = t.Dict().tag(sync=True)
    statistic = t.Enum(list(STATISTICS), DEFAULT_STATISTIC).tag(sync=True)
    sizes = t.List(t.Int()).tag(sync=True)
    sample = t.Int(0).tag(sync=True)
    scale = t.Enum(["value", "db"], "value").tag(sync=True)
    lines = t.Dict().tag(sync=True)
    recommended = t.Int(0).tag(sync=True)
    readout = t.Unicode("").tag(sync=True)
    gallery_title = t.Unicode("").tag(sync=True)
    gallery = t.List(t.Dict()).tag(sync=True)
    crops = t.List(t.Bytes()).tag(sync=True)
    thumb_side = t.Int(160).tag(sync=True)

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
        if metric not in _TARGETS:
            raise ValueError(f"metric must be one of {sorted(_TARGETS)}, got {metric!r}")
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
        self.source = open_source(source)
        self.seed, self.workers = seed, workers
        self.zoom = zoom
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
        self._worst = worst
        self.gallery_cards: list[GalleryCard] = []
        self._curves = functools.lru_cache(maxsize=16)(self._measure)
        self._measured: set[int] = set()  # sample sizes measured (no wait to show)
        self._gallery_shows: tuple[int, str, int] | None = None
        self._lines_drawn: tuple[int, str] | None = None
        ranges = {
            # shown as the readout writes the target: PSNR to 0.1 dB, the others as :g
            m: {"min": lo, "max": hi, "step": step, "digits": digits, "trim": m != "psnr"}
            for m, (lo, hi, step, _, digits) in _TARGETS.items()
        }
        super().__init__(
            metrics=[[m, label] for m, label in METRIC_LABELS.items() if m in _TARGETS],
            target_ranges=ranges, sizes=sizes, statistic=statistic, thumb_side=thumb_side,
        )  # fmt: skip
        self.metric = metric
        self.targets = {m: v[3] for m, v in _TARGETS.items()}
        if target is not None:
            self.target = target  # kept within the metric's range
            self.targets = {**self.targets, metric: float(self.target)}
        self.target = self.targets[metric]
        self.sample = min(n, sample)
        self.result: TuneResult = self._recommend()
        self._show()
        update = self._guarded(self._update)
        self.observe(update, names=["target", "statistic"])
        self.observe(self._guarded(self._on_sample), names="sample")
        self.observe(self._guarded(self._on_metric), names="metric")
        self.observe(lambda _: self._changed(), names=["scale", "presentation"])

    @t.validate("target")
    def _valid_target(self, proposal: Any) -> float:
        lo, hi = _TARGETS[str(self.metric)][:2]
        return float(min(hi, max(lo, float(proposal["value"]))))

    @t.validate("sample")
    def _valid_sample(self, proposal: Any) -> int:
        n = int(proposal["value"])
        if self.sizes and n not in self.sizes:
            raise t.TraitError(f"sample must be one of {self.sizes}, got {n}")
        return n

    # -- what is computed ----------------------------------------------------------

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
        base = self._curves(int(self.sample))
        m = str(self.metric)
        return base if base.metric == m else base.with_metric(m)

    def _recommend(self) -> TuneResult:
        return recommend(
            self.curve(),
            target=float(self.target),
            statistic=self.statistic,  # type: ignore[arg-type]
            seed=self.seed,
        )

    # -- updates ---------------------------------------------------------------------

    def _on_metric(self, change: Any) -> None:
        # each metric keeps its own target: the one left is kept, the one picked comes back
        self.targets = {**self.targets, change["old"]: float(self.target)}
        if self.target != self.targets[change["new"]]:
            self.target = self.targets[change["new"]]  # its observer recommends
        else:
            self._update()

    def _on_sample(self, change: Any = None) -> None:
        n = int(self.sample)
        if n not in self._measured:
            with self.busy(f"measuring {n} images at every level..."):
                self.curve()
        self._update()

    def _update(self, change: Any = None) -> None:
        self.result = self._recommend()
        self.targets = {**self.targets, str(self.metric): float(self.target)}
        self._show()

    def _show(self) -> None:
        r = self.result
        drawn = (int(self.sample), r.metric)
        with self.hold_sync():
            self.readout = r._repr_html_()
            self.recommended = r.scan
            if drawn != self._lines_drawn:  # a new target or statistic: the page moves them
                self._lines_drawn = drawn
                self.lines = curve_lines(r.curve)
        shown = (int(self.sample), r.metric, r.scan)
        if shown != self._gallery_shows:  # the same level shows the same images
            with self.busy(f"drawing the images that suffer most at scan {r.scan}..."):
                self._show_gallery(r)
            self._gallery_shows = shown

    def _show_gallery(self, r: TuneResult) -> None:
        cards, shown = [], []
        for row in r.curve.per_image.worst(r.scan, n=self._worst):
            full, level, diff, (cx, cy) = self._crops(row["index"], r.scan)
            name = html.escape(str(row["name"]))
            caption = (
                f"<b>{name}</b>: {METRIC_LABELS[r.metric]} "
                f"{format_value(row['value'], r.metric)}, {row['bytes_fraction']:.0%} of its "
                f"bytes; window at ({cx:.0%}, {cy:.0%})"
            )
            cards.append(GalleryCard(full, level, diff, caption))
            shown.append(
                {
                    "caption": caption,
                    "alts": [
                        f"{row['name']}: the full image, zoomed x{self.zoom:g}",
                        f"{row['name']}: scan {r.scan}, the same window",
                        f"{row['name']}: their difference, amplified x4",
                    ],
                }
            )
        self.gallery_cards = cards
        with self.hold_sync():
            self.gallery_title = (
                f"<b>The images that suffer most at scan {r.scan}</b>, zoomed x{self.zoom:g} "
                f"where they differ most (left to right: full, scan {r.scan}, difference x4)"
            )
            self.crops = [b for c in cards for b in (c.full, c.level, c.difference)]
            self.gallery = shown

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
