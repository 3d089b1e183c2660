"""ScanExplorer: slide through the scan levels of one image and watch it sharpen."""

from __future__ import annotations

import io
import os
from typing import Any, Literal

import ipywidgets as w
import numpy as np
from PIL import Image

from ..compare import LevelCache, difference_map, encode_jpeg, zoom_crop
from ..metrics import METRIC_LABELS, METRICS
from ..plots import drawable
from ..quality import LevelQuality, QualityCurve, image_quality, quality_curve
from ..sources import LevelSource, open_source
from ._explorer import Explorer, html_table
from ._figures import scan_curve_figure
from ._static import hstack, line_chart, text_panel, to_jpeg, vstack

__all__ = ["ScanExplorer"]

Mode = Literal["level", "side", "diff"]


class ScanExplorer(Explorer):
    """Slide through the scan levels of an image: pixels, bytes and quality.

    Controls: a level slider, an image picker with previous/next buttons, a
    view toggle (the level alone, next to the full image, or an amplified
    difference map) and a zoom with its centre. Readouts: bytes at the level,
    fraction of the full image, MS-SSIM, SSIM and PSNR against the full
    image. The plot shows this image's bytes-vs-quality curve, the dataset's
    mean curve with its p5-p95 band, and the level shown.

    Parameters
    ----------
    source : path or LevelSource
        A PCR dataset, a folder of images or one image file (anything
        :func:`~pcr_explore.sources.open_source` opens).
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

    Attributes
    ----------
    level, picker, prev_button, next_button, mode, zoom, zoom_x, zoom_y
        The controls (ipywidgets); set ``level.value = 3`` from code to move.
    image, reference : ipywidgets.Image
        The level shown, and the full image or difference map next to it.
    readout : ipywidgets.HTML
        Bytes and quality of the level shown.
    figure, sources, plot
        The Bokeh figure, its named data sources and its widget wrapper.
    view : ipywidgets.VBox
        The whole widget.

    Examples
    --------
    >>> from pcr_explore.widgets import ScanExplorer
    >>> ex = ScanExplorer("data/sample/pcr")  # doctest: +SKIP
    >>> ex.level.value = 3  # doctest: +SKIP
    >>> ex  # doctest: +SKIP
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
        names = self.source.names

        self.level = w.IntSlider(
            value=level if level is not None else max(1, n // 2),
            min=1,
            max=n,
            description="scan level",
            continuous_update=True,
            layout=w.Layout(width="420px"),
        )
        self.picker = w.Dropdown(
            options=[(name, i) for i, name in enumerate(names)],
            value=image,
            description="image",
            layout=w.Layout(width="360px"),
        )
        self.prev_button = w.Button(
            icon="arrow-left", tooltip="previous image", layout=w.Layout(width="40px")
        )
        self.next_button = w.Button(
            icon="arrow-right", tooltip="next image", layout=w.Layout(width="40px")
        )
        self.mode = w.ToggleButtons(
            options=[
                ("level", "level"),
                ("side by side", "side"),
                (f"difference x{gain:g}", "diff"),
            ],
            value="level",
            style={"button_width": "110px"},
        )
        self.zoom = w.FloatSlider(
            value=1.0,
            min=1.0,
            max=8.0,
            step=0.5,
            description="zoom",
            continuous_update=True,
            layout=w.Layout(width="260px"),
        )
        self.zoom_x = w.FloatSlider(
            value=0.5,
            min=0.0,
            max=1.0,
            step=0.01,
            description="x",
            readout=False,
            layout=w.Layout(width="200px"),
        )
        self.zoom_y = w.FloatSlider(
            value=0.5,
            min=0.0,
            max=1.0,
            step=0.01,
            description="y",
            readout=False,
            layout=w.Layout(width="200px"),
        )
        self.image = w.Image(format="jpeg", layout=w.Layout(max_width="100%"))
        self.reference = w.Image(format="jpeg", layout=w.Layout(max_width="100%", display="none"))
        self.image_caption = w.HTML()
        self.reference_caption = w.HTML()
        self.readout = w.HTML()
        self.figure, self.sources = scan_curve_figure(METRIC_LABELS[metric])
        self.plot = self._plot(self.figure)

        self._shown: tuple[int, LevelQuality] | None = None  # image index, its quality
        self._dataset_curve: QualityCurve | None = None
        if dataset_sample > 0:
            self._dataset_curve = quality_curve(
                self.source,
                sample=min(dataset_sample, len(self.source)),
                seed=seed,
                metric=metric,
                workers=workers,
            )
            c = self._dataset_curve
            self.sources["dataset"].data = {
                "x": np.asarray(c.bytes_fraction, float),
                "mean": drawable(c.mean, metric),
                "lo": drawable(c.p5, metric),
                "hi": drawable(c.p95, metric),
            }

        self.view = w.VBox(
            [
                w.HBox([self.picker, self.prev_button, self.next_button, self.mode]),
                w.HBox([self.level, self.zoom, self.zoom_x, self.zoom_y]),
                w.HBox(
                    [
                        w.VBox([self.image_caption, self.image]),
                        w.VBox([self.reference_caption, self.reference]),
                    ]
                ),
                w.HBox([self.plot, self.readout]),
                self.errors,
            ]
        )

        self._on_image = self._guarded(self._show_image)
        self._on_view = self._guarded(self._render)
        self.picker.observe(self._on_image, names="value")
        for control in (self.level, self.mode, self.zoom, self.zoom_x, self.zoom_y):
            control.observe(self._on_view, names="value")
        self.prev_button.on_click(self._guarded(lambda _: self.step(-1)))
        self.next_button.on_click(self._guarded(lambda _: self.step(+1)))
        self._show_image()

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
        return self.cache.per_image("quality", i, lambda: image_quality(self.source, i))

    def step(self, delta: int) -> None:
        """Show the image *delta* places after the current one (wrapping round)."""
        self.picker.value = (self.index + delta) % len(self.source)

    def _show_image(self, change: Any = None) -> None:
        # The picture and its bytes go out first; the quality of a new image
        # takes a moment (every level against the full image) and follows.
        self._render()
        i = self.index
        q = self.quality(i)
        self._shown = (i, q)
        nbytes = self.cache.level_bytes(i)
        self.sources["image"].data = {
            "x": nbytes / nbytes[-1],
            "y": drawable(q.metric(self.metric), self.metric),
            "scan": np.arange(1, len(nbytes) + 1),
            "bytes": nbytes,
        }
        self._render()

    def _known_quality(self, i: int) -> LevelQuality | None:
        """Image *i*'s quality if measured (shown now, or cached), else None."""
        if self._shown is not None and self._shown[0] == i:
            return self._shown[1]
        q = self.cache.cached("quality", i)
        return q if isinstance(q, LevelQuality) else None

    def _pictures(self, i: int, k: int, mode: Mode) -> tuple[bytes, bytes | None]:
        """The JPEG bytes of the two pictures for image *i* at level *k*."""
        zoom = float(self.zoom.value)
        if zoom <= 1.0 and mode != "diff":
            right = self.cache.display(i, None) if mode == "side" else None
            return self.cache.display(i, k), right
        level = self.cache.pixels(i, k)
        full = self.cache.pixels(i, None)
        center = (float(self.zoom_x.value), float(self.zoom_y.value))

        def view(arr: np.ndarray) -> bytes:
            return encode_jpeg(zoom_crop(arr, center, zoom) if zoom > 1.0 else arr)

        if mode == "diff":
            return view(level), view(difference_map(level, full, self.gain))
        return view(level), (view(full) if mode == "side" else None)

    def _render(self, change: Any = None) -> None:
        i, k, mode = self.index, int(self.level.value), self.mode.value
        left, right = self._pictures(i, k, mode)
        self.image.value = left
        if right is None:
            self.reference.layout.display = "none"
        else:
            self.reference.value = right
            self.reference.layout.display = None
        nbytes = self.cache.level_bytes(i)
        q = self._known_quality(i)
        y = (
            float("nan")
            if q is None
            else float(drawable(q.metric(self.metric), self.metric)[k - 1])
        )
        self.sources["current"].data = {
            "x": [float(nbytes[k - 1] / nbytes[-1])],
            "y": [y],
            "scan": [k],
            "bytes": [int(nbytes[k - 1])],
        }
        zoom = f", zoom x{self.zoom.value:g}" if self.zoom.value > 1 else ""
        # the byte counter sits right above the picture, in view while sliding
        self.image_caption.value = (
            f"<b>scan {k} of {len(nbytes)}</b> &middot; {int(nbytes[k - 1]):,} of "
            f"{int(nbytes[-1]):,} bytes ({nbytes[k - 1] / nbytes[-1]:.1%}){zoom}"
        )
        self.reference_caption.value = (
            ""
            if right is None
            else "<b>full image</b>"
            if mode == "side"
            else f"<b>|level - full| x {self.gain:g}</b>"
        )
        self.readout.value = html_table(self.readout_rows())

    def readout_rows(self) -> list[tuple[str, str]]:
        """Return the readouts for the level shown, as (label, value) pairs."""
        i, k = self.index, int(self.level.value)
        nbytes = self.cache.level_bytes(i)
        rows = [
            ("image", self.source.names[i]),
            ("scan level", f"{k} / {len(nbytes)}"),
            ("bytes at this level", f"{int(nbytes[k - 1]):,} of {int(nbytes[-1]):,}"),
            ("fraction of full", f"{nbytes[k - 1] / nbytes[-1]:.1%}"),
        ]
        q = self._known_quality(i)
        if q is None:
            return [*rows, ("quality vs full", "measuring...")]
        psnr = float(q.psnr[k - 1])
        return [
            *rows,
            ("MS-SSIM vs full", f"{float(q.mssim[k - 1]):.4f}"),
            ("SSIM vs full", f"{float(q.ssim[k - 1]):.4f}"),
            ("PSNR vs full", "identical" if not np.isfinite(psnr) else f"{psnr:.1f} dB"),
        ]

    # -- static picture ----------------------------------------------------------

    def snapshot(self) -> bytes:
        """Draw the level shown (and its companion picture), the curve and the readouts.

        Returns
        -------
        bytes
            A JPEG, for places where widgets cannot run.
        """
        shown = [self.image.value]
        if self.reference.layout.display != "none" and self.reference.value:
            shown.append(self.reference.value)
        pics = []
        for data in shown:
            pic = Image.open(io.BytesIO(data))
            pic.thumbnail((480, 480))
            pics.append(pic)
        top = hstack(pics)
        img, cur, ds = (self.sources[n].data for n in ("image", "current", "dataset"))
        series = [("this image", np.asarray(img["x"]), np.asarray(img["y"]))]
        band = None
        if len(ds["x"]):
            series.insert(0, ("dataset mean", np.asarray(ds["x"]), np.asarray(ds["mean"])))
            band = (np.asarray(ds["x"]), np.asarray(ds["lo"]), np.asarray(ds["hi"]))
        chart = line_chart(
            series,
            band=band,
            highlight=(cur["x"][0], cur["y"][0]),
            title=f"Bytes vs {METRIC_LABELS[self.metric]}",
            xlabel="fraction of the full image's bytes",
            ylabel=METRIC_LABELS[self.metric],
        )
        text = text_panel([f"{k}: {v}" for k, v in self.readout_rows()], 360)
        return to_jpeg(vstack([top, hstack([chart, text])]))
