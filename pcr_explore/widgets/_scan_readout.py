"""The words a scan level reads as: one text for ScanExplorer and its kernel-free page.

ScanExplorer writes them for the level shown; :func:`~pcr_explore.widgets.scan_demo`
writes them for every level before the page is written, and the page only
shows them. Both carry their own style (no page style sheet in a notebook).
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..jpeg.scan_script import ScanScript
from ..plots._scales import axis_label, drawable
from ..quality import LevelQuality, QualityCurve
from ..quality.compare import level_note
from ..quality.compare._views import difference_scale
from ..quality.metrics import METRIC_LABELS
from ..quality.metrics._names import format_value

__all__ = [
    "curve_labels",
    "dataset_band",
    "finite_list",
    "image_curve",
    "SIDE_CAPTION",
    "SPLIT_NOTE",
    "difference_caption",
    "level_caption",
    "level_rows",
]

SIDE_CAPTION = "<b>full image</b>"
"""The caption under the full image, side by side with the level."""

SPLIT_NOTE = "left of the line: this level, right: full image"
"""What the split view adds to the byte counter."""

_RAMP = (
    "<span style='display:inline-block;width:110px;height:10px;vertical-align:middle;"
    "border:1px solid #888;background:linear-gradient(90deg,#000,#fff)'></span>"
)


def level_caption(nbytes: np.ndarray, k: int, script: ScanScript, view: str = "") -> str:
    """The byte counter above the picture: scan *k* of *n*, its bytes and share.

    *view* (HTML, from :func:`view_note`) follows it; a level that adds no
    bytes to this image says why on a line of its own.
    """
    have, full = int(nbytes[k - 1]), int(nbytes[-1])
    note = level_note(nbytes, k, script)
    why = f"<br><i style='color:#9a6700'>{html.escape(note)}</i>" if "no bytes" in note else ""
    return (
        f"<b>scan {k} of {len(nbytes)}</b> &middot; "
        f"{have:,} of {full:,} bytes ({have / full:.1%}){view}{why}"
    )


def level_rows(
    nbytes: np.ndarray, k: int, script: ScanScript, quality: LevelQuality | None
) -> list[tuple[str, str]]:
    """The readouts of level *k*: bytes, share, what the scan adds, quality against the full image.

    Without *quality* (still being measured) one row says so.
    """
    rows = [
        ("bytes at this level", f"{int(nbytes[k - 1]):,} of {int(nbytes[-1]):,}"),
        ("share of the full image", f"{nbytes[k - 1] / nbytes[-1]:.1%}"),
        ("this scan", html.escape(level_note(nbytes, k, script).partition(": ")[2] or "-")),
    ]
    if quality is None:
        return [*rows, ("quality vs full", "measuring...")]
    return [
        *rows,
        ("MS-SSIM vs full", format_value(quality.mssim[k - 1], "mssim")),
        ("SSIM vs full", format_value(quality.ssim[k - 1], "ssim")),
        ("PSNR vs full", format_value(quality.psnr[k - 1], "psnr")),
    ]


def difference_caption(gain: float) -> str:
    """The scale under a difference map: black is no difference, white the largest shown."""
    top = difference_scale(gain)[-1][1]
    return (
        f"<span style='white-space:nowrap'><b>|level - full| x {gain:g}</b>: "
        f"0 {_RAMP} {top}+ of 255</span>"
    )


def finite_list(values: Any) -> list[float | None]:
    """Numbers as JSON takes them: NaN and infinities become None (a gap in a line)."""
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, float)]


def curve_labels(metric: str) -> dict[str, Any]:
    """The curve's title and axis labels on both quality scales."""
    label = METRIC_LABELS[metric]
    return {
        "title": f"Bytes read vs {label}",
        "x": "bytes read (% of the full image)",
        "y_value": axis_label(metric, "value"),
        "y_db": axis_label(metric, "db").split(":")[0],  # the formula: in the scale's tip
        "metric": label,
        "db": metric != "psnr",
    }


def dataset_band(curve: QualityCurve | None, metric: str) -> dict[str, Any]:
    """The dataset's mean and p5-p95 band on both scales (empty without a curve)."""
    if curve is None:
        return {}
    c = curve.with_metric(metric) if curve.metric != metric else curve
    out: dict[str, Any] = {"x": finite_list(c.bytes_fraction)}
    for key, values in (("mean", c.mean), ("lo", c.p5), ("hi", c.p95)):
        for scale in ("value", "db"):
            out[f"{key}_{scale}"] = finite_list(drawable(values, metric, scale))
    return out


def image_curve(nbytes: np.ndarray, q: LevelQuality | None, metric: str) -> dict[str, Any]:
    """One image's points: bytes as a share of the full image, quality on both scales."""
    x = finite_list(nbytes / nbytes[-1])
    out: dict[str, Any] = {"x": x, "bytes": [int(b) for b in nbytes]}
    for scale in ("value", "db"):
        y = [None] * len(x) if q is None else finite_list(drawable(q.metric(metric), metric, scale))
        out[f"y_{scale}"] = y
    return out
