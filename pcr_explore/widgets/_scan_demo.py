"""The scan levels of a few images as one HTML page that needs no kernel (``scan_demo``)."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from .._public import public
from ..jpeg import decode
from ..jpeg._scan_level import check_scan, check_scans
from ..plots._scales import axis_label, drawable, level_label_offsets
from ..quality import LevelQuality, QualityCurve, image_quality, quality_curve
from ..quality.compare import difference_map, level_note
from ..quality.compare._views import difference_scale, display_jpeg, encode_jpeg, jpeg_size
from ..quality.metrics import METRIC_LABELS, METRICS
from ..quality.metrics._names import format_value
from ..read.sources import LevelSource, open_source, orientation_of, scan_script_of, source_name
from ._demo import DemoPage, data_uri, readout_table, render_page
from ._figures import CURVE_X_RANGE
from ._static import PALETTE

__all__ = ["scan_demo", "dataset_title", "DEFAULT_IMAGES", "DEFAULT_DATASET_SAMPLE"]

DEFAULT_IMAGES = 8
"""Images a demo embeds when none are named: 8 at 512 px stay under 8 MB."""

DEFAULT_DATASET_SAMPLE = 16
"""Images sampled for the dataset's band when no curve is given: ScanExplorer's default."""


def dataset_title(src: object) -> str:
    """The dataset's name for a page title: its folder, or the folder above ``pcr/``.

    A dataset encoded into ``<name>/pcr`` (as ``pcr-explore sample`` and the
    notebooks do) is named by ``<name>``; any other folder, file or URL by
    its last part.

    Examples
    --------
    >>> class Src:
    ...     path = "data/flowers/pcr/"
    >>> dataset_title(Src())
    'flowers'
    >>> Src.path = "data/photos.pcr"
    >>> dataset_title(Src())
    'photos.pcr'
    """
    name = source_name(src)
    parts = [p for p in re.split(r"[\\/]", name) if p]
    if not parts:
        return name
    if parts[-1].lower() == "pcr" and len(parts) > 1 and not parts[-2].endswith(":"):
        return parts[-2]
    return parts[-1]


@public("pcr_explore.widgets")
def scan_demo(
    source: str | os.PathLike[str] | LevelSource,
    *,
    images: int | Sequence[int] | None = None,
    image: int | None = None,
    levels: Sequence[int] | None = None,
    level: int | None = None,
    max_side: int = 512,
    metric: str = "mssim",
    gain: float = 4.0,
    quality: int = 85,
    diff_quality: int = 50,
    curve: QualityCurve | None = None,
    qualities: Mapping[int, LevelQuality] | None = None,
    dataset_sample: int = DEFAULT_DATASET_SAMPLE,
    seed: int = 0,
    workers: int | None = None,
    title: str | None = None,
) -> DemoPage:
    """Write the scan levels of a few images into one page that runs with no kernel.

    What :class:`~pcr_explore.widgets.ScanExplorer` shows, made once for
    every position of its controls: each image at each level (its JPEG,
    shrunk to *max_side* on this side, as a ``data:`` URI), the level slider
    with a play button, the byte counter, the bytes-vs-quality curve with a
    marker on the level shown (click a point to show it), an image picker,
    and the views: the level alone, next to the full image, split by a line
    (drag it), and the amplified difference to the full image. Bokeh's
    ``CustomJS`` switches between them in the browser; BokehJS is inlined, so
    the page opens from a file with no network.

    Parameters
    ----------
    source : path or LevelSource
        A PCR dataset, a folder of images or an image file (anything
        :func:`~pcr_explore.read.sources.open_source` opens).
    images : int or sequence of int, optional
        The first *images* images, or these indices (default: the first
        :data:`DEFAULT_IMAGES`).
    image : int, optional
        Index of the image shown first (default: the first of *images*);
        added to *images* when missing.
    levels : sequence of int, optional
        The levels embedded (default: all); the full level is always kept.
        Fewer levels make a smaller page.
    level : int, optional
        Level shown first (default: the middle one).
    max_side : int
        Longer side of the pictures; an image within it is embedded as its
        own level bytes, a larger one is shrunk and re-encoded.
    metric : {"mssim", "ssim", "psnr"}
        The quality plotted; the readouts give all three.
    gain : float
        Amplification of the difference view.
    quality, diff_quality : int
        JPEG quality of shrunk levels and of the difference maps (1-95).
    curve : QualityCurve, optional
        The dataset's curve (from :func:`~pcr_explore.quality_curve`), drawn as
        its mean and p5-p95 band, as ScanExplorer draws it; images in its
        per-image table are not measured again.
    qualities : mapping of int to LevelQuality, optional
        Per-image quality measured already (by
        :func:`~pcr_explore.quality.image_quality`), by image index.
    dataset_sample : int
        Without *curve*, images sampled to draw the dataset's curve and band
        (16 by default, as ScanExplorer; 0: none). The chosen images among
        them are not measured again.
    seed, workers : int
        Passed to :func:`~pcr_explore.quality_curve` for the sample.
    title : str, optional
        Page title (default: "Scan levels of NAME", NAME the dataset's folder,
        or the folder above it when it is called ``pcr``; see
        :func:`dataset_title`).

    Returns
    -------
    DemoPage
        Write it with :meth:`DemoPage.save_html`.

    Raises
    ------
    ValueError
        For an unknown metric, an image or level outside the source, or a
        setting out of range; the message names the source.

    Examples
    --------
    >>> page = scan_demo("photos.pcr", images=4)
    >>> page.save_html("scans.html")
    PosixPath('scans.html')
    """
    src = open_source(source)
    _check_settings(src, metric, max_side, gain, quality, diff_quality, curve)
    chosen, first = _choose_images(src, images, image)
    embedded = _choose_levels(src, levels)
    start = _start_level(src, embedded, level)
    if curve is None and dataset_sample > 0:
        curve = quality_curve(
            src,
            sample=min(dataset_sample, len(src)),
            seed=seed,
            metric=metric,
            workers=workers,
            progress=False,
        )
    measured = _qualities(src, chosen, curve, qualities)
    store = _Pictures()
    entries = [
        _image_entry(src, i, q, embedded, metric, store, max_side, quality, diff_quality, gain)
        for i, q in zip(chosen, measured)
    ]
    data = {
        "pics": store.uris,
        "levels": embedded,
        "start": {"image": first, "pos": embedded.index(start)},
        "images": [e["page"] for e in entries],
        "diff_caption": _diff_caption(gain),
    }
    name = title or f"Scan levels of {dataset_title(src)}"
    roots = _models(
        [e["curve"] for e in entries], curve, metric, embedded, start, first, chosen, src, gain
    )
    count = "all" if len(embedded) == src.num_scans else f"{len(embedded)} of the"
    intro = (
        f"{len(chosen)} image{'s' * (len(chosen) != 1)} at {count} {src.num_scans} scan levels. "
        "A level is the first scans of an image's progressive JPEG: the bytes a reader "
        "fetches for that fidelity. Slide or play the levels and watch the bytes and the quality."
    )
    body = _BODY.replace("<!--legend-->", _legend(curve is not None))
    page = render_page(
        name, intro=intro, body=body, roots=roots, data=data, script=_SCRIPT, css=_CSS
    )
    return DemoPage(name, page)


def _check_settings(
    src: LevelSource,
    metric: str,
    max_side: int,
    gain: float,
    quality: int,
    diff_quality: int,
    curve: QualityCurve | None,
) -> None:
    where = source_name(src)
    if len(src) == 0:
        raise ValueError(f"{where}: holds no images")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    if not 16 <= int(max_side) <= 4096:
        raise ValueError(f"max_side must be 16-4096 pixels, got {max_side}")
    if not gain > 0:
        raise ValueError(f"gain must be positive, got {gain}")
    for what, q in (("quality", quality), ("diff_quality", diff_quality)):
        if not 1 <= int(q) <= 95:
            raise ValueError(f"{what} must be a JPEG quality 1-95, got {q}")
    if curve is not None and curve.num_scans != src.num_scans:
        raise ValueError(
            f"{where}: the curve has {curve.num_scans} levels, the source {src.num_scans}"
        )


def _choose_images(
    src: LevelSource, images: int | Sequence[int] | None, image: int | None
) -> tuple[list[int], int]:
    """The image indices embedded, and the position of the one shown first."""
    n = len(src)
    if images is None or isinstance(images, (int, np.integer)):
        count = DEFAULT_IMAGES if images is None else int(images)
        if count < 1:
            raise ValueError(f"images must be at least 1, got {count}")
        chosen = list(range(min(count, n)))
    else:
        chosen = list(dict.fromkeys(int(i) for i in images))
        if not chosen:
            raise ValueError("images names no image")
    if image is not None and int(image) not in chosen:
        chosen.insert(0, int(image))
    bad = [i for i in chosen if not 0 <= i < n]
    if bad:
        raise ValueError(f"{source_name(src)}: no image {bad[0]}; it holds images 0..{n - 1}")
    return chosen, chosen.index(int(image)) if image is not None else 0


def _choose_levels(src: LevelSource, levels: Sequence[int] | None) -> list[int]:
    s = int(src.num_scans)
    if levels is None:
        return list(range(1, s + 1))
    return sorted({*check_scans(levels, s, where=source_name(src)), s})


def _start_level(src: LevelSource, embedded: list[int], level: int | None) -> int:
    if level is None:
        return embedded[len(embedded) // 2 - (len(embedded) % 2 == 0)]
    k = check_scan(level, int(src.num_scans), where=source_name(src))
    if k not in embedded:
        raise ValueError(
            f"{source_name(src)}: level {level} is not among the levels embedded {embedded}"
        )
    return k


def _qualities(
    src: LevelSource,
    chosen: list[int],
    curve: QualityCurve | None,
    given: Mapping[int, LevelQuality] | None,
) -> list[LevelQuality]:
    """Each chosen image's quality: passed in, from the curve's table, or measured now."""
    rows: dict[int, int] = {}
    if curve is not None and not curve.luminance and set(METRICS) <= set(curve.per_image.metrics):
        rows = {int(i): r for r, i in enumerate(curve.per_image.indices)}
    out = []
    for i in chosen:
        if given is not None and i in given:
            out.append(given[i])
        elif i in rows and curve is not None:
            t, r = curve.per_image, rows[i]
            nbytes = np.asarray(t.bytes[r], np.int64)
            out.append(
                LevelQuality(
                    scans=np.arange(1, len(nbytes) + 1),
                    bytes=nbytes,
                    bytes_fraction=nbytes / nbytes[-1],
                    mssim=t.metrics["mssim"][r],
                    ssim=t.metrics["ssim"][r],
                    psnr=t.metrics["psnr"][r],
                )
            )
        else:
            out.append(image_quality(src, image=i))
    return out


class _Pictures:
    """The page's pictures as data URIs, each distinct JPEG once."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._index: dict[bytes, int] = {}

    def add(self, jpeg: bytes) -> int:
        if jpeg not in self._index:
            self._index[jpeg] = len(self.uris)
            self.uris.append(data_uri(jpeg))
        return self._index[jpeg]


