"""The audit's image checks on a planted folder: each issue on its file, scores, sets, leaks."""

from __future__ import annotations

import io
import math
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFilter

from pcr_explore.auditing import CHECKS, AuditOptions, AuditReport, audit
from pcr_explore.auditing._duplicates import exact_groups, hamming, near_duplicates
from pcr_explore.auditing._inspect import FileJob, inspect_file
from pcr_explore.auditing._properties import phash, reduced_image
from pcr_explore.errors import MissingExtraError
from pcr_explore.jpeg import _tjtransform


def texture(seed: int, w: int, h: int) -> np.ndarray:
    """A colourful image with fine detail: smooth random colour plus grain."""
    rng = np.random.default_rng(seed)
    low = rng.integers(0, 256, (max(2, h // 24), max(2, w // 24), 3), dtype=np.uint8)
    base = np.asarray(Image.fromarray(low).resize((w, h), Image.Resampling.BICUBIC), np.float32)
    grain = rng.normal(0, 18, (h, w, 1)).astype(np.float32)
    return np.clip(base + grain, 0, 255).astype(np.uint8)


# What each planted file must be flagged with (types, sorted); every other file is clean.
EXPECTED = {
    "a/astronaut.jpg": ["label_leak"],
    "a/big.jpg": ["odd_size"],
    "a/coffee_small.jpg": ["near_duplicate"],
    "a/coins_l.jpg": ["grayscale"],
    "a/dark.jpg": ["dark"],
    "a/light.jpg": ["light"],
    "b/astronaut_resized.jpg": ["label_leak", "near_duplicate"],
    "b/blurry.jpg": ["blurry"],
    "b/empty.jpg": ["bad_file"],
    "b/flat.jpg": ["grayscale", "low_information"],
    "b/gray_rgb.jpg": ["grayscale"],
    "b/png_named.jpg": ["misnamed"],
    "b/rocket_copy.jpg": ["exact_duplicate"],
    "b/strip.jpg": ["odd_aspect_ratio"],
    "b/truncated.jpg": ["bad_file"],
}
CLEAN = [
    "a/coffee.jpg",
    "a/texture.jpg",
    "b/immuno.jpg",
    "b/rocket.jpg",
    "b/texture2.jpg",
]


@pytest.fixture(scope="module")
def planted(
    tmp_path_factory: pytest.TempPathFactory,
    sk_photo: Callable[..., np.ndarray],
    encode_jpeg: Callable[..., bytes],
) -> Path:
    """Two classes: clean photos and textures, and one file per planted problem."""
    root = tmp_path_factory.mktemp("checks")
    a, b = root / "a", root / "b"
    a.mkdir()
    b.mkdir()

    def put(path: Path, arr: np.ndarray | Image.Image, **kw: object) -> None:
        path.write_bytes(encode_jpeg(arr, **kw))

    put(a / "astronaut.jpg", sk_photo("astronaut", 240))
    put(a / "coffee.jpg", sk_photo("coffee", 240))
    put(b / "rocket.jpg", sk_photo("rocket", 240))
    put(b / "immuno.jpg", sk_photo("immunohistochemistry", 240))
    put(a / "texture.jpg", texture(1, 240, 180))
    put(b / "texture2.jpg", texture(2, 200, 200))
    put(a / "dark.jpg", (sk_photo("chelsea", 240) * 0.2).astype(np.uint8))
    put(a / "light.jpg", (sk_photo("hubble_deep_field", 240) * 0.25 + 185).astype(np.uint8))
    blurred = Image.fromarray(texture(3, 240, 180)).filter(ImageFilter.GaussianBlur(4))
    put(b / "blurry.jpg", blurred)
    rng = np.random.default_rng(4)
    put(b / "flat.jpg", np.clip(128 + rng.normal(0, 1, (180, 240, 3)), 0, 255).astype(np.uint8))
    put(b / "gray_rgb.jpg", np.repeat(sk_photo("camera", 240)[..., None], 3, axis=2))
    put(a / "coins_l.jpg", sk_photo("coins", 240))
    put(b / "strip.jpg", texture(5, 500, 50))
    put(a / "big.jpg", texture(6, 1000, 750))
    small = Image.fromarray(sk_photo("coffee", 240)).resize((160, 107), Image.Resampling.LANCZOS)
    put(a / "coffee_small.jpg", small, quality=70)
    moved = Image.fromarray(sk_photo("astronaut", 240)).resize((180, 180), Image.Resampling.LANCZOS)
    put(b / "astronaut_resized.jpg", moved, quality=75)
    shutil.copy(b / "rocket.jpg", b / "rocket_copy.jpg")
    good = (a / "texture.jpg").read_bytes()
    (b / "truncated.jpg").write_bytes(good[: len(good) // 2])
    (b / "empty.jpg").write_bytes(b"")
    Image.fromarray(texture(7, 200, 150)).save(b / "png_named.jpg", format="PNG")
    return root


@pytest.fixture(scope="module")
def report(planted: Path) -> AuditReport:
    return audit(planted, sample=4, workers=1, progress=False)


def _row(report: AuditReport, file: str) -> dict[str, object]:
    (row,) = [r for r in report.scores if r["file"] == file]
    return row


def test_every_planted_issue_is_on_its_file_and_nothing_else(report: AuditReport) -> None:
    found: dict[str, list[str]] = {}
    for p in report.problems:
        found.setdefault(p["file"], []).append(p["type"])
    assert {f: sorted(t) for f, t in found.items()} == EXPECTED
    assert report.images == 20 and report.readable == 18
    assert [p["issue"] for p in report.problems if p["file"] == "b/empty.jpg"] == ["empty file"]
    (trunc,) = [p["issue"] for p in report.problems if p["file"] == "b/truncated.jpg"]
    assert trunc.startswith("cannot decode: image file is truncated")


def test_scores_and_messages(report: AuditReport) -> None:
    # the dark copy keeps 20% of the brightness: its 99th percentile is near 0.2 x the cat's
    dark = _row(report, "a/dark.jpg")["dark"]
    assert isinstance(dark, float) and 0.10 < dark < 0.18
    # 0.25 x + 185: no pixel darker than 185/255 = 0.725, so the score is about 0.27
    assert _row(report, "a/light.jpg")["light"] == pytest.approx(1 - 185 / 255, abs=0.02)
    assert _row(report, "b/strip.jpg")["odd_aspect_ratio"] == pytest.approx(0.1)
    widths = [r["width"] for r in report.scores if r["dark"] is not None]
    heights = [r["height"] for r in report.scores if r["dark"] is not None]
    median = float(np.median(np.sqrt(np.multiply(widths, heights))))
    assert _row(report, "a/big.jpg")["odd_size"] == pytest.approx(median / math.sqrt(750_000))
    flat = _row(report, "b/flat.jpg")
    assert isinstance(flat["entropy_bits"], float) and flat["entropy_bits"] < 2.0
    assert flat["low_information"] == pytest.approx(flat["entropy_bits"] / 8)
    assert _row(report, "b/gray_rgb.jpg")["grayscale"] == 0.0  # equal channels, exactly
    assert _row(report, "a/coins_l.jpg")["grayscale"] == 0.0  # one channel
    blurry = _row(report, "b/blurry.jpg")["blurry"]
    assert isinstance(blurry, float) and blurry < 0.08
    assert _row(report, "a/texture.jpg")["blurry"] == 1.0  # the unblurred texture: capped
    # no clean image is near any threshold's wrong side
    for f in CLEAN:
        row = _row(report, f)
        for kind, check in CHECKS.items():
            if kind != "near_duplicate":
                assert not check.flags(row[kind]), (f, kind, row[kind])  # type: ignore[arg-type]
    issues = {p["file"]: p["issue"] for p in report.problems if p["type"] == "odd_aspect_ratio"}
    assert issues == {"b/strip.jpg": "odd aspect ratio 500x50 (0.100 < 0.35)"}


def test_duplicate_sets_and_label_leaks(report: AuditReport) -> None:
    assert [(s["kind"], s["files"], s["label_leak"]) for s in report.duplicate_sets] == [
        ("near", ["a/astronaut.jpg", "b/astronaut_resized.jpg"], True),
        ("near", ["a/coffee.jpg", "a/coffee_small.jpg"], False),
        ("exact", ["b/rocket.jpg", "b/rocket_copy.jpg"], False),
    ]
    assert report.duplicate_sets[0]["classes"] == ["a", "b"]
    assert all(s["max_distance"] <= 4 for s in report.duplicate_sets)
    leaks = sorted(p["issue"] for p in report.problems if p["type"] == "label_leak")
    assert leaks == [
        "label leak: near duplicate filed under a, also under another class as "
        "b/astronaut_resized.jpg",
        "label leak: near duplicate filed under b, also under another class as a/astronaut.jpg",
    ]
    # exact copies count once among the near-duplicate candidates
    assert (
        _row(report, "b/rocket_copy.jpg")["near_duplicate"]
        == (_row(report, "b/rocket.jpg")["near_duplicate"])
    )
    assert report.duplicates == [["b/rocket.jpg", "b/rocket_copy.jpg"]]


def test_thumbnails_of_worst_examples(report: AuditReport) -> None:
    assert set(report.examples) == {
        "blurry",
        "dark",
        "light",
        "low_information",
        "grayscale",
        "odd_aspect_ratio",
        "odd_size",
    }
    gray = [e["file"] for e in report.examples["grayscale"]]
    assert sorted(gray) == ["a/coins_l.jpg", "b/flat.jpg", "b/gray_rgb.jpg"]
    for rows in report.examples.values():
        for e in rows:
            assert report.thumbnails[e["file"]].startswith("data:image/jpeg;base64,")
    for s in report.duplicate_sets:
        assert all(f in report.thumbnails for f in s["files"])


def test_to_frame_rethresholds_like_the_audit(report: AuditReport) -> None:
    pd = pytest.importorskip("pandas")
    df = report.to_frame()
    assert isinstance(df, pd.DataFrame) and len(df) == 20
    assert list(df.columns[:6]) == ["file", "class", "width", "height", "format", "mode"]
    for kind in ("dark", "light", "blurry", "odd_aspect_ratio", "odd_size", "low_information"):
        assert sorted(df.loc[df[kind] < CHECKS[kind].threshold, "file"]) == report.flagged(kind)
    assert df.set_index("file").loc["b/flat.jpg", "issues"] == "grayscale,low_information"
    assert df["dark"].isna().sum() == 2  # the two unreadable files


def test_to_frame_names_the_extra_without_pandas(
    report: AuditReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'pcr-explore\[pandas\]'"):
        report.to_frame()


def test_thresholds_override(planted: Path) -> None:
    r = audit(
        planted,
        sample=1,
        workers=1,
        progress=False,
        options=AuditOptions(thresholds={"blurry": 0.0, "odd_size": 0.7}),
    )
    assert r.flagged("blurry") == []
    assert r.flagged("odd_size") == ["a/big.jpg", "a/coffee_small.jpg"]
    assert r.checks["odd_size"]["threshold"] == 0.7


def test_grayscale_dataset_flags_no_grayscale(
    tmp_path: Path, sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]
) -> None:
    for n in ("camera", "coins", "moon"):
        (tmp_path / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 200)))
    (tmp_path / "rgb.jpg").write_bytes(encode_jpeg(texture(8, 200, 150)))
    r = audit(tmp_path, sample=1, workers=1, progress=False)
    assert r.flagged("grayscale") == []
    assert "most images are grayscale, so grayscale images are not flagged" in r.notes
    assert [_row(r, f"{n}.jpg")["grayscale"] for n in ("camera", "coins", "moon")] == [0.0] * 3


def test_progress_bars_have_honest_units(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audit(planted, sample=2, workers=1, progress=True)
    err = capsys.readouterr().err
    assert "audit: files" in err and "20/20" in err and "file/s" in err
    assert "audit: quality sample (10 levels each)" in err and "2/2" in err and "img/s" in err


def test_inspect_never_raises_on_odd_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    info = inspect_file(FileJob(0, "pipe.jpg", path=str(fifo)))
    assert info.issues == (("bad_file", "not a regular file"),) and info.broken
    missing = inspect_file(FileJob(1, "gone.jpg", path=str(tmp_path / "gone.jpg")))
    assert missing.issues == (("bad_file", "cannot read file: No such file or directory"),)
    (tmp_path / "junk.jpg").write_bytes(b"<html>not an image</html>")
    junk = inspect_file(FileJob(2, "junk.jpg", path=str(tmp_path / "junk.jpg")))
    assert junk.issues == (("bad_file", "not a recognised image format"),)


def test_near_duplicates_chain_and_blocks() -> None:
    hashes: list[int | None] = [0b0, 0b11, 0b1111, 0xFFFF_0000, None, 0b0]
    groups = exact_groups(["x", "y", "z", "w", "", "v"])
    assert groups == []
    for block in (1, 2, 256):  # the same answer whatever the block of rows
        r = near_duplicates(hashes, groups, 2, block=block)
        assert r.sets == [[0, 1, 2, 5]]  # 0-1 and 1-2 at 2 bits chain; 5 equals 0
        assert r.max_distance == [2]
        assert r.nearest.tolist()[:4] == [0.0, 2.0, 2.0, math.inf]  # none within 8 bits
        assert math.isnan(r.nearest[4])
    # an exact copy is one image: it does not make a near-duplicate set by itself
    r = near_duplicates([7, 7, 1 << 40], [[0, 1]], 2)
    assert r.sets == [] and r.nearest.tolist() == [4.0, 4.0, 4.0]
    assert hamming(np.array([1, 3], np.uint64), np.array([0], np.uint64)).tolist() == [1, 2]


@pytest.mark.parametrize("name", ["chelsea", "coffee", "astronaut", "camera", "rocket"])
def test_phash_has_imagehash_bits(name: str, sk_photo: Callable[..., np.ndarray]) -> None:
    imagehash = pytest.importorskip("imagehash")
    rng = np.random.default_rng(len(name))
    photo = Image.fromarray(sk_photo(name, 256)).convert("L")
    noise = Image.fromarray(rng.integers(0, 256, (96, 128), dtype=np.uint8))
    for gray in (photo, noise, photo.transpose(Image.Transpose.ROTATE_90)):
        want = imagehash.phash(gray).hash.ravel()
        assert phash(gray) == int.from_bytes(np.packbits(want).tobytes(), "big")


@pytest.mark.skipif(not _tjtransform.available(), reason="libturbojpeg not installed")
@pytest.mark.parametrize("side", [200, 300, 600, 1100, 2100])  # DCT scale 1, 1, 2, 4, 8
def test_the_checked_decode_has_pillows_pixels(
    side: int, sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]
) -> None:
    photo = Image.fromarray(sk_photo("coffee")).resize((side, side * 2 // 3))
    for im, kw in [(photo, {}), (photo.convert("L"), {}), (photo, {"subsampling": 0})]:
        data = encode_jpeg(np.asarray(im), **kw)
        small, checked = reduced_image(Image.open(io.BytesIO(data)), data=data)
        pillow, by_pillow = reduced_image(Image.open(io.BytesIO(data)))
        assert checked and not by_pillow and small.mode == pillow.mode == im.mode
        np.testing.assert_array_equal(np.asarray(small), np.asarray(pillow))
    # corrupt data (an RST marker inside the scan): Pillow decodes it, unchecked
    mid = (data.index(b"\xff\xda") + len(data)) // 2
    bad = data[:mid] + b"\xff\xd5" + data[mid + 2 :]
    assert not reduced_image(Image.open(io.BytesIO(bad)), data=bad)[1]
