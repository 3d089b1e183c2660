"""The dataset audit: planted problems, PCR datasets, JSON, standalone HTML, CLI."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import jpeg_bytes, needs_jpegtran, photo
from PIL import Image

from pcr_explore.audit import AuditReport, audit
from pcr_explore.cli import main
from pcr_explore.encoder import encode_dataset

GOOD = {"cats": ["chelsea", "coffee"], "space": ["astronaut", "rocket", "camera"]}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five good photos in two classes, and one file for each planted problem."""
    root = tmp_path_factory.mktemp("planted")
    for cls, names in GOOD.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(jpeg_bytes(photo(n, 240)))
    bad = root / "space"
    good = (root / "space" / "astronaut.jpg").read_bytes()
    (bad / "truncated.jpg").write_bytes(good[: len(good) // 2])
    Image.fromarray(photo("coins", 200)).save(bad / "renamed.jpg", format="PNG")
    shutil.copy(root / "cats" / "coffee.jpg", bad / "coffee_copy.jpg")
    Image.fromarray(photo("astronaut", 200)).convert("CMYK").save(bad / "cmyk.jpg", quality=90)
    Image.fromarray(np.full((4, 4, 3), 120, np.uint8)).save(bad / "tiny.jpg", quality=90)
    return root


@pytest.fixture(scope="module")
def report(planted: Path) -> AuditReport:
    return audit(planted, sample=6, workers=2, seed=1)


def _issues(report: AuditReport, file: str) -> list[str]:
    return [p["issue"] for p in report.problems if p["file"] == file]


@needs_jpegtran
def test_planted_problems_are_found(report: AuditReport) -> None:
    assert report.images == 10 and report.readable == 9  # only the truncated file fails
    assert any("truncated" in i for i in _issues(report, "space/truncated.jpg"))
    assert _issues(report, "space/renamed.jpg") == ["a PNG file named .jpg"]
    assert _issues(report, "space/coffee_copy.jpg") == [
        "duplicate of cats/coffee.jpg (identical bytes)"
    ]
    assert report.duplicates == [["cats/coffee.jpg", "space/coffee_copy.jpg"]]
    assert any("CMYK" in i for i in _issues(report, "space/cmyk.jpg"))
    assert any("tiny image 4x4" in i for i in _issues(report, "space/tiny.jpg"))
    good = [f"{c}/{n}.jpg" for c, names in GOOD.items() for n in names]
    assert not [p for p in report.problems if p["file"] in good]
    assert all(set(p) == {"file", "issue"} for p in report.problems)


@needs_jpegtran
def test_contents_are_counted(report: AuditReport) -> None:
    assert report.formats == {"JPEG": 9, "PNG": 1}
    assert report.modes["CMYK"] == 1 and report.modes["L"] == 2  # camera and the PNG coins
    assert report.classes == {"cats": 2, "space": 8}
    assert report.coding["baseline JPEG"] == 8 and report.coding["not JPEG"] == 1
    assert report.sizes["width"]["min"] == 4 and report.sizes["width"]["max"] == 240
    assert report.sizes["shorter_side"]["0-31"] == 1
    assert {c["file"] for c in report.conversions} == {"space/cmyk.jpg", "space/renamed.jpg"}


@needs_jpegtran
def test_bytes_quality_and_recommendation(report: AuditReport) -> None:
    lb = report.level_bytes
    assert len(lb) == 10 and np.all(np.diff(lb) >= 0) and lb[0] > 0
    assert report.bytes_fraction[-1] == 1.0
    curve = report.curve
    assert curve is not None and curve.sample_size == 6
    scan = report.recommended_scan
    assert scan is not None and 1 <= scan <= 10
    assert curve.mean[scan - 1] >= 0.95 and (scan == 1 or curve.mean[scan - 2] < 0.95)
    assert report.tune is not None
    assert report.tune.bytes_fraction == pytest.approx(report.bytes_fraction[scan - 1])
    values = [w["value"] for w in report.worst]
    assert values == sorted(values) and len(values) == 6
    assert values[0] == pytest.approx(curve.per_image.values[:, scan - 1].min())
    assert report.worst[0]["thumb_full"].startswith("data:image/jpeg;base64,")


@needs_jpegtran
def test_json(report: AuditReport, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    text = report.to_json(out)
    d = json.loads(out.read_text())
    assert json.loads(text) == d
    assert {"images", "levels", "recommended_scan", "target", "metric", "problems"} <= set(d)
    assert d["images"] == 10 and d["target"] == 0.95 and d["metric"] == "mssim"
    assert d["recommended_scan"] == report.recommended_scan
    assert len(d["levels"]) == 10
    for lev in d["levels"]:
        assert {"scan", "bytes_fraction", "mean", "p5", "p50", "p95"} <= set(lev)
    assert d["levels"][-1]["bytes_fraction"] == 1.0 and d["levels"][-1]["mean"] == 1.0
    assert {"file": "space/renamed.jpg", "issue": "a PNG file named .jpg"} in d["problems"]
    assert "thumb_full" not in json.dumps(d["worst"])


@needs_jpegtran
def test_standalone_html(report: AuditReport, tmp_path: Path) -> None:
    out = report.to_html(tmp_path / "sub" / "audit.html")
    page = out.read_text(encoding="utf-8")
    assert [p.name for p in out.parent.iterdir()] == ["audit.html"]  # no temp file left
    # nothing has to be fetched: no script or stylesheet from a URL
    assert not re.findall(r"<script[^>]+src=[\"']?(?:https?:)?//", page, re.I)
    assert not re.findall(r"<link[^>]+href=[\"']?(?:https?:)?//", page, re.I)
    assert not re.findall(r"<img[^>]+src=[\"']?(?:https?:)?//", page, re.I)
    assert "Bokeh.embed.embed_items" in page  # the plots, with BokehJS inlined
    assert page.count("data:image/jpeg;base64,") == 2 * len(report.worst)
    assert "p5 to p95 of images" in page and "Bytes read per scan level" in page
    assert "space/renamed.jpg" in page and "a PNG file named .jpg" in page
    assert f"Recommended scan level: {report.recommended_scan} of 10" in page


@needs_jpegtran
def test_repr_html_and_summary(report: AuditReport) -> None:
    frag = report._repr_html_()
    assert "<script" not in frag and "space/tiny.jpg" in frag
    text = report.summary()
    assert "10 images (9 readable)" in text and "<- recommended" in text


@needs_jpegtran
def test_audit_pcr_dataset(planted: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for cls, names in GOOD.items():
        (src / cls).mkdir(parents=True)
        for n in names:
            shutil.copy(planted / cls / f"{n}.jpg", src / cls)
    shutil.copy(planted / "space" / "truncated.jpg", src / "space")
    encode_dataset(src, tmp_path / "pcr", workers=1, progress=False)
    r = audit(tmp_path / "pcr", sample=3, workers=1)
    assert r.kind == "pcr" and r.images == 5 and r.readable == 5
    assert r.classes == {"cats": 2, "space": 3}
    assert r.coding == {"standard progressive JPEG": 5}
    assert [p["file"] for p in r.problems] == ["space/truncated.jpg"]  # skipped at encode
    assert r.problems[0]["issue"].startswith("skipped at encode")
    assert r.duplicates == [] and r.recommended_scan is not None
    folder = audit(src, sample=None, workers=1)
    # the same images give the same bytes per level either way
    np.testing.assert_array_equal(r.level_bytes, folder.level_bytes)


def test_all_broken_folder_still_gets_an_audit(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(b"\xff\xd8\xff\xe0 broken")
    (tmp_path / "b.png").write_bytes(b"")
    r = audit(tmp_path, sample=4, workers=1)
    assert r.images == 2 and r.readable == 0 and r.recommended_scan is None
    assert {p["file"] for p in r.problems} == {"a.jpg", "b.png"}
    assert "empty file" in _issues(r, "b.png")
    d = json.loads(r.to_json())
    assert d["recommended_scan"] is None and d["levels"][0]["mean"] is None
    page = r.to_html(tmp_path / "r.html").read_text()
    assert "No image could be measured" in page


def test_audit_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        audit(tmp_path / "missing")
    with pytest.raises(ValueError, match="metric"):
        audit(tmp_path, metric="vif")
    with pytest.raises(ValueError, match="statistic"):
        audit(tmp_path, statistic="max")  # type: ignore[arg-type]


@needs_jpegtran
def test_cli_audit(planted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js, page = tmp_path / "a.json", tmp_path / "a.html"
    rc = main(
        [
            "audit",
            str(planted),
            "--sample",
            "3",
            "--target",
            "0.9",
            "--metric",
            "ssim",
            "--statistic",
            "p5",
            "--json",
            str(js),
            "--html",
            str(page),
            "--workers",
            "1",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "<- recommended" in out and "problem: space/tiny.jpg" in out
    d = json.loads(js.read_text())
    assert {"images", "levels", "recommended_scan", "target", "metric", "problems"} <= set(d)
    assert d["metric"] == "ssim" and d["target"] == 0.9 and d["statistic"] == "p5"
    assert d["sample_size"] == 3 and page.stat().st_size > 100_000
    assert all(set(p) == {"file", "issue"} for p in d["problems"])

    assert main(["audit", str(planted / "cats" / "coffee.jpg"), "--json", "-", "--quiet"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["images"] == 1 and one["kind"] == "file"

    assert main(["audit", str(tmp_path / "nope")]) == 1
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["audit", str(planted), "--metric", "vif"])
