"""TrainingExplorer in the kernel: press Train, watch the curves and readouts grow, per epoch.

The explorer's state is its traitlets (what its ES module draws); the Train button of
the page is a message, sent here as the page sends it.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from pcr_explore.train import SplitDatasets, load_flowers, write_stand_in_archive

pytest.importorskip("torch")

from pcr_explore.widgets.training_explorer import TrainingExplorer  # noqa: E402

SIZE = 32


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> SplitDatasets:
    tmp = tmp_path_factory.mktemp("explorer")
    archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=6, side=SIZE)
    return load_flowers(archive, cache_dir=tmp / "cache", workers=1, progress=False)


def _press_train(ex: TrainingExplorer) -> None:
    """What the page's Train button sends."""
    ex._handle_custom_msg({"event": "train"}, [])


def _picture(widget: TrainingExplorer) -> Image.Image:
    pic = widget.snapshot()
    assert pic[:3] == b"\xff\xd8\xff"
    im = Image.open(io.BytesIO(pic))
    assert im.width >= 300 and im.height >= 200
    return im


def _lines(ex: TrainingExplorer) -> dict[str, list[int]]:
    return {r["label"]: r["epoch"] for r in ex.runs}


def _text(rows: list[list[str]]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in rows)


@pytest.mark.filterwarnings("ignore::pcr_explore.errors.FewerScalesWarning")
def test_train_button_draws_each_epoch_then_tunes(data: SplitDatasets) -> None:
    ex = TrainingExplorer(
        data.train,
        data.val,
        scans=(1, 10),
        size=SIZE,
        epochs=2,
        batch_size=8,
        tune_batches=1,
        sample=4,
        workers=1,
    )
    before = _picture(ex)
    assert _lines(ex) == {"scan 1": [], "scan 10": []}  # a line per ticked level, empty
    seen: list[list[tuple[str, int]]] = []
    ex.observe(
        lambda c: seen.append([(r["label"], len(r["epoch"])) for r in c["new"]]), names="runs"
    )
    running: list[bool] = []
    ex.observe(lambda c: running.append(c["new"]), names="running")
    _press_train(ex)
    assert ex.last_error is None and ex.error == "" and ex.result is not None
    assert running == [True, False]  # Train is disabled while it trains, then again enabled
    # one more point per epoch and level, in training order
    assert seen == [
        [("scan 1", 1), ("scan 10", 0)],
        [("scan 1", 2), ("scan 10", 0)],
        [("scan 1", 2), ("scan 10", 1)],
        [("scan 1", 2), ("scan 10", 2)],
    ]
    for r in ex.runs:
        run = ex.result.level(int(r["label"].split()[1]))
        assert r["epoch"] == [1, 2] and r["accuracy"] == run.val_accuracy.tolist()
        assert r["mbytes"] == pytest.approx((run.cumulative_bytes() / 1e6).tolist())
        assert r["mbytes"][0] > 0 and r["seconds"][1] > r["seconds"][0]
    assert ex.run_epochs == 2
    # the readout of a finished run says what was trained
    progress = _text(ex.progress)
    assert "scan 1, scan 10: 2 epochs each, done" in progress
    assert " MB" in progress and "epoch 2 of 2" not in progress
    # the table: one row per run under its own column heads, the setting as its caption
    table = ex.table
    assert table["columns"][0] == "run" and "speed-up" in table["columns"]
    assert [row[0] for row in table["rows"]] == ["scan 1", "scan 10"]
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
    assert "storage unthrottled" in table["caption"]
    assert ex.gradient is not None and ex.quality is not None
    assert ex.similarity["scans"] == [1, 10] and ex.similarity["chosen"] == ex.gradient.scan
    assert ex.similarity["threshold"] == 0.8 and len(ex.similarity["std"]) == 2
    comparison = _text(ex.comparison)
    assert f"gradient similarity: scan {ex.gradient.scan}" in comparison
    assert "MS-SSIM tuner" in comparison
    assert ex.status == ""
    after = _picture(ex)
    assert after.height > before.height  # the similarity bars joined the picture

    # A new choice of levels draws a line per level, and only those.
    ex.scans = [5, 10]
    ex.epochs = 1
    ex.train()
    assert _lines(ex) == {"scan 5": [1], "scan 10": [1]}
    assert ex.similarity["scans"] == [5, 10]


def test_no_level_ticked_shows_an_error(data: SplitDatasets) -> None:
    ex = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, workers=1)
    ex.scans = []
    _press_train(ex)
    assert isinstance(ex.last_error, ValueError)
    assert "tick at least one scan level" in ex.error
    assert not ex.running and ex.result is None


