"""TunerDashboard in the kernel: set its traits as the page does, check the state the page draws.

The front end (``static/tuner_dashboard.js``, on anywidget) draws the
sample's curve, moves the target line and the recommended level's marker
while the target is dragged and switches the quality axis itself; these
tests check the state it draws from on the Python side, with no browser
(tests/test_browser_02.py drives the page). Outside a kernel the widget
talks to a dummy comm and no event loop runs: the saved picture is drawn
again at once.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets
from PIL import Image

from pcr_explore import encode_dataset
from pcr_explore.plots import to_db
from pcr_explore.quality import quality_curve
from pcr_explore.quality.compare._views import encode_jpeg, jpeg_size, worst_detail
from pcr_explore.quality.tune import recommend
from pcr_explore.widgets import TunerDashboard


def _is_jpeg(data: bytes) -> bool:
    return data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"


def _floats(values: list[float | None]) -> np.ndarray:
    """A list the page gets (None for a gap) as floats (NaN for a gap)."""
    return np.asarray([np.nan if v is None else v for v in values], float)


def _page_level(tuner: TunerDashboard) -> int:
    """The level the page marks: tuner_dashboard.js's recommendedIndex, in Python."""
    stats = tuner.lines["stats"][tuner.statistic]
    hits = [i for i, v in enumerate(stats) if v is not None and v >= tuner.target]
    return (hits[0] if hits else len(stats) - 1) + 1


@pytest.fixture(scope="module")
def photos_256(
    tmp_path_factory: pytest.TempPathFactory,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> Path:
    """Photos with a shorter side of at least 170 px: MS-SSIM uses all 5 scales."""
    root = tmp_path_factory.mktemp("photos256")
    for cls, names in {"a": ["astronaut", "chelsea"], "b": ["coffee", "camera"]}.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 256)))
    return root


