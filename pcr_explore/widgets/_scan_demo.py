"""The scan levels of a few images as one HTML page that needs no kernel (``scan_demo``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._checks import check_scan, check_scans
from .._public import public
from ..jpeg import decode
from ..quality import LevelQuality, QualityCurve, image_quality, quality_curve
from ..quality.compare import difference_map
from ..quality.compare._views import display_jpeg, encode_jpeg, jpeg_size
from ..quality.metrics import METRICS
from ..read.sources import LevelSource, open_source, orientation_of, scan_script_of, source_name
from ._demo import DemoPage, data_uri, render_module_page
from ._scan_readout import (
    SIDE_CAPTION,
    SPLIT_NOTE,
    curve_labels,
    dataset_band,
    difference_caption,
    image_curve,
    level_caption,
    level_rows,
)

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
    (drag it), and the amplified difference to the full image. The page runs
    ScanExplorer's own front end (``static/scan_explorer.js``) on a model
    of its own that holds these numbers, so the page and the explorer show
    one readout one way; it opens from a file with no network.

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
    names = [src.names[i] for i in chosen]
    data = {
        "pics": store.uris,
        "start": {
            "names": names, "image": first, "level": start, "levels": embedded,
            "num_scans": int(src.num_scans), "gain": gain, "labels": curve_labels(metric),
            "dataset": dataset_band(curve, metric), "side_caption": SIDE_CAPTION,
            "diff_caption": difference_caption(gain), "split_note": SPLIT_NOTE,
            "mode": "level", "zoom": 1.0, "zoom_x": 0.5, "zoom_y": 0.5, "scale": "value",
            "has_panel": False, "scan_open": False, "scan_panel": {}, "status": "",
            "error": "", "presentation": False,
        },
        "images": entries,
    }  # fmt: skip
    name = title or f"Scan levels of {dataset_title(src)}"
    count = "all" if len(embedded) == src.num_scans else f"{len(embedded)} of the"
    intro = (
        f"{len(chosen)} image{'s' * (len(chosen) != 1)} at {count} {src.num_scans} scan levels. "
        "A level is the first scans of an image's progressive JPEG: the bytes a reader "
        "fetches for that fidelity. Slide or play the levels and watch the bytes and the quality."
    )
    page = render_module_page(
        name,
        intro=intro,
        module="scan_demo.js",
        data=data,
        start="window.pcrScan = scanPage(data, host);",
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
    """What the explorer's model holds for one image: pictures, texts and curve, per level."""
    o = orientation_of(src, i)
    shown = {
        k: display_jpeg(src.jpeg_bytes(i, k), max_side, quality=quality, orientation=o)
        for k in embedded
    }
    full = decode(shown[embedded[-1]])
    diffs = [
        encode_jpeg(difference_map(decode(shown[k]), full, gain=gain), diff_quality)
        for k in embedded
    ]
    nbytes = np.asarray(src.level_bytes(i), np.int64)
    script = scan_script_of(src)
    pos = np.asarray(embedded) - 1
    curve = image_curve(nbytes, q, metric)
    return {
        "size": list(jpeg_size(shown[embedded[-1]])),
        "pictures": [store.add(shown[k]) for k in embedded],
        "diffs": [store.add(d) for d in diffs],
        "captions": [level_caption(nbytes, k, script, "<!--view-->") for k in embedded],
        "readouts": [[list(r) for r in level_rows(nbytes, k, script, q)] for k in embedded],
        "curve": {key: [values[p] for p in pos] for key, values in curve.items()},
    }
