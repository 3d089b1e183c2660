"""Scan scripts compared on the same images, in the library and in the widget.

The widget's front end (``static/script_explorer.js``, on anywidget) holds every
level's picture of both scripts for the image shown and picks the level at the
byte budget itself; these tests check the state it draws, with no browser
(tests/test_browser_scripts.py drives the page).
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import traitlets
from PIL import Image

from pcr_explore.quality import compare_scripts
from pcr_explore.quality.compare._views import encode_jpeg
from pcr_explore.widgets import ScriptExplorer

pytestmark = pytest.mark.jpegtran


@pytest.fixture(scope="module")
def comparison(photo_folder: Path):
    return compare_scripts(
        photo_folder, scripts=["standard", "spectral", "lean"], sample=3, repeats=1, progress=False
    )


@pytest.fixture
def explorer(comparison) -> Iterator[ScriptExplorer]:
    """An explorer on the module's comparison (scripts A and B by default, budget 30%)."""
    yield ScriptExplorer("unused", comparison=comparison)


def test_scripts_are_measured_on_the_same_images(comparison) -> None:
    ref, spectral = comparison["standard"], comparison["spectral"]
    assert ref.curve.per_image.names == spectral.curve.per_image.names
    assert comparison.names == ["standard", "spectral", "lean"]
    assert comparison.x("standard")[-1] == 1.0
    assert np.all(comparison.gap("standard") == 0)
    assert len(comparison.x("spectral")) == 5 and spectral.curve.mean[-1] == 1.0
    # same coefficients, cut differently: the full levels differ by a few percent only
    assert 0.97 < spectral.level_bytes[-1] / ref.level_bytes[-1] < 1.1
    assert np.all(np.diff(comparison.x("spectral")) > 0) and np.all(spectral.decode_ms > 0)
    with pytest.raises(KeyError, match="no script 'hybrid'"):
        comparison["hybrid"]
    rows = {r["script"]: r for r in comparison.rows()}
    assert rows["standard"]["worst_gap"] == 0.0 and rows["spectral"]["levels"] == 5
    assert "worst gap" in str(comparison) and "<table>" in comparison._repr_html_()


def test_level_at_picks_the_highest_level_within_the_budget(comparison) -> None:
    x = comparison.x("spectral")
    assert comparison.level_at("spectral", x[2]) == 3
    assert comparison.level_at("spectral", (x[2] + x[3]) / 2) == 3
    assert comparison.level_at("spectral", 0.0) == 1
    assert comparison.level_at("spectral", 2.0) == 5


def test_the_widget_shows_each_script_at_the_byte_budget(explorer: ScriptExplorer) -> None:
    ex, comparison = explorer, explorer.comparison
    assert ex.chosen() == ["standard", "spectral"] == [ex.script_a, ex.script_b]
    image = ex.image_name
    assert image == ex.images[0] == comparison.reference.curve.per_image.names[0]
    for budget in (0.05, 0.1, 0.3, 0.6, 1.05):
        ex.budget = budget
        for name, level in zip(ex.chosen(), ex.levels_at_budget()):
            share = comparison[name].share(image, comparison.reference)
            assert level == 1 or share[level - 1] <= budget
            assert level == len(share) or share[level] > budget
    assert ex.levels_at_budget() == [10, 5]
    caption = ex.captions_at_budget()[1]
    share = comparison["spectral"].share(image, comparison.reference)[-1]
    assert caption.startswith("<b>spectral</b> level 5 of 5: ")
    assert f"{share:.1%} of the bytes, MS-SSIM 1.0000" in caption
    # the table says what each number is, and which way a decode ratio goes
    table = dict(ex.table)
    assert list(table) == ["standard", "spectral"]
    assert "the standard script's bytes" in table["spectral"]
    assert "worst MS-SSIM gap at equal bytes" in table["spectral"]
    assert "as fast as the reference" in table["standard"]  # the reference against itself
    assert table["spectral"].endswith(("faster)", "slower)"))
    ex.script_b = "lean"
    assert [s["name"] for s in ex.sides] == ["standard", "lean"] and list(dict(ex.table)) == [
        "standard",
        "lean",
    ]
    lean = ex.sides[1]
    assert lean["label"] == "B: lean" and lean["num_levels"] == 9
    assert len(lean["x"]) == len(lean["q"]) == len(lean["ms"]) == len(lean["pictures"]) == 9
    assert lean["x"] == comparison.x("lean").tolist()
    assert lean["ms"] == comparison["lean"].decode_ms.tolist()
    assert ex.error == "" and ex.last_error is None
    pic = Image.open(io.BytesIO(ex.snapshot()))
    assert pic.format == "JPEG" and pic.width > 600


