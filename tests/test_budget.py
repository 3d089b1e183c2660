"""The byte budget: one report over every level, measured once, checked before it measures."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pcr_explore as pcr
from pcr_explore.budgeting import DecodeCost, measure_decode
from pcr_explore.budgeting._text import columns as report_columns
from pcr_explore.quality import _sampler
from pcr_explore.read.reader import open_dataset
from pcr_explore.train import SplitDatasets, load_flowers, write_stand_in_archive

SIZE = 32


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> SplitDatasets:
    """40 training and 10 validation 32-pixel pattern images in 5 classes, as PCR datasets."""
    tmp = tmp_path_factory.mktemp("budget")
    archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=10, side=SIZE)
    return load_flowers(archive, cache_dir=tmp / "cache", workers=1, progress=False)


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _refuse_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured, though the result was passed in or the input was bad")

    module = importlib.import_module("pcr_explore.budgeting.budget")
    monkeypatch.setattr(_sampler.Sampler, "grow", refuse)
    monkeypatch.setattr(module, "measure_decode", refuse)
    monkeypatch.setattr(module, "_gradient", refuse)
    monkeypatch.setattr(module, "_train", refuse)


@pytest.fixture(scope="module")
def report(data: SplitDatasets) -> pcr.BudgetReport:
    pytest.importorskip("torch")
    return pcr.budget(
        data.train,
        val=data.val,
        bandwidth="20MB/s",
        sample=None,
        scans=(1, 3, 10),
        size=SIZE,
        train_epochs=1,
        workers=1,
        progress=False,
    )


def test_one_report_holds_every_level_and_every_criterion(
    report: pcr.BudgetReport, data: SplitDatasets
) -> None:
    ds = open_dataset(str(data.train))
    assert [r.scan for r in report.levels] == list(range(1, 11))
    assert [r.bytes for r in report.levels] == [ds.bytes_at(k) for k in range(1, 11)]
    assert report.level(10).bytes_fraction == 1.0
    # every image was measured: the quality statistics are exact, their intervals one value
    assert all(r.quality_p5_ci == (r.quality_p5, r.quality_p5) for r in report.levels)
    assert [k for k in range(1, 11) if report.level(k).gradient is not None] == [1, 3, 10]
    assert [k for k in range(1, 11) if report.level(k).accuracy is not None] == [1, 3, 10]
    assert all(r.decode_seconds > 0 for r in report.levels)
    assert set(report.choices) == {"quality", "gradient", "accuracy"}
    chosen = [c for c in report.choices.values() if c is not None]
    assert len(chosen) == 3 and report.recommended == max(chosen)
    assert report.choices["quality"] == pcr.tune(report.curve, statistic="p5").scan
    assert report.choices["gradient"] == report.gradient.scan
    assert report.sentence.startswith(f"level {report.recommended} reads ")
    assert "at 20 MB/s" in report.sentence
    assert "proxy training's full-quality weights" in " ".join(report.notes)
    assert "decode cost measured on this machine" in " ".join(report.notes)


def test_the_time_model_is_the_slower_of_reading_and_decoding(report: pcr.BudgetReport) -> None:
    for k in (1, 5, 10):
        read = report.level(k).bytes / 20e6
        decode = report.images * report.level(k).decode_seconds / report.workers
        assert report.read_seconds(k) == pytest.approx(read)
        assert report.epoch_seconds(k) == pytest.approx(max(read, decode))
        # at the crossover bandwidth reading takes exactly as long as decoding
        assert report.read_seconds(k, bandwidth=report.crossover(k)) == pytest.approx(decode)


def test_repricing_measures_nothing(
    report: pcr.BudgetReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_measuring(monkeypatch)
    fast = report.reprice("10GB/s")
    assert isinstance(fast, pcr.BudgetReport) and fast.bandwidth == 10e9
    assert fast.levels == report.levels and fast.choices == report.choices
    assert fast.epoch_seconds(10) <= report.epoch_seconds(10)
    assert "decoding, not reading, sets the pace" in fast.sentence
    assert report.reprice(None).bandwidth is None


def test_results_passed_in_are_not_measured_again(
    report: pcr.BudgetReport, data: SplitDatasets, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_measuring(monkeypatch)
    again = pcr.budget(
        data.train,
        bandwidth="20MB/s",
        size=SIZE,
        workers=1,
        progress=False,
        curve=report.curve,
        gradient=report.gradient,
        training=report.training,
        decode=report.decode,
    )
    assert again.levels == report.levels and again.choices == report.choices


def test_json_html_and_text(report: pcr.BudgetReport, tmp_path: Path) -> None:
    record = _strict(report.to_json(tmp_path / "b.json"))
    assert record == _strict((tmp_path / "b.json").read_text())
    assert record["recommended"] == report.recommended
    assert [r["scan"] for r in record["levels"]] == list(range(1, 11))
    assert record["levels"][1]["gradient"] is None  # not measured at level 2: null
    page = report.save_html(tmp_path / "b.html").read_text()
    assert "<script" not in page and "http" not in page.replace("http-equiv", "")
    assert "<link" not in page and "url(" not in page  # nothing to fetch, styles included
    assert page.count(f"Level {report.recommended} of 10") == 1
    # the chart: bytes, quality and the epoch time at the bandwidth, one bar per level
    assert page.count("<figure>") == 3 and page.count("<svg viewBox='0 0 340 200'") == 3
    assert "Epoch input time at 20 MB/s" in page and "MS-SSIM against the full image" in page
    assert page.count("</title></rect>") == 10  # the bars, each with its tooltip
    assert "<svg viewBox='0 0 340 200'" in report._repr_html_()  # the notebook view too
    bare = report.reprice(None).save_html(tmp_path / "c.html").read_text()
    assert "Epoch decoding time, in s" in bare and "reading at" not in bare
    text = str(report)
    assert "<- recommended" in text and "choices: p5 quality >= 0.95 -> " in text
    assert len(repr(report)) < 200


def test_without_torch_the_gradient_is_skipped_with_a_note(
    photo_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    r = pcr.budget(photo_folder, sample=4, size=SIZE, workers=1, progress=False)
    assert r.choices == {"quality": r.recommended, "gradient": None, "accuracy": None}
    assert any("gradient similarity skipped" in n and "[torch]" in n for n in r.notes)
    # a folder's bytes are estimated from the sample: the mean image times the images
    mean = r.curve.per_image.bytes.mean(axis=0)
    assert r.level(10).bytes == round(mean[-1] * 7)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bandwidth": "20MBs"}, ValueError, r"not a bandwidth: '20MBs'"),
        ({"scans": (1, 12)}, ValueError, r"scan levels \[12\] are outside 1\.\.10"),
        ({"train_epochs": 1}, ValueError, "train_epochs needs a validation set"),
        ({"statistic": "p50"}, ValueError, "unknown statistic 'p50'"),
        ({"target": 2.0}, ValueError, "target"),
        ({"disk": "lots"}, ValueError, r"not a size: 'lots'"),
    ],
)
def test_bad_input_fails_before_anything_is_measured(
    data: SplitDatasets, monkeypatch: pytest.MonkeyPatch, kwargs: dict, error: type, match: str
) -> None:
    _refuse_measuring(monkeypatch)
    with pytest.raises(error, match=match):
        pcr.budget(data.train, progress=False, **kwargs)


def test_a_validation_set_of_other_classes_is_refused_first(
    data: SplitDatasets, photo_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_measuring(monkeypatch)
    with pytest.raises(pcr.DatasetError, match=r"its classes \['animals', 'things'\] are not"):
        pcr.budget(data.train, val=photo_folder, progress=False)


def test_decode_cost_is_measured_per_level(data: SplitDatasets) -> None:
    cost = measure_decode(data.train, sample=4, size=SIZE, repeats=1)
    assert isinstance(cost, DecodeCost) and cost.scans == tuple(range(1, 11))
    assert cost.images == 4 and all(s > 0 for s in cost.seconds_per_image)
    assert cost.decoder in ("simplejpeg", "pillow")
    with pytest.raises(ValueError, match="must be positive"):
        measure_decode(data.train, repeats=0)


def test_cli_budget(data: SplitDatasets, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cmd = [sys.executable, "-m", "pcr_explore", "budget", str(data.train), "--sample", "8"]
    cmd += ["--size", str(SIZE), "--workers", "1", "--scans", "1,10", "--bandwidth", "5MB/s"]
    out = subprocess.run([*cmd, "--json", "--html", str(tmp_path / "b.html")],
                         capture_output=True, text=True, check=True)  # fmt: skip
    record = _strict(out.stdout)
    assert record["bandwidth"] == 5e6 and (tmp_path / "b.html").exists()
    assert np.isfinite(record["levels"][0]["crossover_bandwidth"])
    text = subprocess.run(cmd + ["--quiet"], capture_output=True, text=True, check=True).stdout
    assert "recommendation: level " in text
    bad = subprocess.run(cmd[:4] + ["--bandwidth", "20MBs"], capture_output=True, text=True)
    assert bad.returncode == 2 and "not a bandwidth: '20MBs'" in bad.stderr


def test_a_disk_size_gives_the_highest_level_whose_prefixes_fit(
    photo_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pcr_explore.cli import main

    monkeypatch.setitem(sys.modules, "torch", None)  # no gradients: the quick path
    pcr.encode_dataset(photo_folder, tmp_path / "ds", record_size=20_000, workers=1, progress=False)
    ds = open_dataset(str(tmp_path / "ds"))
    first = pcr.budget(ds, disk="1TB", sample=4, size=SIZE, workers=1, progress=False)
    assert first.disk == 10**12 and first.disk_level == 10
    assert "the recommended level included: it is fetched from storage once" in str(first)
    # the command line: --disk, and a size it cannot read
    assert main(["budget", str(tmp_path / "ds"), "--sample", "4", "--size", str(SIZE),
                 "--workers", "1", "--disk", "1TB", "--json"]) == 0  # fmt: skip
    assert _strict(capsys.readouterr().out)["disk_level"] == 10
    with pytest.raises(SystemExit):
        main(["budget", str(tmp_path / "ds"), "--disk", "lots"])
    assert "not a size: 'lots'" in capsys.readouterr().err
    _refuse_measuring(monkeypatch)
    kw = dict(curve=first.curve, decode=first.decode, size=SIZE, workers=1, progress=False)
    for disk, level in ((ds.bytes_at(5), 5), (ds.bytes_at(5) - 1, 4), (ds.bytes_at(1) - 1, None)):
        r = pcr.budget(ds, disk=disk, **kw)  # type: ignore[arg-type]
        assert (r.disk, r.disk_level) == (disk, level) and level == ds.level_that_fits(disk)
        assert r.recommended == first.recommended and r.levels == first.levels
        record = _strict(r.to_json())
        assert (record["disk"], record["disk_level"]) == (disk, level)
        [fits] = [cells for head, cells in report_columns(r) if head.startswith("fits ")]
        assert fits == ["yes" if level and k <= level else "no" for k in range(1, 11)]
    text = str(r)
    assert f"holds no level of every record (level 1 takes {ds.bytes_at(1):,} bytes)" in text
    rec = first.recommended
    assert rec > 1  # a disk two bytes short of the recommended level:
    short = pcr.budget(ds, disk=ds.bytes_at(rec) - 2, **kw)  # type: ignore[arg-type]
    assert (
        f"holds up to level {rec - 1} of every record ({ds.bytes_at(rec - 1):,} bytes); the "
        f"recommended level {rec} takes {ds.bytes_at(rec):,}, so each epoch at it fetches "
        "at least 2 bytes again"
    ) in str(short)
    assert "so each epoch at it fetches" in short.save_html(tmp_path / "b.html").read_text()
    # a folder of images has no prefixes to keep: said, not guessed
    folder = pcr.budget(photo_folder, disk="20GB", **kw)  # type: ignore[arg-type]
    assert folder.disk is None and folder.disk_level is None
    assert any("disk size: does not apply" in n for n in folder.notes)
    assert "fits" not in str(folder).splitlines()[1]
