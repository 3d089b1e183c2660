"""ScanExplorer: slide through the scan levels of one image and watch it sharpen."""

from __future__ import annotations

import html
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import traitlets as t
from PIL import Image

from .._checks import check_scan
from .._public import public
from ..quality import LevelQuality, QualityCurve, level_quality, quality_curve
from ..quality.compare import LevelCache, ScanStep, difference_map, scan_step
from ..quality.compare._views import encode_jpeg, jpeg_size
from ..quality.metrics import METRICS
from ..read.sources import LevelSource, open_source, scan_script_of, source_name
from ._module_widget import Debounced, ModuleWidget, module_text
from ._scan_panel import panel_state, step_drawing
from ._scan_readout import (
    SIDE_CAPTION,
    SPLIT_NOTE,
    curve_labels,
    dataset_band,
    difference_caption,
    image_curve,
    level_caption,
    level_rows,
)
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["ScanExplorer"]


class _Level(t.Int):  # type: ignore[type-arg]
    """A level: judged by the one rule for a scan level (``check_scan``), nothing before it."""

    def validate(self, obj: Any, value: Any) -> Any:
        return value


@public("pcr_explore.widgets")
class ScanExplorer(ModuleWidget):
    """Slide through the scan levels of an image: pixels, bytes and quality.

    Controls: a level slider with a play button, an image picker with
    previous/next buttons, a view toggle (the level alone, next to the full
    image, a split with the full image right of a line, or an amplified
    difference map) and a zoom with its centre. The picture sits next to a
    plot of this image's bytes-vs-quality curve (with the dataset's mean and
    p5-p95 band); clicking a point shows that level. Readouts: bytes at the
    level, share of the full image, what the scan adds, MS-SSIM, SSIM and
    PSNR against the full image.

    The front end is one ES module (``static/scan_explorer.js``, on
    anywidget): it runs in JupyterLab, Notebook 7, VS Code, Colab and
    marimo, and the kernel-free page of :func:`scan_demo` runs the same
    file. The page holds every level's picture, byte counter and readouts
    of the image shown, so the slider and the play button move with no
    round trip; the zoom and the split line are drawn there too (they
    magnify the picture sent, *max_side* on its longer side).

    Parameters
    ----------
    source : path or LevelSource
        A PCR dataset, a folder of images or one image file (anything
        :func:`~pcr_explore.read.sources.open_source` opens).
    image : int
        Index of the image shown first.
    level : int, optional
        Level shown first (default: the middle level).
    metric : {"mssim", "ssim", "psnr"}
        The quality plotted.
    dataset_sample : int
        Images sampled for the dataset's mean curve; 0 leaves it out.
    max_side : int
        Longer side of the pictures shown; larger images are shrunk in the
        kernel before they are sent.
    gain : float
        Amplification of the difference map.
    cache_size : int
        Levels, pictures and quality tables kept in memory (0: none, every
        change recomputes).
    seed : int
        Seed of the dataset sample.
    workers : int, optional
        Processes measuring the dataset sample (default: all cores).
    curve : QualityCurve, optional
        The dataset's curve, measured already by
        :func:`~pcr_explore.quality_curve` with the same *metric*: shown
        instead of measuring *dataset_sample* images again.

    Attributes
    ----------
    level, image : int
        The level and the index of the image shown (traitlets: set
        ``explorer.level = 3`` from code, or observe them).
    mode : {"level", "side", "split", "diff"}
        The view.
    zoom, zoom_x, zoom_y : float
        Magnification (1-8) and its centre as fractions of the width and
        height; ``zoom_x`` is also where the split line is.
    scale : {"value", "db"}
        The quality axis: the metric itself, or (SSIM, MS-SSIM) its loss in
        dB, which spreads the upper levels out.
    scan_open : bool
        Shows what the scan at the level shown adds (its coefficients on
        the zig-zag grids, bits, bytes and pixels).
    presentation : bool
        Larger text for a projector.
    pictures, captions, readouts, curve, dataset
        What the page draws for the image shown: every level's JPEG, byte
        counter and readouts, the image's curve and the dataset's band.

    Examples
    --------
    >>> from pcr_explore.widgets import ScanExplorer
    >>> ex = ScanExplorer("photos.pcr")
    >>> ex.level = 3
    >>> ex  # a notebook shows the explorer
    <pcr_explore.widgets.ScanExplorer object at 0x...>
    """

    _esm = module_text("scan_explorer.js")

    names = t.List(t.Unicode()).tag(sync=True)
    image = t.Int(0).tag(sync=True)
    level = _Level(1).tag(sync=True)
    num_scans = t.Int(1).tag(sync=True)
    levels = t.List(t.Int()).tag(sync=True)
    mode = t.Enum(["level", "side", "split", "diff"], "level").tag(sync=True)
    gain = t.Float(4.0).tag(sync=True)
    zoom = t.Float(1.0, min=1.0, max=8.0).tag(sync=True)
    zoom_x = t.Float(0.5, min=0.0, max=1.0).tag(sync=True)
    zoom_y = t.Float(0.5, min=0.0, max=1.0).tag(sync=True)
    scale = t.Enum(["value", "db"], "value").tag(sync=True)
    size = t.List(t.Int(), [0, 0]).tag(sync=True)
    pictures = t.List(t.Bytes()).tag(sync=True)
    diffs = t.List(t.Bytes()).tag(sync=True)
    captions = t.List(t.Unicode()).tag(sync=True)
    readouts: t.List[Any] = t.List().tag(sync=True)
    curve = t.Dict().tag(sync=True)
    dataset = t.Dict().tag(sync=True)
    labels = t.Dict().tag(sync=True)
    side_caption = t.Unicode(SIDE_CAPTION).tag(sync=True)
    diff_caption = t.Unicode("").tag(sync=True)
    split_note = t.Unicode(SPLIT_NOTE).tag(sync=True)
    scan_open = t.Bool(False).tag(sync=True)
    scan_panel = t.Dict().tag(sync=True)

    def __init__(
        self,
        source: str | os.PathLike[str] | LevelSource,
        *,
        image: int = 0,
        level: int | None = None,
        metric: str = "mssim",
        dataset_sample: int = 16,
        max_side: int = 768,
        gain: float = 4.0,
        cache_size: int = 256,
        seed: int = 0,
        workers: int | None = None,
        curve: QualityCurve | None = None,
    ) -> None:
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
        src = open_source(source)
        if len(src) == 0:
            raise ValueError(f"{src!r} holds no images")
        if curve is not None and curve.metric != metric:
            raise ValueError(f"the curve was measured with {curve.metric!r}, not {metric!r}")
        n = int(src.num_scans)
        start = max(1, n // 2) if level is None else check_scan(level, n, where=source_name(src))
        if not 0 <= int(image) < len(src):
            raise ValueError(f"{source_name(src)}: no image {image}; it holds 0..{len(src) - 1}")
        self.source, self.metric = src, metric
        self.cache = LevelCache(src, max_side=max_side, maxsize=cache_size)
        if curve is None and dataset_sample > 0:
            curve = quality_curve(
                src, sample=min(dataset_sample, len(src)), seed=seed, metric=metric,
                workers=workers, progress=False,
            )  # fmt: skip
        self._dataset_curve = curve
        self._steps: dict[tuple[int, int], ScanStep] = {}
        super().__init__(
            names=list(src.names), image=int(image), num_scans=n, level=start, gain=gain,
            levels=list(range(1, n + 1)),
            labels=curve_labels(metric), diff_caption=difference_caption(gain),
            dataset=dataset_band(curve, metric),
        )  # fmt: skip
        self._panel_later = Debounced(self._guarded(self._draw_panel), 0.15)
        self.observe(self._guarded(self._show_image), names="image")
        self.observe(self._guarded(self._show_again), names=["level", "mode"])
        self.observe(self._guarded(self._draw_diffs), names="mode")
        self.observe(self._guarded(self._panel_follows), names=["level", "scan_open"])
        self.observe(lambda _: self._changed(), names=["level", "zoom", "zoom_x", "zoom_y"])
        self.observe(lambda _: self._changed(), names=["scale", "presentation"])
        self._show_image()

    @t.validate("level")
    def _valid_level(self, proposal: Any) -> int:
        return check_scan(proposal["value"], self.num_scans, where=source_name(self.source))

    @t.validate("image")
    def _valid_image(self, proposal: Any) -> int:
        i = int(proposal["value"])
        if not 0 <= i < len(self.source):
            raise t.TraitError(
                f"{source_name(self.source)}: no image {i}; it holds 0..{len(self.source) - 1}"
            )
        return i

    # -- what the widget shows -------------------------------------------------

    @property
    def index(self) -> int:
        """Index of the image shown (the same as :attr:`image`)."""
        return int(self.image)

    def quality(self, i: int | None = None) -> LevelQuality:
        """Return the quality of every level of image *i* (default: the one shown), cached.

        Parameters
        ----------
        i : int, optional
            Image index.

        Returns
        -------
        LevelQuality
        """
        i = self.index if i is None else i

        def measure() -> LevelQuality:  # the levels the pictures were made from: read once
            levels = [self.cache.jpeg(i, k) for k in range(1, self.num_scans + 1)]
            return level_quality(levels, source=self.source.names[i])

        return self.cache.per_image("quality", i, measure)

    def _known_quality(self, i: int) -> LevelQuality | None:
        q = self.cache.cached("quality", i)
        return q if isinstance(q, LevelQuality) else None

    def step(self, delta: int) -> None:
        """Show the image *delta* places after the current one (wrapping round)."""
        self.image = (self.index + delta) % len(self.source)

    def _texts(self, i: int, q: LevelQuality | None) -> None:
        """Every level's byte counter and readouts, and the curve, for image *i*."""
        nbytes, script = self.cache.level_bytes(i), scan_script_of(self.source)
        levels = range(1, self.num_scans + 1)
        with self.hold_sync():
            self.captions = [level_caption(nbytes, k, script, "<!--view-->") for k in levels]
            self.readouts = [[list(r) for r in level_rows(nbytes, k, script, q)] for k in levels]
            self.curve = image_curve(nbytes, q, self.metric)

    def _show_image(self, change: Any = None) -> None:
        # Pictures and bytes go out first; the quality of a new image takes a moment
        # (every level against the full image) and follows.
        i = self.index
        name = html.escape(self.source.names[i])
        with self.busy(f"drawing {name} at every level..."):
            try:
                pictures = [self.cache.display(i, k) for k in range(1, self.num_scans + 1)]
            except Exception:  # nothing of the image before stays under this one's name
                with self.hold_sync():
                    self.pictures, self.diffs, self.captions, self.readouts = [], [], [], []
                    self.curve = {}
                raise
            with self.hold_sync():
                self.size = list(jpeg_size(pictures[-1]))
                self.pictures = pictures
                self.diffs = []
                self._texts(i, self._known_quality(i))
        if self._known_quality(i) is None:
            with self.busy(f"measuring {name} at every level..."):
                q = self.quality(i)
            self._texts(i, q)
        self._draw_diffs()
        self._panel_follows()

    def _show_again(self, change: Any = None) -> None:
        """After an image failed to show, the next change tries it again."""
        if not self.pictures:
            self._show_image()

    def _draw_diffs(self, change: Any = None) -> None:
        """In the difference view: every level's amplified difference to the full image."""
        if self.mode != "diff" or self.diffs:
            return
        i = self.index
        with self.busy("drawing the difference maps..."):
            full = self.cache.pixels(i, None)
            self.diffs = [
                encode_jpeg(difference_map(self.cache.pixels(i, k), full, gain=self.gain))
                for k in range(1, self.num_scans + 1)
            ]

    def readout_rows(self) -> list[tuple[str, str]]:
        """Return the readouts for the level shown, as (label, value) pairs: what the page shows."""
        i, k = self.index, int(self.level)
        shown = self.readouts[k - 1] if len(self.readouts) >= k else []
        return [
            ("image", html.escape(self.source.names[i])),
            ("scan level", f"{k} / {self.num_scans}"),
            *((str(label), str(value)) for label, value in shown),
        ]

    # -- what each scan adds ------------------------------------------------------

    def scan_step(self) -> ScanStep:
        """What the level shown adds to the image shown (cached per image and level)."""
        key = (self.index, int(self.level))
        if key not in self._steps:
            self._steps[key] = scan_step(self.source, image=key[0], level=key[1], size=224)
        return self._steps[key]

    def _panel_follows(self, change: Any = None) -> None:
        if not self.scan_open:
            return
        if change is not None and change["name"] == "level":
            self._panel_later()  # while the slider is dragged, once the hand pauses
        else:
            self._draw_panel()

    def _draw_panel(self) -> None:
        if self.scan_open:
            self.scan_panel = panel_state(self.scan_step(), self.num_scans)

    def save_html(
        self,
        path: str | os.PathLike[str],
        *,
        images: int | list[int] | None = None,
        levels: list[int] | None = None,
        max_side: int = 512,
    ) -> Path:
        """Write this explorer as one HTML page that runs with no kernel; return its path.

        The images (default: the first 8, and the one shown) at every level
        in *levels*, with this explorer's metric, gain, dataset curve (none
        when it shows none) and the level shown; see :func:`~pcr_explore.widgets.scan_demo`.
        """
        from ._scan_demo import scan_demo

        k, q = int(self.level), self._known_quality(self.index)
        page = scan_demo(
            self.source, images=images, image=self.index, levels=levels,
            level=k if levels is None or k in levels else None, max_side=max_side,
            metric=self.metric, gain=self.gain, curve=self._dataset_curve,
            dataset_sample=0,  # no curve shown here, none on the page
            qualities={self.index: q} if q is not None else None,
        )  # fmt: skip
        return page.save_html(path)

    # -- static picture ----------------------------------------------------------

    def snapshot(self) -> bytes:
        """Draw the level shown (and its companion picture), the curve and the readouts.

        With "what each scan adds" open, its panel is drawn below them.

        Returns
        -------
        bytes
            A JPEG, for places where widgets cannot run.
        """
        return scan_picture(self)


def _shown_pictures(ex: ScanExplorer) -> list[Image.Image]:
    """The level shown, zoomed and split as the page shows it, and its companion picture."""
    k = int(ex.level)
    level = Image.open(io.BytesIO(ex.pictures[k - 1])).convert("RGB")
    full = Image.open(io.BytesIO(ex.pictures[-1])).convert("RGB")
    if ex.mode == "split":
        cut = round(ex.zoom_x * level.width)
        level.paste(full.crop((cut, 0, full.width, full.height)), (cut, 0))
    shown = [level]
    if ex.mode == "side":
        shown.append(full)
    elif ex.mode == "diff" and ex.diffs:
        shown.append(Image.open(io.BytesIO(ex.diffs[k - 1])).convert("RGB"))
    if ex.zoom > 1:  # the part of each picture the page shows
        z, cx, cy = ex.zoom, ex.zoom_x, ex.zoom_y
        shown = [_zoomed(p, z, cx, cy) for p in shown]
    for p in shown:
        p.thumbnail((480 // len(shown), 480))
    return shown


def _zoomed(p: Image.Image, z: float, cx: float, cy: float) -> Image.Image:
    """The part of picture *p* a zoom of *z* centred at (*cx*, *cy*) shows, at *p*'s size."""
    x0, y0 = cx * p.width * (1 - 1 / z), cy * p.height * (1 - 1 / z)
    box = (x0, y0, x0 + p.width / z, y0 + p.height / z)
    return p.crop(box).resize(p.size, Image.Resampling.NEAREST)


def scan_picture(ex: ScanExplorer) -> bytes:
    """The level shown (and its companion picture) next to the curve and the readouts."""
    k, c, d, s = int(ex.level), ex.curve, ex.dataset, str(ex.scale)
    nan = lambda v: np.asarray([np.nan if x is None else x for x in v], float)  # noqa: E731
    series = [("this image", nan(c["x"]), nan(c[f"y_{s}"]))]
    band = None
    if d:
        series.insert(0, ("dataset mean", nan(d["x"]), nan(d[f"mean_{s}"])))
        band = (nan(d["x"]), nan(d[f"lo_{s}"]), nan(d[f"hi_{s}"]))
    label = ex.labels[f"y_{s}"]
    chart = line_chart(
        series,
        band=band,
        highlight=(series[-1][1][k - 1], series[-1][2][k - 1]),
        title=ex.labels["title"],
        xlabel=ex.labels["x"],
        ylabel=label,
        size=(440, 300),
        xfmt="{:.0%}",
    )
    rows = [(key, html.unescape(v)) for key, v in ex.readout_rows() if key != "this scan"]
    text = text_panel([f"{key}: {v}" for key, v in rows], 440)
    top = hstack([hstack(_shown_pictures(ex), gap=4), vstack([chart, text])])
    if ex.scan_open:
        return to_jpeg(vstack([top, step_drawing(ex.scan_step())], gap=12))
    return to_jpeg(top)
