"""Quality of every scan level of an image against the full image.

The measures are SSIM (Wang et al. 2004, Gaussian window 11 / sigma 1.5,
K1 = 0.01, K2 = 0.03, population covariances: the same numbers as
scikit-image's ``structural_similarity(gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=255)``), MS-SSIM (Wang, Simoncelli,
Bovik 2003: 5 scales with weights 0.0448, 0.2856, 0.3001, 0.2363, 0.1333, the
constants the PCR paper's release uses) and PSNR.

One pass per image
    Each level is decoded once, and everything that depends only on the full
    image (its local means and variances at every MS-SSIM scale) is computed
    once and shared by all levels. The Gaussian window is applied as a
    separable filter evaluated only where it fits inside the image (the
    region scikit-image averages over), as small banded matrix products, in
    float32 on data centred on mid-grey, which keeps the local variances
    accurate: SSIM agrees with scikit-image's float64 to better than 1e-6
    (measured on photos; bench/bench_quality.py).

RGB by default
    ``luminance=False`` compares the decoded RGB images channel by channel
    (the mean over channels, as scikit-image and the MS-SSIM reference code
    do). Scans 3, 4, 8 and 9 carry only chroma; on luminance alone they would
    look free, and the tuner would recommend levels whose colour is visibly
    blocky. ``luminance=True`` compares the JPEG's own Y channel (libjpeg
    skips colour conversion), about three times faster; use it when the
    model sees grayscale.

Details of MS-SSIM
    Between scales the images are averaged over 2x2 blocks (an odd last row
    or column is repeated, as the reference MATLAB code's symmetric padding
    does). Scales 1..M-1 contribute the mean contrast-structure term, scale M
    the mean SSIM; negative terms are clipped at 0 before the fractional
    powers. Colour images: MS-SSIM per channel, then the mean. An image whose
    shorter side is below 161 pixels cannot be shrunk four times and still
    hold an 11-pixel window; it gets the largest number of scales that fit
    and the matching weights renormalised to sum to 1, with a
    :class:`FewerScalesWarning`. Below 11 pixels the window itself shrinks.
"""

from __future__ import annotations

import io
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image
from threadpoolctl import threadpool_limits

from ._pool import main_is_importable, worker_pool
from .errors import FewerScalesWarning, JPEGError, PCRError
from .jpeg import split_scans
from .sources import FolderSource, LevelSource, gray_scans_at, open_source
from .transcode import transcode

__all__ = [
    "METRICS",
    "MSSSIM_WEIGHTS",
    "PSNR_CAP",
    "FewerScalesWarning",
    "LevelQuality",
    "PerImageQuality",
    "QualityCurve",
    "MetricFn",
    "level_quality",
    "image_quality",
    "quality_curve",
    "ssim",
    "ms_ssim",
    "psnr",
]

METRICS: tuple[str, ...] = ("mssim", "ssim", "psnr")
MSSSIM_WEIGHTS: tuple[float, ...] = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
WINDOW = 11
SIGMA = 1.5
K1 = 0.01
K2 = 0.03
# Identical images have infinite PSNR; statistics over a sample use this cap
# so a mean or a percentile stays finite (and JSON-safe).
PSNR_CAP = 100.0

MetricFn = Callable[[list[np.ndarray], list[np.ndarray]], float]


# ---------------------------------------------------------------------------
# One BLAS thread
# ---------------------------------------------------------------------------
# The window is applied with many small matrix products. A multi-threaded BLAS
# gains little on them and, next to worker processes or other busy programs,
# its spinning threads made a 10-level comparison up to 4x slower (measured on
# 2 cores). So each comparison runs with one BLAS thread, restored after.
@contextmanager
def _one_blas_thread() -> Iterator[None]:
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ---------------------------------------------------------------------------
# Gaussian window, evaluated only where it fits ("valid" region)
# ---------------------------------------------------------------------------
_BLOCK = 32


@lru_cache(maxsize=16)
def _band(radius: int) -> np.ndarray:
    """A (BLOCK + 2r, BLOCK) banded matrix: column i holds the window at rows i..i+2r."""
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (x / SIGMA) ** 2)
    w /= w.sum()
    m = np.zeros((_BLOCK + 2 * radius, _BLOCK), np.float64)
    for i in range(_BLOCK):
        m[i : i + 2 * radius + 1, i] = w
    return m.astype(np.float32)


def _filter_valid(stack: np.ndarray, radius: int) -> np.ndarray:
    """Gaussian-weighted local means of each plane of a (P, H, W) stack.

    Output (P, H - 2r, W - 2r): only the positions where the whole window
    lies inside the image. Blocked matrix products beat ``ndimage`` filtering
    by about 5x here (block 32 measured best) and skip the border work that is cropped anyway.
    """
    if radius == 0:
        return stack
    p, h, w = stack.shape
    hv, wv = h - 2 * radius, w - 2 * radius
    band = _band(radius)
    rows = np.empty((p, h, wv), np.float32)
    for j in range(0, wv, _BLOCK):
        b = min(_BLOCK, wv - j)
        np.matmul(
            stack[:, :, j : j + b + 2 * radius],
            band[: b + 2 * radius, :b],
            out=rows[:, :, j : j + b],
        )
    out = np.empty((p, hv, wv), np.float32)
    for i in range(0, hv, _BLOCK):
        b = min(_BLOCK, hv - i)
        np.matmul(
            band[: b + 2 * radius, :b].T,
            rows[:, i : i + b + 2 * radius, :],
            out=out[:, i : i + b, :],
        )
    return out