def test_the_page_holds_every_level_of_both_scripts(explorer: ScriptExplorer) -> None:
    comparison = explorer.comparison
    image = explorer.image_name
    for side in explorer.sides:
        c = comparison[side["name"]]
        n = c.script.num_levels
        share = c.share(image, comparison.reference)
        per = c.curve.per_image
        own = per.values[per.names.index(image)]
        assert side["share"] == share.tolist() and side["q"] == c.curve.mean.tolist()
        assert len(side["pictures"]) == len(side["captions"]) == len(side["alts"]) == n
        for k in (1, n):
            picture = side["pictures"][k - 1]
            assert picture == encode_jpeg(c.image(image, k, size=explorer.max_side))
            assert side["captions"][k - 1] == (
                f"<b>{side['name']}</b> level {k} of {n}: {share[k - 1]:.1%} of the bytes, "
                f"MS-SSIM {own[k - 1]:.4f}"
            )
            assert side["alts"][k - 1].startswith(f"{image} in the {side['name']} script at level")
            assert side["q_tips"][k - 1].endswith(f"MS-SSIM {c.curve.mean[k - 1]:.4f}")
            assert side["ms_tips"][k - 1] == (
                f"{side['name']} level {k}: {c.decode_ms[k - 1]:.2f} ms per image"
            )
        # the pictures sharpen with the level: the last is the one farthest from the first
        first, last = (
            np.asarray(Image.open(io.BytesIO(side["pictures"][k])), float) for k in (0, -1)
        )
        assert np.abs(first - last).mean() > 1
    assert explorer.labels["x"] == "bytes read (share of standard's full level)"


def test_the_budget_moves_in_the_page_and_sends_no_picture(explorer: ScriptExplorer) -> None:
    sent: list[str] = []
    explorer.observe(lambda c: sent.append(c["name"]), names=["sides", "table"])
    for budget in (0.1, 0.5, 0.9):
        explorer.budget = budget
    assert sent == []
    # the page picks the level by the same rule as the kernel
    js = explorer._esm
    assert "share[k] <= budget + 1e-12" in js and "Math.max(1, k)" in js


def test_the_image_picker_shows_another_image(explorer: ScriptExplorer) -> None:
    before = [s["pictures"][-1] for s in explorer.sides]
    explorer.image = 1
    name = explorer.images[1]
    assert explorer.image_name == name
    assert all(s["alts"][0].startswith(name) for s in explorer.sides)
    assert [s["pictures"][-1] for s in explorer.sides] != before
    explorer.image = 0
    assert [s["pictures"][-1] for s in explorer.sides] == before  # the same pictures back


def test_bad_values_are_refused(explorer: ScriptExplorer) -> None:
    with pytest.raises(traitlets.TraitError, match=r"no script 'hybrid' in this comparison"):
        explorer.script_b = "hybrid"
    with pytest.raises(traitlets.TraitError, match=r"no image 3: the sample holds 0\.\.2"):
        explorer.image = 3
    for budget in (0.0, 1.2):
        with pytest.raises(traitlets.TraitError):
            explorer.budget = budget
    assert explorer.chosen() == ["standard", "spectral"] and explorer.image == 0


def test_a_callback_error_shows_under_the_explorer_and_clears(
    photo_folder: Path, tmp_path: Path
) -> None:
    import shutil

    folder = tmp_path / "photos"
    shutil.copytree(photo_folder, folder)
    comparison = compare_scripts(
        folder, scripts=["standard", "spectral"], sample=2, repeats=1, progress=False
    )
    ex = ScriptExplorer(folder, comparison=comparison)
    gone = folder / ex.images[1]
    gone.rename(gone.with_suffix(".moved"))
    for c in comparison.curves:  # transcoded again when it is shown: the file is read then
        c.source._cache.clear()
    ex.image = 1
    assert ex.last_error is not None and ex.error and ex.status == ""
    gone.with_suffix(".moved").rename(gone)
    ex.image = 0
    assert ex.last_error is None and ex.error == ""


