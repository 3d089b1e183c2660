"""Quality per scan level: metric cross-checks, properties and curves over samples."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import jpeg_bytes, photo
from PIL import Image
from scipy import ndimage
from skimage.metrics import structural_similarity

from pcr_explore.encoder import encode_dataset
from pcr_explore.quality import (
    METRICS,
    MSSSIM_WEIGHTS,
    FewerScalesWarning,
    QualityCurve,
    image_quality,
    level_quality,
    ms_ssim,
    psnr,
    quality_curve,
    ssim,
)
from pcr_explore.sources import FolderSource
from pcr_explore.transcode import transcode


# -- an independent transcription of the published formulas -----------------
def _ref_window() -> np.ndarray:
    x = np.arange(-5, 6, dtype=np.float64)
    g = np.exp(-(x**2) / (2 * 1.5**2))
    w = np.outer(g, g)
    return w / w.sum()


def _ref_valid(img: np.ndarray, win: np.ndarray) -> np.ndarray:
    """2-D correlation over the positions where the whole window fits (MATLAB 'valid')."""
    full = ndimage.correlate(img, win, mode="constant")
    r = win.shape[0] // 2
    return full[r:-r, r:-r]


def _ref_ssim_terms(x: np.ndarray, y: np.ndarray, L: float = 255.0) -> tuple[float, float]:
    """Mean SSIM and mean contrast-structure of two 2-D float64 images (Wang et al. 2004)."""
    c1, c2 = (0.01 * L) ** 2, (0.03 * L) ** 2
    w = _ref_window()
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


def _ref_msssim(a: np.ndarray, b: np.ndarray) -> float:
    """Wang, Simoncelli, Bovik 2003, per channel, then the mean over channels."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    per_channel = []
    for c in range(a.shape[-1]):
        x, y = a[..., c], b[..., c]
        mcs = []
        for level in range(5):
            s, cs = _ref_ssim_terms(x, y)
            if level < 4:
                mcs.append(cs)
                x, y = _ref_downsample(x), _ref_downsample(y)
        terms = [*mcs, s]
        per_channel.append(np.prod([t**w for t, w in zip(terms, MSSSIM_WEIGHTS)]))
    return float(np.mean(per_channel))


def _degraded(arr: np.ndarray, q: int) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(jpeg_bytes(arr, quality=q))))


@pytest.fixture(scope="module")
def astronaut_levels() -> list[bytes]:
    pj = transcode(jpeg_bytes(photo("astronaut", 256))).jpeg
    return [pj.level(k) for k in range(1, pj.num_scans + 1)]


# -- pairwise metrics ---------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "q"), [("astronaut", 10), ("coffee", 30), ("camera", 15), ("coins", 50)]
)
def test_ssim_matches_scikit_image(name: str, q: int) -> None:
    a = photo(name, 300)
    b = _degraded(a, q)
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
def test_ms_ssim_matches_published_formula(name: str, q: int) -> None:
    a = photo(name, 256)
    b = _degraded(a, q)
    got = ms_ssim(a, b)
    want = _ref_msssim(a, b)
    assert abs(got - want) < 1e-4
    assert 0.5 < want < 0.995


def test_ms_ssim_odd_sizes_match_reference() -> None:
    a = photo("camera")[:203, :331]  # odd at several scales
    b = _degraded(a, 20)
    assert abs(ms_ssim(a, b) - _ref_msssim(a, b)) < 1e-4


def test_identical_images_score_exactly_one() -> None:
    a = photo("astronaut", 256)
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


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="differ in shape"):
        ssim(np.zeros((20, 20)), np.zeros((20, 21)))


def test_small_images_use_fewer_scales_with_a_warning() -> None:
    a = photo("camera", 100)
    b = _degraded(a, 20)
    with pytest.warns(FewerScalesWarning, match="using 4 scales"):
        v = ms_ssim(a, b)
    assert 0.5 < v < 1.0
    with pytest.warns(FewerScalesWarning, match="smaller than the 11-pixel"):
        tiny = ms_ssim(a[:4, :4], b[:4, :4])
    assert np.isfinite(tiny)
    with pytest.warns(FewerScalesWarning):
        assert np.isfinite(ssim(a[:1, :1], b[:1, :1]))


def test_ms_ssim_scales_argument() -> None:
    a = photo("camera", 256)
    b = _degraded(a, 20)
    assert ms_ssim(a, b, scales=1) == pytest.approx(ssim(a, b), abs=1e-9)
    with pytest.raises(ValueError, match="scales"):
        ms_ssim(a, b, scales=6)