def _pool(x: np.ndarray) -> np.ndarray:
    """2x2 block means of a (P, H, W) stack, repeating an odd last row/column."""
    if x.shape[1] % 2:
        x = np.concatenate([x, x[:, -1:, :]], axis=1)
    if x.shape[2] % 2:
        x = np.concatenate([x, x[:, :, -1:]], axis=2)
    return 0.25 * (x[:, 0::2, 0::2] + x[:, 1::2, 0::2] + x[:, 0::2, 1::2] + x[:, 1::2, 1::2])


def _plan_scales(h: int, w: int, max_scales: int) -> tuple[int, int, str]:
    """(scales, window radius, warning text or "") for an h x w image."""
    radius = (WINDOW - 1) // 2
    side = min(h, w)
    if side < WINDOW:
        r = max(0, (side - 1) // 2)
        return (
            1,
            r,
            (
                f"{w}x{h} image is smaller than the {WINDOW}-pixel SSIM window: "
                f"measured with a {2 * r + 1}-pixel window and 1 scale"
            ),
        )
    scales = 1
    while scales < max_scales:
        h, w = (h + 1) // 2, (w + 1) // 2
        if min(h, w) < WINDOW:
            break
        scales += 1
    msg = ""
    if scales < max_scales:
        msg = (
            f"image too small for {max_scales}-scale MS-SSIM (shorter side {side} px, "
            f"needs {(WINDOW - 1) * 2 ** (max_scales - 1) + 1}): using {scales} scales"
        )
    return scales, radius, msg


@dataclass
class _Scale:
    """The reference image at one MS-SSIM scale, and what every comparison reuses."""

    xs: np.ndarray  # centred pixels (C, H, W)
    mx: np.ndarray  # local means, centred (C, H', W')
    two_ux: np.ndarray  # 2 * local mean
    lum_den: np.ndarray  # local mean^2 + C1
    sxx_c2: np.ndarray  # local variance + C2
    stack: np.ndarray  # scratch (3C, H, W) for a level's y, y^2, x*y


class _Reference:
    """The full image's per-scale statistics, shared by every level compared to it.

    Parameters
    ----------
    x : (C, H, W) array
        The reference image, channels first.
    data_range : float
        Value range of the pixels (255 for uint8).
    scales : int
        MS-SSIM scales to prepare (1 when only SSIM is wanted).
    """

    def __init__(self, x: np.ndarray, data_range: float, scales: int) -> None:
        c, h, w = x.shape
        self.shape = x.shape
        self.offset = np.float32(data_range / 2)
        self.c1 = np.float32((K1 * data_range) ** 2)
        self.c2 = np.float32((K2 * data_range) ** 2)
        self.scales, self.radius, self.note = _plan_scales(h, w, scales)
        xs = x.astype(np.float32) - self.offset
        self.per_scale: list[_Scale] = []
        for j in range(self.scales):
            if j:
                xs = _pool(xs)
            f = _filter_valid(np.concatenate([xs, xs * xs]), self.radius)
            mx, sxx = f[:c], f[c:]
            sxx -= mx * mx
            ux = mx + self.offset
            self.per_scale.append(
                _Scale(
                    xs=xs,
                    mx=mx,
                    two_ux=2 * ux,
                    lum_den=ux * ux + self.c1,
                    sxx_c2=sxx + self.c2,
                    stack=np.empty((3 * c, *xs.shape[1:]), np.float32),
                )
            )

    def compare(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """SSIM at scale 1, mean c*s at each scale, SSIM at the last scale, per channel.

        Returns
        -------
        ssim1 : (C,) float64
        cs : (scales, C) float64
        ssim_last : (C,) float64
        """
        c = self.shape[0]
        cs_out = np.empty((self.scales, c), np.float64)
        ssim1 = ssim_last = np.zeros(c)
        ys = np.subtract(y, self.offset, dtype=np.float32)
        for j, sc in enumerate(self.per_scale):
            if j:
                ys = _pool(ys)
            st = sc.stack
            st[:c] = ys
            np.multiply(ys, ys, out=st[c : 2 * c])
            np.multiply(sc.xs, ys, out=st[2 * c :])
            f = _filter_valid(st, self.radius)
            my, fyy, fxy = f[:c], f[c : 2 * c], f[2 * c :]
            # contrast-structure: (2 sxy + C2) / (sxx + syy + C2), in place
            t = sc.mx * my
            fxy -= t
            fxy *= 2
            fxy += self.c2
            np.multiply(my, my, out=t)
            fyy -= t
            fyy += sc.sxx_c2
            fxy /= fyy
            cs_out[j] = fxy.mean(axis=(1, 2), dtype=np.float64)
            if j == 0 or j == self.scales - 1:
                # luminance: (2 ux uy + C1) / (ux^2 + uy^2 + C1)
                my += self.offset
                num = sc.two_ux * my
                num += self.c1
                np.multiply(my, my, out=t)
                t += sc.lum_den
                num /= t
                num *= fxy
                s = num.mean(axis=(1, 2), dtype=np.float64)
                if j == 0:
                    ssim1 = s
                if j == self.scales - 1:
                    ssim_last = s
        # float32 rounding can push a near-identical pair a few 1e-9 above 1
        return np.minimum(ssim1, 1.0), np.minimum(cs_out, 1.0), np.minimum(ssim_last, 1.0)

    def ms_ssim(self, cs: np.ndarray, ssim_last: np.ndarray) -> float:
        w = np.asarray(MSSSIM_WEIGHTS[: self.scales], np.float64)
        w = w / w.sum()
        terms = np.maximum(np.concatenate([cs[:-1], ssim_last[None]]), 0.0)
        return float(np.prod(terms ** w[:, None], axis=0).mean())


def _planes(a: np.ndarray) -> np.ndarray:
    """(H, W) or (H, W, C) -> (C, H, W)."""
    a = np.asarray(a)
    if a.ndim == 2:
        return a[None]
    if a.ndim == 3:
        return np.moveaxis(a, -1, 0)
    raise ValueError(f"expected an (H, W) or (H, W, C) image, got shape {a.shape}")


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pa, pb = _planes(a), _planes(b)
    if pa.shape != pb.shape:
        raise ValueError(f"images differ in shape: {np.shape(a)} vs {np.shape(b)}")
    return pa, pb


def _warn(note: str) -> None:
    if note:
        warnings.warn(note, FewerScalesWarning, stacklevel=3)


def ssim(a: np.ndarray, b: np.ndarray, *, data_range: float = 255.0) -> float:
    """Structural similarity of *b* to the reference *a*.

    The same number as scikit-image's ``structural_similarity(a, b,
    gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
    data_range=data_range, channel_axis=-1)`` (within float32 rounding).

    Parameters
    ----------
    a, b : ndarray
        Images of the same shape, (H, W) or (H, W, C).
    data_range : float
        Range of the pixel values (255 for uint8).

    Returns
    -------
    float
        Mean SSIM over the positions where the window fits, averaged over channels.

    Raises
    ------
    ValueError
        If the shapes differ.

    Warns
    -----
    FewerScalesWarning
        If the image is smaller than the 11-pixel window (a smaller one is used).

    Examples
    --------
    >>> from skimage import data
    >>> img = data.camera()
    >>> round(ssim(img, img), 6)
    1.0
    """
    pa, pb = _pair(a, b)
    with _one_blas_thread():
        ref = _Reference(pa, data_range, 1)
        _warn(ref.note)
        if np.array_equal(pa, pb):
            return 1.0
        return float(ref.compare(pb)[0].mean())


def ms_ssim(
    a: np.ndarray,
    b: np.ndarray,
    *,
    data_range: float = 255.0,
    scales: int = len(MSSSIM_WEIGHTS),
) -> float:
    """Multi-scale structural similarity of *b* to the reference *a*.

    Parameters
    ----------
    a, b : ndarray
        Images of the same shape, (H, W) or (H, W, C).
    data_range : float
        Range of the pixel values (255 for uint8).
    scales : int
        At most this many scales (1..5); small images get fewer.

    Returns
    -------
    float
        In [0, 1]; 1 for identical images.

    Raises
    ------
    ValueError
        If the shapes differ or *scales* is outside 1..5.

    Warns
    -----
    FewerScalesWarning
        If the image's shorter side is below 161 pixels.

    Examples
    --------
    >>> from skimage import data
    >>> img = data.astronaut()
    >>> ms_ssim(img, img)
    1.0
    """
    if not 1 <= scales <= len(MSSSIM_WEIGHTS):
        raise ValueError(f"scales must be in 1..{len(MSSSIM_WEIGHTS)}, got {scales}")
    pa, pb = _pair(a, b)
    with _one_blas_thread():
        ref = _Reference(pa, data_range, scales)
        _warn(ref.note)
        if np.array_equal(pa, pb):
            return 1.0
        _, cs, last = ref.compare(pb)
        return ref.ms_ssim(cs, last)


def psnr(a: np.ndarray, b: np.ndarray, *, data_range: float = 255.0) -> float:
    """Peak signal-to-noise ratio of *b* against the reference *a*, in dB.

    Parameters
    ----------
    a, b : ndarray
        Images of the same shape.
    data_range : float
        Range of the pixel values (255 for uint8).

    Returns
    -------
    float
        ``inf`` for identical images.

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> import numpy as np
    >>> psnr(np.zeros((4, 4)), np.ones((4, 4)))  # doctest: +ELLIPSIS
    48.13...
    """
    pa, pb = _pair(a, b)
    d = pa.astype(np.float64) - pb
    mse = float(np.mean(d * d))
    if mse == 0.0:
        return math.inf
    return 10.0 * math.log10(data_range * data_range / mse)


# ---------------------------------------------------------------------------
# Every level of one image
# ---------------------------------------------------------------------------
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

    def metric(self, name: str) -> np.ndarray:
        """The per-level values of metric *name* ("mssim", "ssim" or "psnr")."""
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")
        return getattr(self, name)  # type: ignore[no-any-return]

    @property
    def num_scans(self) -> int:
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
        return (
            f"<table><caption>Quality per scan level ({space})</caption><tr><th>scan</th>"
            "<th>bytes</th><th>of full</th><th>MS-SSIM</th><th>SSIM</th><th>PSNR dB</th></tr>"
            f"{rows}</table>"
        )


def _decode_planes(data: bytes, luminance: bool, source: str) -> np.ndarray:
    """Decode JPEG bytes to a (C, H, W) uint8 array (Y only when *luminance*)."""
    try:
        with Image.open(io.BytesIO(data)) as im:
            if luminance and im.mode != "L":
                im.draft("L", im.size)  # libjpeg hands over Y, skipping colour conversion
            out = im.convert("L" if luminance or im.mode == "L" else "RGB")
            arr = np.asarray(out)
    except (OSError, SyntaxError, ValueError) as exc:
        raise JPEGError(f"{source}: cannot decode JPEG: {exc}") from exc
    return _planes(arr)


def _decode_image(data: bytes, source: str) -> np.ndarray:
    planes = _decode_planes(data, False, source)
    return planes[0] if planes.shape[0] == 1 else np.moveaxis(planes, 0, -1)


def level_quality(
    levels: Sequence[bytes],
    *,
    luminance: bool = False,
    metrics: Iterable[str] = METRICS,
    source: str = "<bytes>",
) -> LevelQuality:
    """Quality of every level of one image against its last (full) level.

    Each distinct level is decoded once; the full image's statistics are
    computed once and shared by all levels. Levels with identical bytes (a
    grayscale image's chroma-only levels) are measured once.

    Parameters
    ----------
    levels : sequence of bytes
        The JPEG bytes of levels 1..S of one image; the last is the full image.
    luminance : bool
        Compare the Y channel only (default: RGB; see the module docstring).
    metrics : iterable of str
        Which of "mssim", "ssim", "psnr" to compute; the others are NaN.
    source : str
        Name used in error messages.

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
    >>> from pcr_explore import transcode
    >>> pj = transcode("photo.jpg").jpeg  # doctest: +SKIP
    >>> q = level_quality([pj.level(k) for k in range(1, pj.num_scans + 1)])  # doctest: +SKIP
    >>> q.mssim[-1]  # doctest: +SKIP
    1.0
    """
    wanted = tuple(metrics)
    for m in wanted:
        if m not in METRICS:
            raise ValueError(f"unknown metric {m!r}; choose from {', '.join(METRICS)}")
    if not levels:
        raise ValueError("level_quality needs the bytes of at least one level")
    with _one_blas_thread():
        return _level_quality(levels, luminance, wanted, source)


def _level_quality(
    levels: Sequence[bytes], luminance: bool, wanted: tuple[str, ...], source: str
) -> LevelQuality:
    s = len(levels)
    nbytes = np.array([len(b) for b in levels], np.int64)
    out = {m: np.full(s, np.nan) for m in METRICS}
    full = _decode_planes(levels[-1], luminance, f"{source} (full)")
    need_struct = "mssim" in wanted or "ssim" in wanted
    ref = (
        _Reference(full, 255.0, len(MSSSIM_WEIGHTS) if "mssim" in wanted else 1)
        if (need_struct)
        else None
    )
    if ref is not None:
        _warn(ref.note)
    first: dict[bytes, int] = {}
    for k in range(s):
        j = first.setdefault(levels[k], k)
        if j != k:  # same bytes as an earlier level: same quality
            for m in METRICS:
                out[m][k] = out[m][j]
            continue
        if k == s - 1:
            for m in wanted:
                out[m][k] = math.inf if m == "psnr" else 1.0
            continue
        y = _decode_planes(levels[k], luminance, f"{source} (scan {k + 1})")
        if y.shape != full.shape:
            raise JPEGError(
                f"{source}: scan {k + 1} decodes to {y.shape}, the full image to {full.shape}"
            )
        if np.array_equal(y, full):
            for m in wanted:
                out[m][k] = math.inf if m == "psnr" else 1.0
            continue
        if "psnr" in wanted:
            d = y.astype(np.float32) - full
            out["psnr"][k] = 10.0 * math.log10(255.0**2 / float(np.mean(d * d, dtype=np.float64)))
        if ref is not None:
            s1, cs, last = ref.compare(y)
            if "ssim" in wanted:
                out["ssim"][k] = float(s1.mean())
            if "mssim" in wanted:
                out["mssim"][k] = ref.ms_ssim(cs, last)
    return LevelQuality(
        scans=np.arange(1, s + 1),
        bytes=nbytes,
        bytes_fraction=nbytes / nbytes[-1],
        mssim=out["mssim"],
        ssim=out["ssim"],
        psnr=out["psnr"],
        luminance=luminance,
        scales=ref.scales if ref is not None else len(MSSSIM_WEIGHTS),
        note=ref.note if ref is not None else "",
    )


def _source_levels(src: LevelSource, i: int) -> list[bytes]:
    return [src.jpeg_bytes(i, k) for k in range(1, src.num_scans + 1)]


def image_quality(source: LevelSource | str | os.PathLike[str], i: int, **kw: Any) -> LevelQuality:
    """:func:`level_quality` of image *i* of a dataset, folder or file.

    Parameters
    ----------
    source : LevelSource or path
        Anything :func:`~pcr_explore.sources.open_source` accepts.
    i : int
        Image index.
    **kw
        Passed to :func:`level_quality` (``luminance``, ``metrics``).

    Returns
    -------
    LevelQuality
    """
    src = open_source(source)
    names = src.names
    return level_quality(_source_levels(src, i), source=names[i], **kw)


# ---------------------------------------------------------------------------
# Curves over a sample of a dataset
# ---------------------------------------------------------------------------
def _levels_from_full(full: bytes, num_scans: int, source: str) -> list[bytes]:
    """Levels 1..num_scans of a standard progressive JPEG (grayscale mapped)."""
    pj = split_scans(full, source=source)
    if pj.num_components == 1 and pj.num_scans < num_scans:
        return [pj.level(gray_scans_at(k)) for k in range(1, num_scans + 1)]
    if pj.num_scans != num_scans:
        raise JPEGError(f"{source}: {pj.num_scans} scans, expected {num_scans}")
    return [pj.level(k) for k in range(1, num_scans + 1)]


@dataclass(frozen=True)
class _Job:
    """What a worker needs to measure one image, without the source object."""

    index: int
    name: str
    num_scans: int
    path: str | None = None  # a folder's source file: the worker transcodes it
    backend: str = "auto"
    quality: int = 90
    full: bytes | None = None  # a dataset image's full JPEG: the worker splits it
    levels: tuple[bytes, ...] | None = None  # any other LevelSource


@dataclass(frozen=True)
class _Outcome:
    index: int
    quality: LevelQuality | None = None
    custom: np.ndarray | None = None
    error: str = ""
    note: str = ""


def _job_levels(job: _Job) -> list[bytes]:
    if job.levels is not None:
        return list(job.levels)
    if job.full is not None:
        return _levels_from_full(job.full, job.num_scans, job.name)
    if job.path is None:
        raise ValueError(f"{job.name}: nothing to measure")
    res = transcode(job.path, backend=job.backend, quality=job.quality, name=job.name)  # type: ignore[arg-type]
    return _levels_from_full(res.jpeg.data, job.num_scans, job.name)


def _run_job(job: _Job, luminance: bool, custom: MetricFn | None = None) -> _Outcome:
    try:
        levels = _job_levels(job)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FewerScalesWarning)
            if custom is None:
                q = level_quality(levels, luminance=luminance, source=job.name)
                return _Outcome(job.index, quality=q, note=q.note)
            q = level_quality(levels, luminance=luminance, metrics=(), source=job.name)
            full = _decode_image(levels[-1], job.name)
            vals = np.array(
                [
                    1.0
                    if k == len(levels) - 1
                    else float(custom([full], [_decode_image(levels[k], job.name)]))
                    for k in range(len(levels))
                ]
            )
        note = "; ".join(str(w.message) for w in caught)
        return _Outcome(job.index, quality=q, custom=vals, note=note)
    except (PCRError, OSError, ValueError) as exc:
        return _Outcome(job.index, error=str(exc).splitlines()[0] if str(exc) else repr(exc))


def _make_job(src: LevelSource, i: int, names: list[str]) -> _Job:
    if isinstance(src, FolderSource):
        return _Job(
            i,
            names[i],
            src.num_scans,
            path=str(src.path(i)),
            backend=src.backend,
            quality=src.quality,
        )
    from .reader import PCRDataset

    if isinstance(src, PCRDataset):
        return _Job(i, names[i], src.num_scans, full=src.jpeg_bytes(i))
    return _Job(i, names[i], src.num_scans, levels=tuple(_source_levels(src, i)))


def _default_workers(n: int) -> int:
    cpus = os.cpu_count() or 1
    # A process pool costs about a second to start; small jobs run in-process.
    return 1 if n <= 4 else min(cpus, n)


def run_jobs(
    jobs: Iterable[Any],
    task: Callable[..., Any],
    extra: tuple[Any, ...],
    *,
    total: int,
    workers: int | None,
    progress: bool | Any,
    desc: str,
) -> list[Any]:
    """Run ``task(job, *extra)`` for every job, in worker processes when it pays.

    Internal helper shared with the audit. Results come back in job order.
    *progress* may be a bool or an open tqdm bar to advance.
    """
    from tqdm.auto import tqdm

    w = _default_workers(total) if workers is None else max(1, int(workers))
    own_bar = not hasattr(progress, "update")
    bar: Any = (
        tqdm(total=total, desc=desc, disable=not progress, leave=False) if own_bar else progress
    )
    out: list[Any] = []
    try:
        if w == 1 or not main_is_importable():
            for job in jobs:
                out.append(task(job, *extra))
                bar.update(1)
            return out
        with worker_pool(w, preload=["pcr_explore.quality"]) as pool:
            pending: list[Future[Any]] = []
            window = 4 * w
            it = iter(jobs)
            for job in it:
                pending.append(pool.submit(task, job, *extra))
                if len(pending) >= window:
                    break
            while pending:
                out.append(pending.pop(0).result())
                bar.update(1)
                nxt = next(it, None)
                if nxt is not None:
                    pending.append(pool.submit(task, nxt, *extra))
        return out
    finally:
        if own_bar:
            bar.close()


@dataclass(frozen=True)
class PerImageQuality:
    """The per-image table behind a :class:`QualityCurve`.

    Attributes
    ----------
    indices : ndarray of int, (n,)
        Image indices in the source, in sample order.
    names : tuple of str
        Image names (relative paths).
    labels : ndarray of int, (n,)
        Class labels (-1: none).
    bytes : ndarray of int, (n, S)
        JPEG bytes of each image at each level.
    values : ndarray of float, (n, S)
        The curve's metric for each image and level.
    metrics : dict of str to ndarray
        Every metric computed, each (n, S).
    """

    indices: np.ndarray
    names: tuple[str, ...]
    labels: np.ndarray
    bytes: np.ndarray
    values: np.ndarray
    metrics: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.indices)

    def rows(self, scan: int) -> list[dict[str, Any]]:
        """One dict per image at level *scan*: index, name, label, bytes, value."""
        k = scan - 1
        return [
            {
                "index": int(i),
                "name": n,
                "label": int(lab),
                "bytes": int(b[k]),
                "bytes_fraction": float(b[k] / b[-1]),
                "value": float(v[k]),
            }
            for i, n, lab, b, v in zip(
                self.indices, self.names, self.labels, self.bytes, self.values
            )
        ]

    def worst(self, scan: int, n: int = 8) -> list[dict[str, Any]]:
        """The *n* images with the lowest value at level *scan*, worst first."""
        order = np.argsort(self.values[:, scan - 1], kind="stable")[:n]
        rows = self.rows(scan)
        return [rows[int(j)] for j in order]