def _image_entry(
    src: LevelSource,
    i: int,
    q: LevelQuality,
    embedded: list[int],
    metric: str,
    store: _Pictures,
    max_side: int,
    quality: int,
    diff_quality: int,
    gain: float,
) -> dict[str, Any]:
    """One image: its pictures and texts for the page, its curve for the figure."""
    o = orientation_of(src, i)
    shown = {
        k: display_jpeg(src.jpeg_bytes(i, k), max_side, quality=quality, orientation=o)
        for k in embedded
    }
    full_jpeg = shown[embedded[-1]]
    full = decode(full_jpeg)
    diffs = [
        encode_jpeg(difference_map(decode(shown[k]), full, gain=gain), diff_quality)
        for k in embedded
    ]
    nbytes = np.asarray(src.level_bytes(i), np.int64)
    w, h = jpeg_size(full_jpeg)
    page = {
        "name": src.names[i],
        "w": w,
        "h": h,
        "levels": [store.add(shown[k]) for k in embedded],
        "diffs": [store.add(d) for d in diffs],
        "full": store.add(full_jpeg),
        "captions": [_caption(src, nbytes, k) for k in embedded],
        "readouts": [_readout(src, nbytes, q, k) for k in embedded],
    }
    pos = np.asarray(embedded) - 1
    x = nbytes[pos] / nbytes[-1]
    values = q.metric(metric)[pos]
    curve = {
        "x": x,
        "y_value": drawable(values, metric, "value"),
        "y_db": drawable(values, metric, "db"),
        "scan": np.asarray(embedded),
        "bytes": nbytes[pos],
        "label": [str(k) for k in embedded],
        "dx": level_label_offsets(x, x_range=CURVE_X_RANGE),
    }
    return {"page": page, "curve": curve}


