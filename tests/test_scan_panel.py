"""What each scan adds: the coefficient maps, the per-level step, the grid figure and the panel."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import traitlets
from _photos import jpeg_bytes, photo
from PIL import Image

from pcr_explore import encode_dataset, open_source
from pcr_explore.jpeg import (
    STANDARD_SCRIPT_GRAY,
    ZIGZAG,
    block_dct,
    block_idct,
    partial_block,
    quant_table,
    quantize,
    scan_coverage,
)
from pcr_explore.jpeg.scan_script import SCRIPTS, STANDARD, ScanScript
from pcr_explore.plots import scan_grid_figure
from pcr_explore.plots._scan_grid import scan_grid_data
from pcr_explore.quality.compare import image_coverage, scan_step
from pcr_explore.quality.compare._views import encode_jpeg
from pcr_explore.widgets import ScanExplorer, ScanPanel
from pcr_explore.widgets._scan_panel import panel_state, step_drawing
from pcr_explore.widgets._static import to_jpeg

# After each level of libjpeg's standard colour script: per component (Y, Cb,
# Cr) the runs "first-last:lowest bit known", written out by hand from the
# script (DESIGN.md); coefficients not listed are not sent yet.
STANDARD_COLOR_MAPS = [
    ("0:1", "0:1", "0:1"),
    ("0:1 1-5:2", "0:1", "0:1"),
    ("0:1 1-5:2", "0:1", "0:1 1-63:1"),
    ("0:1 1-5:2", "0:1 1-63:1", "0:1 1-63:1"),
    ("0:1 1-63:2", "0:1 1-63:1", "0:1 1-63:1"),
    ("0:1 1-63:1", "0:1 1-63:1", "0:1 1-63:1"),
    ("0:0 1-63:1", "0:0 1-63:1", "0:0 1-63:1"),
    ("0:0 1-63:1", "0:0 1-63:1", "0:0 1-63:0"),
    ("0:0 1-63:1", "0:0 1-63:0", "0:0 1-63:0"),
    ("0:0 1-63:0", "0:0 1-63:0", "0:0 1-63:0"),
]
# What each colour scan sends: (component, first, last).
STANDARD_COLOR_ADDED = [
    [(0, 0, 0), (1, 0, 0), (2, 0, 0)],
    [(0, 1, 5)],
    [(2, 1, 63)],
    [(1, 1, 63)],
    [(0, 6, 63)],
    [(0, 1, 63)],
    [(0, 0, 0), (1, 0, 0), (2, 0, 0)],
    [(2, 1, 63)],
    [(1, 1, 63)],
    [(0, 1, 63)],
]
STANDARD_GRAY_MAPS = ["0:1", "0:1 1-5:2", "0:1 1-63:2", "0:1 1-63:1", "0:0 1-63:1", "0:0 1-63:0"]
STANDARD_GRAY_ADDED = [(0, 0), (1, 5), (6, 63), (1, 63), (0, 0), (1, 63)]


def _row(runs: str) -> list[int]:
    row = [-1] * 64
    for run in runs.split():
        span, bit = run.split(":")
        lo, _, hi = span.partition("-")
        for q in range(int(lo), int(hi or lo) + 1):
            row[q] = int(bit)
    return row


def _added(spans: list[tuple[int, int, int]], components: int) -> np.ndarray:
    out = np.zeros((components, 64), bool)
    for c, lo, hi in spans:
        out[c, lo : hi + 1] = True
    return out


# -- the coefficient maps -------------------------------------------------------------


@pytest.mark.parametrize("level", range(0, 11))
def test_standard_colour_script_known_coefficients_at_every_level(level: int) -> None:
    cov = scan_coverage(STANDARD, level=level)
    want = [[-1] * 64] * 3 if level == 0 else [_row(r) for r in STANDARD_COLOR_MAPS[level - 1]]
    assert cov.low_bit.tolist() == want
    added = _added(STANDARD_COLOR_ADDED[level - 1], 3) if level else np.zeros((3, 64), bool)
    assert (cov.added == added).all()
    assert cov.component_names == ("Y", "Cb", "Cr")


@pytest.mark.parametrize("level", range(1, 7))
def test_standard_grayscale_script_known_coefficients_at_every_level(level: int) -> None:
    for scans in (STANDARD_SCRIPT_GRAY, STANDARD.gray):
        cov = scan_coverage(scans, level=level)
        assert cov.low_bit.tolist() == [_row(STANDARD_GRAY_MAPS[level - 1])]
        lo, hi = STANDARD_GRAY_ADDED[level - 1]
        assert cov.added.tolist() == _added([(0, lo, hi)], 1).tolist()
    assert scan_coverage(STANDARD, level=level, gray=True).low_bit.tolist() == [
        _row(STANDARD_GRAY_MAPS[level - 1])
    ]


def test_labels_say_components_band_and_bits() -> None:
    labels = [scan_coverage(STANDARD, level=k).label() for k in range(11)]
    assert labels == [
        "nothing read yet",
        "Y,Cb,Cr DC, bits >=1 (Al=1)",
        "Y AC 1-5, bits >=2 (Al=2)",
        "Cr AC 1-63, bits >=1 (Al=1)",
        "Cb AC 1-63, bits >=1 (Al=1)",
        "Y AC 6-63, bits >=2 (Al=2)",
        "Y AC 1-63, bit 1 (refine, Ah=2, Al=1)",
        "Y,Cb,Cr DC, bit 0 (refine, Ah=1, Al=0)",
        "Cr AC 1-63, bit 0 (refine, Ah=1, Al=0)",
        "Cb AC 1-63, bit 0 (refine, Ah=1, Al=0)",
        "Y AC 1-63, bit 0 (refine, Ah=1, Al=0)",
    ]
    assert scan_coverage(SCRIPTS["spectral"], level=2).label() == "Y AC 1-5, all bits (Al=0)"


CUSTOM = """
0: 0-0, 0, 0;      # luminance DC, whole
1,2: 0-0, 0, 1;    # chroma DC without its lowest bit
0: 1-9, 0, 3;      # luminance AC 1-9, all but three bits
0: 1-9, 3, 2;
0: 10-63, 0, 0;
1,2: 0-0, 1, 0;
0: 1-9, 2, 1;
0: 1-9, 1, 0;
1: 1-63, 0, 0;
2: 1-63, 0, 0;
"""


def test_a_non_standard_script() -> None:
    script = ScanScript.parse(CUSTOM)
    maps = [scan_coverage(script, level=k).low_bit.tolist() for k in range(1, 11)]
    assert maps[0] == [_row("0:0"), _row(""), _row("")]
    assert maps[1] == [_row("0:0"), _row("0:1"), _row("0:1")]
    assert maps[2] == [_row("0:0 1-9:3"), _row("0:1"), _row("0:1")]
    assert maps[3] == [_row("0:0 1-9:2"), _row("0:1"), _row("0:1")]
    assert maps[4] == [_row("0:0 1-9:2 10-63:0"), _row("0:1"), _row("0:1")]
    assert maps[5] == [_row("0:0 1-9:2 10-63:0"), _row("0:0"), _row("0:0")]
    assert maps[6] == [_row("0:0 1-9:1 10-63:0"), _row("0:0"), _row("0:0")]
    assert maps[7] == [_row("0:0 1-63:0"), _row("0:0"), _row("0:0")]
    assert maps[9] == [_row("0:0 1-63:0")] * 3
    cov = scan_coverage(script, level=4)
    assert cov.label() == "Y AC 1-9, bit 2 (refine, Ah=3, Al=2)"
    assert cov.added.sum() == 9 and cov.added[0, 1:10].all()
    assert cov.grid(0)[0, :4].tolist() == [0, 2, 2, 2]  # zig-zag 0, 1, 5, 6 along the top row


def test_coverage_errors_and_zigzag() -> None:
    with pytest.raises(ValueError, match="level 11 is outside 0..10"):
        scan_coverage(STANDARD, level=11)
    with pytest.raises(ValueError, match="codes component 2, the image has 1"):
        scan_coverage(STANDARD.color, level=1, components=1)
    assert ZIGZAG[:10].tolist() == [0, 1, 8, 16, 9, 2, 3, 10, 17, 24]
    assert sorted(ZIGZAG.tolist()) == list(range(64))


def test_a_partial_block_sharpens_as_bits_arrive() -> None:
    rng = np.random.default_rng(0)
    block = np.clip(
        128 + np.add.outer(np.arange(8), np.arange(8)) * 9 + rng.normal(0, 6, (8, 8)), 0, 255
    )
    table = quant_table(90)
    q = quantize(block_dct(block), table=table)
    errors = [
        float(
            np.abs(
                partial_block(
                    q, table=table, low_bit=scan_coverage(STANDARD_SCRIPT_GRAY, level=k).low_bit[0]
                )
                - block
            ).mean()
        )
        for k in range(1, 7)
    ]
    # the full level is the dequantised block exactly; each level is closer than the one before
    assert errors[-1] == pytest.approx(float(np.abs(block_idct(q * table) - block).mean()))
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[0] > 5 * errors[1]  # the first AC band is most of the block's shape


# -- one image's levels ------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(photo_folder: Path) -> object:
    return open_source(photo_folder)


def test_image_coverage_reads_the_images_own_scans(folder: object) -> None:
    names = folder.names  # type: ignore[attr-defined]
    colour, gray = names.index("animals/chelsea.jpg"), names.index("things/camera.jpg")
    for k in range(1, 11):
        assert (
            image_coverage(folder, image=colour, level=k).low_bit.tolist()
            == scan_coverage(STANDARD, level=k).low_bit.tolist()
        )
    # a grayscale image at the colour levels: scans 3 and 4 (chroma) add nothing to it
    got = [image_coverage(folder, image=gray, level=k) for k in range(1, 11)]
    assert [c.level for c in got] == [1, 2, 2, 2, 3, 4, 5, 5, 5, 6]
    assert [bool(c.added.any()) for c in got] == [
        True,
        True,
        False,
        False,
        True,
        True,
        True,
        False,
        False,
        True,
    ]
    assert got[4].low_bit.tolist() == [_row(STANDARD_GRAY_MAPS[2])]


def test_scan_step_bytes_and_difference(folder: object) -> None:
    names = folder.names  # type: ignore[attr-defined]
    i = names.index("animals/chelsea.jpg")
    lb = folder.level_bytes(i)  # type: ignore[attr-defined]
    steps = [scan_step(folder, image=i, level=k, gain=8.0, size=96) for k in range(1, 11)]
    assert [s.added_bytes for s in steps] == np.diff(np.concatenate([[0], lb])).tolist()
    assert sum(s.added_bytes for s in steps) == int(lb[-1])
    # the difference is the amplified change from the level before (level 1: from flat grey)
    from pcr_explore.jpeg import decode

    a = decode(folder.jpeg_bytes(i, 4), size=96).astype(int)  # type: ignore[attr-defined]
    b = decode(folder.jpeg_bytes(i, 5), size=96).astype(int)  # type: ignore[attr-defined]
    want = np.minimum(np.abs(b - a).max(axis=2) * 8, 255)
    assert (steps[4].difference == want).all()
    assert (steps[4].change == np.abs(b - a).max(axis=2)).all()
    assert steps[0].change.mean() > 10 * steps[9].change.mean()
    rows = dict(steps[1].rows())
    assert rows["components coded"] == "Y"
    assert rows["frequency band"] == "AC coefficients 1-5"
    assert rows["bits"] == "bits &gt;=2 (Al=2)"
    assert rows["bytes it adds"].startswith(f"{steps[1].added_bytes:,} (")
    # without a gain, a power of two that keeps the strongest changes just under white
    auto = [scan_step(folder, image=i, level=k, size=96) for k in (1, 10)]
    assert auto[0].gain <= 2.0 and auto[1].gain >= 8.0
    for st in auto:
        top = np.percentile(st.change, 99.5)
        assert top * st.gain <= 255 < top * st.gain * 2 or st.gain in (1.0, 64.0)
        assert (st.difference == np.minimum(st.change.astype(int) * int(st.gain), 255)).all()
    gray = scan_step(folder, image=names.index("things/camera.jpg"), level=3, size=64)
    assert gray.added_bytes == 0 and not gray.adds_scan and int(gray.change.max()) == 0
    assert gray.label == "no scan of this image at this level"


def test_record_sheet_rows_are_prefix_reads(dataset: Path) -> None:
    from pcr_explore import open_dataset
    from pcr_explore.quality.compare import record_sheet

    ds = open_dataset(dataset)
    h = ds.header(0)
    sheet = record_sheet(ds, record=0, scans=[1, 10], size=64)
    n = min(6, h.num_images)
    assert sheet.size == (max(n * 70 - 6, 360), 2 * (64 + 20 + 6))
    # each row is what one prefix read decodes to: level 1 is not level 10
    row1 = np.asarray(sheet.crop((0, 20, 64, 84)), int)
    row10 = np.asarray(sheet.crop((0, 110, 64, 174)), int)
    assert np.abs(row1 - row10).mean() > 1
    with pytest.raises(ValueError, match=r"scan levels \[11\] are outside 1\.\.10"):
        record_sheet(ds, scans=[11])


# -- the figure ----------------------------------------------------------------------


def test_grid_figure_draws_the_coverage() -> None:
    g = scan_grid_figure()
    assert g.sources["cells"].data["x"] == []
    g.update(scan_coverage(STANDARD, level=2))
    cells = g.sources["cells"].data
    assert len(cells["x"]) == 192
    # Y's coefficients 1-5 outlined, shaded "2 lowest bits missing"; Cr AC white
    hit = [q for q, c, wd in zip(cells["q"], cells["component"], cells["width"]) if wd == 3]
    assert sorted(hit) == [1, 2, 3, 4, 5] and set(
        cells["component"][k] for k, wd in enumerate(cells["width"]) if wd == 3
    ) == {"Y"}
    fill = {(c, q): f for c, q, f in zip(cells["component"], cells["q"], cells["fill"])}
    assert fill["Y", 0] == "#2171b5" and fill["Y", 3] == "#6baed6" and fill["Cr", 9] == "#ffffff"
    heads = g.sources["heads"].data["text"]
    assert heads == [
        "Y: 6/64 sent, 0 exact",
        "+ AC 1-5, bits >=2",
        "Cb: 1/64 sent, 0 exact",
        "not in this scan",
        "Cr: 1/64 sent, 0 exact",
        "not in this scan",
    ]
    assert g.figure.title.text == "After scan 2 of 10: Y AC 1-5, bits >=2 (Al=2)"
    # natural layout: zig-zag 2 sits in row 1, column 0 (x 0, y 6)
    k = [n for n, (c, q) in enumerate(zip(cells["component"], cells["q"])) if c == "Y" and q == 2][
        0
    ]
    assert (cells["x"][k], cells["y"][k]) == (0, 6)


# -- the panel ------------------------------------------------------------------------


def test_panel_follows_its_level_and_image(folder: object) -> None:
    names = folder.names  # type: ignore[attr-defined]
    chelsea = names.index("animals/chelsea.jpg")
    panel = ScanPanel(folder, image=chelsea, level=1, size=96)
    assert panel.panel()["caption"].startswith("<b>scan 1 of 10</b>")
    first = panel.panel()["added"]
    panel.level = 3  # the page holds every level: nothing is measured again
    assert panel.last_error is None and panel.error == ""
    shown = panel.panel()
    assert shown["title"] == "Known after scan 3 of 10: Cr AC 1-63, bits >=1 (Al=1)"
    step = panel.step()
    assert f"scan 3 adds {step.added_bytes:,} bytes: red-difference colour (Cr)" in shown["caption"]
    assert shown["added"] != first and shown["added"] == encode_jpeg(step.difference)
    assert shown["added_caption"] == f"<b>what scan 3 adds</b><br>|scan 3 - scan 2| x {step.gain:g}"
    assert ["components coded", "Cr"] in shown["rows"]
    assert shown["picture_alt"] == "the image at scan 3"
    panel.image = names.index("things/camera.jpg")
    assert "adds no scan to this image" in panel.panel()["title"]
    assert "grayscale" in panel.panel()["caption"]
    assert panel.panel()["grid"] == scan_grid_data(panel.coverage)
    assert panel.coverage.num_components == 1
    assert panel.snapshot()[:2] == b"\xff\xd8"


def test_the_page_holds_every_level_of_the_image_shown(folder: object) -> None:
    panel = ScanPanel(folder, image=0, size=96)
    assert panel.level == 2 and panel.num_scans == 10 and len(panel.panels) == 10
    assert panel.names == folder.names  # type: ignore[attr-defined]
    for k in (1, 6, 10):
        step = scan_step(folder, image=0, level=k, size=96)
        want = panel_state(step, 10)
        assert panel.panels[k - 1] == want
        assert want["grid"] == scan_grid_data(scan_coverage(STANDARD, level=k))
    # a level change sends nothing: the page has it already
    sent: list[str] = []
    panel.observe(lambda c: sent.append(c["name"]), names="panels")
    for k in range(1, 11):
        panel.level = k
    assert sent == []
    panel.image = 1
    assert sent == ["panels"] and panel.panels[0] == panel_state(
        scan_step(folder, image=1, level=1, size=96), 10
    )


def test_bad_values_are_refused_with_the_source_named(folder: object) -> None:
    panel = ScanPanel(folder, image=0, level=4, size=64)
    for bad in (0, 11):
        with pytest.raises(ValueError, match=rf"scan level {bad} is outside 1\.\.10$"):
            panel.level = bad
    n = len(folder)  # type: ignore[arg-type]
    with pytest.raises(traitlets.TraitError, match=rf"no image {n}; it holds 0\.\.{n - 1}"):
        panel.image = n
    assert (panel.level, panel.image) == (4, 0)
    with pytest.raises(ValueError, match=r"scan level 12 is outside 1\.\.10"):
        ScanPanel(folder, level=12)
    with pytest.raises(ValueError, match=rf"no image {n}"):
        ScanPanel(folder, image=n)


def test_the_saved_picture_follows_the_level(folder: object) -> None:
    panel = ScanPanel(folder, image=0, level=2, size=96)
    at2 = panel.snapshot()
    panel.level = 7
    at7 = panel.snapshot()
    assert at2 != at7 and at7 == to_jpeg(step_drawing(panel.step()))
    assert Image.open(io.BytesIO(at7)).format == "JPEG"
    panel.level = 2
    assert panel.snapshot() == at2


def test_the_panels_module_and_its_controls(folder: object) -> None:
    panel = ScanPanel(folder, size=64, controls=False)
    assert panel.get_state("controls") == {"controls": False}
    esm = panel._esm
    assert "export default" in esm and "function grids(" in esm
    assert not re.search(r"^\s*import\s", esm, re.M)  # chart.js inlined: nothing to fetch
    assert not re.search(r"\bimport\s*\(|\bfetch\s*\(", esm)
    assert set(re.findall(r"https?://[^\s\"'`]*", esm)) <= {"http://www.w3.org/2000/svg"}
    assert 'dataset.lmSuppressShortcuts = "true"' in esm and "stopPropagation" in esm
    assert 'classList.toggle("pcr-present", get("presentation"))' in esm
    read = set(re.findall(r"\bget\(\"(\w+)\"\)", esm))
    written = set(re.findall(r"(?:save|model\.set)\(\"(\w+)\"", esm))
    watched = {
        k
        for group in re.findall(r"\bon\(\[([^\]]*)\]", esm)
        for k in re.findall(r"\"(\w+)\"", group)
    }
    assert {"level", "image", "presentation"} <= written
    assert {"panels", "controls", "num_scans"} <= read
    assert (read | written | watched) - set(panel.keys) == set()
    from ipywidgets.widgets.widget import _remove_buffers

    _, paths, _ = _remove_buffers(panel.get_state())
    want = [["panels", k, key] for k in range(10) for key in ("picture", "added")]
    assert sorted(paths) == sorted(want)


def test_panel_alone_with_a_script(photo_folder: Path) -> None:
    from pcr_explore import find_jpegtran

    if find_jpegtran() is None:
        pytest.skip("jpegtran not installed (Debian: libjpeg-turbo-progs)")
    panel = ScanPanel(photo_folder / "animals" / "chelsea.jpg", scan_script="spectral", size=64)
    assert panel.num_scans == 5 and len(panel.panels) == 5
    panel.level = 5
    assert panel.coverage.label() == "Y AC 6-63, all bits (Al=0)"
    assert panel.coverage.exact.all()
    with pytest.raises(ValueError, match="scan_script applies to a folder or file path"):
        ScanPanel(open_source(photo_folder), scan_script="spectral")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PCR dataset of photos large enough for 5-scale MS-SSIM, one of them grayscale."""
    root = tmp_path_factory.mktemp("scanpanel")
    for cls, names in {"animals": ["chelsea", "coffee"], "things": ["camera"]}.items():
        (root / "src" / cls).mkdir(parents=True)
        for n in names:
            (root / "src" / cls / f"{n}.jpg").write_bytes(jpeg_bytes(photo(n, 256)))
    encode_dataset(root / "src", root / "ds", workers=1, progress=False)
    return root / "ds"


