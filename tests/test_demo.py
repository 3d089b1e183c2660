"""Demos that need no kernel: one HTML file with every level, readout and step embedded.

The pages are read back as a browser would get them: the JSON the page
script parses (``pics``: each distinct JPEG once, as a ``data:`` URI;
``start``: the model's first state; ``images``: each image's pictures,
captions, readouts and curve at the levels embedded) and the one module
script that runs ScanExplorer's own front end on it. The browser itself
drives them in ``tests/test_browser_demo.py``.
"""

from __future__ import annotations

import base64
import fnmatch
import importlib.resources
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import pcr_explore.widgets._scan_demo as scan_demo_module
from pcr_explore import open_source
from pcr_explore.jpeg import decode
from pcr_explore.quality import LevelQuality, image_quality, quality_curve
from pcr_explore.quality.compare import difference_map
from pcr_explore.quality.compare._views import display_jpeg, jpeg_size
from pcr_explore.quality.metrics._names import format_value
from pcr_explore.swap import ratio_curve, simulate_many
from pcr_explore.swap.simulator.policies import policies_for_codecs
from pcr_explore.swap.traces.catalog import load_trace
from pcr_explore.widgets import DemoPage, ScanExplorer, SwapExplorer, scan_demo, swap_demo
from pcr_explore.widgets._module_widget import module_text
from pcr_explore.widgets._scan_readout import dataset_band

ROOT = Path(__file__).resolve().parents[1]

# Eight of scikit-image's bundled photos, colour and grayscale, at most 512 px.
PHOTOS = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "camera",
    "immunohistochemistry",
    "hubble_deep_field",
    "coins",
)
BUDGET = 8_000_000  # bytes: 8 photos at 512 px
QUALITY_ROWS = (("MS-SSIM vs full", "mssim"), ("SSIM vs full", "ssim"), ("PSNR vs full", "psnr"))


def page_data(page: DemoPage | str) -> dict[str, Any]:
    """The JSON the page script reads (``</`` is written ``<\\/``, a JSON escape)."""
    text = page.html if isinstance(page, DemoPage) else page
    m = re.search(r"<script type='application/json' id='pcr-demo-data'>(.*?)</script>", text, re.S)
    assert m is not None
    return json.loads(m.group(1))


def picture(data: dict[str, Any], index: int) -> bytes:
    """The JPEG of the page's picture *index*, as the browser decodes its ``data:`` URI."""
    uri = data["pics"][index]
    prefix = "data:image/jpeg;base64,"
    assert uri.startswith(prefix)
    return base64.b64decode(uri[len(prefix) :])


def rows(readout: list[list[str]]) -> dict[str, str]:
    """One level's readouts (rows ``[label, value]``) by label."""
    assert all(len(r) == 2 for r in readout)
    return dict((label, value) for label, value in readout)