def _caption(src: LevelSource, nbytes: np.ndarray, k: int) -> str:
    """The byte counter above the picture (as ScanExplorer's)."""
    have, full = int(nbytes[k - 1]), int(nbytes[-1])
    text = (
        f"<b>scan {k} of {len(nbytes)}</b> &middot; "
        f"<span class='pcr-bytes'>{have:,} of {full:,} bytes ({have / full:.1%})</span>"
    )
    note = level_note(nbytes, k, scan_script_of(src))
    if "no bytes" in note:
        text += f"<br><i class='pcr-warn'>{html.escape(note)}</i>"
    return text


def _readout(src: LevelSource, nbytes: np.ndarray, q: LevelQuality, k: int) -> str:
    note = level_note(nbytes, k, scan_script_of(src)).partition(": ")[2] or "-"
    return readout_table(
        [
            ("bytes at this level", f"{int(nbytes[k - 1]):,} of {int(nbytes[-1]):,}"),
            ("share of the full image", f"{nbytes[k - 1] / nbytes[-1]:.1%}"),
            ("this scan", html.escape(note)),
            ("MS-SSIM vs full", format_value(q.mssim[k - 1], "mssim")),
            ("SSIM vs full", format_value(q.ssim[k - 1], "ssim")),
            ("PSNR vs full", format_value(q.psnr[k - 1], "psnr")),
        ]
    )


