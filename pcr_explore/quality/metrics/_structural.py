"""SSIM and MS-SSIM, with the reference image's statistics computed once.

SSIM follows Wang et al. 2004 (Gaussian window 11 / sigma 1.5, K1 = 0.01,
K2 = 0.03, population covariances): the same numbers as scikit-image's
``structural_similarity(gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=255)``. MS-SSIM follows Wang,
Simoncelli, Bovik 2003 with 5 scales and the weights 0.0448, 0.2856, 0.3001,
0.2363, 0.1333, the constants the PCR paper's release uses.

Everything that depends only on the reference (its local means and variances
at every scale) lives in :class:`SSIMReference`, so comparing many images
with one reference (every scan level with the full image) pays for it once.
The arithmetic is float32 on data centred on mid-grey, which keeps the local
variances accurate: SSIM agrees with scikit-image's float64 to better than
1e-6 (measured on photos; ``bench/bench_quality.py``).

Details of MS-SSIM
    Between scales the images are averaged over 2x2 blocks (an odd last row
    or column is repeated, as the reference MATLAB code's symmetric padding
    does). Scales 1..M-1 contribute the mean contrast-structure term, scale M
    the mean SSIM; negative terms are clipped at 0 before the fractional
    powers. Colour images: MS-SSIM per channel, then the mean. An image whose
    shorter side is below 161 pixels cannot be shrunk four times and still
    hold an 11-pixel window; it gets the largest number of scales that fit
    and the matching weights renormalised to sum to 1, with a
    :class:`~pcr_explore.errors.FewerScalesWarning`. Below 11 pixels the
    window itself shrinks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..._public import public
from ...errors import FewerScalesWarning
from ._filter import filter_valid, one_blas_thread, pool2x2
from ._images import as_planes, pair

__all__ = [
    "K1",
    "K2",
    "MSSSIM_WEIGHTS",
    "SIGMA",
    "WINDOW",
    "SSIMReference",
    "Similarity",
    "ms_ssim",
    "ssim",
]

MSSSIM_WEIGHTS: tuple[float, ...] = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
WINDOW = 11
SIGMA = 1.5
K1 = 0.01
K2 = 0.03


def _plan_scales(h: int, w: int, max_scales: int) -> tuple[int, int, str]:
    """Return (scales, window radius, warning text or "") for an h x w image."""
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
    """The reference at one MS-SSIM scale, and what every comparison reuses."""

    xs: np.ndarray  # centred pixels (C, H, W)
    mx: np.ndarray  # local means, centred (C, H', W')
    two_ux: np.ndarray  # 2 * local mean
    lum_den: np.ndarray  # local mean^2 + C1
    sxx_c2: np.ndarray  # local variance + C2
    stack: np.ndarray  # scratch (3C, H, W) for an image's y, y^2, x*y


class Similarity(NamedTuple):
    """SSIM and MS-SSIM of one image against an :class:`SSIMReference`.

    Attributes
    ----------
    ssim : float
        Mean SSIM at full resolution, averaged over channels.
    ms_ssim : float
        MS-SSIM over the reference's scales, averaged over channels.
    """

    ssim: float
    ms_ssim: float


class SSIMReference:
    """A reference image's per-scale statistics, shared by every image compared to it.

    Parameters
    ----------
    image : ndarray
        The reference, (H, W) or (H, W, C).
    data_range : float
        Range of the pixel values (255 for uint8).
    scales : int
        MS-SSIM scales to prepare, 1..5 (1 when only SSIM is wanted); a small
        image gets fewer.

    Attributes
    ----------
    shape : tuple of int
        The reference's shape as given.
    scales : int
        Scales prepared (fewer than asked for a small image).
    radius : int
        Half-width of the Gaussian window (5, less for an image under 11 pixels).
    note : str
        Why fewer scales or a smaller window are used, or "".

    Raises
    ------
    ValueError
        If *scales* is outside 1..5 or the image is neither 2-D nor 3-D.

    Warns
    -----
    FewerScalesWarning
        If the image is too small for *scales* scales (or for the window).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> full = rng.integers(0, 256, (48, 64), dtype=np.uint8)
    >>> ref = SSIMReference(full, scales=2)
    >>> ref.compare(full)
    Similarity(ssim=1.0, ms_ssim=1.0)
    >>> noisy = np.clip(full + rng.normal(0, 8, full.shape), 0, 255)
    >>> s = ref.compare(noisy)
    >>> round(s.ssim, 2) == round(ssim(full, noisy), 2)
    True
    """

    def __init__(self, image: np.ndarray, *, data_range: float = 255.0, scales: int = 1) -> None:
        if not 1 <= scales <= len(MSSSIM_WEIGHTS):
            raise ValueError(f"scales must be in 1..{len(MSSSIM_WEIGHTS)}, got {scales}")
        x = as_planes(image)
        c, h, w = x.shape
        self.shape: tuple[int, ...] = np.shape(image)
        self._planes_shape = x.shape
        self._offset = np.float32(data_range / 2)
        self._c1 = np.float32((K1 * data_range) ** 2)
        self._c2 = np.float32((K2 * data_range) ** 2)
        self.scales, self.radius, self.note = _plan_scales(h, w, scales)
        if self.note:
            warnings.warn(self.note, FewerScalesWarning, stacklevel=2)
        self._x = x
        xs = x.astype(np.float32) - self._offset
        self._per_scale: list[_Scale] = []
        for j in range(self.scales):
            if j:
                xs = pool2x2(xs)
            f = filter_valid(np.concatenate([xs, xs * xs]), self.radius, SIGMA)
            mx, sxx = f[:c], f[c:]
            sxx -= mx * mx
            ux = mx + self._offset
            self._per_scale.append(
                _Scale(
                    xs=xs,
                    mx=mx,
                    two_ux=2 * ux,
                    lum_den=ux * ux + self._c1,
                    sxx_c2=sxx + self._c2,
                    stack=np.empty((3 * c, *xs.shape[1:]), np.float32),
                )
            )

    def compare(self, image: np.ndarray) -> Similarity:
        """Return the SSIM and MS-SSIM of *image* against the reference.

        Parameters
        ----------
        image : ndarray
            Same shape as the reference.

        Returns
        -------
        Similarity
            ``(ssim, ms_ssim)``, each the mean over channels; exactly 1.0
            for an image equal to the reference. MS-SSIM uses the scales
            prepared (with 1 scale it is SSIM with negative values clipped).

        Raises
        ------
        ValueError
            If the shapes differ.
        """
        y = as_planes(image)
        if y.shape != self._planes_shape:
            raise ValueError(f"images differ in shape: {self.shape} vs {np.shape(image)}")
        if np.array_equal(self._x, y):
            return Similarity(1.0, 1.0)
        ssim1, cs, last = self._terms(y)
        w = np.asarray(MSSSIM_WEIGHTS[: self.scales], np.float64)
        w = w / w.sum()
        terms = np.maximum(np.concatenate([cs[:-1], last[None]]), 0.0)
        ms = float(np.prod(terms ** w[:, None], axis=0).mean())
        return Similarity(float(ssim1.mean()), ms)

    def _terms(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return SSIM at scale 1, mean c*s per scale and SSIM at the last scale, per channel.

        Shapes (C,), (scales, C) and (C,), float64.
        """
        c = self._planes_shape[0]
        cs_out = np.empty((self.scales, c), np.float64)
        ssim1 = ssim_last = np.zeros(c)
        ys = np.subtract(y, self._offset, dtype=np.float32)
        for j, sc in enumerate(self._per_scale):
            if j:
                ys = pool2x2(ys)
            st = sc.stack
            st[:c] = ys
            np.multiply(ys, ys, out=st[c : 2 * c])
            np.multiply(sc.xs, ys, out=st[2 * c :])
            f = filter_valid(st, self.radius, SIGMA)
            my, fyy, fxy = f[:c], f[c : 2 * c], f[2 * c :]
            # contrast-structure: (2 sxy + C2) / (sxx + syy + C2), in place
            t = sc.mx * my
            fxy -= t
            fxy *= 2
            fxy += self._c2
            np.multiply(my, my, out=t)
            fyy -= t
            fyy += sc.sxx_c2
            fxy /= fyy
            cs_out[j] = fxy.mean(axis=(1, 2), dtype=np.float64)
            if j == 0 or j == self.scales - 1:
                # luminance: (2 ux uy + C1) / (ux^2 + uy^2 + C1)
                my += self._offset
                num = sc.two_ux * my
                num += self._c1
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


