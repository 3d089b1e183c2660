"""Audit options: checked before any work, a target per metric, bounded quality work."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pcr_explore.auditing import DEFAULT_TARGETS, AuditOptions, audit
from pcr_explore.auditing import _audit as audit_module
from pcr_explore.auditing._options import MAX_QUALITY_PIXELS, QUALITY_PIXELS
from pcr_explore.cli import main
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.quality import level_quality

MISSING = Path("/nonexistent/pcr-explore-audit")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": 95}, r"an MS-SSIM target must be in \(0, 1\], got 95 \(did you mean 0.95\?\)"),
        ({"metric": "ssim", "target": 0}, r"an SSIM target must be in \(0, 1\], got 0"),
        ({"metric": "psnr", "target": 0.95}, r"a PSNR target is in dB and must be in \[10, 100\]"),
        ({"target": float("nan")}, r"target must be in \(0, 1\], got nan"),
        ({"target": "high"}, "target must be a number"),
        ({"metric": "vif"}, "unknown metric 'vif'"),
        ({"statistic": "max"}, "unknown statistic 'max'"),
        ({"sample": 0}, "sample must be a positive number of images, got 0"),
        ({"sample": True}, "sample must be a positive number of images or None"),
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
        ({"worst": -1}, "worst must be an integer >= 0, got -1"),
        ({"seed": 1.5}, "seed must be an integer >= 0"),
        ({"max_pixels": 0}, "max_pixels must be an integer >= 1"),
        ({"bytes_sample": 0}, "bytes_sample must be an integer >= 1, got 0"),
        ({"quality_pixels": 0}, "quality_pixels must be an integer >= 1, got 0"),
        ({"luminance": "yes"}, "luminance must be True or False"),
        ({"backend": "magick"}, "unknown backend 'magick'"),
        ({"quality": 200}, "quality must be an integer in 1..100, got 200"),
        ({"thresholds": {"fuzzy": 1}}, "no threshold for 'fuzzy'"),
        ({"thresholds": {"dark": -1}}, "threshold for dark must be a finite number >= 0"),
    ],
)
def test_every_option_is_checked_before_any_work(
    kwargs: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_work(*args: object, **kw: object) -> None:
        raise AssertionError("the audit opened its target before checking its options")

    monkeypatch.setattr(audit_module, "open_target", no_work)
    rare = {k: kwargs.pop(k) for k in list(kwargs) if k in AuditOptions.__dataclass_fields__}
    with pytest.raises(ValueError, match=message):
        audit(MISSING, **kwargs, options=AuditOptions(**rare))


def test_each_metric_gets_its_own_default_target(
    tmp_path: Path, sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]
) -> None:
    assert DEFAULT_TARGETS == {"mssim": 0.95, "ssim": 0.95, "psnr": 35.0}
    (tmp_path / "a.jpg").write_bytes(encode_jpeg(sk_photo("astronaut", 160)))
    r = audit(tmp_path, sample=1, metric="psnr", workers=1, progress=False)
    assert r.options["target"] == 35.0 and r.tune is not None and r.tune.target == 35.0
    # 35 dB is not met at scan 1 of a photograph, as a 0.95 "PSNR" target would be
    assert r.recommended_scan is not None and r.recommended_scan > 1
    assert r.options["max_pixels"] == MAX_QUALITY_PIXELS


def test_cli_rejects_a_bad_target_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []
    monkeypatch.setattr(audit_module, "open_target", lambda *a, **k: opened.append(a))
    assert main(["audit", str(MISSING), "--target", "95"]) == 1
    assert opened == []  # at once: refused before the audit opens its target
    err = capsys.readouterr().err
    assert "an MS-SSIM target must be in (0, 1], got 95 (did you mean 0.95?)" in err
    assert main(["audit", str(MISSING), "--metric", "psnr", "--target", "0.95"]) == 1
    assert "a PSNR target is in dB" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["audit", str(MISSING), "--threshold", "blurry"])
    assert "expected ISSUE=VALUE" in capsys.readouterr().err


def test_cli_thresholds_and_defaults(
    tmp_path: Path,
    sk_photo: Callable[..., np.ndarray],
    encode_jpeg: Callable[..., bytes],
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a.jpg").write_bytes(encode_jpeg(sk_photo("astronaut", 160)))
    (tmp_path / "b.jpg").write_bytes(encode_jpeg(sk_photo("coffee", 160)))
    out = tmp_path / "r.json"
    args = ["audit", str(tmp_path), "--quiet", "--sample", "1", "--workers", "1"]
    assert main([*args, "--metric", "psnr", "--threshold", "dark=0.99", "--json", str(out)]) == 0
    import json

    d = json.loads(out.read_text())
    assert d["target"] == 35.0 and d["checks"]["dark"]["threshold"] == 0.99
    assert sorted(p["file"] for p in d["problems"] if p["type"] == "dark") == ["a.jpg", "b.jpg"]


def _big_jpeg(w: int, h: int) -> bytes:
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x % 251, y % 241, (x // 7 + y // 5) % 256], axis=-1).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def test_level_quality_bounds_the_pixels_it_measures() -> None:
    pj = transcode(_big_jpeg(800, 600)).jpeg
    levels = [pj.level(k) for k in range(1, pj.num_scans + 1)]
    full = level_quality(levels, metrics=("ssim",))
    small = level_quality(levels, metrics=("ssim",), max_pixels=60_000)
    assert full.note == ""
    # 480,000 px over 60,000: 1/3 of each side (1/2 by DCT scaling, then a box reduction)
    assert small.note == "measured at 1/3 size: 800x600 px is over the 60,000-pixel bound"
    np.testing.assert_array_equal(small.bytes, full.bytes)
    assert small.ssim[-1] == 1.0
    # measured small, each level's SSIM stays within 0.06 of the full-size value here
    np.testing.assert_allclose(small.ssim, full.ssim, atol=0.06)
    assert level_quality(levels, metrics=("psnr",), max_pixels=480_000).note == ""


def test_audit_says_when_quality_was_measured_small(tmp_path: Path) -> None:
    (tmp_path / "big.jpg").write_bytes(_big_jpeg(1200, 900))
    memory = AuditOptions(max_pixels=200000, quality_pixels=None)
    r = audit(tmp_path, sample=1, workers=1, progress=False, options=memory)
    assert r.curve is not None
    assert r.curve.notes == (
        ("big.jpg", "measured at 1/3 size: 1200x900 px is over the 200,000-pixel bound"),
    )
    assert any(n.startswith("1 sampled image(s) larger than 200,000 pixels") for n in r.notes)
    assert "larger than 200,000 pixels had their quality measured" in r.summary()
    assert "to bound memory" in r.summary()
    # by default the CPU bound is the tighter one: 1,080,000 px over 131,072 is 1/3 again
    cpu = audit(tmp_path, sample=1, workers=1, progress=False)
    assert cpu.options["quality_pixels"] == QUALITY_PIXELS == 131_072
    assert cpu.curve is not None
    assert cpu.curve.notes == (
        ("big.jpg", "measured at 1/3 size: 1200x900 px is over the 131,072-pixel bound"),
    )
    assert "to bound CPU (quality_pixels)" in cpu.summary()
    # quality_pixels=None measures at full size, up to max_pixels
    full = audit(
        tmp_path, sample=1, workers=1, progress=False, options=AuditOptions(quality_pixels=None)
    )
    assert full.curve is not None and full.curve.notes == ()
