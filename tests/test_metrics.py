"""Metric kernels: cross-checks against scikit-image and the published formulas."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage
from skimage.metrics import structural_similarity

from pcr_explore.errors import FewerScalesWarning
from pcr_explore.quality.metrics import (
    METRIC_LABELS,
    METRICS,
    MSSSIM_WEIGHTS,
    PSNR_CAP,
    metric_name,
    ms_ssim,
    psnr,
    ssim,
)
from pcr_explore.quality.metrics._filter import filter_valid, pool2x2
from pcr_explore.quality.metrics._names import capped, metric_label
from pcr_explore.quality.metrics._structural import SSIMReference

Photo = Callable[..., np.ndarray]
Encode = Callable[..., bytes]


# -- an independent transcription of the published formulas -----------------
def _ref_window(radius: int = 5) -> np.ndarray:
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    g = np.exp(-(x**2) / (2 * 1.5**2))
    w = np.outer(g, g)
    return w / w.sum()


def _ref_valid(img: np.ndarray, win: np.ndarray) -> np.ndarray:
    """2-D correlation over the positions where the whole window fits (MATLAB 'valid')."""
    full = ndimage.correlate(img, win, mode="constant")
    r = win.shape[0] // 2
    return full[r : full.shape[0] - r, r : full.shape[1] - r]


def _ref_ssim_terms(
    x: np.ndarray, y: np.ndarray, L: float = 255.0, radius: int = 5
) -> tuple[float, float]:
    """Mean SSIM and mean contrast-structure of two 2-D float64 images (Wang et al. 2004)."""
    c1, c2 = (0.01 * L) ** 2, (0.03 * L) ** 2
    w = _ref_window(radius)
    mu1, mu2 = _ref_valid(x, w), _ref_valid(y, w)
    s11 = _ref_valid(x * x, w) - mu1**2
    s22 = _ref_valid(y * y, w) - mu2**2
    s12 = _ref_valid(x * y, w) - mu1 * mu2
    cs = (2 * s12 + c2) / (s11 + s22 + c2)
    lum = (2 * mu1 * mu2 + c1) / (mu1**2 + mu2**2 + c1)
    return float((lum * cs).mean()), float(cs.mean())


def _ref_downsample(x: np.ndarray) -> np.ndarray:
    """MATLAB: imfilter(x, ones(2)/4, 'symmetric', 'same') then x(1:2:end, 1:2:end)."""
    p = np.pad(x, ((0, 1), (0, 1)), mode="symmetric")
    f = (p[:-1, :-1] + p[1:, :-1] + p[:-1, 1:] + p[1:, 1:]) / 4
    return f[::2, ::2]


def _ref_msssim(a: np.ndarray, b: np.ndarray, scales: int = 5, radius: int = 5) -> float:
    """Wang, Simoncelli, Bovik 2003, per channel, then the mean over channels.

    Fewer scales use the first weights, renormalised to sum to 1.
    """
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    weights = np.array(MSSSIM_WEIGHTS[:scales]) / sum(MSSSIM_WEIGHTS[:scales])
    per_channel = []
    for c in range(a.shape[-1]):
        x, y = a[..., c], b[..., c]
        mcs = []
        for level in range(scales):
            s, cs = _ref_ssim_terms(x, y, radius=radius)
            if level < scales - 1:
                mcs.append(cs)
                x, y = _ref_downsample(x), _ref_downsample(y)
        terms = np.maximum([*mcs, s], 0.0)
        per_channel.append(np.prod(terms**weights))
    return float(np.mean(per_channel))


def _degraded(encode: Encode, arr: np.ndarray, q: int) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(encode(arr, quality=q))))


# -- the filter ---------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 40, 70), (1, 11, 11), (3, 75, 33)])
def test_filter_valid_matches_ndimage_correlation(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(0)
    stack = (rng.random(shape, dtype=np.float32) - 0.5) * 255
    got = filter_valid(stack, 5, 1.5)
    want = np.stack([_ref_valid(p.astype(np.float64), _ref_window(5)) for p in stack])
    assert got.shape == want.shape == (shape[0], shape[1] - 10, shape[2] - 10)
    np.testing.assert_allclose(got, want, atol=2e-4)  # float32 products on values up to 128


def test_pool2x2_matches_the_reference_downsampling() -> None:
    x = np.random.default_rng(1).random((2, 7, 10))
    got = pool2x2(x)
    np.testing.assert_allclose(got, np.stack([_ref_downsample(p) for p in x]), atol=1e-12)


# -- pairwise metrics -----------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "q"), [("astronaut", 10), ("coffee", 30), ("camera", 15), ("coins", 50)]
)
def test_ssim_matches_scikit_image(name: str, q: int, sk_photo: Photo, encode_jpeg: Encode) -> None:
    a = sk_photo(name, 300)
    b = _degraded(encode_jpeg, a, q)
    want = structural_similarity(
        a,
        b,
        channel_axis=-1 if a.ndim == 3 else None,
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        data_range=255,
    )
    assert abs(ssim(a, b) - want) < 1e-4
    assert want < 0.99  # the check is not trivially comparing near-identical images


def test_ssim_float_data_range() -> None:
    rng = np.random.default_rng(1)
    a = rng.random((64, 80))
    b = np.clip(a + rng.normal(0, 0.05, a.shape), 0, 1)
    want = structural_similarity(
        a, b, gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=1.0
    )
    assert abs(ssim(a, b, data_range=1.0) - want) < 1e-4


@pytest.mark.parametrize(("name", "q"), [("astronaut", 10), ("camera", 20), ("coffee", 40)])
def test_ms_ssim_matches_published_formula(
    name: str, q: int, sk_photo: Photo, encode_jpeg: Encode
) -> None:
    a = sk_photo(name, 256)
    b = _degraded(encode_jpeg, a, q)
    got = ms_ssim(a, b)
    want = _ref_msssim(a, b)
    assert abs(got - want) < 1e-4
    assert 0.5 < want < 0.995


def test_ms_ssim_odd_sizes_match_reference(sk_photo: Photo, encode_jpeg: Encode) -> None:
    a = sk_photo("camera")[:203, :331]  # odd at several scales
    b = _degraded(encode_jpeg, a, 20)
    assert abs(ms_ssim(a, b) - _ref_msssim(a, b)) < 1e-4


def test_identical_images_score_exactly_one(sk_photo: Photo) -> None:
    a = sk_photo("astronaut", 256)
    assert ms_ssim(a, a) == 1.0
    assert ssim(a, a) == 1.0
    assert psnr(a, a) == float("inf")
    b = a.copy()
    b[100, 100, 0] ^= 1
    assert 0.99999 < ms_ssim(a, b) < 1.0


def test_psnr_value() -> None:
    a = np.zeros((10, 10), np.uint8)
    b = np.full((10, 10), 5, np.uint8)
    assert psnr(a, b) == pytest.approx(10 * np.log10(255**2 / 25))
    assert psnr(a, b, data_range=1.0) == pytest.approx(10 * np.log10(1 / 25))


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="differ in shape"):
        ssim(np.zeros((20, 20)), np.zeros((20, 21)))
    with pytest.raises(ValueError, match="differ in shape"):
        psnr(np.zeros((20, 20)), np.zeros((20, 20, 3)))
    with pytest.raises(ValueError, match=r"\(H, W\) or \(H, W, C\)"):
        ms_ssim(np.zeros(20), np.zeros(20))


def test_small_images_use_fewer_scales_with_a_warning(sk_photo: Photo, encode_jpeg: Encode) -> None:
    a = sk_photo("camera", 100)  # 100 px: 4 scales still hold the 11-pixel window
    b = _degraded(encode_jpeg, a, 20)
    with pytest.warns(FewerScalesWarning, match="using 4 scales"):
        v = ms_ssim(a, b)
    assert v == pytest.approx(_ref_msssim(a, b, scales=4), abs=1e-4)
    assert v != pytest.approx(_ref_msssim(a, b, scales=3), abs=1e-3)
    with pytest.warns(FewerScalesWarning, match="smaller than the 11-pixel"):
        tiny = ms_ssim(a[:4, :4], b[:4, :4])  # a 3-pixel window, one scale
    assert tiny == pytest.approx(_ref_msssim(a[:4, :4], b[:4, :4], scales=1, radius=1), abs=1e-5)
    x, y = float(a[0, 0]), float(b[0, 0])
    assert x != y
    with pytest.warns(FewerScalesWarning, match="1-pixel window"):
        one = ssim(a[:1, :1], b[:1, :1])
    c1 = (0.01 * 255) ** 2  # one pixel: no variance, so SSIM is the luminance term alone
    assert one == pytest.approx((2 * x * y + c1) / (x * x + y * y + c1), abs=1e-6)


def test_ms_ssim_scales_argument(sk_photo: Photo, encode_jpeg: Encode) -> None:
    a = sk_photo("camera", 256)
    b = _degraded(encode_jpeg, a, 20)
    assert ms_ssim(a, b, scales=1) == pytest.approx(ssim(a, b), abs=1e-9)
    assert ms_ssim(a, b, scales=3) == pytest.approx(_ref_msssim(a, b, scales=3), abs=1e-4)
    with pytest.raises(ValueError, match="scales"):
        ms_ssim(a, b, scales=6)


def test_reference_shares_the_full_images_statistics(sk_photo: Photo, encode_jpeg: Encode) -> None:
    a = sk_photo("coffee", 256)  # 256 x 171: five scales fit
    ref = SSIMReference(a, scales=5)
    assert (ref.scales, ref.radius, ref.note, ref.shape) == (5, 5, "", a.shape)
    for q in (10, 40):
        b = _degraded(encode_jpeg, a, q)
        sim = ref.compare(b)
        assert sim.ssim == ssim(a, b) and sim.ms_ssim == ms_ssim(a, b)
    assert ref.compare(a) == (1.0, 1.0)
    with pytest.raises(ValueError, match="differ in shape"):
        ref.compare(a[:, :-1])


# -- names, labels, the PSNR cap -------------------------------------------------
def test_names_and_labels() -> None:
    assert METRICS == ("mssim", "ssim", "psnr")
    assert [metric_label(m) for m in METRICS] == ["MS-SSIM", "SSIM", "PSNR (dB)"]
    assert set(METRIC_LABELS) == set(METRICS)
    assert metric_label("neg_mae") == "neg_mae"
    assert metric_name("ssim") == "ssim"
    assert metric_name(lambda a, b: 0.0) == "<lambda>"
    with pytest.raises(ValueError, match="unknown metric 'vif'"):
        metric_name("vif")
    with pytest.raises(TypeError, match="name or a callable"):
        metric_name(3)  # type: ignore[arg-type]


def test_capped_counts_infinity_at_the_cap_and_keeps_nan() -> None:
    v = np.array([[31.5, np.inf], [np.nan, 40.0]])
    out = capped(v)
    np.testing.assert_array_equal(out, [[31.5, PSNR_CAP], [np.nan, 40.0]])
    assert np.isinf(v[0, 1])  # the input is left alone
