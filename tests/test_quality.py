"""Quality per scan level: every level of one image, curves over samples, the job runner."""

from __future__ import annotations

import io
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage.metrics import structural_similarity

from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.errors import JPEGError
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.quality import (
    METRICS,
    QualityCurve,
    Sampler,
    image_quality,
    level_quality,
    ms_ssim,
    psnr,
    quality_curve,
    ssim,
)
from pcr_explore.quality.runner import default_workers
from pcr_explore.read.sources import FolderSource

Photo = Callable[..., np.ndarray]
Encode = Callable[..., bytes]


def _rgb(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


@pytest.fixture(scope="module")
def astronaut_levels(sk_photo: Photo, encode_jpeg: Encode) -> list[bytes]:
    pj = transcode(encode_jpeg(sk_photo("astronaut", 256))).jpeg
    return [pj.level(k) for k in range(1, pj.num_scans + 1)]


# -- every level of one image ---------------------------------------------------
def test_level_quality_matches_pairwise_metrics(astronaut_levels: list[bytes]) -> None:
    q = level_quality(astronaut_levels)
    full = _rgb(astronaut_levels[-1])
    for k in (0, 3, 7):
        lev = _rgb(astronaut_levels[k])
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
def test_quality_rises_with_level_on_photos(
    name: str, sk_photo: Photo, encode_jpeg: Encode
) -> None:
    pj = transcode(encode_jpeg(sk_photo(name, 256))).jpeg
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
    y_full = np.asarray(Image.open(io.BytesIO(astronaut_levels[-1])).convert("L"))
    y_scan2 = np.asarray(Image.open(io.BytesIO(astronaut_levels[1])).convert("L"))
    # libjpeg's Y against Pillow's RGB->L conversion: within a grey level's rounding
    assert q.psnr[1] == pytest.approx(psnr(y_full, y_scan2), abs=0.5)


def test_level_quality_metrics_subset(astronaut_levels: list[bytes]) -> None:
    q = level_quality(astronaut_levels, metrics=("psnr",))
    everything = level_quality(astronaut_levels)
    assert np.isnan(q.mssim).all() and np.isnan(q.ssim).all()
    np.testing.assert_array_equal(q.psnr, everything.psnr)
    only_ssim = level_quality(astronaut_levels, metrics=("ssim",))
    np.testing.assert_array_equal(only_ssim.ssim, everything.ssim)
    with pytest.raises(ValueError, match="unknown metric"):
        level_quality(astronaut_levels, metrics=("vif",))
    with pytest.raises(ValueError, match="at least one level"):
        level_quality([])


def test_grayscale_levels_share_quality(
    tmp_path: Path, sk_photo: Photo, encode_jpeg: Encode
) -> None:
    (tmp_path / "cam.jpg").write_bytes(encode_jpeg(sk_photo("camera", 200)))
    src = FolderSource(tmp_path)
    q = image_quality(src, image=0)
    # a grayscale image's chroma-only colour levels repeat the level before
    assert q.mssim[1] == q.mssim[2] == q.mssim[3]
    assert q.bytes[1] == q.bytes[2] == q.bytes[3]
    assert q.num_scans == 10


def test_corrupt_level_raises_naming_source(astronaut_levels: list[bytes]) -> None:
    bad = [*astronaut_levels[:-1], b"\xff\xd8garbage"]
    with pytest.raises(JPEGError, match=r"img7 \(full\): cannot decode JPEG"):
        level_quality(bad, source="img7")


def test_levels_of_different_sizes_raise(
    astronaut_levels: list[bytes], sk_photo: Photo, encode_jpeg: Encode
) -> None:
    other = encode_jpeg(sk_photo("camera", 64))
    with pytest.raises(JPEGError, match="img3: scan 1 decodes to"):
        level_quality([other, astronaut_levels[-1]], source="img3")


def test_no_stray_warnings_from_level_quality(astronaut_levels: list[bytes]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        level_quality(astronaut_levels)


def test_level_quality_html_table(astronaut_levels: list[bytes]) -> None:
    page = level_quality(astronaut_levels)._repr_html_()
    assert page.count("<tr>") == 11  # a header and one row per level
    assert "<th>MS-SSIM</th><th>SSIM</th><th>PSNR (dB)</th>" in page


# -- curves over a sample ----------------------------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, sk_photo: Photo, encode_jpeg: Encode) -> Path:
    root = tmp_path_factory.mktemp("qfolder")
    for cls, names in {"a": ["astronaut", "coffee", "chelsea"], "b": ["rocket", "camera"]}.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 192)))
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
    b = c1.per_image.bytes
    np.testing.assert_allclose(c1.bytes_fraction, b.sum(axis=0) / b[:, -1].sum(), rtol=1e-12)
    np.testing.assert_allclose(c1.mean, c1.per_image.values.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(c1.p50, np.median(c1.per_image.values, axis=0), rtol=1e-12)
    assert c1.mean[-1] == 1.0
    assert c1.levels()[0] == {
        "scan": 1,
        "bytes_fraction": c1.bytes_fraction[0],
        "mean": c1.mean[0],
        "p5": c1.p5[0],
        "p50": c1.p50[0],
        "p95": c1.p95[0],
    }


def test_quality_curve_sample_is_seeded_and_parallel_matches(folder: Path) -> None:
    a = quality_curve(folder, sample=3, seed=4, workers=1)
    b = quality_curve(folder, sample=3, seed=4, workers=2)
    c = quality_curve(folder, sample=3, seed=5, workers=1)
    np.testing.assert_array_equal(a.indices, np.random.default_rng(4).permutation(5)[:3])
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.per_image.values, b.per_image.values, atol=1e-12)
    np.testing.assert_array_equal(c.indices, np.random.default_rng(5).permutation(5)[:3])
    assert a.per_image.names == tuple(FolderSource(folder).names[i] for i in a.indices)