def test_the_explorers_panel_opens_for_the_level_shown_and_follows_it(dataset: Path) -> None:
    names = open_source(dataset).names
    coffee = names.index("animals/coffee.jpg")
    ex = ScanExplorer(dataset, image=coffee, level=2, dataset_sample=0, workers=1, max_side=96)
    assert ex.scan_panel == {}  # not drawn while it is closed
    ex.scan_open = True
    panel = ex.scan_panel
    step = scan_step(ex.source, image=coffee, level=2, size=224)
    assert panel["title"] == "Known after scan 2 of 10: Y AC 1-5, bits >=2 (Al=2)"
    assert panel["rows"] == [list(r) for r in step.rows()]
    assert panel["picture"] == encode_jpeg(step.pixels)
    assert panel["added"] == encode_jpeg(step.difference)
    assert panel["picture_caption"] == (
        f"<b>the image at scan 2</b><br>{int(step.level_bytes[1]):,} bytes read"
    )
    assert f"|scan 2 - scan 1| x {step.gain:g}" in panel["added_caption"]
    for k in (1, 5, 10):
        ex.level = k  # no event loop here: what waits for the slider to stop runs at once
        panel = ex.scan_panel
        assert panel["caption"].startswith(f"<b>scan {k} of 10</b>")
        assert panel["grid"] == scan_grid_data(scan_coverage(STANDARD, level=k))
        assert ex.scan_step().coverage.low_bit.tolist() == (
            scan_coverage(STANDARD, level=k).low_bit.tolist()
        )
    ex.image = names.index("things/camera.jpg")  # grayscale: one grid, and scan 3 adds none
    ex.level = 3
    assert ex.scan_step().coverage.num_components == 1
    assert "adds no scan to this image" in ex.scan_panel["title"]
    assert "grayscale" in ex.scan_panel["caption"]
    ex.scan_open = False
    ex.level = 4  # closed: not drawn again
    assert ex.scan_panel["caption"].startswith("<b>scan 3 of 10</b>")
    ex.scan_open = True
    assert ex.scan_panel["caption"].startswith("<b>scan 4 of 10</b>")
    assert ex.last_error is None and ex.error == ""


def test_the_explorers_saved_picture_holds_the_panel_while_it_is_open(dataset: Path) -> None:
    ex = ScanExplorer(dataset, image=0, level=3, dataset_sample=0, workers=1, max_side=96)
    closed = Image.open(io.BytesIO(ex.snapshot()))
    ex.scan_open = True
    opened = np.asarray(Image.open(io.BytesIO(ex.snapshot())).convert("L"), float)

    def drawing(level: int) -> np.ndarray:
        step = scan_step(ex.source, image=0, level=level, size=224)
        return np.asarray(step_drawing(step).convert("L"), float)

    drawn = drawing(3)
    h, w = drawn.shape
    assert opened.shape[0] == closed.height + 12 + h  # the panel, below the rest
    bottom = opened[-h:, :w]

    def off(a: np.ndarray, b: np.ndarray) -> float:  # share of pixels far apart
        return float((np.abs(a - b) > 64).mean())

    here = off(bottom, drawn)
    other = off(bottom, drawing(1))  # control: another level's panel is not what was drawn there
    assert here < 0.001 and other > 0.02, (here, other)
    ex.scan_open = False
    assert Image.open(io.BytesIO(ex.snapshot())).height == closed.height