class Measured:
    """``image_quality`` as scan_demo calls it, run for real, with each image it measures kept."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.images: list[int] = []
        real = scan_demo_module.image_quality

        def measure(src: Any, *, image: int) -> LevelQuality:
            self.images.append(int(image))
            return real(src, image=image)

        monkeypatch.setattr(scan_demo_module, "image_quality", measure)


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory, sk_photo: Callable[..., np.ndarray]) -> Path:
    root = tmp_path_factory.mktemp("demo_photos")
    for name in PHOTOS:
        Image.fromarray(sk_photo(name, 512)).save(root / f"{name}.jpg", quality=90)
    return root


@pytest.fixture(scope="module")
def eight(photos: Path) -> DemoPage:
    return scan_demo(photos)


def test_eight_photos_at_512_px_fit_the_budget(eight: DemoPage, tmp_path: Path) -> None:
    data = page_data(eight)
    assert len(data["images"]) == 8 and data["start"]["levels"] == list(range(1, 11))
    assert data["start"]["num_scans"] == 10
    assert "8 images at all 10 scan levels." in eight.html
    path = eight.save_html(tmp_path / "demo.html")
    size = path.stat().st_size
    print(f"8 photos at 512 px, 10 levels: {size / 1e6:.2f} MB")
    assert size == eight.nbytes <= BUDGET


def test_embedded_levels_are_the_levels_own_jpeg_bytes(eight: DemoPage, photos: Path) -> None:
    src = open_source(photos)
    data = page_data(eight)
    assert data["start"]["names"] == src.names
    for j, entry in enumerate(data["images"]):
        assert len(entry["pictures"]) == len(entry["diffs"]) == 10
        for p, k in enumerate(data["start"]["levels"]):
            # within 512 px the browser gets the very prefix a reader fetches
            assert picture(data, entry["pictures"][p]) == src.jpeg_bytes(j, k)
        assert picture(data, entry["pictures"][-1]) == src.jpeg_bytes(j)
        assert entry["size"] == list(jpeg_size(src.jpeg_bytes(j)))


def test_each_distinct_picture_is_embedded_once(eight: DemoPage) -> None:
    data = page_data(eight)
    camera = data["images"][data["start"]["names"].index("camera.jpg")]  # grayscale
    assert camera["pictures"][2] == camera["pictures"][1]  # scan 3 (Cr) adds nothing to it
    assert "adds no bytes to this image" in camera["captions"][2]
    assert len(set(data["pics"])) == len(data["pics"])
    used = {i for e in data["images"] for i in (*e["pictures"], *e["diffs"])}
    assert used == set(range(len(data["pics"])))  # and none that is not shown


def test_larger_images_are_shrunk_level_by_level(photos: Path) -> None:
    src = open_source(photos)
    page = scan_demo(photos, images=[0], levels=[1, 5], max_side=128, quality=80, dataset_sample=0)
    data = page_data(page)
    entry = data["images"][0]
    assert data["start"]["levels"] == [1, 5, 10]  # the full level is always there
    assert "1 image at 3 of the 10 scan levels." in page.html
    assert len(entry["pictures"]) == len(entry["captions"]) == len(entry["readouts"]) == 3
    for p, k in enumerate(data["start"]["levels"]):
        got = picture(data, entry["pictures"][p])
        assert got == display_jpeg(src.jpeg_bytes(0, k), 128, quality=80)
        assert max(jpeg_size(got)) == 128
        assert f"<b>scan {k} of 10</b>" in entry["captions"][p]
    assert entry["size"] == list(jpeg_size(picture(data, entry["pictures"][-1])))


def test_the_start_level_is_the_middle_one_or_the_one_asked(eight: DemoPage, photos: Path) -> None:
    assert page_data(eight)["start"]["level"] == 5
    few = {"images": 1, "dataset_sample": 0}
    assert page_data(scan_demo(photos, levels=[1, 4], **few))["start"]["level"] == 4
    start = page_data(scan_demo(photos, levels=[1, 4], level=10, **few))["start"]
    assert (start["level"], start["levels"]) == (10, [1, 4, 10])


def test_the_images_are_the_ones_asked_for(photos: Path) -> None:
    src = open_source(photos)
    few = {"levels": [10], "dataset_sample": 0}
    start = page_data(scan_demo(photos, images=2, **few))["start"]
    assert (start["names"], start["image"]) == (src.names[:2], 0)
    start = page_data(scan_demo(photos, images=[4, 4, 1], **few))["start"]
    assert start["names"] == [src.names[4], src.names[1]]  # once each, in the order given
    start = page_data(scan_demo(photos, images=[4, 1], image=1, **few))["start"]
    assert (start["names"], start["image"]) == ([src.names[4], src.names[1]], 1)
    start = page_data(scan_demo(photos, images=2, image=6, **few))["start"]
    assert (start["names"], start["image"]) == ([src.names[6], *src.names[:2]], 0)


def test_difference_pictures_are_the_difference_maps(eight: DemoPage, photos: Path) -> None:
    src = open_source(photos)
    data = page_data(eight)
    entry = data["images"][0]
    full = decode(src.jpeg_bytes(0))
    for p in (0, 4):
        want = difference_map(decode(src.jpeg_bytes(0, p + 1)), full, gain=4.0).astype(float)
        got = decode(picture(data, entry["diffs"][p])).astype(float)
        assert got.shape == want.shape
        assert np.abs(got - want).mean() < 6  # a JPEG (quality 50) of the same map
        assert got.mean() > 5  # not a blank picture
    assert decode(picture(data, entry["diffs"][-1])).max() <= 8  # the full level: no difference
    assert "|level - full| x 4</b>" in data["start"]["diff_caption"]


def test_counter_readouts_and_curve_come_from_the_measured_quality(
    eight: DemoPage, photos: Path
) -> None:
    src = open_source(photos)
    data = page_data(eight)
    q = image_quality(src, image=1)
    nbytes = src.level_bytes(1)
    entry = data["images"][1]
    assert data["start"]["labels"]["title"] == "Bytes read vs MS-SSIM"
    assert entry["curve"]["bytes"] == [int(b) for b in nbytes]
    assert entry["curve"]["x"] == pytest.approx(nbytes / nbytes[-1])
    assert entry["curve"]["y_value"] == pytest.approx(q.mssim)
    for p, k in enumerate(data["start"]["levels"]):
        have, full = int(nbytes[k - 1]), int(nbytes[-1])
        assert f"<b>scan {k} of 10</b>" in entry["captions"][p]
        assert f"{have:,} of {full:,} bytes ({have / full:.1%})" in entry["captions"][p]
        got = rows(entry["readouts"][p])
        assert got["bytes at this level"] == f"{have:,} of {full:,}"
        for label, metric in QUALITY_ROWS:
            assert got[label] == format_value(q.metric(metric)[k - 1], metric)


def test_the_curve_holds_the_levels_embedded(photos: Path) -> None:
    src = open_source(photos)
    page = scan_demo(photos, images=[3], levels=[2, 6], dataset_sample=0)
    curve = page_data(page)["images"][0]["curve"]
    nbytes = src.level_bytes(3)
    assert curve["bytes"] == [int(nbytes[k - 1]) for k in (2, 6, 10)]
    assert curve["x"] == pytest.approx([nbytes[k - 1] / nbytes[-1] for k in (2, 6, 10)])
    assert len(curve["y_value"]) == len(curve["y_db"]) == 3


def test_a_given_quality_is_not_measured_again(
    photos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = LevelQuality(
        scans=np.arange(1, 11),
        bytes=np.arange(1, 11) * 10,
        bytes_fraction=np.arange(1, 11) / 10,
        mssim=np.full(10, 0.123456),
        ssim=np.full(10, 0.654321),
        psnr=np.full(10, 12.34),
    )
    measured = Measured(monkeypatch)
    page = scan_demo(photos, images=[2, 3], levels=[1], qualities={2: fake}, dataset_sample=0)
    assert measured.images == [3]  # only the image given no quality
    entry = page_data(page)["images"][0]
    got = rows(entry["readouts"][0])
    assert (got["MS-SSIM vs full"], got["SSIM vs full"], got["PSNR vs full"]) == (
        "0.1235",
        "0.6543",
        "12.3 dB",
    )
    assert entry["curve"]["y_value"] == pytest.approx([0.123456, 0.123456])


def test_a_curve_gives_the_band_and_its_images_quality(
    photos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = open_source(photos)
    curve = quality_curve(src, sample=3, seed=1, workers=1, progress=False)
    sampled = [int(i) for i in curve.per_image.indices]
    other = next(i for i in range(len(src)) if i not in sampled)
    measured = Measured(monkeypatch)
    page = scan_demo(photos, images=[sampled[0], other], levels=[3], curve=curve)
    assert measured.images == [other]  # the curve's own images are not measured again
    data = page_data(page)
    assert data["start"]["dataset"] == dataset_band(curve, "mssim")
    assert len(data["start"]["dataset"]["mean_db"]) == 10
    for p, k in enumerate(data["start"]["levels"]):
        got = rows(data["images"][0]["readouts"][p])
        for label, metric in QUALITY_ROWS:
            assert got[label] == format_value(curve.per_image.metrics[metric][0][k - 1], metric)
    # ScanExplorer given the same curve draws the same band
    ex = ScanExplorer(photos, image=other, curve=curve, workers=1)
    assert ex.dataset == data["start"]["dataset"]


def test_without_a_curve_a_sample_of_the_dataset_is_measured(
    photos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = open_source(photos)
    curve = quality_curve(src, sample=3, seed=2, workers=1, progress=False)
    sampled = [int(i) for i in curve.per_image.indices]
    other = next(i for i in range(len(src)) if i not in sampled)
    measured = Measured(monkeypatch)
    page = scan_demo(photos, images=[sampled[1], other], levels=[10], dataset_sample=3, seed=2)
    assert measured.images == [other]  # the sample's images are not measured twice
    assert page_data(page)["start"]["dataset"] == dataset_band(curve, "mssim")
    none = scan_demo(photos, images=1, levels=[10], dataset_sample=0)
    assert page_data(none)["start"]["dataset"] == {}  # no band: ScanExplorer draws none either


def test_the_title_names_the_dataset(photos: Path, tmp_path: Path) -> None:
    from pcr_explore import encode_dataset

    two = tmp_path / "two"
    two.mkdir()
    for name in ("astronaut.jpg", "coffee.jpg"):
        (two / name).write_bytes((photos / name).read_bytes())
    dataset = tmp_path / "flowers" / "pcr"  # as pcr-explore sample lays a dataset out
    encode_dataset(two, dataset, workers=1, progress=False)
    few = {"images": 1, "levels": [1, 10], "dataset_sample": 0}
    assert scan_demo(dataset, **few).title == "Scan levels of flowers"  # not "of pcr"
    assert scan_demo(two, **few).title == "Scan levels of two"
    page = scan_demo(dataset, title="Week 3: <progressive> JPEG", **few)
    assert "<title>Week 3: &lt;progressive&gt; JPEG</title>" in page.html
    assert "<h1>Week 3: &lt;progressive&gt; JPEG</h1>" in page.html
    out = tmp_path / "t.html"
    r = run_cli(
        "demo", str(dataset), str(out), "--images", "1", "--levels", "1", "--dataset-sample", "0"
    )
    assert r.returncode == 0, r.stderr
    assert "<title>Scan levels of flowers</title>" in out.read_text()
    r = run_cli(
        "demo", str(dataset), str(out), "--images", "1", "--levels", "1",
        "--dataset-sample", "0", "--title", "Mine",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "<title>Mine</title>" in out.read_text()


def test_bad_input_is_a_clear_error(photos: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"demo_photos.*no image 99; it holds images 0..7"):
        scan_demo(photos, images=[0, 99])
    with pytest.raises(ValueError, match=r"demo_photos.*scan levels \[11\] are outside 1\.\.10"):
        scan_demo(photos, images=1, levels=[2, 11])
    with pytest.raises(ValueError, match="level 3 is not among the levels embedded"):
        scan_demo(photos, images=1, levels=[1, 5], level=3)
    with pytest.raises(ValueError, match="images must be at least 1, got 0"):
        scan_demo(photos, images=0)
    with pytest.raises(ValueError, match="images names no image"):
        scan_demo(photos, images=[])
    with pytest.raises(ValueError, match="metric must be one of"):
        scan_demo(photos, metric="nope")
    with pytest.raises(ValueError, match="max_side must be"):
        scan_demo(photos, max_side=4)
    with pytest.raises(ValueError, match="gain must be positive"):
        scan_demo(photos, gain=0)
    with pytest.raises(ValueError, match="diff_quality must be a JPEG quality 1-95, got 99"):
        scan_demo(photos, diff_quality=99)
    with pytest.raises(FileNotFoundError):
        scan_demo(tmp_path / "missing")
    page = DemoPage("t", "<html></html>")
    with pytest.raises(OSError, match="is a folder") as err:
        page.save_html(tmp_path)
    assert err.value.filename == str(tmp_path)


def test_the_page_is_written_atomically(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "demo.html"
    DemoPage("a", "<html>old</html>").save_html(out)
    assert DemoPage("b", "<html>new</html>").save_html(out) == out
    assert out.read_text() == "<html>new</html>"
    assert sorted(p.name for p in out.parent.iterdir()) == ["demo.html"]  # no temporary left


def test_the_page_needs_nothing_from_outside(eight: DemoPage) -> None:
    html = eight.html
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"\b(src|href)=['\"]?(https?:)?//", html)
    assert not re.search(r"\bimport\s*\(", html)  # no module loaded later either
    # the one address in the page is the SVG namespace, which names and fetches nothing
    assert set(re.findall(r"https?://[^\s'\"<>)]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "bokeh" not in html.lower()  # no BokehJS: the explorer's own module draws it all


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pcr_explore", *args], capture_output=True, text=True
    )


def test_cli_writes_the_demo(photos: Path, tmp_path: Path) -> None:
    out = tmp_path / "scans.html"
    r = run_cli("demo", str(photos), str(out), "--images", "2", "--levels", "1,3,5")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out} (") and "no kernel needed" in r.stdout
    data = page_data(out.read_text())
    assert data["start"]["names"] == ["astronaut.jpg", "camera.jpg"]
    assert data["start"]["levels"] == [1, 3, 5, 10]
    assert len(data["start"]["dataset"]["x"]) == 10  # the dataset's band, from its sample
    r = run_cli("demo", str(photos), str(out), "--index", "5", "--max-side", "64")
    assert r.returncode == 0, r.stderr
    data = page_data(out.read_text())
    assert data["start"]["names"] == ["hubble_deep_field.jpg"]
    assert max(data["images"][0]["size"]) == 64
    assert max(jpeg_size(picture(data, data["images"][0]["pictures"][0]))) == 64


def test_cli_errors_are_one_line(photos: Path, tmp_path: Path) -> None:
    r = run_cli("demo", str(tmp_path / "nope"), str(tmp_path / "x.html"))
    assert r.returncode == 1 and r.stderr.startswith("pcr-explore: error:")
    assert "nope" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("demo", str(photos), str(tmp_path / "x.html"), "--index", "42")
    assert r.returncode == 1 and "no image 42" in r.stderr
    r = run_cli("demo", str(photos), str(tmp_path / "x.html"), "--levels", "a,b")
    assert r.returncode == 2 and "expected levels such as 1,2,5,10" in r.stderr
    assert not (tmp_path / "x.html").exists()


def test_scan_explorer_saves_what_it_shows(photos: Path, tmp_path: Path) -> None:
    ex = ScanExplorer(photos, image=3, level=7, dataset_sample=0, workers=1)
    path = ex.save_html(tmp_path / "ex.html", images=2)
    data = page_data(path.read_text())
    assert data["start"]["names"] == ["coffee.jpg", "astronaut.jpg", "camera.jpg"]
    assert (data["start"]["image"], data["start"]["level"]) == (0, 7)
    assert data["start"]["dataset"] == {}  # no band shown, none here
    # the shown image's quality is the explorer's, not measured again
    assert data["images"][0]["readouts"] == ex.readouts
    path = ex.save_html(tmp_path / "few.html", levels=[2, 4])  # the level shown is not held
    start = page_data(path.read_text())["start"]
    assert (start["levels"], start["level"]) == ([2, 4, 10], 4)


def test_the_page_reads_as_the_explorer_does(photos: Path) -> None:
    # one text for both: the page's byte counter, readouts and curve are the explorer's,
    # level by level; both measured the image themselves
    ex = ScanExplorer(photos, image=5, level=1, dataset_sample=0, workers=1)
    page = scan_demo(photos, images=[5], levels=[1, 3], dataset_sample=0)
    data = page_data(page)
    entry, start = data["images"][0], data["start"]
    assert start["levels"] == [1, 3, 10]
    for p, k in enumerate(start["levels"]):
        ex.level = k
        assert entry["readouts"][p] == ex.readouts[k - 1]
        assert entry["captions"][p] == ex.captions[k - 1]
        assert [list(r) for r in ex.readout_rows()[2:]] == entry["readouts"][p]
        # within max_side both hold the level's own bytes
        assert picture(data, entry["pictures"][p]) == ex.pictures[k - 1]
        for key, values in ex.curve.items():
            assert entry["curve"][key][p] == values[k - 1], key
    assert entry["size"] == ex.size
    for key in ("num_scans", "gain", "labels", "side_caption", "diff_caption", "split_note"):
        assert start[key] == getattr(ex, key), key
    for key in ("mode", "zoom", "zoom_x", "zoom_y", "scale", "scan_open", "presentation"):
        assert start[key] == getattr(ex, key), key  # the page opens as the explorer does
    assert start["has_panel"] is False  # no kernel to draw "what each scan adds"


def test_the_page_script_is_one_module_from_the_package_files(eight: DemoPage) -> None:
    scripts = re.findall(r"<script type='module'>(.*?)</script>", eight.html, re.S)
    assert len(scripts) == 1
    code = scripts[0]
    assert not re.search(r"^\s*import\b", code, re.M)  # nothing to fetch from a file: page
    # ScanExplorer's own front end, the very text its widget loads, once
    explorer = module_text("scan_explorer.js")
    assert ScanExplorer._esm == explorer
    assert explorer in code and eight.html.count(explorer) == 1
    assert code.count("export function lineChart(") == 1  # chart.js, once
    assert "export function scanPage(" in code and "window.pcrScan = scanPage(data, host);" in code
    static = importlib.resources.files("pcr_explore.widgets") / "static"
    own = (static / "scan_demo.js").read_text(encoding="utf-8")
    assert re.sub(r"^import .*\n", "", own, flags=re.M) in code
    css = (static / "explorer.css").read_text(encoding="utf-8")
    assert css in eight.html  # and its style sheet
    assert "<div id='pcr-explorer'></div>" in eight.html


def test_the_page_files_ship_with_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    shipped = config["tool"]["setuptools"]["package-data"]["pcr_explore.widgets"]
    static = importlib.resources.files("pcr_explore.widgets") / "static"
    names = sorted(f.name for f in static.iterdir())
    page = {"module_page.html", "demo.css", "explorer.css", "scan_demo.js", "scan_explorer.js"}
    assert page | {"chart.js", "page_model.js", "swap_demo.js", "swap_explorer.js"} <= set(names)
    for name in names:
        assert any(fnmatch.fnmatch(f"static/{name}", pattern) for pattern in shipped), name


def test_swap_demo_embeds_the_simulator_at_each_sparsity() -> None:
    grid = [0.3, 0.9]
    page = swap_demo("resnet50", codecs=["zvc", "csr"], sparsities=grid, sparsity=0.8)
    data = page_data(page)
    assert data["grid"] == grid == data["start"]["grid"] and data["start"]["sparsity"] == 0.9
    trace = load_trace("resnet50")
    policies = policies_for_codecs("v100-pcie3", ["zvc", "csr"])
    ratios = ratio_curve(["zvc", "csr"], sparsities=grid, n=1 << 20)
    for k, s in enumerate(grid):
        results = simulate_many(trace.with_sparsity(s), profile="v100-pcie3", policies=policies)
        step = data["steps"][k]
        bars = step["bars"]
        assert bars["names"] == policies
        assert bars["swap_ms"] == pytest.approx([r.swap_seconds * 1e3 for r in results.values()])
        assert bars["stall_ms"] == pytest.approx([r.stall_seconds * 1e3 for r in results.values()])
        want = [ratios["zvc"][k], ratios["csr"][k]]
        assert step["current"] == {"x": s, "codecs": ["zvc", "csr"], "y": pytest.approx(want)}
        assert rows(step["readouts"])["sparsity"] == f"{s:.0%} for every ReLU and pooling output"
    start = data["start"]
    assert start["has_kernel"] is False and start["codecs"] == ["zvc", "csr"]
    assert start["lines"]["codecs"] == ["zvc", "csr"] and len(start["lines"]["x"]) == 45
    assert start["measured_points"]["label"] == "measured on 1 MiB"
    assert start["ratio_title"] == "Compression ratio vs sparsity, 4 MiB tensors"
    # SwapExplorer's own front end, the very text its widget loads, once; no Bokeh
    scripts = re.findall(r"<script type='module'>(.*?)</script>", page.html, re.S)
    assert len(scripts) == 1 and not re.search(r"^\s*import\b", scripts[0], re.M)
    explorer = module_text("swap_explorer.js")
    assert SwapExplorer._esm == explorer and page.html.count(explorer) == 1
    assert "window.pcrSwap = swapPage(data, host);" in scripts[0]
    assert "bokeh" not in page.html.lower() and "<div id='pcr-explorer'></div>" in page.html


def test_swap_demo_bad_input() -> None:
    with pytest.raises(ValueError, match=r"sparsities must be values in \[0, 1\)"):
        swap_demo("resnet50", sparsities=[0.5, 1.0])
    with pytest.raises(ValueError, match="sparsities must be"):
        swap_demo("resnet50", sparsities=[])


def test_swap_explorer_saves_what_it_shows(tmp_path: Path) -> None:
    ex = SwapExplorer("resnet50", codecs=["zvc"], sparsity=0.4, measured=False)
    path = ex.save_html(tmp_path / "swap.html", sparsities=[0.2, 0.4])
    data = page_data(path.read_text())
    assert data["grid"] == [0.2, 0.4] and data["start"]["sparsity"] == 0.4
    assert data["steps"][1]["bars"]["policy"] == ["vdnn", "always:zvc", "cswap", "oracle"]
    assert data["start"]["measured_points"]["codecs"] == []  # none measured, none shown


def test_the_swap_page_reads_as_the_explorer_does() -> None:
    # one text for both: the page's readouts, bars, markers and lines are the explorer's
    ex = SwapExplorer("resnet50", codecs=["zvc", "csr"], sparsity=0.5, noise=0.0)
    data = page_data(swap_demo("resnet50", codecs=["csr", "zvc"], sparsities=[0.5, 0.7], noise=0.0))
    for k, s in enumerate(data["grid"]):
        ex.sparsity = s
        step = data["steps"][k]
        assert step["readouts"] == ex.readouts
        assert step["bars"] == ex.bars
        assert step["current"] == ex.current
    start = data["start"]
    for key in ("lines", "measured_points", "ratio_title", "notes", "codecs", "all_codecs",
                "colors", "profile", "tensor_size", "shape", "presentation"):  # fmt: skip
        assert start[key] == getattr(ex, key), key
