"""ScanPanel: what the scan at one level adds to an image, coefficient by coefficient."""

from __future__ import annotations

import html
import os
from typing import Any

import traitlets as t
from cachetools import LRUCache
from PIL import Image, ImageDraw

from .._checks import check_scan
from .._public import public
from ..jpeg._coverage import ScanCoverage
from ..jpeg.scan_script import ScanScript
from ..plots._scan_grid import scan_grid_data
from ..quality.compare import ScanStep, scan_step
from ..quality.compare._views import encode_jpeg
from ..read.sources import LevelSource, open_source, source_name
from ._module_widget import ModuleWidget, module_text
from ._static import hstack, text_panel, to_jpeg, vstack

__all__ = ["ScanPanel"]

GRID_LEGEND = "grids: dark = exact, lighter = low bits missing, white = not sent, red = this scan"
"""How the zig-zag grids read."""


def panel_state(step: ScanStep, num_scans: int) -> dict[str, Any]:
    """What the "what each scan adds" panel shows for one image and level.

    The same dict as :func:`pcr_explore.widgets.scan_explorer.panel_state`
    (kept here because ``scan_explorer`` imports this module: importing it
    back would make a circle).
    """
    k, cov = step.level, step.coverage
    before = f"scan {k - 1}" if k > 1 else "flat grey"
    have = int(step.level_bytes[k - 1])
    return {
        "title": f"Known after scan {k} of {num_scans}"
        + (f": {cov.label()}" if step.adds_scan else " (this level adds no scan to this image)"),
        "caption": f"<b>scan {k} of {num_scans}</b> &middot; {html.escape(step.note)}",
        "grid": scan_grid_data(cov),
        "legend": GRID_LEGEND,
        "rows": [list(r) for r in step.rows()],
        "picture": encode_jpeg(step.pixels),
        "added": encode_jpeg(step.difference),
        "picture_caption": f"<b>the image at scan {k}</b><br>{have:,} bytes read",
        "added_caption": f"<b>what scan {k} adds</b><br>|scan {k} - {before}| x {step.gain:g}",
        "picture_alt": f"the image at scan {k}",
        "added_alt": f"what scan {k} adds to the image, amplified x{step.gain:g}",
    }


class _Level(t.Int):  # type: ignore[type-arg]
    """A level: judged by the one rule for a scan level (``check_scan``), nothing before it."""

    def validate(self, obj: Any, value: Any) -> Any:
        return value


@public("pcr_explore.widgets")
class ScanPanel(ModuleWidget):
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

    The front end is one ES module (``static/scan_panel.js``, on anywidget).
    The page holds every level's panel for the image shown, so the level
    slider moves with no round trip to the kernel.

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
    level, image : int
        The level and the index of the image shown (traitlets: set
        ``panel.level = 3`` from code, or observe them).
    num_scans : int
        The levels of the source (the slider's maximum).
    names : list of str
        The images the picker offers.
    panels : list of dict
        What the page draws at every level of the image shown (title,
        caption, zig-zag grids, readout rows, the two pictures and their
        captions and ``alt`` texts): :func:`panel_state` of each level.
    controls : bool
        Whether the panel shows its own level slider and image picker.
    presentation : bool
        Larger text for a projector.

    Examples
    --------
    >>> from pcr_explore.widgets import ScanPanel
    >>> panel = ScanPanel("photos/scenes/chelsea.jpg", scan_script="spectral")  # a cat
    >>> panel.level = 3
    """

    _esm = module_text("scan_panel.js")

    names = t.List(t.Unicode()).tag(sync=True)
    image = t.Int(0).tag(sync=True)
    level = _Level(1).tag(sync=True)
    num_scans = t.Int(1).tag(sync=True)
    controls = t.Bool(True).tag(sync=True)
    panels = t.List(t.Dict()).tag(sync=True)

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
        if scan_script is not None and isinstance(source, (str, os.PathLike)):
            src = open_source(source, scan_script=scan_script)
        elif scan_script is not None:
            raise ValueError("scan_script applies to a folder or file path, not an open source")
        else:
            src = open_source(source)
        if len(src) == 0:
            raise ValueError(f"{src!r} holds no images")
        n = int(src.num_scans)
        start = min(n, 2) if level is None else check_scan(level, n, where=source_name(src))
        if not 0 <= int(image) < len(src):
            raise ValueError(f"{source_name(src)}: no image {image}; it holds 0..{len(src) - 1}")
        self.source, self.gain, self.size = src, gain, size
        self._steps: LRUCache[tuple[int, int], ScanStep] = LRUCache(maxsize=64)
        super().__init__(
            names=list(src.names), image=int(image), level=start, num_scans=n, controls=controls
        )
        self.observe(self._guarded(self.show), names="image")
        self.observe(lambda _: self._changed(), names=["level", "presentation"])
        self.show()

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

    # -- what the panel shows ---------------------------------------------------

    def step(self, level: int | None = None) -> ScanStep:
        """What *level* (default: the level shown) adds to the image shown, cached.

        Parameters
        ----------
        level : int, optional
            Scan level.

        Returns
        -------
        ScanStep
        """
        key = (int(self.image), int(self.level) if level is None else int(level))
        if key not in self._steps:
            self._steps[key] = scan_step(
                self.source, image=key[0], level=key[1], gain=self.gain, size=self.size
            )
        return self._steps[key]

    @property
    def coverage(self) -> ScanCoverage:
        """The coefficients known at the level shown."""
        return self.step().coverage

    def show(self, change: Any = None) -> None:
        """Measure every level of the image shown for the page (it picks the level itself)."""
        name = html.escape(self.source.names[int(self.image)])
        with self.busy(f"reading the scans of {name}..."):
            try:
                n = self.num_scans
                self.panels = [panel_state(self.step(k), n) for k in range(1, n + 1)]
            except Exception:  # nothing of the image before stays under this one's name
                self.panels = []
                raise

    def panel(self) -> dict[str, Any]:
        """What the page shows at the level shown (one of :attr:`panels`)."""
        k = int(self.level)
        return dict(self.panels[k - 1]) if len(self.panels) >= k else {}

    # -- static picture ----------------------------------------------------------

    def snapshot(self) -> bytes:
        """The grids, the readouts and the two pictures, as one JPEG."""
        return to_jpeg(self.drawing())

    def drawing(self) -> Image.Image:
        """The grids, the readouts and the two pictures, drawn with Pillow."""
        return step_drawing(self.step())


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
