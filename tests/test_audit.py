"""The dataset audit: planted problems, PCR datasets, JSON, standalone HTML, CLI."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pcr_explore.auditing import ISSUE_TITLES, AuditOptions, AuditReport, audit
from pcr_explore.auditing._inspect import TINY_SIDE
from pcr_explore.cli import main
from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.jpeg import _tjtransform
from pcr_explore.read.sources import FolderSource

GOOD = {"cats": ["chelsea", "coffee"], "space": ["astronaut", "rocket", "camera"]}
CMYK_ISSUE = (
    "CMYK image: converted to RGB with a lossy re-encode (its 18-scan progression "
    "would not share levels with the others)"
)


@pytest.fixture(scope="module")
def planted(
    tmp_path_factory: pytest.TempPathFactory,
    sk_photo: Callable[..., np.ndarray],
    encode_jpeg: Callable[..., bytes],
) -> Path:
    """Five good photos in two classes, and one file for each planted problem."""
    root = tmp_path_factory.mktemp("planted")
    for cls, names in GOOD.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 240)))
    bad = root / "space"
    good = (root / "space" / "astronaut.jpg").read_bytes()
    (bad / "truncated.jpg").write_bytes(good[: len(good) // 2])
    Image.fromarray(sk_photo("coins", 200)).save(bad / "renamed.jpg", format="PNG")
    shutil.copy(root / "cats" / "coffee.jpg", bad / "coffee_copy.jpg")
    Image.fromarray(sk_photo("astronaut", 200)).convert("CMYK").save(bad / "cmyk.jpg", quality=90)
    Image.fromarray(np.full((4, 4, 3), 120, np.uint8)).save(bad / "tiny.jpg", quality=90)
    return root


@pytest.fixture(scope="module")
def report(planted: Path) -> AuditReport:
    return audit(planted, sample=6, workers=2, seed=1, progress=False)


def _issues(report: AuditReport, file: str) -> list[str]:
    return [p["issue"] for p in report.problems if p["file"] == file]


def _types(report: AuditReport, file: str) -> list[str]:
    return [p["type"] for p in report.problems if p["file"] == file]


@pytest.mark.jpegtran
def test_planted_problems_are_found(report: AuditReport) -> None:
    assert report.images == 10 and report.readable == 9  # only the truncated file fails
    (truncated,) = _issues(report, "space/truncated.jpg")
    assert truncated.startswith("cannot decode: image file is truncated")
    assert _types(report, "space/truncated.jpg") == ["bad_file"]
    assert _issues(report, "space/renamed.jpg") == [
        "grayscale: stored with one channel (mode L) in a colour dataset",
        "a PNG file named .jpg",
    ]
    assert _types(report, "space/coffee_copy.jpg") == ["exact_duplicate", "label_leak"]
    assert _issues(report, "space/coffee_copy.jpg")[0] == (
        "exact duplicate of cats/coffee.jpg (identical bytes)"
    )
    assert report.duplicates == [["cats/coffee.jpg", "space/coffee_copy.jpg"]]
    # the CMYK file is the astronaut re-coded: a near duplicate with the same pHash
    assert _types(report, "space/cmyk.jpg") == ["cmyk", "near_duplicate"]
    assert _issues(report, "space/cmyk.jpg") == [
        CMYK_ISSUE,
        "near duplicate of space/astronaut.jpg (pHash distance 0 of 64 bits)",
    ]
    assert _types(report, "space/tiny.jpg") == ["grayscale", "low_information", "odd_size", "tiny"]
    assert f"tiny image 4x4 px (a side under {TINY_SIDE} px; SSIM's window is 11 px)" in (
        _issues(report, "space/tiny.jpg")
    )
    assert _types(report, "space/camera.jpg") == ["grayscale"]  # mode L among colour photos
    assert _types(report, "cats/coffee.jpg") == ["label_leak"]
    for clean in ("cats/chelsea.jpg", "space/astronaut.jpg", "space/rocket.jpg"):
        assert _types(report, clean) == []
    assert len(report.problems) == 13
    keys = [(p["file"], p["type"], p["issue"]) for p in report.problems]
    assert keys == sorted(keys)
    assert report.issue_counts == {
        "bad_file": 1,
        "misnamed": 1,
        "exact_duplicate": 1,
        "near_duplicate": 1,
        "label_leak": 2,
        "low_information": 1,
        "grayscale": 3,
        "odd_size": 1,
        "tiny": 1,
        "cmyk": 1,
    }
    assert report.duplicate_sets == [
        {
            "kind": "exact",
            "files": ["cats/coffee.jpg", "space/coffee_copy.jpg"],
            "classes": ["cats", "space"],
            "max_distance": 0,
            "label_leak": True,
        },
        {
            "kind": "near",
            "files": ["space/astronaut.jpg", "space/cmyk.jpg"],
            "classes": ["space", "space"],
            "max_distance": 0,
            "label_leak": False,
        },
    ]


@pytest.mark.jpegtran
def test_contents_are_counted(report: AuditReport) -> None:
    assert report.formats == {"JPEG": 9, "PNG": 1}
    assert report.modes == {"RGB": 7, "L": 2, "CMYK": 1}  # camera and the PNG coins are L
    assert report.classes == {"cats": 2, "space": 8}
    assert report.coding == {"baseline JPEG": 8, "not JPEG": 1, "unreadable": 1}
    assert report.sizes["width"] == {"min": 4.0, "median": 240.0, "max": 240.0}
    assert report.sizes["shorter_side"]["0-31"] == 1
    assert report.sizes["shorter_side"]["128-255"] == 8
    lossy = ": lossy, and the full level is this copy, not the original file"
    assert report.conversions == [
        {
            "file": "space/cmyk.jpg",
            "note": "CMYK converted to RGB (its 18-scan progression would not share levels); "
            "JPEG CMYK source re-encoded as JPEG at quality 90" + lossy,
            "lossless": False,
        },
        {
            "file": "space/renamed.jpg",
            "note": "PNG L source re-encoded as JPEG at quality 90" + lossy,
            "lossless": False,
        },
    ]
    assert "2 images re-encoded with loss at encode" in report.summary()


@pytest.mark.jpegtran
def test_bytes_quality_and_recommendation(report: AuditReport, planted: Path) -> None:
    # the bytes per level, computed without decoding, are the transcoded files' own
    src = FolderSource(planted)
    readable = [i for i, n in enumerate(src.names) if n != "space/truncated.jpg"]
    np.testing.assert_array_equal(report.level_bytes, sum(src.level_bytes(i) for i in readable))
    sizes = sum((planted / src.names[i]).stat().st_size for i in readable)
    assert report.source_bytes == sizes
    np.testing.assert_allclose(report.bytes_fraction, report.level_bytes / report.level_bytes[-1])
    curve = report.curve
    assert curve is not None and curve.sample_size == 6
    scan = report.recommended_scan
    assert scan is not None
    # the 5th percentile by default, as the tuner and the budget
    assert report.tune is not None and report.tune.statistic == "p5"
    assert curve.p5[scan - 1] >= 0.95 and (scan == 1 or curve.p5[scan - 2] < 0.95)
    assert report.tune is not None
    assert report.tune.bytes_fraction == pytest.approx(report.bytes_fraction[scan - 1])
    values = [w["value"] for w in report.worst]
    assert values == sorted(values) and len(values) == 6
    assert values[0] == pytest.approx(curve.per_image.values[:, scan - 1].min())
    assert report.worst[0]["thumb_full"].startswith("data:image/jpeg;base64,")


def test_a_bytes_sample_estimates_bytes_and_checks_every_file(
    report: AuditReport, planted: Path
) -> None:
    quick = audit(
        planted, sample=2, workers=2, seed=1, progress=False, options=AuditOptions(bytes_sample=4)
    )
    # every file is still read, decoded and checked: the same problems and scores
    assert quick.problems == report.problems and quick.scores == report.scores
    assert quick.readable == report.readable and quick.source_bytes == report.source_bytes
    # four readable files transcoded, among them the two of the quality sample
    assert quick.bytes_measured == 4 and quick.to_dict()["bytes_measured"] == 4
    assert quick.curve is not None and quick.curve.sample_size == 2
    assert quick.options["bytes_sample"] == 4
    # their bytes per source byte, times every readable file's source bytes
    src = FolderSource(planted)
    coded = [i for i in range(len(src)) if src.names[i] in _transcoded(quick, planted)]
    assert len(coded) == 4
    per_byte = sum(src.level_bytes(i) for i in coded) / sum(
        (planted / src.names[i]).stat().st_size for i in coded
    )
    np.testing.assert_array_equal(quick.level_bytes, np.rint(per_byte * quick.source_bytes))
    # its 95% interval: the ratio estimate's t interval (3 degrees of freedom), with the
    # finite population correction for 4 of 9 readable images
    y = np.array([src.level_bytes(i) for i in coded], np.float64)
    x = np.array([(planted / src.names[i]).stat().st_size for i in coded], np.float64)
    resid = y - x[:, None] * per_byte
    half = 3.182 * 9 * np.sqrt((1 - 4 / 9) / 4 * resid.var(axis=0, ddof=1))
    assert quick.bytes_interval is not None and quick.bytes_interval.shape == (2, 10)
    np.testing.assert_allclose(quick.bytes_interval[1] - quick.level_bytes, half, rtol=2e-3, atol=1)
    np.testing.assert_allclose(quick.level_bytes - quick.bytes_interval[0], half, rtol=2e-3, atol=1)
    row = quick.levels()[4]
    assert row["bytes_low"] == quick.bytes_interval[0, 4] < row["bytes"] < row["bytes_high"]
    assert quick.to_dict()["levels"][4]["bytes_high"] == row["bytes_high"]
    assert any("estimated from the 4 of" in n and "95% interval" in n for n in quick.notes)
    text = quick.summary()
    assert "estimated from the 4 of" in text and "bytes (est.)" in text and "95% interval" in text
    assert f"+-{half[4] / quick.level_bytes[4]:7.1%}" in text
    html = quick._repr_html_()
    assert "bytes (estimated, 95% interval)" in html
    assert f"{row['bytes']:,} ({row['bytes_low']:,} to {row['bytes_high']:,})" in html
    assert "estimated from the 4 transcoded (ratio estimate; its t interval)" in html
    # all of them: the exact figures, and nothing said about estimates
    whole = audit(
        planted, sample=2, workers=1, seed=1, progress=False, options=AuditOptions(bytes_sample=100)
    )
    np.testing.assert_array_equal(whole.level_bytes, report.level_bytes)
    assert whole.bytes_measured is None and not any("estimated" in n for n in whole.notes)
    assert whole.bytes_interval is None and "bytes_low" not in whole.levels()[0]
    assert "(est" not in whole.summary() and "+-" not in whole.summary()


@pytest.mark.skipif(not _tjtransform.available(), reason="libturbojpeg not installed")
def test_a_bytes_sample_still_finds_corrupt_jpegs_it_does_not_transcode(
    tmp_path: Path, sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]
) -> None:
    # an RST marker inside the entropy data: Pillow decodes it, libjpeg warns
    for n in ["chelsea", "coffee", "rocket", "camera"]:
        (tmp_path / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 160)))
    good = encode_jpeg(sk_photo("astronaut", 160))
    mid = (good.index(b"\xff\xda") + len(good)) // 2
    (tmp_path / "corrupt.jpg").write_bytes(good[:mid] + b"\xff\xd5" + good[mid + 2 :])
    Image.open(tmp_path / "corrupt.jpg").load()  # Pillow alone would not notice
    names = sorted(p.name for p in tmp_path.iterdir())

    def first(seed: int) -> str:  # the only image a bytes sample of 1 transcodes
        return names[int(np.random.default_rng(seed).permutation(len(names))[0])]

    seed = next(s for s in range(20) if first(s) != "corrupt.jpg")
    full = audit(tmp_path, sample=1, seed=seed, workers=1, progress=False)
    quick = audit(
        tmp_path,
        sample=1,
        seed=seed,
        workers=1,
        progress=False,
        options=AuditOptions(bytes_sample=1),
    )
    assert quick.bytes_measured == 1
    want = [p for p in full.problems if p["file"] == "corrupt.jpg"]
    assert want and want[0]["type"] == "bad_file" and "cannot transcode" in want[0]["issue"]
    assert [p for p in quick.problems if p["file"] == "corrupt.jpg"] == want


def _transcoded(r: AuditReport, root: Path) -> set[str]:
    """Files whose bytes the audit measured: the start of its seeded order, readable ones."""
    from pcr_explore.auditing._target import open_target

    names = open_target(root, "auto", 90).names
    perm = np.random.default_rng(r.options["seed"]).permutation(len(names))
    order = [names[int(i)] for i in perm]
    broken = {p["file"] for p in r.problems if p["type"] == "bad_file"}
    take = max(r.options["sample"], r.options["bytes_sample"])
    return {n for n in order[:take] if n not in broken}


@pytest.mark.jpegtran
def test_json(report: AuditReport, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    text = report.to_json(out)
    d = json.loads(out.read_text())
    assert json.loads(text) == d == report.to_dict()
    assert d["images"] == 10 and d["target"] == 0.95 and d["metric"] == "mssim"
    assert d["recommended_scan"] == report.recommended_scan
    assert d["levels"] == report.levels()
    assert [lev["scan"] for lev in d["levels"]] == list(range(1, 11))
    assert d["levels"][-1]["bytes_fraction"] == 1.0 and d["levels"][-1]["mean"] == 1.0
    renamed = {"file": "space/renamed.jpg", "type": "misnamed", "issue": "a PNG file named .jpg"}
    assert renamed in d["problems"]
    assert [set(w) for w in d["worst"]] == [{"file", "index", "value", "bytes_fraction"}] * 6
    # one scores row per image, in index order; the unreadable file's scores are null
    assert [row["file"] for row in d["scores"]] == [r["file"] for r in report.scores]
    assert len(d["scores"]) == 10
    (trunc,) = [row for row in d["scores"] if row["file"] == "space/truncated.jpg"]
    assert trunc["dark"] is None and trunc["phash"] is None
    (tiny,) = [row for row in d["scores"] if row["file"] == "space/tiny.jpg"]
    assert tiny["low_information"] == 0.0 and tiny["odd_aspect_ratio"] == 1.0
    assert d["duplicate_sets"] == report.duplicate_sets
    assert d["issue_counts"]["label_leak"] == 2
    assert d["checks"]["dark"] == {
        "score": "99th percentile of pixel brightness (0-1)",
        "threshold": 0.32,
        "flagged_when": "score < threshold",
    }
    assert d["examples"]["odd_size"] == [{"file": "space/tiny.jpg", "score": tiny["odd_size"]}]
    assert "thumb" not in text  # thumbnails stay out of the JSON


@pytest.mark.jpegtran
def test_standalone_html(report: AuditReport, tmp_path: Path) -> None:
    out = report.to_html(tmp_path / "sub" / "audit.html")
    page = out.read_text(encoding="utf-8")
    assert [p.name for p in out.parent.iterdir()] == ["audit.html"]  # no temp file left
    # nothing has to be fetched: no script or stylesheet from a URL
    assert not re.findall(r"<script[^>]+src=[\"']?(?:https?:)?//", page, re.I)
    assert not re.findall(r"<link[^>]+href=[\"']?(?:https?:)?//", page, re.I)
    assert not re.findall(r"<img[^>]+src=[\"']?(?:https?:)?//", page, re.I)
    assert page.count("Bokeh.embed.embed_items") == 1  # the plots, with BokehJS inlined
    # the worst images (full and level) and the issue thumbnails, all inlined
    shown = page.count("data:image/jpeg;base64,")
    assert shown >= 2 * len(report.worst) + len(report.thumbnails)
    assert set(report.thumbnails) == {
        "cats/coffee.jpg",
        "space/coffee_copy.jpg",
        "space/astronaut.jpg",
        "space/cmyk.jpg",
        "space/tiny.jpg",
        "space/camera.jpg",
        "space/renamed.jpg",
    }
    assert all(uri in page for uri in report.thumbnails.values())
    assert "p5 to p95 of images" in page and "Bytes read per scan level" in page
    assert "<td>space/renamed.jpg</td><td>a PNG file named .jpg</td>" in page
    # a section per issue type, and the duplicate sets side by side, leaks marked
    for kind in report.issue_counts:
        assert f"id='issue-{kind}'" in page
    assert page.count("<div class='dupset leak'>") == 1 and page.count("<div class='dupset'>") == 1
    assert f"Recommended scan level: {report.recommended_scan} of 10" in page
    assert f"<tr class='rec'><td>{report.recommended_scan}</td>" in page


@pytest.mark.jpegtran
def test_repr_html_and_summary(report: AuditReport) -> None:
    frag = report._repr_html_()
    assert "<script" not in frag and "<td>space/tiny.jpg</td>" in frag
    assert all(uri in frag for uri in report.thumbnails.values())
    assert "Duplicate sets (2)" in frag and "label leak" in frag
    text = report.summary()
    assert str(report) == text
    head = text.splitlines()[0]
    assert head.startswith(
        f"{report.path}: folder, 10 images (9 readable), 2 classes, 13 problems ("
    )
    assert head.endswith(", 2 duplicate sets" + head.split(", 2 duplicate sets")[1])
    # which kinds, with the files of each, in the report's order of issues
    kinds = ", ".join(f"{ISSUE_TITLES[k].lower()} {n:,}" for k, n in report.issue_counts.items())
    assert f"13 problems ({kinds})" in head and "grayscale 3" in head
    assert "exact duplicates: cats/coffee.jpg, space/coffee_copy.jpg  LABEL LEAK" in text
    assert "  Grayscale                                     3  [grayscale score < 0.02]" in text
    marked = [line for line in text.splitlines() if line.endswith("<- recommended")]
    assert len(marked) == 1 and marked[0].split()[0] == str(report.recommended_scan)


@pytest.mark.jpegtran
def test_audit_pcr_dataset(planted: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for cls, names in GOOD.items():
        (src / cls).mkdir(parents=True)
        for n in names:
            shutil.copy(planted / cls / f"{n}.jpg", src / cls)
    shutil.copy(planted / "space" / "truncated.jpg", src / "space")
    encode_dataset(src, tmp_path / "pcr", workers=1, progress=False)
    r = audit(tmp_path / "pcr", sample=3, workers=2, progress=False)
    assert r.kind == "pcr" and r.images == 5 and r.readable == 5
    assert r.classes == {"cats": 2, "space": 3}
    assert r.coding == {"standard progressive JPEG": 5}
    # skipped at encode, and the grayscale camera among colour photos
    assert [(p["file"], p["type"]) for p in r.problems] == [
        ("space/camera.jpg", "grayscale"),
        ("space/truncated.jpg", "bad_file"),
    ]
    assert r.problems[1]["issue"].startswith("skipped at encode")
    assert r.duplicates == [] and r.recommended_scan is not None
    folder = audit(src, sample=None, workers=1, progress=False)
    # the same images give the same bytes per level either way
    np.testing.assert_array_equal(r.level_bytes, folder.level_bytes)
    # and the same properties, within what the transcode (lossless here) leaves
    by_file = {row["file"]: row for row in folder.scores}
    for row in r.scores:
        other = by_file[row["file"]]
        assert row["phash"] == other["phash"]
        for k in ("dark", "light", "blurry", "low_information", "odd_size"):
            assert row[k] == pytest.approx(other[k], abs=0.02)


def test_all_broken_folder_still_gets_an_audit(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(b"\xff\xd8\xff\xe0 broken")
    (tmp_path / "b.png").write_bytes(b"")
    r = audit(tmp_path, sample=4, workers=1, progress=False)
    assert r.images == 2 and r.readable == 0 and r.recommended_scan is None
    assert r.problems == [
        {"file": "a.jpg", "type": "bad_file", "issue": "cannot decode: Truncated File Read"},
        {"file": "b.png", "type": "bad_file", "issue": "empty file"},
    ]
    assert r.duplicate_sets == [] and r.scores[1]["dark"] is None
    np.testing.assert_array_equal(r.level_bytes, np.zeros(10))
    d = json.loads(r.to_json())
    assert d["recommended_scan"] is None and d["levels"][0]["mean"] is None
    assert d["levels"][0]["bytes_fraction"] is None  # no bytes: NaN, written as null
    page = r.to_html(tmp_path / "r.html").read_text()
    assert "No image could be measured: no recommendation." in page


def test_audit_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        audit(tmp_path / "missing")
    with pytest.raises(ValueError, match="unknown metric 'vif'"):
        audit(tmp_path, metric="vif")
    with pytest.raises(ValueError, match=r"an MS-SSIM target must be in \(0, 1\], got 95"):
        audit(tmp_path / "missing", target=95)  # options first: the path is not looked at
    with pytest.raises(ValueError, match="unknown statistic 'max'"):
        audit(tmp_path, statistic="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sample must be a positive"):
        audit(tmp_path, sample=0)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="not an image file"):
        audit(tmp_path / "notes.txt")


@pytest.mark.jpegtran
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
    assert d["metric"] == "ssim" and d["target"] == 0.9 and d["statistic"] == "p5"
    assert d["sample_size"] == 3 and d["images"] == 10 and len(d["problems"]) == 13
    html = page.read_text(encoding="utf-8")
    assert f"Recommended scan level: {d['recommended_scan']} of 10" in html
    assert html.count("Bokeh.embed.embed_items") == 1

    assert main(["audit", str(planted / "cats" / "coffee.jpg"), "--json", "-", "--quiet"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["images"] == 1 and one["kind"] == "file" and one["classes"] == {"(no class)": 1}

    args = ["audit", str(planted), "--sample", "2", "--bytes-sample", "3", "--json", "-"]
    assert main([*args, "--quiet", "--workers", "1"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert quick["bytes_measured"] == 3 and quick["options"]["bytes_sample"] == 3
    assert all(row["bytes_low"] < row["bytes"] < row["bytes_high"] for row in quick["levels"][:-1])
    # the default: 32 transcoded (all 9 readable here, so exact); --exact-bytes says so outright
    exact = [*args[:4], "--exact-bytes", "--full-size-quality", "--json", "-", "--quiet"]
    assert main([*exact, "--workers", "1"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["options"]["bytes_sample"] is None and whole["options"]["quality_pixels"] is None
    assert whole["bytes_measured"] == whole["readable"] and "bytes_low" not in whole["levels"][0]
    with pytest.raises(SystemExit):
        main([*args[:4], "--exact-bytes", "--bytes-sample", "3"])  # one or the other
    assert "not allowed with argument" in capsys.readouterr().err

    assert main(["audit", str(tmp_path / "nope")]) == 1
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["audit", str(planted), "--metric", "vif"])


def test_the_report_repr_is_one_short_line(report: AuditReport) -> None:
    text = repr(report)
    assert len(text) < 200 and "\n" not in text
    assert text.startswith("<AuditReport ") and f"{report.images:,} images" in text


def test_a_file_name_that_is_not_utf8_is_shown_escaped(photo_folder: Path, tmp_path: Path) -> None:
    import os

    src = tmp_path / "src"
    src.mkdir()
    data = (photo_folder / "animals" / "coffee.jpg").read_bytes()
    with open(os.path.join(os.fsencode(src), b"caf\xe9.jpg"), "wb") as f:  # Latin-1 bytes
        f.write(data)
    (src / "plain.jpg").write_bytes(data)
    report = audit(src, sample=1, workers=1, progress=False)
    page = report.to_html(tmp_path / "r.html").read_text("utf-8")  # strict UTF-8
    assert "caf\\xe9.jpg" in page
    parsed = json.loads(report.to_json())  # no lone surrogate left for a parser to choke on
    assert "caf\\xe9.jpg" in {row["file"] for row in parsed["scores"]}


def test_the_audit_says_what_its_bytes_count(report: AuditReport) -> None:
    assert "bytes: the images' JPEG bytes at each level" in report.summary()
