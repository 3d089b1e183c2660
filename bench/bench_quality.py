"""Benchmark: the Gaussian window, all-level quality of one image, a 1,000-image audit.

0. The SSIM window as the package applies it (``metrics._filter.filter_valid``:
   banded matrix products in float32, only where the window fits) against
   ``scipy.ndimage.correlate1d`` along both axes on the same float32 planes,
   then cropped to the same region: the like-for-like baseline. Stacks the
   size MS-SSIM filters (3 channels x y, y^2, xy at 500x375 and its scales).
   Also the block width of the banded products (16, 32, 64). Prints ratios.

1. Per image, every scan level against the full image: ``level_quality``
   (one pass: each level decoded once, the reference's statistics shared,
   Gaussian window as banded matrix products in float32) against the
   straightforward loop (decode the level, call scikit-image's
   ``structural_similarity(..., channel_axis=-1, gaussian_weights=True,
   sigma=1.5, use_sample_covariance=False, data_range=255)``), in the same
   run, on the same bytes. Like for like is RGB SSIM against RGB SSIM; the
   all-metric (MS-SSIM + SSIM + PSNR) and luminance modes are reported
   beside it. Both sides run with one BLAS thread (set below, before numpy
   loads) so neither borrows the other core. Target: >= 3x, SSIM within 1e-3.

2. ``audit`` of 1,000 ImageNet-sized JPEGs (random crops and rescales of the
   Kodak suite to about 500x375, quality 85-95, a few grayscale, 10 class
   folders; cached under bench/_data/) with a 64-image quality sample.
   Target: <= 30 s on 2 cores. Then, for targets 0.90, 0.95 and 0.98, the
   sampled recommendation is compared with the one computed from all 1,000
   images: they must agree, or the TuneResult must say the sample could not
   separate the two levels (``decided`` False).

Usage: ``python bench/bench_quality.py [--images N] [--quick]``. Prints tables
and writes bench/results/quality.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from scipy import ndimage  # noqa: E402
from skimage.metrics import structural_similarity  # noqa: E402

import pcr_explore.quality.metrics._filter as _filter  # noqa: E402
from pcr_explore.auditing import audit  # noqa: E402
from pcr_explore.jpeg.transcode import transcode  # noqa: E402
from pcr_explore.quality import QualityCurve, level_quality, quality_curve  # noqa: E402
from pcr_explore.quality.metrics import SIGMA, WINDOW  # noqa: E402
from pcr_explore.quality.tune import recommend  # noqa: E402

HERE = Path(__file__).resolve().parent
KODAK = HERE.parent.parent / "shared" / "data" / "kodak24"
DATA_VERSION = 2


def imagenet_like(out: Path, n: int, seed: int = 0) -> Path:
    """n JPEGs of about 500x375 made from the Kodak suite (cached)."""
    done = out / ".complete"
    if done.exists() and done.read_text().strip() == f"{DATA_VERSION} {n} {seed}":
        return out
    sources = sorted(KODAK.glob("*.png"))
    if not sources:
        sys.exit(f"no Kodak images under {KODAK}")
    rng = np.random.default_rng(seed)
    photos = [Image.open(p).convert("RGB") for p in sources]
    out.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        im = photos[int(rng.integers(len(photos)))]
        w, h = im.size
        frac = rng.uniform(0.45, 1.0)  # crop area fraction
        cw, ch = int(w * np.sqrt(frac)), int(h * np.sqrt(frac))
        x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        crop = im.crop((x0, y0, x0 + cw, y0 + ch))
        long_side = int(rng.integers(450, 501))
        scale = long_side / max(cw, ch)
        crop = crop.resize(
            (max(1, round(cw * scale)), max(1, round(ch * scale))), Image.Resampling.LANCZOS
        )
        if rng.random() < 0.02:
            crop = crop.convert("L")
        cls = out / f"class{i % 10:02d}"
        cls.mkdir(exist_ok=True)
        crop.save(cls / f"img{i:04d}.jpg", "JPEG", quality=int(rng.integers(85, 96)))
    done.write_text(f"{DATA_VERSION} {n} {seed}\n")
    return out


def _decode(data: bytes, gray: bool) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("L" if gray else "RGB"))


def straightforward(levels: list[bytes], gray: bool) -> np.ndarray:
    full = _decode(levels[-1], gray)
    out = []
    for data in levels:
        lev = _decode(data, gray)
        out.append(
            structural_similarity(
                full,
                lev,
                channel_axis=None if gray else -1,
                gaussian_weights=True,
                sigma=1.5,
                use_sample_covariance=False,
                data_range=255,
            )
        )
    return np.array(out)


def _best(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    best, res = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        res = fn()
        best = min(best, time.perf_counter() - t)
    return best, res


def _ndimage_valid(stack: np.ndarray, radius: int) -> np.ndarray:
    """The baseline: separable Gaussian with scipy.ndimage, cropped to the valid region."""
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (x / SIGMA) ** 2)
    w /= w.sum()
    rows = ndimage.correlate1d(stack, w, axis=2, mode="constant")
    both = ndimage.correlate1d(rows, w, axis=1, mode="constant")
    return both[:, radius:-radius, radius:-radius]


def bench_filter(repeat: int) -> dict[str, object]:
    radius = (WINDOW - 1) // 2
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for h, w in ((375, 500), (188, 250), (94, 125), (47, 63)):  # MS-SSIM's five scales
        stack = ((rng.random((9, h, w)) - 0.5) * 255).astype(np.float32)
        t_base, base = _best(lambda: _ndimage_valid(stack, radius), repeat)  # noqa: B023
        t_band, band = _best(lambda: _filter.filter_valid(stack, radius, SIGMA), repeat)  # noqa: B023
        diff = float(np.max(np.abs(np.asarray(base) - np.asarray(band))))
        by_block = {}
        for block in (16, 32, 64):
            _filter.BLOCK = block
            _filter._band.cache_clear()
            by_block[block], _ = _best(
                lambda: _filter.filter_valid(stack, radius, SIGMA),  # noqa: B023
                repeat,
            )
        _filter.BLOCK = 32
        _filter._band.cache_clear()
        rows.append(
            {
                "shape": f"9x{h}x{w}",
                "ndimage_s": t_base,
                "banded_s": t_band,
                "ratio": t_base / t_band,
                "block_s": by_block,
                "max_abs_diff": diff,
            }
        )
    tot_base = sum(r["ndimage_s"] for r in rows)
    tot_band = sum(r["banded_s"] for r in rows)
    return {"stacks": rows, "ratio_total": tot_base / tot_band}


def bench_per_image(folder: Path, n_images: int, repeat: int) -> dict[str, object]:
    files = sorted(folder.rglob("*.jpg"))[:n_images]
    rows: list[dict[str, Any]] = []
    for f in files:
        pj = transcode(f).jpeg
        levels = [pj.level(k) for k in range(1, pj.num_scans + 1)]
        gray = pj.num_components == 1
        t_base, base = _best(lambda: straightforward(levels, gray), repeat)  # noqa: B023
        t_ssim, q_ssim = _best(lambda: level_quality(levels, metrics=("ssim",)), repeat)  # noqa: B023
        t_all, q_all = _best(lambda: level_quality(levels), repeat)  # noqa: B023
        t_lum, _ = _best(lambda: level_quality(levels, luminance=True), repeat)  # noqa: B023
        diff = float(np.max(np.abs(np.asarray(base) - q_ssim.ssim)))  # type: ignore[attr-defined]
        diff_all = float(np.max(np.abs(np.asarray(base) - q_all.ssim)))  # type: ignore[attr-defined]
        rows.append(
            {
                "file": f.name,
                "size": f"{pj.width}x{pj.height}",
                "levels": len(levels),
                "baseline_s": t_base,
                "ssim_rgb_s": t_ssim,
                "all_rgb_s": t_all,
                "all_luminance_s": t_lum,
                "max_abs_diff_ssim": max(diff, diff_all),
            }
        )
    tot = {
        k: sum(r[k] for r in rows)
        for k in ("baseline_s", "ssim_rgb_s", "all_rgb_s", "all_luminance_s")
    }
    return {
        "images": rows,
        "total": tot,
        "ratio_ssim_rgb": tot["baseline_s"] / tot["ssim_rgb_s"],
        "ratio_all_metrics_rgb": tot["baseline_s"] / tot["all_rgb_s"],
        "ratio_all_metrics_luminance": tot["baseline_s"] / tot["all_luminance_s"],
        "max_abs_diff_ssim": max(r["max_abs_diff_ssim"] for r in rows),
    }


def bench_audit(folder: Path, sample: int, full_cache: Path) -> dict[str, object]:
    t = time.perf_counter()
    report = audit(folder, sample=sample, target=0.95)
    audit_s = time.perf_counter() - t
    curve = report.curve
    assert curve is not None

    # ground truth: every image measured (cached: takes minutes)
    if full_cache.exists():
        z = np.load(full_cache)
        values, nbytes, names = z["values"], z["bytes"], list(z["names"])
        full_s = float(z["seconds"])
    else:
        t = time.perf_counter()
        full = quality_curve(folder, sample=None, progress=True)
        full_s = time.perf_counter() - t
        values, nbytes, names = (
            full.per_image.values,
            full.per_image.bytes,
            list(full.per_image.names),
        )
        np.savez(full_cache, values=values, bytes=nbytes, names=np.array(names), seconds=full_s)
    full_curve = QualityCurve.from_values(values, nbytes, names=names)
    frac = report.bytes_fraction
    checks = []
    for statistic in ("mean", "p5"):
        for target in (0.90, 0.95, 0.98):
            s = recommend(curve, target=target, statistic=statistic, bytes_fraction=frac)  # type: ignore[arg-type]
            f = recommend(full_curve, target=target, statistic=statistic, bytes_fraction=frac)  # type: ignore[arg-type]
            checks.append(
                {
                    "statistic": statistic,
                    "target": target,
                    "sampled_scan": s.scan,
                    "full_scan": f.scan,
                    "agree": s.scan == f.scan,
                    "decided": s.decided,
                    "ok": s.scan == f.scan or not s.decided,
                    "sampled_value": s.value,
                    "full_value_at_sampled_scan": float(f.curve.mean[s.scan - 1])
                    if statistic == "mean"
                    else float(np.percentile(values[:, s.scan - 1], 5)),
                    "ci": list(s.ci),
                    "ci_below": list(s.ci_below) if s.ci_below else None,
                    "bytes_fraction": s.bytes_fraction,
                }
            )
    return {
        "images": report.images,
        "readable": report.readable,
        "sample": sample,
        "audit_s": audit_s,
        "problems": len(report.problems),
        "recommended_scan": report.recommended_scan,
        "bytes_fraction": [float(x) for x in frac],
        "full_quality_s": full_s,
        "checks": checks,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1000, help="images in the audit folder")
    ap.add_argument("--per-image", type=int, default=8, help="images for the per-image part")
    ap.add_argument("--repeat", type=int, default=3, help="repeats per timing (best kept)")
    ap.add_argument("--sample", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="100 images, 3 per-image, 1 repeat")
    args = ap.parse_args()
    if args.quick:
        args.images, args.per_image, args.repeat = 100, 3, 1

    folder = imagenet_like(HERE / "_data" / f"imagenet-like-{args.images}", args.images)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} at start")

    filt = bench_filter(max(3, args.repeat))
    print("\n0. the Gaussian window on float32 planes (seconds, best of repeats)")
    print(
        f"{'stack':<14}{'ndimage':>9}{'banded':>9}{'ratio':>7}"
        f"{'block16':>9}{'block32':>9}{'block64':>9}{'diff':>10}"
    )
    for r in filt["stacks"]:  # type: ignore[attr-defined]
        b = r["block_s"]
        print(
            f"{r['shape']:<14}{r['ndimage_s']:9.4f}{r['banded_s']:9.4f}{r['ratio']:6.1f}x"
            f"{b[16]:9.4f}{b[32]:9.4f}{b[64]:9.4f}{r['max_abs_diff']:10.1e}"
        )
    print(f"banded matrix products vs scipy.ndimage, all scales: {filt['ratio_total']:.1f}x")

    per = bench_per_image(folder, args.per_image, args.repeat)
    print(
        f"\n1. all-level quality of one image (10 levels, seconds per image, best of {args.repeat})"
    )
    print(f"{'image':<14}{'size':>9}{'loop':>9}{'ssim':>9}{'all':>9}{'Y all':>9}{'diff':>10}")
    for r in per["images"]:  # type: ignore[attr-defined]
        print(
            f"{r['file']:<14}{r['size']:>9}{r['baseline_s']:9.3f}{r['ssim_rgb_s']:9.3f}"
            f"{r['all_rgb_s']:9.3f}{r['all_luminance_s']:9.3f}{r['max_abs_diff_ssim']:10.1e}"
        )
    print(
        f"speed-up vs the loop: RGB SSIM (like for like) {per['ratio_ssim_rgb']:.1f}x; "
        f"RGB MS-SSIM+SSIM+PSNR {per['ratio_all_metrics_rgb']:.1f}x; "
        f"luminance, all metrics {per['ratio_all_metrics_luminance']:.1f}x (not like for like); "
        f"max |SSIM difference| {per['max_abs_diff_ssim']:.1e}"
    )

    cache = HERE / "_data" / f"imagenet-like-{args.images}-full-quality-v{DATA_VERSION}.npz"
    au = bench_audit(folder, args.sample, cache)
    print(
        f"\n2. audit of {au['images']} images, {au['sample']}-image quality sample: "
        f"{au['audit_s']:.1f} s (target <= 30 s); recommended scan {au['recommended_scan']}; "
        f"every image measured: {au['full_quality_s']:.0f} s"
    )
    print(
        f"{'statistic':<10}{'target':>7}{'sampled':>9}{'all':>6}{'decided':>9}{'ok':>5}"
        f"{'value':>9}{'95% CI':>19}"
    )
    for c in au["checks"]:  # type: ignore[attr-defined]
        print(
            f"{c['statistic']:<10}{c['target']:>7.2f}{c['sampled_scan']:>9}{c['full_scan']:>6}"
            f"{c['decided']!s:>9}{c['ok']!s:>5}{c['sampled_value']:9.4f}"
            f"   {c['ci'][0]:.4f}..{c['ci'][1]:.4f}"
        )
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_at_start": load[0],
            "python": platform.python_version(),
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
        "filter": filt,
        "per_image": per,
        "audit": au,
    }
    out = HERE / "results" / "quality.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
