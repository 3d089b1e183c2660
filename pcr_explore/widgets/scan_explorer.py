"""ScanExplorer: slide through the scan levels of one image and watch it sharpen."""

from __future__ import annotations

import html
import io
import os
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np
from PIL import Image

from .._checks import check_scan
from .._public import public
from ..plots._scales import axis_label, drawable, level_label_offsets
from ..quality import LevelQuality, QualityCurve, image_quality, quality_curve
from ..quality.compare import LevelCache
from ..quality.metrics import METRIC_LABELS, METRICS
from ..read.sources import LevelSource, open_source, scan_script_of, source_name
from ._explorer import Debounced, Explorer, html_table
from ._figures import CURVE_X_RANGE, scan_curve_figure
from ._level_pictures import LevelPictures, SlotContent
from ._scan_panel import ScanPanel
from ._scan_readout import (
    SIDE_CAPTION,
    difference_caption,
    level_caption,
    level_rows,
    view_note,
)
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["ScanExplorer"]

_ROW = w.Layout(flex_flow="row wrap", align_items="center", width="100%")


@public("pcr_explore.widgets")
class ScanExplorer(Explorer):
    """Slide through the scan levels of an image: pixels, bytes and quality.

    Controls: a level slider with a play button, an image picker with
    previous/next buttons, a view toggle (the level alone, next to the full
    image, a split with the full image right of a line, or an amplified
    difference map) and a zoom with its centre. The picture sits next to a
    plot of this image's bytes-vs-quality curve (with the dataset's mean and
    p5-p95 band); clicking a point shows that level. Readouts: bytes at the
    level, share of the full image, what the scan adds, MS-SSIM, SSIM and
    PSNR against the full image.

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
    level, play, picker, prev_button, next_button, mode, zoom, zoom_x, zoom_y
        The controls (ipywidgets); set ``level.value = 3`` from code to move.
    scale : ipywidgets.ToggleButtons
        The quality axis: the metric itself, or (SSIM, MS-SSIM) its loss in
        dB, which spreads the upper levels out.
    scan_toggle : ipywidgets.ToggleButton
        Shows :attr:`scan_panel`, a :class:`ScanPanel` of what the scan at
        the level shown adds (built when first shown; None until then).
    presentation : ipywidgets.ToggleButton
        Larger text for a projector.
    pictures : LevelPictures
        Every level's pictures and byte counter, all in the page: the level
        slider (and play) picks the one shown there, without waiting for the
        kernel, which draws them a moment after the other controls stop.
    image, reference : ipywidgets.Image
        The level shown, and the full image or difference map next to it.
    image_caption, reference_caption : ipywidgets.HTML
        Their captions (the byte counter above, the scale below).
    readout : ipywidgets.HTML
        Bytes and quality of the level shown.
    figure, sources, plot
        The Bokeh figure, its named data sources and its widget wrapper.
    view : ipywidgets.VBox
        The whole widget.

    Examples
    --------
    >>> from pcr_explore.widgets import ScanExplorer
    >>> ex = ScanExplorer("photos.pcr")
    >>> ex.level.value = 3
    >>> ex  # a notebook shows the explorer
    <pcr_explore.widgets.ScanExplorer object at 0x...>
    """

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
        super().__init__()
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
        self.source = open_source(source)
        if len(self.source) == 0:
            raise ValueError(f"{self.source!r} holds no images")
        self.metric = metric
        self.gain = gain
        self.cache = LevelCache(self.source, max_side=max_side, maxsize=cache_size)
        n = self.cache.num_scans
        start = (
            max(1, n // 2)
            if level is None
            else check_scan(level, n, where=source_name(self.source))
        )

        self._build_controls(start, image, gain)
        self._build_pictures(metric)
        self._build_scan_toggle()
        self._shown: tuple[int, LevelQuality] | None = None  # image index, its quality
        self._dataset_curve: QualityCurve | None = None
        if curve is not None:
            if curve.metric != metric:
                raise ValueError(f"the curve was measured with {curve.metric!r}, not {metric!r}")
            self._dataset_curve = curve  # measured already: nothing is measured again
        elif dataset_sample > 0:
            self._dataset_curve = quality_curve(
                self.source,
                sample=min(dataset_sample, len(self.source)),
                seed=seed,
                metric=metric,
                workers=workers,
                progress=False,
            )

        self.view = self._layout()
        self._connect()
        self._show_image()

    def _build_controls(self, start: int, image: int, gain: float) -> None:
        """The level, image, view and zoom controls."""
        n = self.cache.num_scans
        self.level = w.IntSlider(
            value=start,
            min=1,
            max=n,
            description="scan level",
            continuous_update=True,
            layout=w.Layout(width="360px"),
        )
        self.play = w.Play(
            value=start,
            min=1,
            max=n,
            interval=700,
            description="play the levels",
            show_repeat=False,
            layout=w.Layout(width="auto"),
        )
        # Linked in the page: playing moves the slider without a round trip.
        self._play_link = w.jslink((self.play, "value"), (self.level, "value"))
        self.picker = w.Dropdown(
            options=[(name, i) for i, name in enumerate(self.source.names)],
            value=image,
            description="image",
            layout=w.Layout(width="300px"),
        )
        self.prev_button = w.Button(
            icon="arrow-left", tooltip="previous image", layout=w.Layout(width="36px")
        )
        self.next_button = w.Button(
            icon="arrow-right", tooltip="next image", layout=w.Layout(width="36px")
        )
        self.mode = w.ToggleButtons(
            options=[
                ("level", "level"),
                ("side by side", "side"),
                ("split", "split"),
                (f"difference x{gain:g}", "diff"),
            ],
            value="level",
            style={"button_width": "auto"},
            tooltips=[
                "the level alone",
                "the full image next to it",
                "the full image right of the line (move it with x)",
                "where the level differs from the full image",
            ],
        )
        self.zoom = w.FloatSlider(
            value=1.0,
            min=1.0,
            max=8.0,
            step=0.5,
            description="zoom",
            readout_format=".1f",
            continuous_update=True,
            layout=w.Layout(width="220px"),
        )
        self.zoom_x, self.zoom_y = (
            w.FloatSlider(
                value=0.5,
                min=0.0,
                max=1.0,
                step=0.01,
                description=axis,
                readout_format=".0%",
                disabled=True,
                layout=w.Layout(width="190px"),
                style={"description_width": "1.2em"},
            )
            for axis in ("x", "y")
        )

    def _build_pictures(self, metric: str) -> None:
        """The metric's scale buttons, the two pictures, their captions and the curve."""
        label = METRIC_LABELS[metric]
        self.scale = w.ToggleButtons(
            options=[(label, "value"), (f"{label} in dB", "db")],
            value="value",
            style={"button_width": "auto"},
            tooltips=["the metric itself", "-10 log10(1 - value): spreads the upper levels"],
            layout=w.Layout(display="none" if metric == "psnr" else None),
        )
        picture = {
            "flex": "0 1 auto",
            "min_width": "0",
            "max_width": "100%",
            # the controls, the caption and the picture fit one screen (1280x720 too)
            "max_height": "max(240px, calc(100vh - 330px))",
            "object_fit": "contain",
        }
        # every level's picture is in the page: the slider shows the next one there
        self.pictures = LevelPictures(self.cache.num_scans, self.level, picture, self._draw_level)
        self._fill_later = Debounced(self._guarded(self._fill), 0.3)
        self._fill_next = Debounced(self._guarded(self._fill), 0.0)
        self.readout = w.HTML()
        # 305 px with its legend above: the plot itself a little taller than before the
        # legend moved out of it (and wider), and the explorer still fits a 1280x720 screen
        self.figure, self.sources = scan_curve_figure(axis_label(metric), height=305)
        self.plot = self._plot(self.figure)

    def _layout(self) -> w.VBox:
        """The controls above, the pictures left and the curve right."""
        left = w.VBox([self.pictures.view], layout=w.Layout(flex="1 1 0%", min_width="0"))
        hint = w.HTML("<span style='color:#777'>click a point to jump there</span>")
        right = w.VBox(
            [self.plot, w.HBox([self.scale, hint], layout=_ROW), self.readout],
            # a fixed share: the pictures next to it never resize the plot
            layout=w.Layout(flex="0 0 46%", min_width="300px", margin="0 0 0 12px"),
        )
        return w.VBox(
            [
                w.HBox(
                    [self.picker, self.prev_button, self.next_button, self.mode, self.presentation],
                    layout=_ROW,
                ),
                w.HBox(
                    [self.play, self.level, self.zoom, self.zoom_x, self.zoom_y, self.scan_toggle],
                    layout=_ROW,
                ),
                self.status,
                w.HBox(
                    [left, right],
                    layout=w.Layout(flex_flow="row wrap", width="100%", align_items="flex-start"),
                ),
                self._scan_box,
                self.errors,
            ],
            layout=w.Layout(width="100%"),
        )

    def _connect(self) -> None:
        """Every control to what it redraws."""
        self._on_image = self._guarded(self._show_image)
        self._on_view = self._guarded(self._render)
        self.picker.observe(self._on_image, names="value")
        for control in (self.level, self.mode, self.zoom, self.zoom_x, self.zoom_y):
            control.observe(self._on_view, names="value")
        self.scale.observe(self._guarded(self._draw_curves), names="value")
        self.scan_toggle.observe(self._guarded(self._toggle_scan_panel), names="value")
        self.prev_button.on_click(self._guarded(lambda _: self.step(-1)))
        self.next_button.on_click(self._guarded(lambda _: self.step(+1)))
        tapped = self._guarded(self._on_tap)
        self.sources["image"].selected.on_change("indices", lambda attr, old, new: tapped(new))

    # -- what the widget shows -------------------------------------------------

    @property
    def index(self) -> int:
        """Index of the image shown."""
        return int(self.picker.value)

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
        return self.cache.per_image("quality", i, lambda: image_quality(self.source, image=i))

    def step(self, delta: int) -> None:
        """Show the image *delta* places after the current one (wrapping round)."""
        self.picker.value = (self.index + delta) % len(self.source)

    def _on_tap(self, indices: list[int]) -> None:
        """A point of the curve was clicked: show its level."""
        if not indices:
            return
        self.level.value = int(self.sources["image"].data["scan"][indices[0]])
        self.sources["image"].selected.indices = []

    def _show_image(self, change: Any = None) -> None:
        # The picture and its bytes go out first; the quality of a new image
        # takes a moment (every level against the full image) and follows.
        self._render()
        i = self.index
        if self.cache.cached("quality", i) is None:
            with self.busy(f"measuring {html.escape(self.source.names[i])} at every level..."):
                q = self.quality(i)
        else:
            q = self.quality(i)
        self._shown = (i, q)
        self._draw_curves()

    def _draw_curves(self, change: Any = None) -> None:
        """Fill the curve sources: this image, and the dataset, on the chosen scale."""
        scale = str(self.scale.value)
        if self._shown is not None:
            i, q = self._shown
            nbytes = self.cache.level_bytes(i)
            x = nbytes / nbytes[-1]
            self.sources["image"].data = {
                "x": x,
                "y": drawable(q.metric(self.metric), self.metric, scale),
                "scan": np.arange(1, len(nbytes) + 1),
                "bytes": nbytes,
                "label": [str(k) for k in range(1, len(nbytes) + 1)],
                "dx": level_label_offsets(x, x_range=CURVE_X_RANGE),
            }
        c = self._dataset_curve
        if c is not None:
            self.sources["dataset"].data = {
                "x": np.asarray(c.bytes_fraction, float),
                "mean": drawable(c.mean, self.metric, scale),
                "lo": drawable(c.p5, self.metric, scale),
                "hi": drawable(c.p95, self.metric, scale),
            }
        self.figure.yaxis.axis_label = axis_label(self.metric, scale)
        self._render()

    def _known_quality(self, i: int) -> LevelQuality | None:
        """Image *i*'s quality if measured (shown now, or cached), else None."""
        if self._shown is not None and self._shown[0] == i:
            return self._shown[1]
        q = self.cache.cached("quality", i)
        return q if isinstance(q, LevelQuality) else None

    def _settings(self) -> tuple[Any, ...]:
        """What the pictures of a level depend on, besides the level."""
        mode, zoom = str(self.mode.value), float(self.zoom.value)
        x, y = float(self.zoom_x.value), float(self.zoom_y.value)
        center = (x, y) if zoom > 1.0 else (x, None) if mode == "split" else None
        return self.index, mode, zoom, center, self.gain

    def _draw_level(self, k: int) -> SlotContent:
        """Level *k*'s pictures and captions for the settings of now."""
        i, mode = self.index, str(self.mode.value)
        center = (float(self.zoom_x.value), float(self.zoom_y.value))
        left, right = self.cache.views(
            i, k, mode=mode, zoom=float(self.zoom.value), center=center, gain=self.gain
        )
        return SlotContent(
            left, right, self._caption(i, k, mode), self._reference_caption(mode, right is not None)
        )

    def _fill(self) -> None:
        """Draw one more level's pictures for the settings of now; go on while any is left."""
        if self.pictures.fill_one(int(self.level.value), self._settings()):
            self._fill_next()

    def _render(self, change: Any = None) -> None:
        i, k, mode = self.index, int(self.level.value), self.mode.value
        zoomed = float(self.zoom.value) > 1.0
        self.zoom_x.disabled = not (zoomed or mode == "split")
        self.zoom_y.disabled = not zoomed
        key = self._settings()
        if self.pictures[k].key != key:
            self._fill_next.cancel()  # the settings changed: start again from this level
        self.pictures.show(k, key)
        if self.pictures.stale_levels(k):
            self._fill_later()
        nbytes = self.cache.level_bytes(i)
        q = self._known_quality(i)
        scale = str(self.scale.value)
        y = (
            float("nan")
            if q is None
            else float(drawable(q.metric(self.metric), self.metric, scale)[k - 1])
        )
        self.sources["current"].data = {
            "x": [float(nbytes[k - 1] / nbytes[-1])],
            "y": [y],
            "scan": [k],
            "bytes": [int(nbytes[k - 1])],
        }
        # the picker and the caption name the image and the level, the scan panel what the
        # scan adds: left out, the explorer fits one 1280x720 screen
        shown = ("image", "scan level", "this scan")
        rows = [r for r in self.readout_rows() if r[0] not in shown]
        self.readout.value = html_table(rows)

    # the level shown, as widgets (each level has its own in the page)

    @property
    def image(self) -> w.Image:
        """The picture of the level shown."""
        return self.pictures[int(self.level.value)].left

    @property
    def reference(self) -> w.Image:
        """The full image or difference map next to it (hidden in the other views)."""
        return self.pictures[int(self.level.value)].right

    @property
    def image_caption(self) -> w.HTML:
        """The byte counter above the picture of the level shown."""
        return self.pictures[int(self.level.value)].caption

    @property
    def reference_caption(self) -> w.HTML:
        """The caption under the companion picture of the level shown."""
        return self.pictures[int(self.level.value)].right_caption

    def _caption(self, i: int, k: int, mode: str) -> str:
        """The byte counter right above the picture, in view while sliding."""
        center = (float(self.zoom_x.value), float(self.zoom_y.value))
        view = view_note(float(self.zoom.value), center, mode == "split")
        return level_caption(self.cache.level_bytes(i), k, scan_script_of(self.source), view)

    def _reference_caption(self, mode: str, shown: bool) -> str:
        if not shown:
            return ""
        return SIDE_CAPTION if mode == "side" else difference_caption(self.gain)

    def readout_rows(self) -> list[tuple[str, str]]:
        """Return the readouts for the level shown, as (label, value) pairs."""
        i, k = self.index, int(self.level.value)
        nbytes = self.cache.level_bytes(i)
        return [
            ("image", html.escape(self.source.names[i])),
            ("scan level", f"{k} / {len(nbytes)}"),
            *level_rows(nbytes, k, scan_script_of(self.source), self._known_quality(i)),
        ]

    # -- what each scan adds ------------------------------------------------------

    def _build_scan_toggle(self) -> None:
        self.scan_toggle = w.ToggleButton(
            value=False,
            description="what each scan adds",
            icon="th",
            tooltip="the coefficients, bits, bytes and pixels the scan at this level adds",
            layout=w.Layout(width="auto"),
        )
        self.scan_panel: ScanPanel | None = None
        self._scan_box = w.VBox([], layout=w.Layout(width="100%"))

    def _toggle_scan_panel(self, change: Any = None) -> None:
        """Show or hide the panel of what the scan adds; it follows the level and image."""
        if self.scan_toggle.value and self.scan_panel is None:
            self.scan_panel = ScanPanel.following(self)
        panel = self.scan_panel
        self._scan_box.children = [panel.shown()] if self.scan_toggle.value and panel else []

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

        k = int(self.level.value)
        page = scan_demo(
            self.source, images=images, image=self.index, levels=levels,
            level=k if levels is None or k in levels else None, max_side=max_side,
            metric=self.metric, gain=self.gain, curve=self._dataset_curve,
            dataset_sample=0,  # no curve shown here, none on the page
            qualities=dict([self._shown]) if self._shown is not None else None,
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


def scan_picture(ex: ScanExplorer) -> bytes:
    """The level shown (and its companion picture) next to the curve and the readouts."""
    shown = [ex.image.value]
    if ex.reference.layout.display != "none" and ex.reference.value:
        shown.append(ex.reference.value)
    pics = []
    for data in shown:
        pic = Image.open(io.BytesIO(data))
        pic.thumbnail((480 // len(shown), 480))
        pics.append(pic)
    img, cur, ds = (ex.sources[n].data for n in ("image", "current", "dataset"))
    series = [("this image", np.asarray(img["x"]), np.asarray(img["y"]))]
    band = None
    if len(ds["x"]):
        series.insert(0, ("dataset mean", np.asarray(ds["x"]), np.asarray(ds["mean"])))
        band = (np.asarray(ds["x"]), np.asarray(ds["lo"]), np.asarray(ds["hi"]))
    label = axis_label(ex.metric, str(ex.scale.value))
    chart = line_chart(
        series,
        band=band,
        highlight=(cur["x"][0], cur["y"][0]),
        title=f"Bytes read vs {label}",
        xlabel="bytes read (% of the full image)",
        ylabel=label,
        size=(440, 300),
        xfmt="{:.0%}",
    )
    rows = [(k, html.unescape(v)) for k, v in ex.readout_rows() if k != "this scan"]
    text = text_panel([f"{k}: {v}" for k, v in rows], 440)
    top = hstack([hstack(pics, gap=4), vstack([chart, text])])
    if ex.scan_toggle.value and ex.scan_panel is not None:  # "what each scan adds" is open
        return to_jpeg(vstack([top, ex.scan_panel.drawing()], gap=12))
    return to_jpeg(top)
