"""Demos that need no kernel: one HTML file with every level, readout and step embedded.

The pages are read back as a browser would get them: the JSON the page
script parses, the pictures it shows (``data:`` URIs decoded to the JPEG
bytes), and the Bokeh document embedded in the page. The browser itself
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
from pcr_explore.widgets._demo import readout_table

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


def page_data(page: DemoPage | str) -> dict[str, Any]:
    """The JSON the page script reads (``</`` is written ``<\\/``, a JSON escape)."""
    text = page.html if isinstance(page, DemoPage) else page
    m = re.search(r"<script type='application/json' id='pcr-demo-data'>(.*?)</script>", text, re.S)
    assert m is not None
    return json.loads(m.group(1))


def picture(data: dict[str, Any], index: int) -> bytes:
    uri = data["pics"][index]
    prefix = "data:image/jpeg;base64,"
    assert uri.startswith(prefix)
    return base64.b64decode(uri[len(prefix) :])


def bokeh_doc(page: DemoPage) -> dict[str, Any]:
    """The Bokeh document embedded in the page (the models and their data)."""
    m = re.search(r"const docs_json = '(.*?)';", page.html, re.S)
    assert m is not None
    return json.loads(m.group(1))


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
    assert len(data["images"]) == 8 and data["levels"] == list(range(1, 11))
    path = eight.save_html(tmp_path / "demo.html")
    size = path.stat().st_size
    print(f"8 photos at 512 px, 10 levels: {size / 1e6:.2f} MB")
    assert size == eight.nbytes <= BUDGET


def test_embedded_levels_are_the_levels_own_jpeg_bytes(eight: DemoPage, photos: Path) -> None:
    src = open_source(photos)
    data = page_data(eight)
    for j, entry in enumerate(data["images"]):
        assert entry["name"] == src.names[j]
        for p, k in enumerate(data["levels"]):
            # within 512 px the browser gets the very prefix a reader fetches
            assert picture(data, entry["levels"][p]) == src.jpeg_bytes(j, k)
        assert picture(data, entry["full"]) == src.jpeg_bytes(j)
        assert (entry["w"], entry["h"]) == jpeg_size(src.jpeg_bytes(j))


def test_a_level_without_bytes_is_embedded_once(eight: DemoPage, photos: Path) -> None:
    data = page_data(eight)
    camera = next(e for e in data["images"] if e["name"] == "camera.jpg")  # grayscale
    assert camera["levels"][2] == camera["levels"][1]  # scan 3 (Cr) adds nothing to it
    assert "adds no bytes to this image" in camera["captions"][2]
    assert len(set(data["pics"])) == len(data["pics"])


def test_larger_images_are_shrunk_level_by_level(photos: Path) -> None:
    src = open_source(photos)
    page = scan_demo(photos, images=[0], levels=[1, 5], max_side=128, quality=80)
    data = page_data(page)
    entry = data["images"][0]
    assert data["levels"] == [1, 5, 10]  # the full level is always there
    for p, k in enumerate(data["levels"]):
        got = picture(data, entry["levels"][p])
        assert got == display_jpeg(src.jpeg_bytes(0, k), 128, quality=80)
        assert max(jpeg_size(got)) == 128


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


def test_counter_and_readouts_come_from_the_measured_quality(eight: DemoPage, photos: Path) -> None:
    src = open_source(photos)
    data = page_data(eight)
    q = image_quality(src, image=1)
    nbytes = src.level_bytes(1)
    entry = data["images"][1]
    for p, k in enumerate(data["levels"]):
        have, full = int(nbytes[k - 1]), int(nbytes[-1])
        assert f"<b>scan {k} of 10</b>" in entry["captions"][p]
        assert f"{have:,} of {full:,} bytes ({have / full:.1%})" in entry["captions"][p]
        for metric, values in (("mssim", q.mssim), ("ssim", q.ssim), ("psnr", q.psnr)):
            assert format_value(values[k - 1], metric) in entry["readouts"][p]


def test_the_curve_and_its_marker_are_in_the_bokeh_document(eight: DemoPage) -> None:
    doc = json.dumps(bokeh_doc(eight))
    for model in ("CategoricalSlider", "RadioButtonGroup", "Select", "CustomJS", "Button"):
        assert f'"name":"{model}"' in doc.replace(" ", ""), model
    assert "Bytes read vs MS-SSIM" in doc


def test_a_given_quality_is_not_measured_again(photos: Path) -> None:
    fake = LevelQuality(
        scans=np.arange(1, 11),
        bytes=np.arange(1, 11) * 10,
        bytes_fraction=np.arange(1, 11) / 10,
        mssim=np.full(10, 0.123456),
        ssim=np.full(10, 0.654321),
        psnr=np.full(10, 12.34),
    )
    page = scan_demo(photos, images=[2], qualities={2: fake})
    readout = page_data(page)["images"][0]["readouts"][0]
    assert "0.1235" in readout and "0.6543" in readout and "12.3 dB" in readout


def test_a_curve_gives_the_band_and_its_images_quality(photos: Path) -> None:
    src = open_source(photos)
    curve = quality_curve(src, sample=3, seed=1, workers=1, progress=False)
    i = int(curve.per_image.indices[0])
    page = scan_demo(photos, images=[i], curve=curve)
    readouts = page_data(page)["images"][0]["readouts"]
    row = list(curve.per_image.indices).index(i)
    assert format_value(curve.per_image.metrics["mssim"][row][2], "mssim") in readouts[2]
    doc = json.dumps(bokeh_doc(page))
    assert "dataset mean" in doc and "mean_db" in doc


def test_the_page_draws_the_dataset_band_as_the_notebook_does(eight: DemoPage) -> None:
    # by default a sample of the dataset is measured, as ScanExplorer does, and drawn
    # (the page's own legend: its entries for the dataset show only when there is a band)
    assert "</svg>dataset mean</span>" in eight.html
    assert "</svg>dataset p5-p95</span>" in eight.html


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
    page = scan_demo(dataset, title="Week 3: progressive JPEG", **few)
    assert "<title>Week 3: progressive JPEG</title>" in page.html
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
    with pytest.raises(ValueError, match="metric must be one of"):
        scan_demo(photos, metric="nope")
    with pytest.raises(ValueError, match="max_side must be"):
        scan_demo(photos, max_side=4)
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
    assert "<link" not in html
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"<img[^>]*\bsrc=['\"]?https?:", html)
    assert "Bokeh.embed.embed_items" in html  # BokehJS itself is inlined
    assert "bokeh-mathjax" not in html and "bokeh-tables" not in html  # only what it uses


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
    assert [e["name"] for e in data["images"]] == ["astronaut.jpg", "camera.jpg"]
    assert data["levels"] == [1, 3, 5, 10]
    r = run_cli("demo", str(photos), str(out), "--index", "5", "--max-side", "64")
    assert r.returncode == 0, r.stderr
    data = page_data(out.read_text())
    assert [e["name"] for e in data["images"]] == ["hubble_deep_field.jpg"]
    assert max(data["images"][0]["w"], data["images"][0]["h"]) == 64


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
    assert "</svg>dataset p5-p95</span>" not in path.read_text()  # no band shown, none here
    data = page_data(path.read_text())
    assert [e["name"] for e in data["images"]] == ["coffee.jpg", "astronaut.jpg", "camera.jpg"]
    assert data["start"] == {"image": 0, "pos": 6}
    # the shown image's quality is the explorer's, not measured again
    q = ex.quality(3)
    assert format_value(q.mssim[6], "mssim") in data["images"][0]["readouts"][6]


def test_the_page_reads_as_the_explorer_does(photos: Path) -> None:
    # one text for both: the page's byte counter and readouts are the explorer's, level by level
    ex = ScanExplorer(photos, image=5, level=1, dataset_sample=0, workers=1)
    page = scan_demo(photos, images=[5], qualities={5: ex.quality(5)}, dataset_sample=0)
    entry = page_data(page)["images"][0]
    for k in (1, 3, 10):
        ex.level.value = k
        rows = [r for r in ex.readout_rows() if r[0] not in ("image", "scan level")]
        assert entry["readouts"][k - 1] == readout_table(rows)
        # the page puts its zoom and split line where the explorer puts its own
        assert entry["captions"][k - 1].replace("<!--view-->", "") == ex.image_caption.value
    ex.zoom.value = 2.0
    ex.mode.value = "split"
    data = page_data(page)
    assert ex.image_caption.value.endswith(
        f" &middot; zoom x2 at (50%, 50%) &middot; {data['split']}"
    )


def test_the_page_script_is_one_module_from_the_package_files(eight: DemoPage) -> None:
    scripts = re.findall(r"<script type='module'>(.*?)</script>", eight.html, re.S)
    assert len(scripts) == 1
    code = scripts[0]
    assert not re.search(r"^\s*import\b", code, re.M)  # nothing to fetch from a file: page
    assert code.count("export function player(") == 1  # the shared play button, once
    assert "export function scanPage(" in code and "window.pcrScan = scanPage(data);" in code
    static = importlib.resources.files("pcr_explore.widgets") / "static"
    own = (static / "scan_demo.js").read_text(encoding="utf-8")
    assert re.sub(r"^import .*\n", "", own, flags=re.M) in code


def test_the_page_files_ship_with_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    shipped = config["tool"]["setuptools"]["package-data"]["pcr_explore.widgets"]
    static = importlib.resources.files("pcr_explore.widgets") / "static"
    names = sorted(f.name for f in static.iterdir())
    assert {"demo.html", "player.js", "scan_demo.js", "swap_demo.js"} <= set(names)
    for name in names:
        assert any(fnmatch.fnmatch(f"static/{name}", pattern) for pattern in shipped), name


def test_swap_demo_embeds_the_simulator_at_each_sparsity() -> None:
    grid = [0.3, 0.9]
    page = swap_demo("resnet50", codecs=["zvc", "csr"], sparsities=grid, sparsity=0.8)
    data = page_data(page)
    assert data["grid"] == grid and data["start"] == 1
    trace = load_trace("resnet50")
    policies = policies_for_codecs("v100-pcie3", ["zvc", "csr"])
    ratios = ratio_curve(["zvc", "csr"], sparsities=grid, n=1 << 20)
    for k, s in enumerate(grid):
        results = simulate_many(trace.with_sparsity(s), profile="v100-pcie3", policies=policies)
        bars = data["steps"][k]["bars"]
        assert bars["swap_ms"] == pytest.approx([r.swap_seconds * 1e3 for r in results.values()])
        assert bars["stall_ms"] == pytest.approx([r.stall_seconds * 1e3 for r in results.values()])
        assert data["steps"][k]["current"]["y"] == pytest.approx(
            [ratios["zvc"][k], ratios["csr"][k]]
        )
        assert f"{s:.0%} for every ReLU and pooling output" in data["steps"][k]["readout"]
    assert "CategoricalSlider" in page.html


def test_swap_demo_bad_input() -> None:
    with pytest.raises(ValueError, match=r"sparsities must be values in \[0, 1\)"):
        swap_demo("resnet50", sparsities=[0.5, 1.0])
    with pytest.raises(ValueError, match="sparsities must be"):
        swap_demo("resnet50", sparsities=[])


def test_swap_explorer_saves_what_it_shows(tmp_path: Path) -> None:
    ex = SwapExplorer("resnet50", codecs=["zvc"], sparsity=0.4, measured=False)
    path = ex.save_html(tmp_path / "swap.html", sparsities=[0.2, 0.4])
    data = page_data(path.read_text())
    assert data["grid"] == [0.2, 0.4] and data["start"] == 1
    assert [p for p in data["steps"][1]["bars"]["policy"]] == [
        "vdnn",
        "always:zvc",
        "cswap",
        "oracle",
    ]