@pytest.fixture(scope="module")
def dataset_path(photos_256: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pcr256") / "ds"
    encode_dataset(photos_256, out, record_size=64 * 1024, workers=1, progress=False)
    return out


@pytest.fixture(scope="module")
def module_tuner(dataset_path: Path) -> TunerDashboard:
    return TunerDashboard(str(dataset_path), sample=2, worst=2, thumb_side=120, workers=1)


@pytest.fixture
def tuner(module_tuner: TunerDashboard) -> Iterator[TunerDashboard]:
    """The module's dashboard at MS-SSIM 0.95, the 5th percentile, 2 images; put back after."""

    def reset() -> None:
        module_tuner.metric, module_tuner.statistic = "mssim", "p5"
        module_tuner.sample, module_tuner.scale = 2, "value"
        module_tuner.target, module_tuner.presentation = 0.95, False

    reset()
    yield module_tuner
    reset()


def test_the_target_recommends_from_the_measured_sample(tuner: TunerDashboard) -> None:
    curve = quality_curve(tuner.source, sample=2, seed=0, workers=1)
    for target in (0.9, 0.99, 0.95):
        tuner.target = target
        assert tuner.last_error is None and tuner.error == ""
        want = recommend(curve, target=target, seed=0)  # the 5th percentile, by default
        r = tuner.result
        assert (r.scan, r.value, r.ci) == (want.scan, want.value, want.ci)
        assert r.bandwidth_saving == pytest.approx(want.bandwidth_saving)
        assert f"<b>{want.scan}</b>" in tuner.readout and tuner.recommended == want.scan
        # the page marks the level the kernel recommends, from the statistics it holds
        assert _page_level(tuner) == want.scan
        np.testing.assert_allclose(_floats(tuner.lines["mean_value"]), curve.mean)
        np.testing.assert_allclose(_floats(tuner.lines["p95_value"]), curve.p95)
        np.testing.assert_allclose(_floats(tuner.lines["x"]), curve.bytes_fraction)


def test_the_page_marks_the_kernels_level_at_every_target_step(tuner: TunerDashboard) -> None:
    lo, hi, step = (tuner.target_ranges["mssim"][k] for k in ("min", "max", "step"))
    for statistic in ("p5", "mean"):
        tuner.statistic = statistic
        for target in np.arange(lo, hi + step / 2, step * 7):
            tuner.target = float(target)
            assert _page_level(tuner) == tuner.result.scan == tuner.recommended, target


def test_the_gallery_shows_the_worst_images_where_they_differ_most(
    tuner: TunerDashboard,
) -> None:
    tuner.target = 0.97
    r = tuner.result
    rows = r.curve.per_image.worst(r.scan, n=2)
    assert [row["index"] for row in tuner.worst_images()] == [row["index"] for row in rows]
    assert rows[0]["value"] <= rows[1]["value"]
    for slot, row in enumerate(rows):
        i = row["index"]
        level, full = tuner.pictures.pixels(i, r.scan), tuner.pictures.pixels(i, None)
        h, w = full.shape[:2]
        d = worst_detail(level, full, tuner.zoom, (120, round(120 * h / w)))
        card = tuner.gallery_cards[slot]
        assert card.level == encode_jpeg(d["level"])
        assert card.full == encode_jpeg(d["full"])
        assert card.difference == encode_jpeg(d["difference"])
        assert jpeg_size(card.level)[0] == 120
        assert row["name"] in card.caption
        cx, cy = d["center"]
        assert f"window at ({cx:.0%}, {cy:.0%})" in card.caption
        # the page gets the crops themselves, in the card's order, with the caption and alts
        assert tuner.crops[3 * slot : 3 * slot + 3] == [card.full, card.level, card.difference]
        shown = tuner.gallery[slot]
        assert shown["caption"] == card.caption
        assert len(shown["alts"]) == 3 and all(row["name"] in a for a in shown["alts"])
        assert f"scan {r.scan}" in shown["alts"][1]
    assert len(tuner.gallery_cards) == len(tuner.gallery) == 2 and len(tuner.crops) == 6
    # the pictures behind the crops are big enough for a x3 zoom of 120 px crops
    assert tuner.pictures.max_side == 360 and tuner.thumb_side == 120
    assert f"scan {r.scan}" in tuner.gallery_title


def test_metric_statistic_and_sample(tuner: TunerDashboard) -> None:
    tuner.target = 0.97
    tuner.metric = "psnr"
    assert tuner.target == 35.0 and tuner.target_ranges["psnr"] == {
        "min": 20.0, "max": 50.0, "step": 0.5, "digits": 1, "trim": False,
    }  # fmt: skip
    assert tuner.result.metric == "psnr" and tuner.result.target == 35.0
    assert "5th percentile PSNR &ge; 35.0 dB" in tuner.readout
    assert "dB" in tuner.readout and "psnr" not in tuner.readout
    assert tuner.lines["db"] is False and tuner.lines["labels"]["value"] == "PSNR (dB)"
    tuner.statistic = "mean"
    mean = tuner.result
    tuner.statistic = "p5"
    assert mean.statistic == "mean" and tuner.result.scan >= mean.scan
    tuner.metric = "mssim"
    assert tuner.target == 0.97 and tuner.targets["psnr"] == 35.0  # each kept its own value
    assert tuner.result.target == 0.97
    assert tuner.sizes == [2, 4]
    tuner.sample = 4
    assert tuner.result.sample_size == 4 and tuner.result.decided  # all images: exact
    assert "[" not in tuner.readout.split("at this scan")[1].split("</tr>")[0]
    assert tuner.last_error is None


def test_targets_and_samples_outside_the_controls_are_refused_or_clamped(
    tuner: TunerDashboard,
) -> None:
    tuner.target = 5.0
    assert tuner.target == 0.999  # the metric's range, as the slider's
    tuner.target = 0.1
    assert tuner.target == 0.8
    with pytest.raises(traitlets.TraitError, match=r"sample must be one of \[2, 4\]"):
        tuner.sample = 3
    with pytest.raises(traitlets.TraitError):
        tuner.metric = "lpips"
    with pytest.raises(traitlets.TraitError):
        tuner.statistic = "max"


def test_the_marker_follows_the_statistic(tuner: TunerDashboard) -> None:
    tuner.statistic = "mean"
    r = tuner.result
    assert _page_level(tuner) == r.scan
    assert tuner.lines["mean_value"][r.scan - 1] == pytest.approx(r.curve.mean[r.scan - 1])
    tuner.statistic = "p5"
    r = tuner.result
    assert _page_level(tuner) == r.scan
    # the marker sits where the readout says, on the 5th percentile's line
    assert tuner.lines["p5_value"][r.scan - 1] == pytest.approx(r.value)
    assert len(tuner.lines["p5_value"]) == r.curve.num_scans
    assert len(tuner.lines["images"]) == 2  # one faint line per image


def test_the_db_scale_is_drawn_in_the_page(tuner: TunerDashboard) -> None:
    lines, readout = tuner.lines, tuner.readout
    np.testing.assert_allclose(_floats(lines["mean_db"])[:-1], to_db(tuner.result.curve.mean[:-1]))
    assert "dB" in lines["labels"]["db"] and lines["db"] is True
    tuner.scale = "db"
    assert tuner.lines is lines and tuner.readout == readout  # nothing sent again
    assert tuner.get_state("scale") == {"scale": "db"}


def test_it_says_it_is_busy_while_measuring(tuner: TunerDashboard) -> None:
    seen: list[str] = []
    tuner.observe(lambda c: seen.append(c.new), names="status")
    tuner._curves.cache_clear()
    tuner._measured.clear()
    tuner.sample = 4
    tuner.sample = 2
    notes = [v for v in seen if v]
    assert "measuring 4 images" in notes[0] and "measuring 2 images" in notes[-2], notes
    assert seen[-1] == "" and tuner.status == ""
    # a target step that keeps the level says nothing: the page moves the line and marker
    seen.clear()
    scan = tuner.result.scan
    tuner.target = tuner.target + 0.001
    assert tuner.result.scan != scan or seen == []


def test_bad_arguments_are_refused(dataset_path: Path) -> None:
    with pytest.raises(ValueError, match="metric"):
        TunerDashboard(str(dataset_path), metric="lpips")
    with pytest.raises(ValueError, match="statistic"):
        TunerDashboard(str(dataset_path), statistic="max")


def test_a_curve_given_is_shown_without_measuring(dataset_path: Path) -> None:
    curve = quality_curve(str(dataset_path), sample=2, seed=0, workers=1)
    dash = TunerDashboard(str(dataset_path), curve=curve, target=0.99, metric="mssim", worst=1)
    assert dash.sample == 2 and dash.target == 0.99 and dash.targets["mssim"] == 0.99
    assert dash.result.curve is curve and dash._measured == {2}


def test_a_callback_error_shows_under_the_dashboard_and_clears(
    tuner: TunerDashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise RuntimeError("no curve today")

    monkeypatch.setattr(tuner, "_recommend", broken)
    tuner.target = 0.96
    assert "RuntimeError: no curve today" in tuner.error
    monkeypatch.undo()
    tuner.target = 0.95
    assert tuner.error == "" and tuner.last_error is None


# -- the module -------------------------------------------------------------------------


def test_the_module_is_one_file_and_no_script_goes_elsewhere(tuner: TunerDashboard) -> None:
    esm = tuner.get_state()["_esm"]
    assert "export default" in esm
    assert not re.search(r"^\s*import\s", esm, re.M)  # chart.js inlined: nothing to fetch
    assert not re.search(r"\bimport\s*\(|\bfetch\s*\(", esm)
    assert set(re.findall(r"https?://[^\s\"'`]*", esm)) <= {"http://www.w3.org/2000/svg"}
    assert "lmSuppressShortcuts" in esm and "stopPropagation" in esm
    rest = {k: v for k, v in tuner.get_state().items() if k not in ("_esm", "_css")}
    texts = json.dumps(rest, default=lambda picture: "")  # the pictures are bytes
    assert not re.search(r"<script|javascript:|\son\w+\s*=", texts, re.I)
    assert ".pcr-present" in tuner._css and ".pcr-cards" in tuner._css


def test_every_key_the_module_reads_is_a_synced_trait(tuner: TunerDashboard) -> None:
    esm = tuner._esm
    read = set(re.findall(r"\bget\(\"(\w+)\"\)", esm))
    written = set(re.findall(r"(?:save|model\.set)\(\"(\w+)\"", esm))
    watched = {
        k
        for group in re.findall(r"\bon\(\[([^\]]*)\]", esm)
        for k in re.findall(r"\"(\w+)\"", group)
    }
    assert {"target", "lines", "readout", "gallery", "crops", "status", "error"} <= read
    assert {"target", "metric", "statistic", "sample", "scale", "presentation"} <= written
    assert (read | written | watched) - set(tuner.keys) == set()


def test_the_state_crosses_as_json_with_the_crops_as_buffers(tuner: TunerDashboard) -> None:
    from ipywidgets.widgets.widget import _put_buffers, _remove_buffers

    state = tuner.get_state()
    rest, paths, buffers = _remove_buffers(state)
    assert sorted(paths) == sorted(["crops", k] for k in range(6))
    text = json.dumps(rest)  # the rest is plain JSON: no NaN, no bytes
    assert "NaN" not in text and "Infinity" not in text
    _put_buffers(rest, paths, buffers)
    assert rest == state


def test_presentation_mode_is_a_trait_the_page_follows(tuner: TunerDashboard) -> None:
    tuner.presentation = True
    assert tuner.get_state("presentation") == {"presentation": True}
    assert 'classList.toggle("pcr-present", Boolean(get("presentation")))' in tuner._esm


# -- the static picture and display ------------------------------------------------------


def test_the_static_picture_follows_the_target(tuner: TunerDashboard) -> None:
    first = tuner.snapshot()
    assert _is_jpeg(first)
    with Image.open(io.BytesIO(first)) as im:
        assert im.width >= 300 and im.height >= 200
    tuner.target = 0.999
    assert tuner.snapshot() != first


@pytest.fixture
def display_pub() -> Iterator[Any]:
    """An IPython shell whose display publisher keeps what is displayed (the real one prints)."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    had = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    real, shell.display_pub = shell.display_pub, CapturingDisplayPublisher()
    try:
        yield shell.display_pub
    finally:
        shell.display_pub = real
        if not had:
            InteractiveShell.clear_instance()


def _picture_in(html: str) -> bytes:
    return base64.b64decode(html.split("data:image/jpeg;base64,")[1].split("'")[0])


def test_the_saved_picture_comes_first_and_follows_the_state(
    tuner: TunerDashboard, display_pub: Any
) -> None:
    from IPython.display import display

    display(tuner)
    picture, live = display_pub.outputs
    key = picture["transient"]["display_id"]
    assert _picture_in(picture["data"]["text/html"]) == tuner.snapshot()
    assert set(live["data"]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    del display_pub.outputs[:]
    tuner.target = 0.99  # no event loop: drawn again at once
    updates = [o for o in display_pub.outputs if o["update"]]
    assert updates and all(o["transient"]["display_id"] == key for o in updates)
    assert _picture_in(updates[-1]["data"]["text/html"]) == tuner.snapshot()
    tuner._displays.clear()
