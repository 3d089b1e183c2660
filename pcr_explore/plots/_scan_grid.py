"""The 8x8 zig-zag grid of every component: which coefficients are known, to how many bits."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import Title
from bokeh.plotting import figure

from .._public import public
from ..jpeg._coverage import ScanCoverage

__all__ = ["ScanGridFigure", "scan_grid_figure", "scan_grid_data", "GRID_SHADES"]

# Fill per lowest bit known: darker = more bits known; white = not sent yet.
GRID_SHADES: tuple[tuple[str, str], ...] = (
    ("exact (every bit)", "#08306b"),
    ("lowest bit missing", "#2171b5"),
    ("2 lowest bits missing", "#6baed6"),
    ("3 or more bits missing", "#c6dbef"),
    ("not sent yet", "#ffffff"),
)
ADDED_COLOR = "#d62728"
_GAP = 1.6  # grid cells between two components' grids
_CELLS = ("x", "y", "fill", "ink", "line", "width", "q", "uv", "component", "state", "text")


def _shade(low: int) -> tuple[str, str]:
    """Fill and text colour of a cell whose lowest known bit is *low* (-1: not sent)."""
    if low < 0:
        return GRID_SHADES[4][1], "#999999"
    fill = GRID_SHADES[min(low, 3)][1]
    return fill, ("#ffffff" if low <= 1 else "#08306b")


def _state(low: int) -> str:
    if low < 0:
        return "not sent yet"
    if low == 0:
        return "known exactly"
    return f"known but its {low} lowest bit{'s' if low > 1 else ''} (to a multiple of {1 << low})"


def _short(scan: Any) -> str:
    """What a scan sends of a component, short enough for the width of one grid."""
    band = "DC" if scan.ss == 0 else f"AC {scan.ss}-{scan.se}"
    bits = (
        ("all bits" if scan.al == 0 else f"bits >={scan.al}") if scan.ah == 0 else f"bit {scan.al}"
    )
    return f"+ {band}, {bits}" + (" (refine)" if scan.ah else "")


def _origin(c: int) -> float:
    return c * (8 + _GAP)


def scan_grid_data(coverage: ScanCoverage | None) -> dict[str, dict[str, list[Any]]]:
    """The columns of :func:`scan_grid_figure`'s sources for *coverage* (None: empty).

    Returns
    -------
    dict
        ``cells``: one row per coefficient of every component (``x``, ``y``
        its cell, ``fill``/``ink`` colours, ``line``/``width`` its outline,
        red and thick where this scan sends bits, ``q`` its zig-zag index,
        ``uv`` its vertical and horizontal frequency, ``component``,
        ``state`` in words, ``text`` the label drawn); ``heads``: ``x``,
        ``y``, ``text`` of each component's two header lines.

    Examples
    --------
    >>> from pcr_explore.jpeg import STANDARD_SCRIPT_GRAY, scan_coverage
    >>> d = scan_grid_data(scan_coverage(STANDARD_SCRIPT_GRAY, level=2))
    >>> len(d["cells"]["x"]), d["cells"]["q"][:3], d["heads"]["text"][:2]
    (64, [0, 1, 5], ['Y: 6/64 sent, 0 exact', '+ AC 1-5, bits >=2'])
    """
    cells: dict[str, list[Any]] = {k: [] for k in _CELLS}
    heads: dict[str, list[Any]] = {"x": [], "y": [], "text": [], "color": []}
    if coverage is None:
        return {"cells": cells, "heads": heads}
    scan = coverage.scan
    for c, name in enumerate(coverage.component_names):
        low = coverage.grid(c)
        added = coverage.grid(c, coverage.added)
        q = coverage.grid(c, np.tile(np.arange(64), (coverage.num_components, 1)))
        for u in range(8):
            for v in range(8):
                fill, ink = _shade(int(low[u, v]))
                hit = bool(added[u, v])
                cells["x"].append(_origin(c) + v)
                cells["y"].append(7 - u)
                cells["fill"].append(fill)
                cells["ink"].append(ink)
                cells["line"].append(ADDED_COLOR if hit else "#bdbdbd")
                cells["width"].append(3 if hit else 1)
                cells["q"].append(int(q[u, v]))
                cells["uv"].append(f"{u}, {v}")
                cells["component"].append(name)
                cells["state"].append(_state(int(low[u, v])) + (" (this scan)" if hit else ""))
                cells["text"].append(str(int(q[u, v])))
        low_row = coverage.low_bit[c]
        summary = f"{name}: {int((low_row >= 0).sum())}/64 sent, {int((low_row == 0).sum())} exact"
        what = _short(scan) if scan is not None and coverage.added[c].any() else ""
        heads["x"] += [_origin(c) - 0.5, _origin(c) - 0.5]
        heads["y"] += [9.3, 8.45]
        heads["text"] += [summary, what or "not in this scan"]
        heads["color"] += ["#222222", ADDED_COLOR if what else "#888888"]
    return {"cells": cells, "heads": heads}


@public("pcr_explore.plots")
class ScanGridFigure(NamedTuple):
    """The zig-zag grids of :func:`scan_grid_figure` and their sources (``cells``, ``heads``)."""

    figure: Any
    sources: dict[str, ColumnDataSource]

    def update(self, coverage: ScanCoverage | None, title: str | None = None) -> None:
        """Show another coverage: one ``.data`` assignment per source, and the title.

        Parameters
        ----------
        coverage : ScanCoverage or None
            What to draw (None: empty grids).
        title : str, optional
            Figure title (default: the level and what its scan sends).
        """
        data = scan_grid_data(coverage)
        for name, cols in data.items():
            self.sources[name].data = cols
        if title is None and coverage is not None:
            title = f"After scan {coverage.level} of {len(coverage.scans)}: {coverage.label()}"
        self.figure.title.text = title or ""  # a Title since scan_grid_figure made it


@public("pcr_explore.plots")
def scan_grid_figure(
    coverage: ScanCoverage | None = None, *, width: int = 620, height: int = 300
) -> ScanGridFigure:
    """The 8x8 grid of DCT coefficients of each component, after a scan of a progressive JPEG.

    Each cell is one coefficient, numbered in zig-zag order (0 is DC, top
    left; frequencies rise right and down). Its shade says how many of its
    bits are known (dark: exact, light: low bits still missing, white: not
    sent yet); a red outline marks the coefficients the last scan sends.
    Above each grid: what is known of that component, and what this scan
    sends of it. The figure keeps its aspect ratio as it scales to its box.

    Parameters
    ----------
    coverage : ScanCoverage, optional
        From :func:`~pcr_explore.jpeg.scan_coverage` or
        :func:`~pcr_explore.quality.compare.image_coverage`.
    width, height : int
        Size in pixels (the figure scales to its box's width).

    Returns
    -------
    ScanGridFigure

    Examples
    --------
    >>> from pcr_explore.jpeg import scan_coverage
    >>> from pcr_explore.jpeg.scan_script import STANDARD
    >>> g = scan_grid_figure(scan_coverage(STANDARD, level=3))
    >>> g.figure.title.text
    'After scan 3 of 10: Cr AC 1-63, bits >=1 (Al=1)'
    >>> sum(w == 3 for w in g.sources["cells"].data["width"])  # Cr's 63 AC coefficients
    63
    """
    src = {
        "cells": ColumnDataSource({k: [] for k in _CELLS}),
        "heads": ColumnDataSource({"x": [], "y": [], "text": [], "color": []}),
    }
    fig = figure(
        width=width,
        height=height,
        sizing_mode="scale_width",
        tools="save",
        toolbar_location=None,
        x_range=Range1d(start=-0.6, end=_origin(2) + 7.6),
        y_range=Range1d(start=-0.6, end=9.9),
        title=Title(text="", text_font_size="13px"),
    )
    cells = fig.rect(
        "x",
        "y",
        width=0.92,
        height=0.92,
        source=src["cells"],
        fill_color="fill",
        line_color="line",
        line_width="width",
    )
    fig.text(
        "x",
        "y",
        text="text",
        source=src["cells"],
        text_color="ink",
        text_align="center",
        text_baseline="middle",
        text_font_size="8pt",
    )
    fig.text(
        "x",
        "y",
        text="text",
        source=src["heads"],
        text_color="color",
        text_baseline="middle",
        text_font_size="9pt",
    )
    for label, color in (*GRID_SHADES, ("sent by this scan", "#ffffff")):
        fig.scatter(
            x=[float("nan")],
            y=[float("nan")],
            marker="square",
            size=12,
            fill_color=color,
            line_color=ADDED_COLOR if label == "sent by this scan" else "#999999",
            line_width=3 if label == "sent by this scan" else 1,
            legend_label=label,
        )
    fig.add_tools(
        HoverTool(
            renderers=[cells],
            tooltips=[
                ("", "@component coefficient @q (frequency @uv)"),
                ("", "@state"),
            ],
        )
    )
    fig.add_layout(fig.legend[0], "below")
    fig.legend.orientation = "horizontal"
    fig.legend.label_text_font_size = "10px"
    fig.legend.spacing = 4
    fig.legend[0].padding = 2  # type: ignore[assignment]  # bokeh's stubs: an int is a padding
    fig.legend.nrows = 2
    fig.axis.visible = False
    fig.grid.visible = False
    fig.outline_line_color = None
    g = ScanGridFigure(fig, src)
    if coverage is not None:
        g.update(coverage)
    return g