def test_a_curriculum_run_says_the_bytes_it_saved(data: SplitDatasets) -> None:
    from pcr_explore.read.reader import open_dataset

    ex = TrainingExplorer(
        data.train, data.val, scans=(), schedule="ramp:1-10:1-3", size=SIZE, epochs=3, workers=1
    )
    assert _lines(ex) == {"schedule": []}
    _press_train(ex)
    assert ex.last_error is None
    run = ex.result.level("schedule")  # type: ignore[union-attr]
    assert [e.scan for e in run.epochs] == [1, 6, 10]
    assert ex.runs[0]["scan"] == [1, 6, 10]  # the level each epoch read, for the tips
    full = open_dataset(str(data.train)).bytes_at(None)
    saved = 3 * full - run.bytes_read
    assert saved > 0
    readout = _text(ex.progress)
    assert f"curriculum: bytes saved so far: {saved / 1e6:,.1f} MB" in readout
    assert "this epoch read level 10" in readout
    ex.schedule = "ramp:1-12:1-3"
    _press_train(ex)
    assert "outside 1..10" in ex.error
    # a good run clears the error
    ex.schedule = "ramp:1-10:1-2"
    ex.epochs = 2
    _press_train(ex)
    assert ex.error == "" and ex.last_error is None


def test_the_controls_say_one_figure_one_way(data: SplitDatasets) -> None:
    ex = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, workers=1)
    # "unlimited" is a choice of the picker, chosen
    assert ex.bandwidth == 0.0 and ex.bandwidth_label == "unlimited"
    assert ex.bandwidths[0] == ["unlimited", 0.0] and ["20 MB/s", 20e6] in ex.bandwidths
    slow = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, bandwidth=20e6)
    assert slow.bandwidth_label == "20 MB/s" and len(slow.bandwidths) == len(ex.bandwidths)
    # a speed of the notebook's own (2 s per full-quality epoch) is shown in three figures,
    # as a choice of the picker
    odd = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, bandwidth=731073.0)
    assert odd.bandwidth_label == "731 kB/s" and ["731 kB/s", 731073.0] in odd.bandwidths
    odd.bandwidth = 1.23456e6
    assert odd.bandwidths[-1] == ["1.23 MB/s", 1.23456e6]
    # a size or epoch count outside the choices joins them
    odd.size = 40
    assert 40 in odd.sizes and odd.sizes == sorted(odd.sizes)
    odd.epochs = 45
    assert odd.max_epochs == 45
    # a level outside the dataset's is refused with the dataset named
    with pytest.raises(Exception, match=r"outside 1\.\.10"):
        odd.scans = [0, 3]
    assert odd.scans == [1]
    assert odd.chosen_scans() == [1]


@pytest.mark.filterwarnings("ignore::pcr_explore.errors.FewerScalesWarning")
def test_a_result_made_in_code_opens_drawn(data: SplitDatasets) -> None:
    from pcr_explore.train import train_at_levels

    result = train_at_levels(
        data.train,
        val=data.val,
        scans=(1, 5),
        size=SIZE,
        epochs=2,
        bandwidth=731073.0,
        workers=1,
        progress=False,
    )
    ex = TrainingExplorer(data.train, data.val, tune_batches=1, sample=4, workers=1, result=result)
    assert ex.result is result
    # nothing empty: every line, the table, the readout and the tuners' bars and choices
    for run, line in zip(result.levels, ex.runs, strict=True):
        assert line["label"] == run.label
        assert line["epoch"] == [1, 2] and line["accuracy"] == run.val_accuracy.tolist()
    assert [row[0] for row in ex.table["rows"]] == ["scan 1", "scan 5"]
    assert "scan 1, scan 5: 2 epochs each" in _text(ex.progress)
    # the storage speed reads as the picker says it: "731 kB/s", not "0.731073 MB/s"
    assert "storage 731 kB/s" in ex.table["caption"] and "0.731" not in ex.table["caption"]
    assert ex.bandwidth_label == "731 kB/s"
    assert ex.similarity["scans"] == [1, 5, 10]
    assert "MS-SSIM tuner" in _text(ex.comparison)
    # the controls say what was run, so Train repeats it unless they are changed
    assert ex.chosen_scans() == [1, 5] and ex.size == SIZE and ex.epochs == 2
    assert ex.bandwidth == 731073.0
    ex.scans = [1]
    ex.epochs = 1
    ex.bandwidth = 0.0
    again = ex.train()
    assert [r.label for r in again.levels] == ["scan 1"] and again.epochs == 1
    assert _lines(ex) == {"scan 1": [1]}
    assert "scan 1: 1 epoch each, done" in _text(ex.progress)