def test_quality_curve_with_metric_switches_without_recompute(folder: Path) -> None:
    c = quality_curve(folder, sample=2, workers=1)
    p = c.with_metric("psnr")
    assert p.metric == "psnr" and p.mean[-1] == 100.0  # identical: counted at the cap
    np.testing.assert_array_equal(p.per_image.values, c.per_image.metrics["psnr"])
    assert p.mean[0] == pytest.approx(c.per_image.metrics["psnr"][:, 0].mean(), rel=1e-12)
    assert 15 < p.mean[0] < p.mean[-2] < 60
    with pytest.raises(ValueError, match="'lpips' was not computed"):
        c.with_metric("lpips")


def test_reprs_are_one_short_line(folder: Path) -> None:
    c = quality_curve(folder, sample=3, seed=1, workers=1)
    text = repr(c)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("<QualityCurve mssim, 3 of ") and "10: 1.000}" in text
    assert repr(c.per_image) == "<PerImageQuality 3 images x 10 levels>"


def test_quality_curve_replaces_broken_images(folder: Path, tmp_path: Path) -> None:
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


def _neg_mae(full: list[np.ndarray], level: list[np.ndarray]) -> float:
    return -float(np.mean(np.abs(full[0].astype(float) - level[0])))


def test_quality_curve_custom_metric_reads_its_own_value_at_full(folder: Path) -> None:
    c = quality_curve(folder, sample=2, metric=_neg_mae)
    assert c.metric == "_neg_mae"
    # the last level is the image itself: a negative error reads 0 there, not 1
    np.testing.assert_array_equal(c.per_image.values[:, -1], [0.0, 0.0])
    assert c.mean[-1] == 0.0
    src = FolderSource(folder)
    for row, i in zip(c.per_image.values, c.indices):
        levels = [src.jpeg_bytes(int(i), k) for k in range(1, 11)]
        full = np.asarray(Image.open(io.BytesIO(levels[-1])))
        want = [_neg_mae([full], [np.asarray(Image.open(io.BytesIO(b)))]) for b in levels]
        np.testing.assert_allclose(row, want, rtol=1e-12)


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
    assert [r["name"] for r in c.per_image.worst(2, n=2)] == ["z", "x"]
    assert c.per_image.rows(1)[1] == {
        "index": 1,
        "name": "y",
        "label": -1,
        "bytes": 20,
        "bytes_fraction": 0.2,
        "value": 0.7,
    }
    with pytest.raises(ValueError, match="must be equal"):
        QualityCurve.from_values(vals, b[:, :2])
    with pytest.raises(ValueError, match="unknown statistic"):
        c.statistic("max")


def test_empty_curve_has_nan_statistics() -> None:
    c = QualityCurve.from_values(np.zeros((0, 4)), np.zeros((0, 4)))
    assert c.sample_size == 0 and c.num_scans == 4
    assert np.isnan(c.mean).all() and np.isnan(c.bytes_fraction).all()


def test_sampler_grows_the_same_sample(folder: Path) -> None:
    s = Sampler(folder, seed=3, workers=1)
    s.grow(2)
    first = [o.index for o in s.results]
    s.grow(4)
    assert [o.index for o in s.results][:2] == first
    assert [o.index for o in s.results] == list(np.random.default_rng(3).permutation(5)[:4])
    assert not s.exhausted
    s.grow(10)
    assert s.exhausted and len(s.results) == 5 == s.population
    np.testing.assert_array_equal(
        s.curve("psnr").per_image.values, s.curve().per_image.metrics["psnr"]
    )


# -- the sample's workers ---------------------------------------------------------------
class _Bar:
    def __init__(self) -> None:
        self.n = 0

    def update(self, k: int) -> None:
        self.n += k


@pytest.mark.parametrize("workers", [1, 2])
def test_sampler_measures_in_order_advancing_a_bar(folder: Path, workers: int) -> None:
    bar = _Bar()
    s = Sampler(folder, seed=2, workers=workers, progress=bar)
    s.grow(5)
    assert [o.index for o in s.results] == list(np.random.default_rng(2).permutation(5))
    assert bar.n == 5


def test_default_workers() -> None:
    assert default_workers(4) == 1  # a pool costs about a second: small jobs run here
    assert default_workers(5) == min(5, os.cpu_count() or 1)


@pytest.mark.parametrize("shrink", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("side", [448, 451, 455])
def test_a_reduced_measurement_shrinks_each_side_by_the_factor_asked(
    side: int, shrink: int
) -> None:
    from pcr_explore.quality._levels import _decode

    y, x = np.mgrid[0:301, 0:side]
    pixels = np.stack([x % 256, y % 256, (x + y) % 256], -1).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=90)
    out = _decode(buf.getvalue(), False, "odd.jpg", shrink)
    # within one pixel of side / shrink however DCT scaling and the box reduction share it
    assert abs(out.shape[1] - side / shrink) <= 1, out.shape
    assert abs(out.shape[0] - 301 / shrink) <= 1, out.shape