def _legend(dataset: bool) -> str:
    """The curve's legend, drawn as the figure draws its lines and marks."""
    orange, red, blue = PALETTE[1], "#d62728", "#3182bd"
    items = [
        (f"<line x1='1' y1='7' x2='23' y2='7' stroke='{orange}' stroke-width='2'/>"
         f"<circle cx='12' cy='7' r='4' fill='{orange}'/>", "this image"),
        (f"<circle cx='12' cy='7' r='6' fill='none' stroke='{red}' stroke-width='3'/>",
         "level shown"),
    ]  # fmt: skip
    if dataset:
        items += [
            (f"<line x1='1' y1='7' x2='23' y2='7' stroke='{blue}' stroke-width='2' "
             "stroke-dasharray='5 3'/>", "dataset mean"),
            ("<rect x='1' y='2' width='22' height='10' fill='#9ecae1' fill-opacity='0.35'/>",
             "dataset p5-p95"),
        ]  # fmt: skip
    return "".join(
        f"<span><svg width='24' height='14' aria-hidden='true'>{svg}</svg>{label}</span>"
        for svg, label in items
    )


def _diff_caption(gain: float) -> str:
    top = difference_scale(gain)[-1][1]
    return f"<b>|level - full| x {gain:g}</b>: 0 <span class='pcr-ramp'></span> {top}+ of 255"