# -- every level of one image ---------------------------------------------------
def test_level_quality_matches_pairwise_metrics(astronaut_levels: list[bytes]) -> None:
    q = level_quality(astronaut_levels)
    full = np.asarray(Image.open(io.BytesIO(astronaut_levels[-1])).convert("RGB"))
    for k in (0, 3, 7):
        lev = np.asarray(Image.open(io.BytesIO(astronaut_levels[k])).convert("RGB"))
        assert q.mssim[k] == pytest.approx(ms_ssim(full, lev), abs=1e-9)
        assert q.ssim[k] == pytest.approx(ssim(full, lev), abs=1e-9)
        assert q.psnr[k] == pytest.approx(psnr(full, lev), abs=1e-4)
        want = structural_similarity(
            full,
            lev,
            channel_axis=-1,
            gaussian_weights=True,
            sigma=1.5,
            use_sample_covariance=False,
            data_range=255,
        )
        assert abs(q.ssim[k] - want) < 1e-4
    assert list(q.bytes) == [len(b) for b in astronaut_levels]
    assert q.bytes_fraction[-1] == 1.0
    assert q.mssim[-1] == 1.0 and q.ssim[-1] == 1.0 and q.psnr[-1] == float("inf")
    assert q.metric("psnr") is q.psnr
    with pytest.raises(ValueError, match="unknown metric"):
        q.metric("lpips")


@pytest.mark.parametrize(
    "name", ["astronaut", "coffee", "chelsea", "camera", "immunohistochemistry"]
)
def test_quality_rises_with_level_on_photos(name: str) -> None:
    pj = transcode(jpeg_bytes(photo(name, 256))).jpeg
    q = level_quality([pj.level(k) for k in range(1, pj.num_scans + 1)])
    for m in METRICS:
        v = np.where(np.isfinite(q.metric(m)), q.metric(m), 1e9)
        assert np.all(np.diff(v) >= -1e-3), (m, v)  # never gets meaningfully worse
    assert q.mssim[0] < 0.95 < q.mssim[-2]  # scan 1 is rough, scan S-1 is close
    assert q.mssim[0] < q.mssim[4] < q.mssim[-1]


def test_luminance_mode_ignores_chroma_scans(astronaut_levels: list[bytes]) -> None:
    q = level_quality(astronaut_levels, luminance=True)
    rgb = level_quality(astronaut_levels)
    # scans 3 and 4 carry only chroma: identical luminance quality to scan 2
    assert q.mssim[1] == q.mssim[2] == q.mssim[3]
    assert rgb.mssim[1] < rgb.mssim[3]
    assert q.luminance and not rgb.luminance


def test_level_quality_metrics_subset(astronaut_levels: list[bytes]) -> None:
    q = level_quality(astronaut_levels, metrics=("psnr",))
    assert np.isnan(q.mssim[:-1]).all() and np.isfinite(q.psnr[:-1]).all()
    with pytest.raises(ValueError, match="unknown metric"):
        level_quality(astronaut_levels, metrics=("vif",))
    with pytest.raises(ValueError, match="at least one level"):
        level_quality([])


def test_grayscale_levels_share_quality(tmp_path: Path) -> None:
    (tmp_path / "cam.jpg").write_bytes(jpeg_bytes(photo("camera", 200)))
    src = FolderSource(tmp_path)
    q = image_quality(src, 0)
    # a grayscale image's chroma-only colour levels repeat the level before
    assert q.mssim[1] == q.mssim[2] == q.mssim[3]
    assert q.bytes[1] == q.bytes[2] == q.bytes[3]
    assert q.num_scans == 10


def test_corrupt_level_raises_naming_source(astronaut_levels: list[bytes]) -> None:
    bad = [*astronaut_levels[:-1], b"\xff\xd8garbage"]
    with pytest.raises(ValueError, match="img7"):
        level_quality(bad, source="img7")


# -- curves over a sample ----------------------------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("qfolder")
    for cls, names in {"a": ["astronaut", "coffee", "chelsea"], "b": ["rocket", "camera"]}.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(jpeg_bytes(photo(n, 192)))
    return root