def _finite(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, PSNR_CAP) if values.size else values


@dataclass(frozen=True)
class QualityCurve:
    """Bytes and quality per scan level over a sample of images.

    Attributes
    ----------
    metric : str
        "mssim", "ssim", "psnr" or the name of a custom callable.
    scans : ndarray of int
        1..S.
    bytes_fraction : ndarray of float
        Cumulative bytes at each level over the sample, as a fraction of the
        sample's full bytes.
    mean, p5, p50, p95 : ndarray of float
        The metric's mean and percentiles over the sample at each level (PSNR
        of identical images counted as :data:`PSNR_CAP`).
    per_image : PerImageQuality
        The per-image table.
    indices : ndarray of int
        The sampled image indices (same as ``per_image.indices``).
    population : int
        Images in the source.
    luminance : bool
        Measured on Y only.
    failed : tuple of (name, reason)
        Sampled images that could not be measured (replaced by others).
    notes : tuple of (name, note)
        Images measured with fewer MS-SSIM scales, and why.
    seed : int
        The sampling seed.
    """

    metric: str
    scans: np.ndarray
    bytes_fraction: np.ndarray
    mean: np.ndarray
    p5: np.ndarray
    p50: np.ndarray
    p95: np.ndarray
    per_image: PerImageQuality
    indices: np.ndarray
    population: int
    luminance: bool = False
    failed: tuple[tuple[str, str], ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    seed: int = 0

    @property
    def sample_size(self) -> int:
        return len(self.indices)

    @property
    def num_scans(self) -> int:
        return len(self.scans)

    def statistic(self, name: str) -> np.ndarray:
        """Per-level "mean", "p5", "p50" or "p95"."""
        if name not in ("mean", "p5", "p50", "p95"):
            raise ValueError(f"unknown statistic {name!r}; choose mean, p5, p50 or p95")
        return getattr(self, name)  # type: ignore[no-any-return]

    @classmethod
    def from_values(
        cls,
        values: np.ndarray,
        level_bytes: np.ndarray,
        *,
        metric: str = "mssim",
        names: Sequence[str] | None = None,
        indices: np.ndarray | None = None,
        population: int | None = None,
        luminance: bool = False,
    ) -> QualityCurve:
        """A curve from measurements made elsewhere (an (n, S) matrix of values).

        Parameters
        ----------
        values : (n, S) array
            The metric of each image at each level.
        level_bytes : (n, S) array
            Bytes of each image at each level (cumulative).
        metric : str
            The metric's name.
        names, indices : optional
            Image names and indices (default ``image<i>`` and 0..n-1).
        population : int, optional
            Images in the dataset the sample came from (default n).
        luminance : bool
            Whether the values were measured on luminance.

        Raises
        ------
        ValueError
            If the shapes do not match.
        """
        v = np.asarray(values, np.float64)
        b = np.asarray(level_bytes, np.int64)
        if v.ndim != 2 or v.shape != b.shape:
            raise ValueError(f"values {v.shape} and level_bytes {b.shape} must be equal (n, S)")
        n = len(v)
        idx = np.arange(n) if indices is None else np.asarray(indices, np.int64)
        nm = [f"image{i}" for i in idx] if names is None else list(names)
        return _summarise(
            metric,
            idx,
            nm,
            np.full(n, -1, np.int32),
            b,
            {metric: v},
            n if population is None else int(population),
            luminance,
            (),
            (),
            0,
        )

    def with_metric(self, metric: str) -> QualityCurve:
        """The same sample summarised for another computed metric (no recomputation).

        Raises
        ------
        ValueError
            If *metric* was not computed for this curve.
        """
        if metric not in self.per_image.metrics:
            raise ValueError(
                f"metric {metric!r} was not computed; available: "
                f"{', '.join(self.per_image.metrics)}"
            )
        return _summarise(
            metric,
            self.per_image.indices,
            list(self.per_image.names),
            self.per_image.labels,
            self.per_image.bytes,
            dict(self.per_image.metrics),
            self.population,
            self.luminance,
            self.failed,
            self.notes,
            self.seed,
        )

    def levels(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per level: scan, bytes_fraction, mean, p5, p50, p95."""
        return [
            {
                "scan": int(k),
                "bytes_fraction": float(f),
                "mean": float(m),
                "p5": float(a),
                "p50": float(b),
                "p95": float(c),
            }
            for k, f, m, a, b, c in zip(
                self.scans, self.bytes_fraction, self.mean, self.p5, self.p50, self.p95
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (levels, sample, failures)."""
        return {
            "metric": self.metric,
            "luminance": self.luminance,
            "sample_size": self.sample_size,
            "population": self.population,
            "seed": self.seed,
            "levels": self.levels(),
            "failed": [{"file": n, "issue": r} for n, r in self.failed],
        }

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{d['scan']}</td><td>{d['bytes_fraction']:.3f}</td><td>{d['mean']:.4f}</td>"
            f"<td>{d['p5']:.4f}</td><td>{d['p50']:.4f}</td><td>{d['p95']:.4f}</td></tr>"
            for d in self.levels()
        )
        return (
            f"<table><caption>{self.metric} per scan level, {self.sample_size} of "
            f"{self.population} images</caption><tr><th>scan</th><th>bytes</th><th>mean</th>"
            f"<th>p5</th><th>p50</th><th>p95</th></tr>{rows}</table>"
        )


def _summarise(
    metric: str,
    indices: np.ndarray,
    names: list[str],
    labels: np.ndarray,
    nbytes: np.ndarray,
    metrics: dict[str, np.ndarray],
    population: int,
    luminance: bool,
    failed: tuple[tuple[str, str], ...],
    notes: tuple[tuple[str, str], ...],
    seed: int,
) -> QualityCurve:
    values = metrics[metric]
    s = nbytes.shape[1] if nbytes.ndim == 2 else 0
    if len(values):
        v = _finite(values)
        mean = v.mean(axis=0)
        p5, p50, p95 = np.percentile(v, [5, 50, 95], axis=0)
        total = nbytes.sum(axis=0).astype(np.float64)
        frac = total / total[-1]
    else:
        mean = p5 = p50 = p95 = frac = np.full(s, np.nan)
    return QualityCurve(
        metric=metric,
        scans=np.arange(1, s + 1),
        bytes_fraction=frac,
        mean=mean,
        p5=p5,
        p50=p50,
        p95=p95,
        per_image=PerImageQuality(
            indices=indices,
            names=tuple(names),
            labels=labels,
            bytes=nbytes,
            values=values,
            metrics=metrics,
        ),
        indices=indices,
        population=population,
        luminance=luminance,
        failed=failed,
        notes=notes,
        seed=seed,
    )


def metric_name(metric: str | MetricFn) -> str:
    """The name a metric is reported under (a callable's ``__name__``)."""
    if isinstance(metric, str):
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        return metric
    if not callable(metric):
        raise TypeError(f"metric must be a name or a callable, got {metric!r}")
    return str(getattr(metric, "__name__", "custom"))


class Sampler:
    """Measures a growing random sample of a source's images.

    Images are taken in the order of one seeded permutation, so a larger
    sample extends a smaller one; images that fail are replaced by the next.
    Used by :func:`quality_curve` and by the tuner's ``sample="auto"``.
    """

    def __init__(
        self,
        source: LevelSource | str | os.PathLike[str],
        *,
        seed: int = 0,
        metric: str | MetricFn = "mssim",
        luminance: bool = False,
        workers: int | None = None,
        progress: bool = False,
        order: Sequence[int] | None = None,
    ) -> None:
        self.source = open_source(source)
        self.seed = seed
        self.metric = metric
        self.metric_name = metric_name(metric)
        self.luminance = luminance
        self.workers = workers
        self.progress = progress
        n = len(self.source)
        self.order = (
            np.asarray(order, np.int64)
            if order is not None
            else np.random.default_rng(seed).permutation(n)
        )
        self._names = self.source.names
        self._labels = self.source.labels
        self._next = 0
        self.results: list[_Outcome] = []
        self.failed: list[tuple[str, str]] = []
        self.seconds = 0.0

    @property
    def population(self) -> int:
        return len(self.source)

    @property
    def exhausted(self) -> bool:
        return self._next >= len(self.order)

    def grow(self, n: int) -> None:
        """Measure images until *n* have succeeded or the source is exhausted."""
        t0 = time.perf_counter()
        custom = None if isinstance(self.metric, str) else self.metric
        while len(self.results) < n and not self.exhausted:
            take = self.order[self._next : self._next + n - len(self.results)]
            self._next += len(take)
            jobs = (_make_job(self.source, int(i), self._names) for i in take)
            outs = run_jobs(
                jobs,
                _run_job,
                (self.luminance, custom),
                total=len(take),
                workers=1 if custom is not None else self.workers,
                progress=self.progress,
                desc="quality",
            )
            for o in outs:
                if o.error:
                    self.failed.append((self._names[o.index], o.error))
                else:
                    self.results.append(o)
        self.seconds += time.perf_counter() - t0

    def curve(self, metric: str | None = None) -> QualityCurve:
        """The curve over every image measured so far."""
        res = self.results
        idx = np.array([o.index for o in res], np.int64)
        s = self.source.num_scans
        nbytes = (
            np.stack([o.quality.bytes for o in res if o.quality is not None])
            if res
            else np.zeros((0, s), np.int64)
        )
        if isinstance(self.metric, str):
            metrics = {
                m: (
                    np.stack([o.quality.metric(m) for o in res if o.quality is not None])
                    if res
                    else np.zeros((0, s))
                )
                for m in METRICS
            }
        else:
            metrics = {
                self.metric_name: (
                    np.stack([o.custom for o in res if o.custom is not None])
                    if res
                    else np.zeros((0, s))
                )
            }
        notes = tuple((self._names[o.index], o.note) for o in res if o.note)
        return _summarise(
            metric or self.metric_name,
            idx,
            [self._names[i] for i in idx],
            self._labels[idx] if len(idx) else np.zeros(0, np.int32),
            nbytes,
            metrics,
            self.population,
            self.luminance,
            tuple(self.failed),
            notes,
            self.seed,
        )


def quality_curve(
    source: LevelSource | str | os.PathLike[str],
    sample: int | None = 64,
    seed: int = 0,
    metric: str | MetricFn = "mssim",
    workers: int | None = None,
    progress: bool = False,
    *,
    luminance: bool = False,
) -> QualityCurve:
    """Bytes and quality per scan level over a random sample of a source.

    Parameters
    ----------
    source : LevelSource or path
        A PCR dataset, a folder of images (transcoded in memory, nothing
        written) or an image file; see :func:`~pcr_explore.sources.open_source`.
    sample : int or None
        Images to measure (None: all). Images that fail to decode are
        replaced by others and listed in ``failed``.
    seed : int
        Seed of the random sample.
    metric : {"mssim", "ssim", "psnr"} or callable
        The metric summarised. Built-in metrics are all computed (they share
        the work), so :meth:`QualityCurve.with_metric` switches for free. A
        callable ``(full_images, level_images) -> float`` is called per image
        and level with one-element lists of decoded arrays.
    workers : int, optional
        Worker processes (default: all cores; small samples run in-process).
        Custom callables always run in-process.
    progress : bool
        Show a progress bar.
    luminance : bool
        Measure on the Y channel only (default RGB).

    Returns
    -------
    QualityCurve

    Raises
    ------
    ValueError
        If *metric* is unknown or *sample* is not positive.

    Examples
    --------
    >>> curve = quality_curve("photos/", sample=32)  # doctest: +SKIP
    >>> curve.bytes_fraction[4], curve.mean[4]  # doctest: +SKIP
    (0.47, 0.986)
    """
    if sample is not None and int(sample) < 1:
        raise ValueError(f"sample must be a positive number of images, got {sample}")
    sampler = Sampler(
        source, seed=seed, metric=metric, luminance=luminance, workers=workers, progress=progress
    )
    sampler.grow(sampler.population if sample is None else int(sample))
    return sampler.curve()