def _models(
    curves: list[dict[str, Any]],
    dataset: QualityCurve | None,
    metric: str,
    embedded: list[int],
    start: int,
    first: int,
    chosen: list[int],
    src: LevelSource,
    gain: float,
) -> dict[str, Any]:
    """The Bokeh controls and the curve, wired to the page script by CustomJS."""
    from bokeh.models import ColumnDataSource

    fig, sources = _curve_figure(curves[first], embedded.index(start), dataset, metric)
    band = ColumnDataSource(_band(dataset, metric))
    sources["dataset"].data = {k: band.data[k + "_value"] for k in ("mean", "lo", "hi")} | {
        "x": band.data["x"]
    }
    m = _controls(metric, embedded, start, first, [src.names[i] for i in chosen], gain)
    m["plot"] = fig
    args = {
        **{k: v for k, v in m.items() if k != "plot"},
        "image": sources["image"],
        "current": sources["current"],
        "dataset": sources["dataset"],
        "curves": [ColumnDataSource(c) for c in curves],
        "band": band,
        "yaxis": fig.yaxis[0],
        "labels": [axis_label(metric, s) for s in ("value", "db")],
    }
    _wire(m, sources["image"], args)
    return m


def _curve_figure(
    c0: dict[str, Any], p0: int, dataset: QualityCurve | None, metric: str
) -> tuple[Any, dict[str, Any]]:
    """ScanExplorer's curve figure, showing image *c0* at position *p0*."""
    from bokeh.models.annotations import Title

    from ._figures import scan_curve_figure

    fig, sources = scan_curve_figure(axis_label(metric), height=270)
    for key, source in sources.items():
        source.name = f"pcr-{key}"  # found by name in the page (and its tests)
    cast(Title, fig.title).text = f"Bytes read vs {METRIC_LABELS[metric]}"
    # The legend is the page's own (see _legend): in a standalone page, Bokeh
    # repaints after some changes (a drag, another root's layout) without the
    # swatches of its legend.
    fig.legend[0].visible = False
    sources["image"].data = {k: c0[k] for k in ("x", "scan", "bytes", "label", "dx")} | {
        "y": c0["y_value"]
    }
    sources["current"].data = {
        "x": [float(c0["x"][p0])],
        "y": [float(c0["y_value"][p0])],
        "scan": [int(c0["scan"][p0])],
        "bytes": [int(c0["bytes"][p0])],
    }
    return fig, sources


def _controls(
    metric: str, embedded: list[int], start: int, first: int, names: list[str], gain: float
) -> dict[str, Any]:
    """The level slider, play, image picker, view buttons, zoom, split line and scale."""
    from bokeh.models.widgets import (
        Button,
        CategoricalSlider,
        RadioButtonGroup,
        Select,
        Slider,
    )

    several = len(names) > 1
    label = METRIC_LABELS[metric]
    return {
        "level": CategoricalSlider(
            categories=[str(k) for k in embedded],
            value=str(start),
            title="scan level",
            width=340,
            name="pcr-level",
        ),
        "play": Button(label="\u25b6 play", width=90, name="pcr-play"),
        "picker": Select(
            title="image",
            options=cast(Any, [(str(j), name) for j, name in enumerate(names)]),
            value=str(first),
            width=260,
            visible=several,
            name="pcr-picker",
        ),
        "prev": Button(label="\u25c0", width=40, visible=several),
        "next": Button(label="\u25b6", width=40, visible=several),
        "mode": RadioButtonGroup(
            labels=["level", "side by side", "split", f"difference x{gain:g}"],
            active=0,
            name="pcr-mode",
        ),
        "line": Slider(
            title="line at",
            start=0,
            end=1,
            step=0.01,
            value=0.5,
            format="0%",
            width=170,
            disabled=True,
            name="pcr-line",
        ),  # fmt: skip
        "zoom": Slider(title="zoom", start=1, end=8, step=0.5, value=1, width=170, name="pcr-zoom"),
        "scale": RadioButtonGroup(
            labels=[label, f"{label} in dB"], active=0, visible=metric != "psnr"
        ),
    }


