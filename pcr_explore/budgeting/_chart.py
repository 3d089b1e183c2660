"""A budget report's chart as inline SVG: what each level costs, keeps, and takes an epoch.

Three small panels share the scan levels on their x axes: the bytes an
epoch reads, the quality against the full image (mean and 5th percentile,
with the target), and the epoch's input time at the report's bandwidth
(reading and decoding). The recommended level is shaded in each. The
legends sit under the panels, never on the data. Plain SVG written here,
with no script and no link: a saved page shows it offline, in any browser
or mail reader, and prints it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..quality.metrics import PSNR_CAP
from ._findings import format_bandwidth

if TYPE_CHECKING:
    from ._findings import BudgetFindings as BudgetReport

__all__ = ["render_chart", "CHART_CSS"]

CHART_CSS = """
.budget-charts { display: flex; flex-wrap: wrap; gap: 0.6em 1.4em; margin: 0.8em 0; }
.budget-charts figure { margin: 0; flex: 1 1 300px; max-width: 400px; }
.budget-charts .chart-title { font-weight: 600; font-size: 0.85em; padding-left: 44px; }
.budget-charts svg { display: block; width: 100%; height: auto; font: 11px system-ui, sans-serif; }
.budget-charts figcaption { font-size: 0.8em; color: #444; display: flex; flex-wrap: wrap;
  gap: 0.1em 1em; padding-left: 44px; }
.budget-charts figcaption svg { display: inline; width: 22px; height: 10px;
  vertical-align: middle; margin-right: 3px; }
"""

# The panel's size in SVG units (it scales with the page), and the plot area's margins.
_W, _H = 340, 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 44, 10, 8, 34
_BLUE, _DARK, _BROWN, _RED = "#1f77b4", "#08306b", "#9a6700", "#d62728"


@dataclass(frozen=True)
class _Series:
    """One line or set of bars of a panel."""

    label: str
    values: np.ndarray  # one per level; NaN: not drawn
    color: str
    kind: str = "line"  # "line", "dotted" or "bars"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About *n* round values from *lo* to *hi* (1, 2 or 5 times a power of ten apart)."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / n
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    count = int(math.floor((hi - first) / step + 1e-9)) + 1
    return [first + i * step for i in range(count)]


def _tick_label(v: float, fmt: str) -> str:
    if fmt == "%":
        return f"{v:.0%}"
    return f"{v:.3g}" if v else "0"


def _panel(
    title: str,
    levels: Sequence[int],
    series: Sequence[_Series],
    *,
    recommended: int,
    y_range: tuple[float, float],
    y_format: str = "",
    rule: tuple[float, str] | None = None,
    tooltips: Sequence[str] = (),
) -> str:
    """One panel: the SVG and, under it, its legend."""
    lo, hi = y_range
    n = len(levels)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    slot = plot_w / n

    def x(i: int) -> float:
        return _LEFT + slot * (i + 0.5)

    def y(v: float) -> float:
        return _TOP + plot_h * (1.0 - (v - lo) / (hi - lo))

    parts = [
        f"<svg viewBox='0 0 {_W} {_H}' role='img' aria-label='{html.escape(title, quote=True)}'>"
        f"<title>{html.escape(title)}</title>",
    ]
    k = levels.index(recommended)
    parts.append(
        f"<rect x='{x(k) - slot / 2:.1f}' y='{_TOP}' width='{slot:.1f}' height='{plot_h}' "
        "fill='#fff3f3'/>"
    )
    for t in _ticks(lo, hi):
        parts.append(
            f"<line x1='{_LEFT}' x2='{_W - _RIGHT}' y1='{y(t):.1f}' y2='{y(t):.1f}' "
            "stroke='#e5e5e5'/>"
            f"<text x='{_LEFT - 4}' y='{y(t) + 4:.1f}' text-anchor='end' fill='#555'>"
            f"{_tick_label(t, y_format)}</text>"
        )
    for i, level in enumerate(levels):
        weight = " font-weight='700' fill='#b00'" if level == recommended else " fill='#555'"
        parts.append(
            f"<text x='{x(i):.1f}' y='{_TOP + plot_h + 13}' text-anchor='middle'{weight}>"
            f"{level}</text>"
        )
    parts.append(
        f"<text x='{_LEFT + plot_w / 2:.1f}' y='{_H - 4}' text-anchor='middle' fill='#555'>"
        "scan level (shaded: recommended)</text>"
    )
    if rule is not None and lo <= rule[0] <= hi:
        parts.append(
            f"<line x1='{_LEFT}' x2='{_W - _RIGHT}' y1='{y(rule[0]):.1f}' y2='{y(rule[0]):.1f}' "
            f"stroke='{_RED}' stroke-dasharray='4 3' stroke-width='1.5'/>"
        )
    for s in series:
        parts.append(_draw(s, x, y, slot, lo, tooltips))
    parts.append(
        f"<line x1='{_LEFT}' x2='{_W - _RIGHT}' y1='{_TOP + plot_h}' y2='{_TOP + plot_h}' "
        "stroke='#888'/></svg>"
    )
    legend = [_swatch(s) for s in series]
    if rule is not None:
        legend.append(
            f"<span><svg viewBox='0 0 22 10' aria-hidden='true'><line x1='0' x2='22' y1='5' "
            f"y2='5' stroke='{_RED}' stroke-dasharray='4 3' stroke-width='1.5'/></svg>"
            f"{html.escape(rule[1])}</span>"
        )
    # the title in HTML: it wraps where the panel is narrow
    return (
        f"<figure><div class='chart-title'>{html.escape(title)}</div>{''.join(parts)}"
        f"<figcaption>{''.join(legend)}</figcaption></figure>"
    )


def _draw(
    s: _Series,
    xs: Callable[[int], float],
    ys: Callable[[float], float],
    slot: float,
    lo: float,
    tips: Sequence[str],
) -> str:
    """A series' bars, or its line and points; each bar and point with its tooltip."""
    out = []
    if s.kind == "bars":
        for i, v in enumerate(s.values):
            if not np.isfinite(v):
                continue
            top = ys(v)
            tip = f"<title>{html.escape(tips[i])}</title>" if tips else ""
            out.append(
                f"<rect x='{xs(i) - slot * 0.35:.1f}' y='{top:.1f}' width='{slot * 0.7:.1f}' "
                f"height='{max(ys(lo) - top, 0.0):.1f}' fill='{s.color}'>{tip}</rect>"
            )
        return "".join(out)
    points = [(xs(i), ys(v)) for i, v in enumerate(s.values) if np.isfinite(v)]
    dash = " stroke-dasharray='2 2'" if s.kind == "dotted" else ""
    if len(points) > 1:
        path = " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
        out.append(
            f"<polyline points='{path}' fill='none' stroke='{s.color}' stroke-width='2'{dash}/>"
        )
    for i, v in enumerate(s.values):
        if np.isfinite(v):
            tip = f"{s.label}, level {i + 1}: {v:.4g}"
            out.append(
                f"<circle cx='{xs(i):.1f}' cy='{ys(v):.1f}' r='3' fill='{s.color}'>"
                f"<title>{html.escape(tip)}</title></circle>"
            )
    return "".join(out)


