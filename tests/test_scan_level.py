"""One rule for a scan level everywhere: an int (numpy integers too) in 1..num_scans.

Every public entry point that takes a level refuses a float (even 2.7, which
once read level 2), a bool, a string and a level out of range with the same
error class and a message that names the value and the range; a numpy
integer is a level like any other.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pcr_data import random_dataset

from pcr_explore import FewerScalesWarning, open_dataset, open_source
from pcr_explore.budgeting.decode import DecodeCost
from pcr_explore.jpeg import split_scans
from pcr_explore.jpeg.scan_script import STANDARD
from pcr_explore.quality import PerImageQuality
from pcr_explore.quality.compare import (
    image_coverage,
    level_note,
    level_strip,
    record_sheet,
    scan_content,
    scan_step,
)
from pcr_explore.read.reader import PCRDataset
from pcr_explore.read.throughput import measure_reading
from pcr_explore.train import ScanSchedule

N = 10  # the standard script's levels
BAD: list[Any] = [2.7, True, "3", 0, N + 1, -1, 3.0, None, np.float64(3)]


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> PCRDataset:
    out = random_dataset(tmp_path_factory.mktemp("levels") / "ds", images=6, records=2)
    return open_dataset(str(out))


@pytest.fixture(scope="module")
def folder(ds: PCRDataset) -> Any:
    return open_source(Path(ds.url).with_name("ds-src"))


Entry = Callable[[PCRDataset, Any, Any], object]


def _torch_tuner(ds: PCRDataset, _: Any, k: Any) -> object:
    pytest.importorskip("torch")
    from pcr_explore.train import tune_by_gradient

    return tune_by_gradient(ds, model=None, scans=[1, k])


def _step_tuner(ds: PCRDataset, _: Any, k: Any) -> object:
    pytest.importorskip("torch")
    from pcr_explore.train import StepTuner

    return StepTuner(ds, model=None, trained=k)


def _train(ds: PCRDataset, _: Any, k: Any) -> object:
    pytest.importorskip("torch")
    from pcr_explore.train import train_at_levels

    return train_at_levels(ds, val=ds, scans=[k], epochs=1, progress=False)


def _widget(name: str) -> Entry:
    def call(ds: PCRDataset, _: Any, k: Any) -> object:
        pytest.importorskip("ipywidgets")
        from pcr_explore import widgets

        if name == "ScanExplorer":
            with warnings.catch_warnings():  # the images are smaller than MS-SSIM's 5 scales
                warnings.simplefilter("ignore", FewerScalesWarning)
                return widgets.ScanExplorer(ds, level=k)
        if name == "ScanPanel":
            return widgets.ScanPanel(ds, level=k)
        return widgets.TrainingExplorer(ds, ds, scans=[k])

    return call


def _torch_dataset(ds: PCRDataset, _: Any, k: Any) -> object:
    pytest.importorskip("torch")
    from pcr_explore.read.loader import torch_dataset

    return torch_dataset(ds.url, scan=k)


def _mix(ds: PCRDataset, _: Any, k: Any) -> object:
    pytest.importorskip("torch")
    from pcr_explore.read.mix import mix

    return mix([ds.url, ds.url], scans=[1, k])


_EXPORTS = itertools.count()


def _export(ds: PCRDataset, _: Any, k: Any) -> object:
    from pcr_explore.read.export import export_dataset

    out = Path(ds.url).with_name(f"export-{next(_EXPORTS)}")  # in pytest's temporary folder
    return export_dataset(ds, out, scan=k, progress=False)


def _per_image(_: PCRDataset, __: Any, k: Any) -> object:
    t = PerImageQuality(
        indices=np.array([0]),
        names=("a.jpg",),
        labels=np.array([0]),
        bytes=np.arange(1, N + 1)[None, :] * 100,
        values=np.linspace(0.5, 1.0, N)[None, :],
    )
    return t.rows(k), t.worst(k)


def _decode_cost(_: PCRDataset, __: Any, k: Any) -> object:
    cost = DecodeCost(tuple(range(1, N + 1)), (0.001,) * N, 1, None, 1, "pillow")
    return cost.at(k)


def _scan_demo(ds: PCRDataset, _: Any, k: Any) -> object:
    pytest.importorskip("bokeh")
    from pcr_explore.widgets import scan_demo

    return scan_demo(ds, images=1, levels=[1, k], dataset_sample=0)


#: (name, call(dataset, folder source, level), the place the message names or None)
ENTRIES: list[tuple[str, Entry, str | None]] = [
    ("RecordHeader.prefix_length", lambda d, f, k: _header(d).prefix_length(k), "ds/"),
    ("RecordHeader.piece_ranges", lambda d, f, k: _header(d).piece_ranges(0, k), "ds/"),
    ("ProgressiveJPEG.level", lambda d, f, k: split_scans(d.jpeg_bytes(0)).level(k), None),
    ("ScanScript.gray_scans_at", lambda d, f, k: STANDARD.gray_scans_at(k), "standard"),
    ("PCRDataset.jpeg_bytes", lambda d, f, k: d.jpeg_bytes(0, k), "ds"),
    ("PCRDataset.image", lambda d, f, k: d.image(0, k), "ds"),
    ("PCRDataset.bytes_at", lambda d, f, k: d.bytes_at(k), "ds"),
    ("PCRDataset.read_record", lambda d, f, k: d.read_record(0, k), "ds"),
    ("PCRDataset.read_span", lambda d, f, k: d.read_span(0, 0, 1, k), "ds"),
    ("PCRDataset.iter", lambda d, f, k: d.iter(k), "ds"),  # at the call, not at next()
    ("PCRDataset.iter_jpeg", lambda d, f, k: d.iter_jpeg(k), "ds"),
    ("PCRDataset.prefetch", lambda d, f, k: d.prefetch(k), "ds"),
    ("PCRDataset.check_cache_fits", lambda d, f, k: d.check_cache_fits(k), "ds"),
    ("FolderSource.jpeg_bytes", lambda d, f, k: f.jpeg_bytes(0, k), "ds-src"),
    ("FolderSource.image", lambda d, f, k: f.image(0, k), "ds-src"),
    ("FolderSource.bytes_at", lambda d, f, k: f.bytes_at(k), "ds-src"),
    ("FolderSource.iter", lambda d, f, k: f.iter(k), "ds-src"),
    ("measure_reading", lambda d, f, k: measure_reading(d, scans=[1, k]), "ds"),
    ("torch_dataset(scan=)", _torch_dataset, "ds"),
    ("mix(scans=)", _mix, "ds"),
    ("export_dataset(scan=)", _export, "ds"),
    ("scan_content", lambda d, f, k: scan_content(k), "standard"),
    ("level_note", lambda d, f, k: level_note(d.level_bytes(0), k), "level_note"),
    ("level_strip", lambda d, f, k: level_strip(d, 0, scans=[1, k]), "ds"),
    ("record_sheet", lambda d, f, k: record_sheet(d, scans=[1, k]), "ds"),
    ("image_coverage", lambda d, f, k: image_coverage(d, level=k), "ds"),
    ("scan_step", lambda d, f, k: scan_step(d, level=k), "ds"),
    ("PerImageQuality.rows/worst", _per_image, "per-image table"),
    ("DecodeCost.at", _decode_cost, "decode cost"),
    ("budget(scans=)", lambda d, f, k: _budget(d, k), "ds"),
    ("tune_by_gradient(scans=)", _torch_tuner, "ds"),
    ("StepTuner(trained=)", _step_tuner, "ds"),
    ("train_at_levels(scans=)", _train, "ds"),
    ("ScanSchedule.check", lambda d, f, k: ScanSchedule.from_steps([(1, k)]).check(N), "schedule"),
    ("scan_demo(levels=)", _scan_demo, "ds"),
    ("ScanExplorer(level=)", _widget("ScanExplorer"), "ds"),
    ("ScanPanel(level=)", _widget("ScanPanel"), "ds"),
    ("TrainingExplorer(scans=)", _widget("TrainingExplorer"), "ds"),
]


def _header(ds: PCRDataset) -> Any:
    return ds.header(0)


def _budget(ds: PCRDataset, k: Any) -> object:
    from pcr_explore import budget

    return budget(ds, scans=[1, k], sample=2, progress=False, workers=1)


def _pattern(value: Any, top: int) -> str:
    """The message's words for *value*: a wrong type by its repr and type, a bad int by value."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return rf"scan levels? \[?{int(value)}\]? (is|are) outside 1\.\.{top}"
    shown = re.escape(f"{value!r} ({type(value).__name__})")
    return rf"scan levels? must be (an int|ints) in 1\.\.{top}, got {shown}"