def _band(curve: QualityCurve | None, metric: str) -> dict[str, Any]:
    """The dataset's mean and p5-p95 band on both scales (empty without a curve)."""
    if curve is None:
        return {f"{k}_{s}": [] for k in ("mean", "lo", "hi") for s in ("value", "db")} | {"x": []}
    c = curve.with_metric(metric) if curve.metric != metric else curve
    out: dict[str, Any] = {"x": np.asarray(c.bytes_fraction, float)}
    for key, values in (("mean", c.mean), ("lo", c.p5), ("hi", c.p95)):
        for scale in ("value", "db"):
            out[f"{key}_{scale}"] = drawable(values, metric, scale)
    return out


def _wire(m: dict[str, Any], image_source: Any, args: dict[str, Any]) -> None:
    """Each control's CustomJS: one call into the page script with every model it needs."""
    from bokeh.models import CustomJS

    def js(call: str) -> CustomJS:
        return CustomJS(args=args, code=f"window.pcrScan.{call}")

    m["level"].js_on_change("value", js("level(cb_obj.value, {current, curves})"))
    m["picker"].js_on_change("value", js("image(Number(cb_obj.value), {image, current, curves})"))
    m["prev"].js_on_event("button_click", js("step(-1, picker)"))
    m["next"].js_on_event("button_click", js("step(1, picker)"))
    m["mode"].js_on_change("active", js("mode(cb_obj.active, line)"))
    m["line"].js_on_change("value", js("set('line', cb_obj.value)"))
    m["zoom"].js_on_change("value", js("set('zoom', cb_obj.value)"))
    m["play"].js_on_event("button_click", js("play(level, play)"))
    m["scale"].js_on_change(
        "active", js("scale(cb_obj.active, {image, current, curves, dataset, band, yaxis, labels})")
    )
    image_source.selected.js_on_change("indices", js("tap(image, level)"))


_BODY = """
<div class="pcr-row"><div class="pcr-slot" id="pcr-slot-picker">{picker}</div>{prev}{next}
 <div class="pcr-slot" id="pcr-slot-mode">{mode}</div></div>
<div class="pcr-row"><div class="pcr-slot" id="pcr-slot-play">{play}</div>
 <div class="pcr-slot" id="pcr-slot-level">{level}</div>{zoom}{line}</div>
<div class="pcr-main">
 <section class="pcr-pics">
  <div id="pcr-caption" class="pcr-caption" aria-live="polite"></div>
  <div class="pcr-pair">
   <figure class="pcr-fig"><div class="pcr-stage" id="pcr-stage"><div class="pcr-zoom">
    <img id="pcr-level-img" alt="the image at the level shown">
    <img id="pcr-over" class="pcr-over" alt="the full image" hidden>
    <div id="pcr-split-line" class="pcr-split-line" hidden></div>
   </div></div></figure>
   <figure class="pcr-fig" id="pcr-right" hidden><div class="pcr-stage"><div class="pcr-zoom">
    <img id="pcr-other" alt="the full image or the difference map">
   </div></div><figcaption id="pcr-right-caption"></figcaption></figure>
  </div>
 </section>
 <section class="pcr-side">{plot}
  <div class="pcr-legend"><!--legend--></div>
  <div class="pcr-row">{scale}<span class="pcr-hint">click a point to show its level</span></div>
  <div id="pcr-readout"></div>
 </section>
</div>
"""