@public("pcr_explore.quality")
def ssim(a: np.ndarray, b: np.ndarray, *, data_range: float = 255.0) -> float:
    """Return the structural similarity of *b* to the reference *a*.

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
        Mean SSIM over the positions where the window fits, averaged over
        channels; exactly 1.0 for identical images.

    Raises
    ------
    ValueError
        If the shapes differ.

    Warns
    -----
    FewerScalesWarning
        If the image is smaller than the 11-pixel window (a smaller one is used).

    See Also
    --------
    ms_ssim, SSIMReference

    References
    ----------
    .. [1] Z. Wang, A. C. Bovik, H. R. Sheikh and E. P. Simoncelli, "Image
       quality assessment: from error visibility to structural similarity",
       IEEE Transactions on Image Processing 13(4), 600-612, 2004.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    >>> ssim(img, img)
    1.0
    >>> round(ssim(img, 255 - img), 3)
    -0.96
    """
    pair(a, b)  # a shape mismatch fails before any work
    with one_blas_thread():
        return SSIMReference(a, data_range=data_range).compare(b).ssim


@public("pcr_explore.quality")
def ms_ssim(
    a: np.ndarray,
    b: np.ndarray,
    *,
    data_range: float = 255.0,
    scales: int = len(MSSSIM_WEIGHTS),
) -> float:
    """Return the multi-scale structural similarity of *b* to the reference *a*.

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
        In [0, 1]; exactly 1.0 for identical images.

    Raises
    ------
    ValueError
        If the shapes differ or *scales* is outside 1..5.

    Warns
    -----
    FewerScalesWarning
        If the image's shorter side is below 161 pixels (for 5 scales).

    See Also
    --------
    ssim, SSIMReference

    References
    ----------
    .. [1] Z. Wang, E. P. Simoncelli and A. C. Bovik, "Multiscale structural
       similarity for image quality assessment", Proceedings of the 37th
       Asilomar Conference on Signals, Systems and Computers, 1398-1402, 2003.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> img = rng.integers(0, 256, (176, 176), dtype=np.uint8)
    >>> ms_ssim(img, img)
    1.0
    >>> blurred = img[:-1, :-1] // 4 + img[1:, 1:] // 4 + img[:-1, 1:] // 2
    >>> round(ms_ssim(img[:-1, :-1], blurred), 2)
    0.79
    """
    pair(a, b)  # a shape mismatch fails before any work (SSIMReference checks *scales*)
    with one_blas_thread():
        return SSIMReference(a, data_range=data_range, scales=scales).compare(b).ms_ssim
