"""Static pictures of the widgets, drawn with Pillow.

A saved notebook rendered where widgets cannot run (GitHub, nbviewer) shows
these instead of the live view. Bokeh can only export PNGs through a browser
driver, so the charts here are drawn directly: plain, but honest. Kept by
hand rather than taken from matplotlib: that would be a new ~40 MB dependency
for three chart kinds (lines with a band, grouped bars, a text panel).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = ["PALETTE", "text_panel", "line_chart", "bar_chart", "hstack", "vstack", "to_jpeg"]

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_BG = "white"
_INK = "#222222"
_GRID = "#dddddd"


def _font(size: int = 13) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def text_panel(lines: Sequence[str], width: int, size: int = 13) -> Image.Image:
    """Lines of text on a white panel *width* pixels wide."""
    line_h = size + 6
    im = Image.new("RGB", (max(1, width), 8 + line_h * len(lines)), _BG)
    draw = ImageDraw.Draw(im)
    for k, line in enumerate(lines):
        draw.text((8, 4 + k * line_h), line, fill=_INK, font=_font(size))
    return im


def _ticks(lo: float, hi: float, n: int = 5) -> np.ndarray:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** np.floor(np.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=raw)
    return np.round(np.arange(np.ceil(lo / step) * step, hi + step * 1e-9, step), 12)


class _Axes:
    """Maps data coordinates to pixels inside a chart's plot area."""

    def __init__(
        self,
        draw: ImageDraw.ImageDraw,
        size: tuple[int, int],
        xlim: tuple[float, float],
        ylim: tuple[float, float],
    ) -> None:
        self.draw = draw
        self.left, self.top, self.right, self.bottom = 56, 28, size[0] - 12, size[1] - 40
        self.xlim, self.ylim = xlim, ylim

    def px(self, x: float, y: float) -> tuple[float, float]:
        (x0, x1), (y0, y1) = self.xlim, self.ylim
        fx = (x - x0) / (x1 - x0) if x1 > x0 else 0.5
        fy = (y - y0) / (y1 - y0) if y1 > y0 else 0.5
        return (
            self.left + fx * (self.right - self.left),
            self.bottom - fy * (self.bottom - self.top),
        )

    def frame(
        self, title: str, xlabel: str, ylabel: str, *, xticks: bool = True, xfmt: str = "{:.3g}"
    ) -> None:
        d, f = self.draw, _font(11)
        for ty in _ticks(*self.ylim):
            _, py = self.px(self.xlim[0], ty)
            d.line([(self.left, py), (self.right, py)], fill=_GRID)
            d.text((4, py - 6), f"{ty + 0.0:.3g}", fill=_INK, font=f)
        if xticks:
            for tx in _ticks(*self.xlim):
                px, _ = self.px(tx, self.ylim[0])
                d.line([(px, self.bottom), (px, self.bottom + 4)], fill=_INK)
                d.text((px - 10, self.bottom + 6), xfmt.format(tx + 0.0), fill=_INK, font=f)
        d.rectangle([self.left, self.top, self.right, self.bottom], outline=_INK)
        # the y label sits top left: the title starts after it
        title_x = max(self.left, 12 + d.textlength(ylabel, font=f))
        d.text((title_x, 6), title, fill=_INK, font=_font(13))
        d.text(
            ((self.left + self.right) / 2 - 3 * len(xlabel), self.bottom + 22),
            xlabel,
            fill=_INK,
            font=f,
        )
        d.text((4, self.top - 16), ylabel, fill=_INK, font=f)


def _legend(
    draw: ImageDraw.ImageDraw, ax: _Axes, row: int, label: str, color: str, at: str = "top_right"
) -> None:
    """One legend entry in a corner of the plot area: a swatch and a label."""
    x = ax.left + 8 if at.endswith("left") else ax.right - 150
    y = ax.top + 6 + 15 * row if at.startswith("top") else ax.bottom - 20 - 15 * row
    draw.rectangle([x, y + 3, x + 14, y + 9], fill=color)
    draw.text((x + 20, y), label, fill=_INK, font=_font(11))


def _limits(values: Sequence[np.ndarray], pad: float = 0.04) -> tuple[float, float]:
    finite = [np.asarray(v, float)[np.isfinite(np.asarray(v, float))] for v in values]
    allv = np.concatenate([v for v in finite if v.size] or [np.array([0.0, 1.0])])
    lo, hi = float(allv.min()), float(allv.max())
    span = hi - lo or 1.0
    return lo - pad * span, hi + pad * span


