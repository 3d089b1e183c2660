"""Quality of every scan level of one image against its full version."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from .._public import public
from ..errors import JPEGError
from ..read.sources import LevelSource, open_source
from .metrics import METRIC_LABELS, METRICS, MSSSIM_WEIGHTS, MetricFn
from .metrics._filter import one_blas_thread
from .metrics._psnr import psnr_from_mse
from .metrics._structural import SSIMReference

__all__ = ["LevelQuality", "custom_level_values", "image_quality", "level_quality"]


@public("pcr_explore")
@dataclass(frozen=True)
class LevelQuality:
    """Quality of each scan level of one image against its full version.

    Attributes
    ----------
    scans : ndarray of int
        1..S.
    bytes : ndarray of int
        JPEG bytes of the image at each level (cumulative, EOI included).
    bytes_fraction : ndarray of float
        ``bytes / bytes[-1]``.
    mssim, ssim, psnr : ndarray of float
        Per level; NaN where not computed. The last level is 1.0, 1.0, inf.
    luminance : bool
        True when measured on the Y channel only.
    scales : int
        MS-SSIM scales used (5 unless the image is small).
    note : str
        Why fewer scales (or a smaller window) were used, or "".

    See Also
    --------
    level_quality : measures one.

    Examples
    --------
    >>> q = LevelQuality(
    ...     scans=np.array([1, 2]),
    ...     bytes=np.array([40, 100]),
    ...     bytes_fraction=np.array([0.4, 1.0]),
    ...     mssim=np.array([0.93, 1.0]),
    ...     ssim=np.array([0.88, 1.0]),
    ...     psnr=np.array([31.2, np.inf]),
    ... )
    >>> q.num_scans, q.metric("psnr").tolist()
    (2, [31.2, inf])
    """

    scans: np.ndarray
    bytes: np.ndarray
    bytes_fraction: np.ndarray
    mssim: np.ndarray
    ssim: np.ndarray
    psnr: np.ndarray
    luminance: bool = False
    scales: int = len(MSSSIM_WEIGHTS)
    note: str = ""

    def __repr__(self) -> str:
        ms = ", ".join(f"{v:.3f}" for v in self.mssim)
        return (
            f"<LevelQuality {len(self.scans)} levels, {int(self.bytes[-1])} bytes; MS-SSIM [{ms}]>"
        )

    def metric(self, name: str) -> np.ndarray:
        """Return the per-level values of metric *name* ("mssim", "ssim" or "psnr").

        Raises
        ------
        ValueError
            If *name* is not a built-in metric.
        """
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")
        return getattr(self, name)  # type: ignore[no-any-return]

    @property
    def num_scans(self) -> int:
        """Scan levels measured."""
        return len(self.scans)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{k}</td><td>{b:,}</td><td>{f:.3f}</td><td>{m:.4f}</td>"
            f"<td>{s:.4f}</td><td>{p:.2f}</td></tr>"
            for k, b, f, m, s, p in zip(
                self.scans, self.bytes, self.bytes_fraction, self.mssim, self.ssim, self.psnr
            )
        )
        space = "Y" if self.luminance else "RGB"
        head = "".join(f"<th>{METRIC_LABELS[m]}</th>" for m in METRICS)
        return (
            f"<table><caption>Quality per scan level ({space})</caption><tr><th>scan</th>"
            f"<th>bytes</th><th>of full</th>{head}</tr>{rows}</table>"
        )


def _decode(data: bytes, luminance: bool, source: str, shrink: int = 1) -> np.ndarray:
    """Decode JPEG bytes to (H, W) or (H, W, 3) uint8 (Y only when *luminance*).

    ``shrink > 1`` decodes at about 1/shrink of each side: libjpeg's DCT
    scaling (up to 1/8) first, then a box reduction for the rest, so every
    level of one image shrinks to the same shape.
    """
    try:
        with Image.open(io.BytesIO(data)) as im:
            w = im.width
            # the DCT scale: the largest of 1/1, 1/2, 1/4, 1/8 that divides the shrink,
            # so that a whole box reduction does the rest
            dct = math.gcd(shrink, 8)
            if (luminance and im.mode != "L") or dct > 1:
                # one draft call (a second is ignored): libjpeg hands over Y only,
                # skipping colour conversion, and/or scales in the DCT domain (Pillow
                # picks the scale from whole multiples of the size asked: a floor, so
                # a side that is not a multiple of it still scales by all of it)
                im.draft("L" if luminance else im.mode, (max(1, w // dct), im.height // dct or 1))
            out = im.convert("L" if luminance or im.mode == "L" else "RGB")
            rest = max(1, round(shrink * out.width / w))  # what DCT scaling left to do
            if rest > 1:
                out = out.reduce(rest)
            return np.asarray(out)
    except (OSError, SyntaxError, ValueError) as exc:
        raise JPEGError(f"{source}: cannot decode JPEG: {exc}") from exc


def _shrink_for(data: bytes, max_pixels: int | None) -> tuple[int, str]:
    """Return the side reduction that brings an image under *max_pixels*, and a note."""
    if max_pixels is None:
        return 1, ""
    with Image.open(io.BytesIO(data)) as im:
        w, h = im.size
    if w * h <= max_pixels:
        return 1, ""
    f = math.ceil(math.sqrt(w * h / max_pixels))
    note = f"measured at 1/{f} size: {w}x{h} px is over the {max_pixels:,}-pixel bound"
    return f, note


@public("pcr_explore.quality")
def level_quality(
    levels: Sequence[bytes],
    *,
    luminance: bool = False,
    metrics: Iterable[str] = METRICS,
    source: str = "<bytes>",
    max_pixels: int | None = None,
) -> LevelQuality:
    """Measure every level of one image against its last (full) level.

    Each distinct level is decoded once; the full image's statistics are
    computed once and shared by all levels (:class:`~pcr_explore.quality.metrics.SSIMReference`).
    Levels with identical bytes (a grayscale image's chroma-only levels) are
    measured once.

    Parameters
    ----------
    levels : sequence of bytes
        The JPEG bytes of levels 1..S of one image; the last is the full image.
    luminance : bool
        Compare the Y channel only (default: RGB, since scans 3, 4, 8 and 9
        carry only chroma and would look free on luminance alone).
    metrics : iterable of str
        Which of "mssim", "ssim", "psnr" to compute; the others are NaN.
    source : str
        Name used in error messages.
    max_pixels : int, optional
        Measure an image larger than this at a reduced size (DCT scaling,
        then a box reduction), every level alike, so that memory stays
        bounded; ``note`` then says so. Default: full size.

    Returns
    -------
    LevelQuality

    Raises
    ------
    JPEGError
        If a level does not decode, or the levels differ in size.
    ValueError
        If *levels* is empty or a metric name is unknown.

    Warns
    -----
    FewerScalesWarning
        If the image is too small for 5-scale MS-SSIM.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from pcr_explore.jpeg.transcode import transcode
    >>> y, x = np.mgrid[0:176, 0:176]
    >>> img = np.stack([x, y, (x * y) % 256], axis=-1).astype(np.uint8)
    >>> buf = io.BytesIO()
    >>> Image.fromarray(img).save(buf, "JPEG", quality=90)
    >>> pj = transcode(buf.getvalue()).jpeg
    >>> q = level_quality([pj.level(k) for k in range(1, pj.num_scans + 1)])
    >>> q.num_scans, float(q.mssim[-1]), float(q.psnr[-1])
    (10, 1.0, inf)
    >>> bool(q.mssim[0] < q.mssim[4] < q.mssim[9])
    True
    """
    wanted = tuple(metrics)
    for m in wanted:
        if m not in METRICS:
            raise ValueError(f"unknown metric {m!r}; choose from {', '.join(METRICS)}")
    if not levels:
        raise ValueError("level_quality needs the bytes of at least one level")
    try:
        shrink, shrunk = _shrink_for(levels[-1], max_pixels)
    except (OSError, SyntaxError, ValueError) as exc:
        raise JPEGError(f"{source} (full): cannot decode JPEG: {exc}") from exc
    with one_blas_thread():
        q = _level_quality(levels, luminance, wanted, source, shrink)
    if shrunk:
        q = replace(q, note="; ".join(n for n in (shrunk, q.note) if n))
    return q


def _level_quality(
    levels: Sequence[bytes], luminance: bool, wanted: tuple[str, ...], source: str, shrink: int
) -> LevelQuality:
    s = len(levels)
    nbytes = np.array([len(b) for b in levels], np.int64)
    out = {m: np.full(s, np.nan) for m in METRICS}
    full = _decode(levels[-1], luminance, f"{source} (full)", shrink)
    ref = None
    if "mssim" in wanted or "ssim" in wanted:
        ref = SSIMReference(full, scales=len(MSSSIM_WEIGHTS) if "mssim" in wanted else 1)
    first: dict[bytes, int] = {}
    for k in range(s):
        j = first.setdefault(levels[k], k)
        if j != k:  # same bytes as an earlier level: same quality
            for m in METRICS:
                out[m][k] = out[m][j]
            continue
        y = _level_pixels(levels, k, full, luminance, source, shrink)
        if k == s - 1 or np.array_equal(y, full):
            for m in wanted:
                out[m][k] = math.inf if m == "psnr" else 1.0
            continue
        if "psnr" in wanted:
            d = y.astype(np.float32) - full
            out["psnr"][k] = psnr_from_mse(float(np.mean(d * d, dtype=np.float64)))
        if ref is not None:
            sim = ref.compare(y)
            out["ssim"][k] = sim.ssim if "ssim" in wanted else np.nan
            out["mssim"][k] = sim.ms_ssim if "mssim" in wanted else np.nan
    return LevelQuality(
        scans=np.arange(1, s + 1),
        bytes=nbytes,
        bytes_fraction=nbytes / nbytes[-1],
        **out,  # mssim, ssim, psnr
        luminance=luminance,
        scales=ref.scales if ref is not None else len(MSSSIM_WEIGHTS),
        note=ref.note if ref is not None else "",
    )


def custom_level_values(levels: Sequence[bytes], fn: MetricFn, *, source: str) -> np.ndarray:
    """Score every level of one image with a custom metric, the full level included.

    The full level is scored against itself, so a metric reads exactly its own
    value there (0 for a negative mean absolute error, 1 for a similarity).

    Parameters
    ----------
    levels : sequence of bytes
        The JPEG bytes of levels 1..S; the last is the full image.
    fn : callable
        ``fn(full_images, level_images) -> float``, called with one-element
        lists of decoded (H, W) or (H, W, 3) uint8 arrays.
    source : str
        Name used in error messages.

    Returns
    -------
    ndarray of float, (S,)

    Raises
    ------
    JPEGError
        If a level does not decode, or the levels differ in size.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from pcr_explore.jpeg.transcode import transcode
    >>> y, x = np.mgrid[0:64, 0:64]
    >>> buf = io.BytesIO()
    >>> Image.fromarray(((x * y) % 256).astype(np.uint8)).save(buf, "JPEG", quality=90)
    >>> pj = transcode(buf.getvalue()).jpeg
    >>> def neg_mae(full, level):
    ...     return -float(np.abs(full[0].astype(float) - level[0]).mean())
    >>> v = custom_level_values([pj.level(k) for k in (1, 2, pj.num_scans)], neg_mae, source="xy")
    >>> bool(v[0] < v[1] < v[2] == 0.0)
    True
    """
    full = _decode(levels[-1], False, f"{source} (full)")
    return np.array(
        [
            float(fn([full], [_level_pixels(levels, k, full, False, source)]))
            for k in range(len(levels))
        ]
    )


def _level_pixels(
    levels: Sequence[bytes], k: int, full: np.ndarray, luminance: bool, source: str, shrink: int = 1
) -> np.ndarray:
    """Level ``k + 1`` decoded as *full* was (the full image itself for the last level)."""
    if k == len(levels) - 1:
        return full
    y = _decode(levels[k], luminance, f"{source} (scan {k + 1})", shrink)
    if y.shape != full.shape:
        raise JPEGError(
            f"{source}: scan {k + 1} decodes to {y.shape}, the full image to {full.shape}"
        )
    return y


def source_levels(src: LevelSource, i: int) -> list[bytes]:
    """Return the JPEG bytes of levels 1..S of image *i* of *src*."""
    return [src.jpeg_bytes(i, k) for k in range(1, src.num_scans + 1)]


@public("pcr_explore")
def image_quality(
    source: LevelSource | str | os.PathLike[str],
    *,
    image: int = 0,
    luminance: bool = False,
    metrics: Iterable[str] = METRICS,
    max_pixels: int | None = None,
) -> LevelQuality:
    """Measure every level of one image of a dataset, folder or file.

    Parameters
    ----------
    source : LevelSource or path
        Anything :func:`~pcr_explore.read.sources.open_source` accepts.
    image : int
        Image index.
    luminance, metrics, max_pixels
        As for :func:`level_quality`.

    Returns
    -------
    LevelQuality

    Raises
    ------
    JPEGError
        If a level of the image does not decode.

    Examples
    --------
    >>> q = image_quality("photos/", image=0)
    >>> print(round(q.bytes_fraction[4], 2), round(q.mssim[4], 2))
    0.47 0.99
    """
    src = open_source(source)
    return level_quality(
        source_levels(src, image),
        source=src.names[image],
        luminance=luminance,
        metrics=metrics,
        max_pixels=max_pixels,
    )