# None is the full level where an API documents it; these take none, or a list of levels
TAKES_NONE = {
    "RecordHeader.prefix_length",
    "RecordHeader.piece_ranges",
    "ProgressiveJPEG.level",
    "PCRDataset.jpeg_bytes",
    "PCRDataset.image",
    "PCRDataset.bytes_at",
    "PCRDataset.read_record",
    "PCRDataset.read_span",
    "PCRDataset.iter",
    "PCRDataset.iter_jpeg",
    "PCRDataset.prefetch",
    "PCRDataset.check_cache_fits",
    "FolderSource.jpeg_bytes",
    "FolderSource.image",
    "FolderSource.bytes_at",
    "FolderSource.iter",
    "torch_dataset(scan=)",
    "mix(scans=)",
    "export_dataset(scan=)",  # documented as an int; None exports the full level
    "ScanExplorer(level=)",
    "ScanPanel(level=)",
}


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize(("name", "call", "where"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_every_entry_point_refuses_a_bad_level_alike(
    ds: PCRDataset, folder: Any, name: str, call: Entry, where: str | None, value: Any
) -> None:
    if value is None and name in TAKES_NONE:
        return  # the full level there, as documented
    # a schedule's levels are held to 1..64 (any record's) when it is made, to N by check
    top = 64 if name.startswith("ScanSchedule") and value is not N + 1 else N
    with pytest.raises(ValueError, match=_pattern(value, top)) as info:
        call(ds, folder, value)
    if where is not None:
        assert where in str(info.value), str(info.value)


@pytest.mark.parametrize(("name", "call", "where"), ENTRIES, ids=[e[0] for e in ENTRIES])
def test_a_numpy_integer_is_a_level(
    ds: PCRDataset, folder: Any, name: str, call: Entry, where: str | None
) -> None:
    if name in ("train_at_levels(scans=)", "tune_by_gradient(scans=)", "StepTuner(trained=)"):
        pytest.skip("trains or measures: a real run, covered in test_train")
    if name.startswith("scan_demo") or name == "budget(scans=)":
        pytest.skip("measures and renders a whole page: covered in test_demo and test_budget")
    call(ds, folder, np.int64(3))


def test_the_rule_itself() -> None:
    from pcr_explore._checks import check_scan, check_scans

    assert check_scan(np.int64(3), 10) == 3 and type(check_scan(np.uint8(3), 10)) is int
    assert check_scans((np.int32(1), 10), 10) == (1, 10)
    with pytest.raises(ValueError, match=r"^here: scan level 11 is outside 1\.\.10$"):
        check_scan(11, 10, where="here")
    with pytest.raises(ValueError, match=r"got np\.False_ \(bool_?\)"):
        check_scan(np.bool_(False), 10)
    with pytest.raises(ValueError, match=r"scan levels must be a sequence of ints .*got '12'"):
        check_scans("12", 10)
    with pytest.raises(ValueError, match=r"scan levels must be a sequence of ints .*got 3"):
        check_scans(3, 10)  # type: ignore[arg-type]