def line_chart(
    series: Sequence[tuple[str, np.ndarray, np.ndarray]],
    *,
    band: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    highlight: tuple[float, float] | None = None,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    size: tuple[int, int] = (480, 300),
    legend_at: str = "bottom_right",
    xfmt: str = "{:.3g}",
) -> Image.Image:
    """A line chart: named (x, y) series, an optional shaded band and a marked point.

    Parameters
    ----------
    series : sequence of (label, x, y)
        Lines, coloured in :data:`PALETTE` order, with markers at the points.
    band : (x, lower, upper), optional
        A shaded range drawn under the lines.
    highlight : (x, y), optional
        One point drawn large and red.
    legend_at : {"top_left", "top_right", "bottom_right", "bottom_left"}
        Corner of the legend.
    xfmt : str
        Format of the x tick labels, e.g. ``"{:.0%}"`` for shares.
    """
    im = Image.new("RGB", size, _BG)
    draw = ImageDraw.Draw(im)
    xs = [s[1] for s in series] + ([band[0]] if band is not None else [])
    ys = [s[2] for s in series] + (list(band[1:]) if band is not None else [])
    ax = _Axes(draw, size, _limits(xs), _limits(ys))
    ax.frame(title, xlabel, ylabel, xfmt=xfmt)
    if band is not None:
        bx, lo, hi = (np.asarray(a, float) for a in band)
        poly = [ax.px(x, y) for x, y in zip(bx, hi)] + [
            ax.px(x, y) for x, y in zip(bx[::-1], lo[::-1])
        ]
        if len(poly) >= 3:
            draw.polygon(poly, fill="#dbe8f5")
    for k, (label, x, y) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        pts = [ax.px(a, b) for a, b in zip(np.asarray(x, float), np.asarray(y, float))]
        if len(pts) > 1:
            draw.line(pts, fill=color, width=2)
        for px, py in pts if len(pts) <= 16 else ():
            draw.ellipse([px - 3, py - 3, px + 3, py + 3], fill=color)
        _legend(
            draw,
            ax,
            len(series) - 1 - k if legend_at.startswith("bottom") else k,
            label,
            color,
            legend_at,
        )
    if highlight is not None:
        px, py = ax.px(*highlight)
        draw.ellipse([px - 7, py - 7, px + 7, py + 7], outline="#d62728", width=3)
    return im


def bar_chart(
    categories: Sequence[str],
    groups: Sequence[tuple[str, np.ndarray]],
    *,
    title: str = "",
    ylabel: str = "",
    size: tuple[int, int] = (480, 300),
) -> Image.Image:
    """Grouped vertical bars: one group per category, one bar per named series."""
    im = Image.new("RGB", size, _BG)
    draw = ImageDraw.Draw(im)
    top = max([float(np.nanmax(v)) for _, v in groups if len(v)] + [1e-12])
    ax = _Axes(draw, size, (0.0, float(len(categories))), (0.0, top * 1.08))
    ax.frame(title, "", ylabel, xticks=False)
    width = 0.8 / max(1, len(groups))
    f = _font(11)
    for c, cat in enumerate(categories):
        px, _ = ax.px(c + 0.5, 0)
        draw.text((px - 3 * len(cat), ax.bottom + 6), cat, fill=_INK, font=f)
        for g, (_, values) in enumerate(groups):
            x0 = c + 0.1 + g * width
            p0 = ax.px(x0, 0.0)
            p1 = ax.px(x0 + width * 0.9, float(values[c]))
            draw.rectangle([p0[0], p1[1], p1[0], p0[1]], fill=PALETTE[g % len(PALETTE)])
    for g, (label, _) in enumerate(groups):
        _legend(draw, ax, g, label, PALETTE[g % len(PALETTE)])
    return im


def _stack(images: Sequence[Image.Image], horizontal: bool, gap: int) -> Image.Image:
    ims = [im.convert("RGB") for im in images]
    if horizontal:
        size = (sum(i.width for i in ims) + gap * (len(ims) - 1), max(i.height for i in ims))
    else:
        size = (max(i.width for i in ims), sum(i.height for i in ims) + gap * (len(ims) - 1))
    out = Image.new("RGB", size, _BG)
    pos = 0
    for i in ims:
        out.paste(i, (pos, 0) if horizontal else (0, pos))
        pos += (i.width if horizontal else i.height) + gap
    return out


def hstack(images: Sequence[Image.Image], gap: int = 8) -> Image.Image:
    """Images side by side, top-aligned, on white."""
    return _stack(images, True, gap)


def vstack(images: Sequence[Image.Image], gap: int = 8) -> Image.Image:
    """Images one above the other, left-aligned, on white."""
    return _stack(images, False, gap)


def to_jpeg(im: Image.Image, quality: int = 85) -> bytes:
    """Encode a picture as JPEG bytes."""
    buf = io.BytesIO()
    im.convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()
