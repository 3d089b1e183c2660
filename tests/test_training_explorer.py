"""TrainingExplorer in the kernel: press Train, watch the streamed curves and readouts."""

from __future__ import annotations

import base64
import io

import pytest
from bokeh.models import ColumnDataSource
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


def _picture(widget: TrainingExplorer) -> Image.Image:
    bundle = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    pic = base64.b64decode(bundle["image/jpeg"])
    im = Image.open(io.BytesIO(pic))
    assert im.width >= 300 and im.height >= 200
    return im


@pytest.mark.filterwarnings("ignore::pcr_explore.errors.FewerScalesWarning")
def test_train_button_streams_curves_then_tunes(
    data: SplitDatasets, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    streamed: list[tuple[str, list[int]]] = []
    real_stream = ColumnDataSource.stream

    def spy(self: ColumnDataSource, new_data: dict, rollover: int | None = None) -> None:
        streamed.append((self.name, list(new_data["epoch"])))
        real_stream(self, new_data, rollover)

    monkeypatch.setattr(ColumnDataSource, "stream", spy)
    ex.train_button.click()
    assert ex.last_error is None and ex.result is not None
    # One streamed point per epoch and level, in training order.
    assert streamed == [("scan 1", [1]), ("scan 1", [2]), ("scan 10", [1]), ("scan 10", [2])]
    for label in ("scan 1", "scan 10"):
        src = ex.figure.sources[label].data
        assert src["epoch"] == [1, 2]
        assert src["accuracy"] == ex.result.level(int(label.split()[1])).val_accuracy.tolist()
    # the readout of a finished run says what was trained
    assert "scan 1, scan 10: 2 epochs each, done" in ex.progress.value
    assert "MB" in ex.progress.value and "epoch 2 of 2" not in ex.progress.value
    assert "scan 10" in ex.table.value
    assert ex.gradient is not None and ex.quality is not None
    assert ex.similarity.source.data["scan"] == ["1", "10"]
    assert f"scan {ex.gradient.scan}" in ex.comparison.value
    assert "MS-SSIM tuner" in ex.comparison.value
    after = _picture(ex)
    assert after.height > before.height  # the similarity bars joined the picture

    # A new choice of levels draws a new figure with a line per level.
    ex.level_boxes[5].value = True
    ex.level_boxes[1].value = False
    ex.epochs.value = 1
    ex.train()
    assert sorted(ex.figure.sources) == ["scan 10", "scan 5"]
    assert ex.plot_box.children[0]._model is ex.figure.layout


def test_no_level_ticked_shows_an_error(data: SplitDatasets) -> None:
    ex = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, workers=1)
    ex.level_boxes[1].value = False
    ex.train_button.click()
    assert isinstance(ex.last_error, ValueError)
    assert "tick at least one scan level" in str(ex.errors.outputs)
    assert not ex.train_button.disabled


def test_a_curriculum_run_says_the_bytes_it_saved(data: SplitDatasets) -> None:
    from pcr_explore.read.reader import open_dataset

    ex = TrainingExplorer(
        data.train, data.val, scans=(), schedule="ramp:1-10:1-3", size=SIZE, epochs=3, workers=1
    )
    ex.train_button.click()
    assert ex.last_error is None
    run = ex.result.level("schedule")  # type: ignore[union-attr]
    assert [e.scan for e in run.epochs] == [1, 6, 10]
    full = open_dataset(str(data.train)).bytes_at(None)
    saved = 3 * full - run.bytes_read
    assert saved > 0
    readout = ex.progress.value
    assert "curriculum: bytes saved so far" in readout and f"{saved / 1e6:,.1f} MB" in readout
    assert "this epoch read level 10" in readout
    ex.schedule.value = "ramp:1-12:1-3"
    ex.train_button.click()
    assert "outside 1..10" in str(ex.errors.outputs)


def test_controls_show_a_value_and_the_epoch_axis_whole_epochs(data: SplitDatasets) -> None:
    from bokeh.models import AdaptiveTicker

    ex = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, workers=1)
    # a Dropdown whose value is None shows a blank box: "unlimited" must be selected
    assert ex.bandwidth.value == 0.0 and ex.bandwidth.label == "unlimited"
    slow = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, bandwidth=20e6)
    assert slow.bandwidth.label == "20 MB/s"
    # a speed of the notebook's own (2 s per full-quality epoch) is shown in three figures
    odd = TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE, bandwidth=51971.5)
    assert odd.bandwidth.label == "52 kB/s" and odd.bandwidth.value == 51971.5
    assert TrainingExplorer(data.train, data.val, scans=(1,), size=SIZE,
                            bandwidth=1.23456e6).bandwidth.label == "1.23 MB/s"  # fmt: skip
    epoch_fig = ex.figure.figures[0]
    assert isinstance(epoch_fig.xaxis[0].ticker, AdaptiveTicker)
    assert epoch_fig.xaxis[0].ticker.min_interval == 1
    assert all(f.sizing_mode == "stretch_width" for f in ex.figure.figures)
    assert epoch_fig.legend[0].location == "bottom_right"  # where accuracy curves seldom are
    assert [f.legend[0].visible for f in ex.figure.figures] == [True, False, False]


@pytest.mark.filterwarnings("ignore::pcr_explore.errors.FewerScalesWarning")
def test_a_result_made_in_code_opens_drawn(data: SplitDatasets) -> None:
    from pcr_explore.train import train_at_levels

    result = train_at_levels(
        data.train,
        val=data.val,
        scans=(1, 5),
        size=SIZE,
        epochs=2,
        bandwidth=20e6,
        workers=1,
        progress=False,
    )
    ex = TrainingExplorer(data.train, data.val, tune_batches=1, sample=4, workers=1, result=result)
    assert ex.result is result
    # nothing empty: every line, the table, the readout and the tuners' bars and choices
    for run in result.levels:
        src = ex.figure.sources[run.label].data
        assert src["epoch"] == [1, 2] and src["accuracy"] == run.val_accuracy.tolist()
    assert sorted(ex.figure.sources) == ["scan 1", "scan 5"]
    assert "scan 5" in ex.table.value and "scan 1, scan 5: 2 epochs each" in ex.progress.value
    assert ex.similarity.source.data["scan"] == ["1", "5", "10"]
    assert "MS-SSIM tuner" in ex.comparison.value
    # the controls say what was run, so Train repeats it unless they are changed
    assert ex.chosen_scans() == [1, 5] and ex.size.value == SIZE and ex.epochs.value == 2
    assert ex.bandwidth.value == 20e6
    ex.level_boxes[5].value = False
    ex.epochs.value = 1
    again = ex.train()
    assert [r.label for r in again.levels] == ["scan 1"] and again.epochs == 1
    assert ex.figure.sources["scan 1"].data["epoch"] == [1]


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