def test_quality_curve_on_folder_and_dataset_agree(folder: Path, tmp_path: Path) -> None:
    c1 = quality_curve(folder, sample=None, workers=1)
    encode_dataset(folder, tmp_path / "pcr", workers=1, progress=False)
    c2 = quality_curve(tmp_path / "pcr", sample=None, workers=1)
    assert c1.sample_size == c2.sample_size == 5 == c1.population
    o1, o2 = np.argsort(c1.per_image.names), np.argsort(c2.per_image.names)
    np.testing.assert_allclose(c1.per_image.values[o1], c2.per_image.values[o2], atol=1e-12)
    np.testing.assert_array_equal(c1.per_image.bytes[o1], c2.per_image.bytes[o2])
    np.testing.assert_allclose(c1.mean, c2.mean)
    assert np.all(np.diff(c1.bytes_fraction) > 0) and c1.bytes_fraction[-1] == 1.0
    assert np.all(c1.p5 <= c1.p50 + 1e-12) and np.all(c1.p50 <= c1.p95 + 1e-12)
    assert np.all(c1.p5 <= c1.mean + 1e-12) and np.all(c1.mean <= c1.p95 + 1e-12)
    assert c1.mean[-1] == 1.0
    assert c1.levels()[0].keys() >= {"scan", "bytes_fraction", "mean", "p5", "p50", "p95"}


def test_quality_curve_sample_is_seeded_and_parallel_matches(folder: Path) -> None:
    a = quality_curve(folder, sample=3, seed=4, workers=1)
    b = quality_curve(folder, sample=3, seed=4, workers=2)
    c = quality_curve(folder, sample=3, seed=5, workers=1)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.per_image.values, b.per_image.values, atol=1e-12)
    assert a.sample_size == c.sample_size == 3
    assert list(a.indices) != list(c.indices)  # another seed, another sample order
    assert a.per_image.names == tuple(FolderSource(folder).names[i] for i in a.indices)


def test_quality_curve_with_metric_switches_without_recompute(folder: Path) -> None:
    c = quality_curve(folder, sample=2, workers=1)
    p = c.with_metric("psnr")
    assert p.metric == "psnr" and p.mean[-1] == 100.0  # identical: counted at the cap
    np.testing.assert_array_equal(p.per_image.values, c.per_image.metrics["psnr"])
    assert 15 < p.mean[0] < p.mean[-2] < 60


def test_quality_curve_replaces_broken_images(folder: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "f"
    shutil.copytree(folder, root)
    (root / "a" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really")
    bad = FolderSource(root).names.index("a/broken.jpg")
    # a seed whose first five draws include the broken file: it must be replaced
    seed = next(s for s in range(50) if bad in np.random.default_rng(s).permutation(6)[:5])
    c = quality_curve(root, sample=5, seed=seed, workers=1)
    assert c.sample_size == 5 and bad not in c.indices
    assert [n for n, _ in c.failed] == ["a/broken.jpg"]
    c_all = quality_curve(root, sample=None, workers=1)
    assert c_all.sample_size == 5 and c_all.population == 6


def test_quality_curve_custom_metric(folder: Path) -> None:
    def mean_abs_error(full: list[np.ndarray], level: list[np.ndarray]) -> float:
        return -float(np.mean(np.abs(full[0].astype(float) - level[0])))

    c = quality_curve(folder, sample=2, metric=mean_abs_error)
    assert c.metric == "mean_abs_error"
    assert c.mean[-1] == 0.0  # the last level is the image itself: its own error, 0
    assert np.all(c.per_image.values[:, :-1] < 0)
    assert c.mean[0] < c.mean[4]


def test_quality_curve_bad_arguments(folder: Path) -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        quality_curve(folder, metric="vif")
    with pytest.raises(ValueError, match="positive"):
        quality_curve(folder, sample=0)


def test_from_values_and_worst() -> None:
    vals = np.array([[0.5, 0.9, 1.0], [0.7, 0.95, 1.0], [0.6, 0.8, 1.0]])
    b = np.array([[10, 50, 100], [20, 60, 100], [10, 30, 100]])
    c = QualityCurve.from_values(vals, b, names=["x", "y", "z"])
    np.testing.assert_allclose(c.mean, vals.mean(axis=0))
    np.testing.assert_allclose(c.bytes_fraction, b.sum(0) / 300)
    assert [r["name"] for r in c.per_image.worst(2, 2)] == ["z", "x"]
    with pytest.raises(ValueError, match="must be equal"):
        QualityCurve.from_values(vals, b[:, :2])


def test_no_stray_warnings_from_level_quality(astronaut_levels: list[bytes]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        level_quality(astronaut_levels)