def _swatch(s: _Series) -> str:
    if s.kind == "bars":
        mark = f"<rect x='3' y='0' width='16' height='10' fill='{s.color}'/>"
    else:
        dash = " stroke-dasharray='2 2'" if s.kind == "dotted" else ""
        mark = (
            f"<line x1='0' x2='22' y1='5' y2='5' stroke='{s.color}' stroke-width='2'{dash}/>"
            f"<circle cx='11' cy='5' r='3' fill='{s.color}'/>"
        )
    return (
        f"<span><svg viewBox='0 0 22 10' aria-hidden='true'>{mark}</svg>"
        f"{html.escape(s.label)}</span>"
    )


def _upper(top: float) -> float:
    """The first round value at or above *top* (the time axis's end)."""
    ticks = _ticks(0.0, top)
    if len(ticks) < 2:
        return top or 1.0
    return ticks[-1] if ticks[-1] >= top else ticks[-1] + (ticks[1] - ticks[0])


def _quality_range(values: Sequence[np.ndarray], target: float) -> tuple[float, float]:
    """From a round value under the lowest point (or the target) to the highest."""
    finite = np.concatenate([v[np.isfinite(v)] for v in values] + [np.array([target])])
    lo, hi = float(finite.min()), float(finite.max())
    ticks = _ticks(lo, hi)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.1
    return math.floor(lo / step) * step, max(hi, lo + step)


def render_chart(r: BudgetReport) -> str:
    """The three panels of *r* as HTML (inline SVG), for the page and the notebook view."""
    levels = [x.scan for x in r.levels]
    label = {"mssim": "MS-SSIM", "ssim": "SSIM", "psnr": "PSNR (dB)"}.get(r.metric, r.metric)
    fraction = np.array([x.bytes_fraction for x in r.levels])
    tips = [
        f"level {x.scan}: {x.bytes:,} bytes, {x.bytes_fraction:.1%} of the full level"
        for x in r.levels
    ]
    bytes_panel = _panel(
        "Bytes read (share of the full level)",
        levels,
        [_Series("bytes read", fraction, "#9ecae1", "bars")],
        recommended=r.recommended,
        y_range=(0.0, 1.0),
        y_format="%",
        tooltips=tips,
    )

    def shown(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        # identical images (infinite or capped PSNR) would squash the other levels
        return np.where(np.isfinite(v) & ((r.metric != "psnr") | (v < PSNR_CAP)), v, np.nan)

    mean = shown(np.array([x.quality_mean for x in r.levels]))
    p5 = shown(np.array([x.quality_p5 for x in r.levels]))
    stat = "5th percentile" if r.statistic == "p5" else "mean"
    quality_panel = _panel(
        f"{label} against the full image",
        levels,
        [
            _Series("mean of images", mean, _BLUE),
            _Series("5th percentile", p5, _DARK, "dotted"),
        ],
        recommended=r.recommended,
        y_range=_quality_range([mean, p5], r.target),
        rule=(r.target, f"target {r.target:g} ({stat})"),
    )
    decode = np.array([r.decode_seconds(k) for k in levels])
    cores = f"{r.workers} core{'s' * (r.workers != 1)}"
    lines = [_Series(f"decoding on {cores} (measured)", decode, _BROWN)]
    if r.bandwidth is not None:
        bw = format_bandwidth(r.bandwidth)
        read = np.array([r.read_seconds(k) or 0.0 for k in levels])
        lines.insert(0, _Series(f"reading at {bw} (bytes / bandwidth)", read, _BLUE))
        title = f"Epoch input time at {bw}, in s"
    else:
        title = "Epoch decoding time, in s"
    top = max(float(np.nanmax(s.values)) for s in lines)
    time_panel = _panel(
        title,
        levels,
        lines,
        recommended=r.recommended,
        y_range=(0.0, _upper(top)),
    )
    return f"<div class='budget-charts'>{bytes_panel}{quality_panel}{time_panel}</div>"