_CSS = """
.pcr-main {align-items: flex-start;}
.pcr-slot {display: contents;}
.pcr-pics {flex: 1 1 480px; min-width: 0;}
.pcr-side {flex: 0 1 38%; min-width: 320px;}
.pcr-caption {min-height: 2.6em; margin-bottom: 4px;}
.pcr-warn {color: #9a6700;}
.pcr-pair {display: flex; gap: 8px; align-items: flex-start;}
.pcr-fig {margin: 0; min-width: 0; flex: 0 1 auto;}
.pcr-stage {position: relative; overflow: hidden; line-height: 0; background: #eee;
  cursor: crosshair; touch-action: none;}
.pcr-zoom {position: relative;}
[hidden] {display: none !important;}
.pcr-zoom img {display: block; max-width: 100%; max-height: max(240px, calc(100vh - 270px));
  width: auto; height: auto;}
.pcr-pixels img {image-rendering: pixelated;}
.pcr-over {position: absolute; inset: 0; width: 100% !important; height: 100% !important;
  max-height: none !important;}
.pcr-split-line {position: absolute; top: 0; bottom: 0; width: 2px; margin-left: -1px;
  background: #fff; box-shadow: 0 0 2px #000;}
figcaption {font-size: 13px; line-height: 1.4; padding-top: 3px;}
.pcr-ramp {display: inline-block; width: 110px; height: 10px; vertical-align: middle;
  border: 1px solid #888; background: linear-gradient(90deg, #000, #fff);}
.pcr-hint {color: #777; font-size: 12px;}
.pcr-legend {display: flex; flex-wrap: wrap; gap: 2px 14px; font-size: 12px; color: #444;
  margin: 2px 0 4px 52px;}
.pcr-legend svg {vertical-align: middle; margin-right: 4px;}
"""

