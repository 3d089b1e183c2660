"""The train and tune-gradient sub-commands: arguments, JSON and HTML output."""

from __future__ import annotations

import argparse
import importlib.util
import json
import threading
from pathlib import Path

import pytest

from pcr_explore.cli._train import add_train_parsers
from pcr_explore.train import SplitDatasets, load_flowers, write_stand_in_archive


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> SplitDatasets:
    tmp = tmp_path_factory.mktemp("cli")
    archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=5, side=32)
    return load_flowers(archive, cache_dir=tmp / "cache", workers=1, progress=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pcr-explore")
    add_train_parsers(parser.add_subparsers(dest="command", required=True))
    return parser


def test_arguments_are_parsed_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    p = _parser()
    args = p.parse_args(["train", "t", "--val", "v", "--bandwidth", "50MB/s", "--scans", "auto"])
    assert args.bandwidth == 50e6 and args.scans == "auto" and args.size == 64
    assert p.parse_args(["tune-gradient", "d"]).scans is None  # the script's default levels
    for bad in (
        ["train", "t", "--val", "v", "--bandwidth", "fast"],
        ["train", "t", "--val", "v", "--scans", "1,x"],
        ["train", "t"],
        ["tune-gradient", "d", "--scans", "auto"],
    ):
        with pytest.raises(SystemExit):
            p.parse_args(bad)
    assert "not a bandwidth: 'fast'" in capsys.readouterr().err


def test_train_json_and_html(
    data: SplitDatasets, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    html = tmp_path / "r.html"
    argv = ["train", str(data.train), "--val", str(data.val), "--scans", "1,10", "--size", "32"]
    argv += ["--epochs", "1", "--batch-size", "8", "--workers", "1", "--json", "--html", str(html)]
    args = _parser().parse_args(argv)
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [lv["scan"] for lv in out["levels"]] == [1, 10]
    assert {"size", "model", "seed"} <= set(out) and out["size"] == 32
    assert set(out["levels"][0]["epochs"][0]) >= {
        "epoch",
        "train_loss",
        "val_accuracy",
        "load_seconds",
        "compute_seconds",
    }
    assert "scan 10" in html.read_text()


def test_tune_gradient_json(data: SplitDatasets, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    argv = ["tune-gradient", str(data.train), "--scans", "1,5,10", "--size", "32"]
    argv += ["--batches", "1", "--batch-size", "8", "--warmup", "0", "--threshold", "1", "--json"]
    args = _parser().parse_args(argv)
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scan"] == 10 and out["threshold"] == 1.0
    assert set(out["similarity"]) == {"1", "5", "10"} and out["similarity"]["10"] == 1.0


def test_train_with_a_schedule(data: SplitDatasets, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    p = _parser()
    with pytest.raises(SystemExit):
        p.parse_args(["train", "t", "--val", "v", "--schedule", "ramp:1-10"])
    assert "not a scan schedule: 'ramp:1-10'" in capsys.readouterr().err
    argv = ["train", str(data.train), "--val", str(data.val), "--schedule", "ramp:1-10:1-2"]
    argv += ["--size", "32", "--epochs", "3", "--batch-size", "8", "--workers", "1", "--json"]
    args = p.parse_args(argv)
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schedule"] == "ramp:1-10:1-2"
    assert [lv["scan"] for lv in out["levels"]] == ["schedule"]
    assert [e["scan"] for e in out["levels"][0]["epochs"]] == [1, 10, 10]


def test_a_ramp_over_a_hundred_million_epochs_gets_past_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pcr_explore.cli import main

    ramp = "ramp:1-10:1-100000000"
    codes: list[int] = []
    argv = ["train", str(tmp_path / "missing"), "--val", str(tmp_path / "v"), "--schedule", ramp]
    # the thread only guards against a hang (the schedule once walked every epoch)
    t = threading.Thread(target=lambda: codes.append(main(argv)), daemon=True)
    t.start()
    t.join(30)
    assert codes == [1], "pcr-explore train --schedule is still parsing after 30 s"
    # it stopped at the missing dataset (or a missing torch), after parsing the schedule
    assert "missing" in capsys.readouterr().err or importlib.util.find_spec("torch") is None
    args = _parser().parse_args(["train", "t", "--val", "v", "--schedule", ramp])
    assert len(args.schedule.steps) == 10 and args.schedule.level(10**8) == 10