def test_presentation_mode_and_the_module(explorer: ScriptExplorer) -> None:
    assert explorer.get_state("presentation") == {"presentation": False}
    esm = explorer._esm
    assert 'classList.toggle("pcr-present", get("presentation"))' in esm
    assert ".pcr-present" in explorer._css and ".pcr-charts" in explorer._css
    assert "export default" in esm
    assert not re.search(r"^\s*import\s", esm, re.M)  # chart.js inlined: nothing to fetch
    assert not re.search(r"\bimport\s*\(|\bfetch\s*\(", esm)
    assert set(re.findall(r"https?://[^\s\"'`]*", esm)) <= {"http://www.w3.org/2000/svg"}
    assert 'dataset.lmSuppressShortcuts = "true"' in esm and "stopPropagation" in esm
    read = set(re.findall(r"\bget\(\"(\w+)\"\)", esm))
    written = set(re.findall(r"(?:save|model\.set)\(\"(\w+)\"", esm))
    watched = {
        k
        for group in re.findall(r"\bon\(\[([^\]]*)\]", esm)
        for k in re.findall(r"\"(\w+)\"", group)
    }
    assert {"script_a", "script_b", "image", "budget", "presentation"} <= written
    assert (read | written | watched) - set(explorer.keys) == set()


def test_the_state_crosses_as_json_with_the_pictures_as_buffers(explorer: ScriptExplorer) -> None:
    from ipywidgets.widgets.widget import _put_buffers, _remove_buffers

    state = explorer.get_state()
    rest, paths, buffers = _remove_buffers(state)
    want = [["sides", j, "pictures", k] for j, s in enumerate(explorer.sides)
            for k in range(s["num_levels"])]  # fmt: skip
    assert sorted(paths) == sorted(want)
    json.dumps(rest)  # the rest is plain JSON
    _put_buffers(rest, paths, buffers)
    assert rest == state


def test_display_and_the_saved_picture_follow_the_budget(explorer: ScriptExplorer) -> None:
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display

    had = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    real, shell.display_pub = shell.display_pub, CapturingDisplayPublisher()
    try:
        explorer.budget = 0.2
        display(explorer)
        picture, live = shell.display_pub.outputs
        key = picture["transient"]["display_id"]
        assert key.startswith("pcr-fallback-")
        assert set(live["data"]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
        first = _picture_in(picture["data"]["text/html"])
        assert first == explorer.snapshot()
        del shell.display_pub.outputs[:]
        explorer.budget = 0.8  # no event loop: drawn again at once
        updates = [o for o in shell.display_pub.outputs if o["update"]]
        assert updates and all(o["transient"]["display_id"] == key for o in updates)
        now = _picture_in(updates[-1]["data"]["text/html"])
        assert now != first and now == explorer.snapshot()
    finally:
        explorer._displays.clear()
        shell.display_pub = real
        if not had:
            InteractiveShell.clear_instance()


def _picture_in(html: str) -> bytes:
    return base64.b64decode(html.split("data:image/jpeg;base64,")[1].split("'")[0])


def test_a_dataset_in_another_script_is_audited_in_its_own_levels(
    photo_folder: Path, tmp_path: Path
) -> None:
    from pcr_explore import audit, encode_dataset

    encode_dataset(photo_folder, tmp_path / "ds", scan_script="hybrid", progress=False)
    report = audit(str(tmp_path / "ds"), sample=3, workers=1, progress=False)
    assert not [p for p in report.problems if p["issue"] == "coding"]
    assert set(report.coding) == {"progressive JPEG, hybrid scan script"}
    assert len(report.level_bytes) == 7 and report.tune is not None
    assert 1 <= report.tune.scan <= 7


def test_training_defaults_fit_any_scan_script(photo_folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from pcr_explore import encode_dataset, open_dataset
    from pcr_explore.train import default_levels, small_cnn, tune_by_gradient

    assert default_levels(10) == (1, 2, 5, 10) and default_levels(7) == (1, 2, 4, 7)
    encode_dataset(photo_folder, tmp_path / "ds", scan_script="spectral", progress=False)
    ds = open_dataset(str(tmp_path / "ds"))
    result = tune_by_gradient(
        ds, model=small_cnn(len(ds.classes)), batches=1, batch_size=4, size=32
    )
    assert result.scans == (1, 2, 3, 5) and 1 <= result.scan <= 5