# The page script: the pictures and texts follow the state; the Bokeh callbacks call it.
_SCRIPT = r"""
window.pcrScan = (function () {
  const D = JSON.parse(document.getElementById("pcr-demo-data").textContent);
  const MODES = ["level", "side", "split", "diff"];
  const S = {image: D.start.image, pos: D.start.pos, mode: "level", line: 0.5, zoom: 1,
             cx: 0.5, cy: 0.5, scale: "value", timer: null};
  const $ = id => document.getElementById(id);
  const model = name => window.Bokeh.documents[0].get_model_by_name(name);

  function draw() {
    const im = D.images[S.image], p = S.pos, m = S.mode;
    const img = $("pcr-level-img"), over = $("pcr-over"), line = $("pcr-split-line");
    img.width = im.w; img.height = im.h;
    img.src = D.pics[im.levels[p]];
    over.hidden = line.hidden = m !== "split";
    if (m === "split") {
      over.src = D.pics[im.full];
      over.style.clipPath = `inset(0 0 0 ${(S.line * 100).toFixed(2)}%)`;
      line.style.left = `${(S.line * 100).toFixed(2)}%`;
    }
    const right = m === "side" || m === "diff";
    $("pcr-right").hidden = !right;
    if (right) {
      const other = $("pcr-other");
      other.width = im.w; other.height = im.h;
      other.src = D.pics[m === "side" ? im.full : im.diffs[p]];
      $("pcr-right-caption").innerHTML = m === "side" ? "<b>full image</b>" : D.diff_caption;
    }
    let caption = im.captions[p];
    const pct = v => `${Math.round(v * 100)}%`;
    if (S.zoom > 1) caption += ` &middot; zoom x${S.zoom} at (${pct(S.cx)}, ${pct(S.cy)})`;
    if (m === "split") caption += " &middot; left of the line: this level, right: full image";
    $("pcr-caption").innerHTML = caption;
    $("pcr-readout").innerHTML = im.readouts[p];
    for (const el of document.querySelectorAll(".pcr-zoom")) {
      el.style.transform = S.zoom > 1 ? `scale(${S.zoom})` : "";
      el.style.transformOrigin = `${S.cx * 100}% ${S.cy * 100}%`;
      el.classList.toggle("pcr-pixels", S.zoom > 1);
    }
  }

  function marker(m) {
    const c = m.curves[S.image].data, p = S.pos;
    m.current.data = {x: [c.x[p]], y: [c["y_" + S.scale][p]], scan: [c.scan[p]],
                      bytes: [c.bytes[p]]};
  }

  function curve(m) {
    const c = m.curves[S.image].data;
    m.image.data = {x: c.x, y: c["y_" + S.scale], scan: c.scan, bytes: c.bytes, label: c.label,
                    dx: c.dx};
    marker(m);
  }

  function stop(button) {
    clearInterval(S.timer); S.timer = null;
    if (button) button.label = "\u25b6 play";
  }

  // noUiSlider, under Bokeh's categorical slider, gives its handle the position (from 0) as
  // its value: a screen reader would say one less than the level shown. The handle says
  // the level instead, whenever noUiSlider writes its own values back.
  const ARIA = ["aria-valuenow", "aria-valuetext", "aria-valuemin", "aria-valuemax"];
  function handle(node) {
    for (const e of node.querySelectorAll("*")) {
      if (e.classList.contains("noUi-handle")) return e;
      const inner = e.shadowRoot && handle(e.shadowRoot);
      if (inner) return inner;
    }
    return null;
  }
  function announce(h) {
    const last = D.levels[D.levels.length - 1], now = model("pcr-level").value;
    const want = {"aria-valuenow": now, "aria-valuemin": String(D.levels[0]),
                  "aria-valuemax": String(last), "aria-valuetext": `scan ${now} of ${last}`,
                  "aria-label": "scan level"};
    for (const [k, v] of Object.entries(want)) if (h.getAttribute(k) !== v) h.setAttribute(k, v);
  }
  function watch(tries) {  // the slider is drawn once Bokeh has embedded the page
    const h = window.Bokeh && Bokeh.documents.length ? handle($("pcr-slot-level")) : null;
    if (!h) { if (tries > 0) setTimeout(() => watch(tries - 1), 100); return; }
    announce(h);
    new MutationObserver(() => announce(h)).observe(h, {attributes: true, attributeFilter: ARIA});
  }

  // In split mode a drag moves the line; otherwise a click sets the zoom centre.
  function where(ev) {
    const r = $("pcr-stage").getBoundingClientRect();
    const f = [(ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height];
    const u = S.zoom > 1 ? [S.cx + (f[0] - S.cx) / S.zoom, S.cy + (f[1] - S.cy) / S.zoom] : f;
    return u.map(v => Math.min(1, Math.max(0, v)));
  }
  function point(ev) {
    const [x, y] = where(ev);
    if (S.mode === "split") { model("pcr-line").value = Math.round(x * 100) / 100; return; }
    S.cx = x; S.cy = y; draw();
  }
  document.addEventListener("DOMContentLoaded", () => {
    draw();
    watch(600);
    const stage = $("pcr-stage");
    stage.addEventListener("pointerdown", ev => {
      stage.setPointerCapture(ev.pointerId);
      point(ev);
    });
    stage.addEventListener("pointermove", ev => {
      if (ev.buttons && S.mode === "split") point(ev);
    });
    document.addEventListener("keydown", ev => {
      // a focused slider steps by itself; a select or a field keeps its keys
      if (ev.defaultPrevented || (ev.target.closest && ev.target.closest("select, input"))) return;
      const step = {ArrowRight: 1, ArrowLeft: -1}[ev.key];
      if (!step) return;
      const s = model("pcr-level"), cats = s.categories;
      const p = Math.min(cats.length - 1, Math.max(0, cats.indexOf(s.value) + step));
      s.value = cats[p];
      ev.preventDefault();
    });
  });

  return {
    state: S,
    level(value, m) { S.pos = D.levels.indexOf(Number(value)); draw(); marker(m); },
    image(i, m) { S.image = i; draw(); curve(m); },
    step(d, picker) {
      const n = D.images.length;
      picker.value = String((Number(picker.value) + d + n) % n);
    },
    mode(active, line) { S.mode = MODES[active]; line.disabled = S.mode !== "split"; draw(); },
    set(key, value) { S[key] = value; draw(); },
    scale(active, m) {
      S.scale = active ? "db" : "value";
      const b = m.band.data;
      m.dataset.data = {x: b.x, mean: b["mean_" + S.scale], lo: b["lo_" + S.scale],
                        hi: b["hi_" + S.scale]};
      m.yaxis.axis_label = m.labels[active];
      curve(m);
    },
    play: window.pcrPlayer(S, stop, 700),
    tap(source, slider) {
      const idx = source.selected.indices;
      if (!idx.length) return;
      slider.value = String(source.data.scan[idx[0]]);
      source.selected.indices = [];
    },
  };
})();
"""
