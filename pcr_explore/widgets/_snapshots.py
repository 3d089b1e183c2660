"""The static picture of each explorer: what a saved notebook shows without a kernel."""

from __future__ import annotations

import html
import io
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from ..metrics import format_value
from ..plots import axis_label, drawable
from ._static import bar_chart, hstack, line_chart, text_panel, to_jpeg, vstack

if TYPE_CHECKING:
    from .scan_explorer import ScanExplorer
    from .swap_explorer import SwapExplorer
    from .tuner_dashboard import TunerDashboard

__all__ = ["scan_picture", "tuner_picture", "swap_picture"]


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
    return to_jpeg(hstack([hstack(pics, gap=4), vstack([chart, text])]))


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
    for slot, _ in enumerate(dash.worst_images()):
        pics = [
            Image.open(io.BytesIO(im[slot].value))
            for im in (dash.gallery_full, dash.gallery_level, dash.gallery_diff)
        ]
        cards.append(hstack(pics, gap=2))
    parts = [hstack([chart, text])]
    parts += [hstack(cards[j : j + 2], gap=16) for j in range(0, len(cards), 2)]
    return to_jpeg(vstack(parts))


def swap_picture(ex: SwapExplorer) -> bytes:
    """The ratio curves, the per-policy bars and the readouts."""
    lines = ex.sources["lines"].data
    series = [
        (c, np.asarray(x), np.log10(np.maximum(np.asarray(y, float), 1e-3)))
        for c, x, y in zip(lines["codec"], lines["xs"], lines["ys"])
    ]
    ratio = line_chart(
        series,
        title="log10 compression ratio vs sparsity",
        xlabel="sparsity (share of zeros)",
        ylabel="log10 ratio",
        legend_at="top_left",
        xfmt="{:.0%}",
    )
    bars = ex.sources["bars"].data
    policy = bar_chart(
        [p.replace("always:", "") for p in bars["policy"]],
        [("swap ms", np.asarray(bars["swap_ms"])), ("stall ms", np.asarray(bars["stall_ms"]))],
        title="Swap time and stall per policy (ms)",
        size=(620, 300),
    )
    text = text_panel([f"{k}: {v}" for k, v in ex.readout_rows()], 1100)
    return to_jpeg(vstack([hstack([ratio, policy]), text]))
