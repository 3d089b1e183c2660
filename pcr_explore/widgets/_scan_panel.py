"""ScanPanel: what the scan at one level adds to an image, coefficient by coefficient."""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets as w
from cachetools import LRUCache
from PIL import Image, ImageDraw

from .._checks import check_scan
from .._public import public
from ..jpeg._coverage import ScanCoverage
from ..jpeg.scan_script import ScanScript
from ..plots._scan_grid import scan_grid_data, scan_grid_figure
from ..quality.compare import ScanStep, scan_step
from ..quality.compare._views import encode_jpeg
from ..read.sources import LevelSource, open_source, source_name
from ._explorer import Debounced, Explorer, html_table
from ._static import hstack, text_panel, to_jpeg, vstack

__all__ = ["ScanPanel"]

_ROW = w.Layout(flex_flow="row wrap", align_items="center", width="100%")


@public("pcr_explore.widgets")
class ScanPanel(Explorer):
    """What one scan adds: its components, band and bits on the zig-zag grids, bytes and pixels.

    For the level shown: the 8x8 grid of DCT coefficients of each component
    (shaded by how many bits of each are known, the ones this scan sends
    outlined in red), which components the scan codes, its frequency band
    and bit positions, the bytes it adds, the image at this level and the
    picture of what the scan adds (``|level - previous level|``, amplified).
    Shows spectral selection (a band of coefficients at a time) and
    successive approximation (high bits first): why a prefix of the file is
    a blurrier image rather than a cut-off one.

    It has its own level slider and image picker; :class:`ScanExplorer`
    shows the same (its "what each scan adds" toggle) for its level and image.

    Parameters
    ----------
    source : path or LevelSource
        A PCR dataset, a folder of images or one image file.
    image : int
        Index of the image shown first.
    level : int, optional
        Level shown first (default 2).
    scan_script : str, path or ScanScript, optional
        For a folder or file: the script to transcode it with (a name of
        :data:`~pcr_explore.jpeg.scan_script.SCRIPTS` or a jpegtran
        ``-scans`` file); a dataset keeps the script it was encoded with.
    gain : float, optional
        Amplification of the picture of what the scan adds (default: a power
        of two chosen per level, shown in its caption; see
        :func:`~pcr_explore.quality.compare.scan_step`).
    size : int
        Longer side of the pictures.
    controls : bool
        Show the panel's own level slider and image picker.

    Attributes
    ----------
    level, picker
        The controls (set ``level.value = 3`` from code).
    grid : ScanGridFigure
        The zig-zag grids and their sources; ``plot`` is its widget.
    caption, readout : ipywidgets.HTML
        What the scan sends, and its readouts (components, band, bits, bytes).
    picture, added : ipywidgets.Image
        The image at this level, and what this level's scan adds to it.
    view : ipywidgets.VBox
        The whole panel.

    Examples
    --------
    >>> from pcr_explore.widgets import ScanPanel
    >>> panel = ScanPanel("photos/scenes/chelsea.jpg", scan_script="spectral")  # a cat
    >>> panel.level.value = 3
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | LevelSource,
        *,
        image: int = 0,
        level: int | None = None,
        scan_script: str | os.PathLike[str] | ScanScript | None = None,
        gain: float | None = None,
        size: int = 224,
        controls: bool = True,
    ) -> None:
        super().__init__()
        if scan_script is not None and isinstance(source, (str, os.PathLike)):
            self.source = open_source(source, scan_script=scan_script)
        elif scan_script is not None:
            raise ValueError("scan_script applies to a folder or file path, not an open source")
        else:
            self.source = open_source(source)
        if len(self.source) == 0:
            raise ValueError(f"{self.source!r} holds no images")
        self.gain, self.size = gain, size
        self._steps: LRUCache[tuple[int, int], ScanStep] = LRUCache(maxsize=64)
        n = int(self.source.num_scans)
        self.level = w.IntSlider(
            value=min(n, 2)
            if level is None
            else check_scan(level, n, where=source_name(self.source)),
            min=1,
            max=n,
            description="scan level",
            layout=w.Layout(width="360px"),
        )
        self.picker = w.Dropdown(
            options=[(name, i) for i, name in enumerate(self.source.names)],
            value=image,
            description="image",
            layout=w.Layout(width="300px"),
        )
        self.grid = scan_grid_figure()
        self.plot = self._plot(self.grid.figure)
        self.caption = w.HTML().add_class("pcr-scan-caption")
        self.readout = w.HTML()
        picture = {"flex": "0 1 auto", "min_width": "0", "max_width": "100%"}
        self.picture = w.Image(format="jpeg", layout=w.Layout(**picture))
        self.added = w.Image(format="jpeg", layout=w.Layout(**picture))
        self.picture_caption, self.added_caption = w.HTML(), w.HTML()
        self._controls = w.HBox([self.level, self.picker, self.presentation], layout=_ROW)
        self._controls.layout.display = None if controls else "none"
        self.view = self._layout()
        self._redraw = Debounced(self._guarded(self.show), delay=0.0)
        self.level.observe(lambda _: self._redraw(), names="value")
        self.picker.observe(lambda _: self._redraw(), names="value")
        self.show()

    def _layout(self) -> w.VBox:
        """Controls, the caption, the grids, then the readouts and the two pictures in a row."""
        cell = {"min_width": "0", "margin": "0 12px 0 0"}
        side = f"{self.size}px"
        below = w.HBox(
            [
                w.Box([self.readout], layout=w.Layout(flex="0 1 auto", **cell)),
                # as wide as the pictures: a long caption wraps instead of pushing the row
                w.VBox([self.picture_caption, self.picture], layout=w.Layout(width=side, **cell)),
                w.VBox([self.added_caption, self.added], layout=w.Layout(width=side, **cell)),
            ],
            layout=w.Layout(flex_flow="row wrap", width="100%", align_items="flex-start"),
        )
        grids = w.Box(
            [self.plot], layout=w.Layout(width="100%", max_width="700px", min_width="560px")
        )
        return w.VBox(
            [self._controls, self.status, self.caption, grids, below, self.errors],
            layout=w.Layout(width="100%"),
        ).add_class("pcr-scan-panel")

    # -- what the panel shows ---------------------------------------------------

    def step(self) -> ScanStep:
        """What the level shown adds to the image shown (cached per image and level)."""
        key = (int(self.picker.value), int(self.level.value))
        if key not in self._steps:
            self._steps[key] = scan_step(
                self.source, image=key[0], level=key[1], gain=self.gain, size=self.size
            )
        return self._steps[key]

    @property
    def coverage(self) -> ScanCoverage:
        """The coefficients known at the level shown."""
        return self.step().coverage

    def show(self) -> None:
        """Draw the level and image the controls say."""
        s = self.step()
        k, n = s.level, int(self.source.num_scans)
        cov = s.coverage
        title = f"Known after scan {k} of {n}" + (
            f": {cov.label()}" if s.adds_scan else " (this level adds no scan to this image)"
        )
        self.grid.update(cov, title=title)
        self.caption.value = f"<b>scan {k} of {n}</b> &middot; {html.escape(s.note)}"
        self.readout.value = html_table(s.rows())
        self.picture.value = encode_jpeg(s.pixels)
        self.added.value = encode_jpeg(s.difference)
        have = int(s.level_bytes[k - 1])
        small = "<br><span style='color:#555'>{}</span>"
        self.picture_caption.value = f"<b>the image at scan {k}</b>" + small.format(
            f"{have:,} bytes read"
        )
        before = f"scan {k - 1}" if k > 1 else "flat grey"
        self.added_caption.value = f"<b>what scan {k} adds</b>" + small.format(
            f"|scan {k} - {before}| x {s.gain:g}"
        )

    # -- static picture ----------------------------------------------------------

    def snapshot(self) -> bytes:
        """The grids, the readouts and the two pictures, as one JPEG."""
        return to_jpeg(self.drawing())

    def drawing(self) -> Image.Image:
        """The grids, the readouts and the two pictures, drawn with Pillow."""
        return step_drawing(self.step())


GRID_LEGEND = "grids: dark = exact, lighter = low bits missing, white = not sent, red = this scan"
"""How the zig-zag grids read."""


def step_drawing(s: ScanStep) -> Image.Image:
    """What one scan adds (grids, readouts, the two pictures), drawn with Pillow."""
    pics = []
    for arr in (s.pixels, s.difference):
        pic = Image.fromarray(arr).convert("RGB")
        pic.thumbnail((300, 300))
        pics.append(pic)
    rows = [f"{k}: {html.unescape(v)}" for k, v in s.rows()]
    below = f"below: the image at scan {s.level}, and what it adds (x {s.gain:g})"
    text = text_panel([f"After scan {s.level}: {s.label}", *rows, "", GRID_LEGEND, below], 560)
    return vstack([hstack([grid_picture(s.coverage), text]), hstack(pics, gap=6)])


def grid_picture(coverage: ScanCoverage, cell: int = 20) -> Image.Image:
    """The zig-zag grids of :func:`~pcr_explore.plots.scan_grid_figure`, drawn with Pillow."""
    data = scan_grid_data(coverage)
    cells, heads = data["cells"], data["heads"]
    gap, top = int(1.6 * cell), 2 * cell + 8
    width = coverage.num_components * (8 * cell + gap)
    im = Image.new("RGB", (width, top + 8 * cell + 8), "white")
    draw = ImageDraw.Draw(im)
    for x, y, fill, ink, line, lw, text in zip(
        *(cells[k] for k in ("x", "y", "fill", "ink", "line", "width", "text"))
    ):
        x0, y0 = round(x * cell), top + round((7 - y) * cell)
        draw.rectangle([x0, y0, x0 + cell - 2, y0 + cell - 2], fill=fill, outline=line, width=lw)
        draw.text((x0 + cell // 2 - 1, y0 + cell // 2 - 1), text, fill=ink, anchor="mm")
    for x, y, text, color in zip(heads["x"], heads["y"], heads["text"], heads["color"]):
        draw.text((round((x + 0.5) * cell), 2 if y > 9 else cell + 2), text, fill=color)
    return im