def test_a_result_of_other_classes_is_refused(data: SplitDatasets) -> None:
    from pcr_explore.train import TrainResult

    other = TrainResult(
        levels=(),
        size=SIZE,
        model="small-cnn",
        seed=0,
        epochs=1,
        batch_size=8,
        lr=1e-3,
        bandwidth=None,
        num_scans=10,
        level_bytes={},
        train_images=0,
        val_images=0,
        classes=("cats", "dogs"),
    )
    with pytest.raises(ValueError, match="trained on classes"):
        TrainingExplorer(data.train, data.val, workers=1, result=other)


# -- the front end ----------------------------------------------------------------------


@pytest.fixture
def explorer(data: SplitDatasets) -> TrainingExplorer:
    return TrainingExplorer(data.train, data.val, scans=(1, 5), size=SIZE, workers=1)


def test_the_module_is_one_file_and_no_script_goes_elsewhere(explorer: TrainingExplorer) -> None:
    state = explorer.get_state()
    esm = state["_esm"]
    assert "export default" in esm
    assert not re.search(r"^\s*import\s", esm, re.M)  # chart.js inlined: nothing to fetch
    assert not re.search(r"\bimport\s*\(|\bfetch\s*\(", esm)
    assert set(re.findall(r"https?://[^\s\"'`]*", esm)) <= {"http://www.w3.org/2000/svg"}
    assert ".pcr-training" in state["_css"] and ".pcr-present" in state["_css"]
    rest = {k: v for k, v in state.items() if k not in ("_esm", "_css")}
    texts = json.dumps(rest)  # plain JSON: no pictures, no bytes
    assert not re.search(r"<script|javascript:|\son\w+\s*=", texts, re.I)
    assert not re.search(r"\bBokeh\.|bokehjs", esm)  # drawn by the module, no BokehJS


def test_every_key_the_module_reads_is_a_synced_trait(explorer: TrainingExplorer) -> None:
    esm = explorer._esm
    read = set(re.findall(r"\bget\(\"(\w+)\"\)", esm))
    written = set(re.findall(r"(?:save|model\.set)\(\"(\w+)\"", esm))
    watched = {
        k
        for group in re.findall(r"\bon\(\[([^\]]*)\]", esm)
        for k in re.findall(r"\"(\w+)\"", group)
    }
    assert {"runs", "progress", "similarity", "table", "bandwidths"} <= read
    assert {"scans", "size", "epochs", "bandwidth", "schedule", "presentation"} <= written
    assert (read | written | watched) - set(explorer.keys) == set()
    assert 'model.send({event: "train"})' in esm  # the button's message, handled in the kernel
    assert 'classList.toggle("pcr-present", get("presentation"))' in esm


# -- the static picture and display ------------------------------------------------------


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


def test_display_puts_the_picture_before_the_live_view(
    explorer: TrainingExplorer, display_pub: Any
) -> None:
    from IPython.display import display

    display(explorer)
    picture, live = display_pub.outputs
    assert picture["transient"]["display_id"].startswith("pcr-fallback-")
    assert _picture_in(picture["data"]["text/html"]) == explorer.snapshot()
    assert "saved picture" in picture["data"]["text/plain"]
    assert set(live["data"]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    model_id = live["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert model_id == explorer.model_id


@pytest.mark.filterwarnings("ignore::pcr_explore.errors.FewerScalesWarning")
def test_the_saved_picture_follows_the_run(explorer: TrainingExplorer, display_pub: Any) -> None:
    from IPython.display import display

    display(explorer)
    key = display_pub.outputs[0]["transient"]["display_id"]
    first = _picture_in(display_pub.outputs[0]["data"]["text/html"])
    del display_pub.outputs[:]
    explorer.epochs = 1
    explorer.scans = [1]
    explorer.train()  # no event loop: drawn again at once, at every epoch
    updates = [o for o in display_pub.outputs if o["update"]]
    assert updates and all(o["transient"]["display_id"] == key for o in updates)
    now = _picture_in(updates[-1]["data"]["text/html"])
    assert now != first and now == explorer.snapshot()
    del display_pub.outputs[:]
    explorer.presentation = True
    assert [o for o in display_pub.outputs if o["update"]]
