"""The scan levels of a few images as one HTML page that needs no kernel (``scan_demo``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from .._checks import check_scan, check_scans
from .._public import public
from ..jpeg import decode
from ..plots._scales import axis_label, drawable, level_label_offsets
from ..quality import LevelQuality, QualityCurve, image_quality, quality_curve
from ..quality.compare import difference_map
from ..quality.compare._views import display_jpeg, encode_jpeg, jpeg_size
from ..quality.metrics import METRIC_LABELS, METRICS
from ..read.sources import LevelSource, open_source, orientation_of, scan_script_of, source_name
from ._demo import DemoPage, data_uri, readout_table, render_page
from ._figures import CURVE_X_RANGE
from ._scan_readout import SIDE_CAPTION, SPLIT_NOTE, difference_caption, level_caption, level_rows
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
        "side_caption": SIDE_CAPTION,
        "diff_caption": difference_caption(gain),
        "split": SPLIT_NOTE,
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
    page = render_page(
        name,
        page="scan_demo",
        intro=intro,
        roots=roots,
        data=data,
        start="window.pcrScan = scanPage(data);",
        fill={"legend": _legend(curve is not None)},
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
    script = scan_script_of(src)
    w, h = jpeg_size(full_jpeg)
    page = {
        "name": src.names[i],
        "w": w,
        "h": h,
        "levels": [store.add(shown[k]) for k in embedded],
        "diffs": [store.add(d) for d in diffs],
        "full": store.add(full_jpeg),
        "captions": [level_caption(nbytes, k, script, "<!--view-->") for k in embedded],
        "readouts": [readout_table(level_rows(nbytes, k, script, q)) for k in embedded],
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
