"""BudgetExplorer in the kernel: drag the bandwidth as the page does, check what it is told.

The front end (``static/budget_explorer.js``, on anywidget) draws the epoch's
reading line itself (each level's bytes over the bandwidth) while the
slider is dragged; the kernel re-prices the report for the verdict and the
table. No browser here (tests/test_browser_02.py drives the page), and
nothing is measured again: the report is made once per module.
"""

from __future__ import annotations

import html
import importlib
import io
import json
import re

import pytest
import traitlets
from PIL import Image

import pcr_explore as pcr
from pcr_explore.budgeting import format_bandwidth
from pcr_explore.quality import _sampler
from pcr_explore.train import SplitDatasets, load_flowers, write_stand_in_archive
from pcr_explore.widgets import BudgetExplorer

SIZE = 32


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> SplitDatasets:
    """40 training and 10 validation 32-pixel pattern images in 5 classes, as PCR datasets."""
    tmp = tmp_path_factory.mktemp("budget")
    archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=10, side=SIZE)
    return load_flowers(archive, cache_dir=tmp / "cache", workers=1, progress=False)


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


@pytest.fixture
def ex(report: pcr.BudgetReport, monkeypatch: pytest.MonkeyPatch) -> BudgetExplorer:
    _refuse_measuring(monkeypatch)
    return BudgetExplorer(report=report)


def test_a_dragged_bandwidth_is_repriced_without_measuring(
    ex: BudgetExplorer, report: pcr.BudgetReport
) -> None:
    assert ex.bandwidth == pytest.approx(20.0)  # MB/s, the report's own
    levels = ex.levels
    # what the page divides by the bandwidth, and the decoding line it draws beside it
    assert levels["bytes"] == [r.bytes for r in report.levels]
    assert levels["decode"] == pytest.approx([report.decode_seconds(r.scan) for r in report.levels])
    assert levels["scans"] == list(range(1, 11)) and levels["recommended"] == report.recommended
    for mbps in (0.5, 40.0, 5000.0):
        ex.bandwidth = mbps
        assert ex.shown.bandwidth == pytest.approx(mbps * 1e6)
        assert ex.levels is levels  # the page prices the reading line itself
        read = [b / (mbps * 1e6) for b in levels["bytes"]]
        assert read == pytest.approx([ex.shown.read_seconds(r.scan) for r in report.levels])
        assert f"Level {report.recommended} of 10" in ex.readout
        assert f"at {format_bandwidth(mbps * 1e6)}:" in ex.readout
        assert html.escape(ex.shown.sentence) in ex.readout
        # the verdict is stated once: the table under it does not repeat it
        shown = ex.readout + ex.table
        assert shown.count(f"Level {report.recommended} of") == 1
        assert shown.count(html.escape(ex.shown.sentence)) == 1
        assert shown.count("choices: ") == 1
        assert "<table class='budget'>" in ex.table
    assert "decoding, not reading, sets the pace" in ex.readout
    assert ex.last_error is None and ex.error == ""


def test_the_bandwidth_stays_on_the_slider(ex: BudgetExplorer) -> None:
    ex.bandwidth = 1e9
    assert ex.bandwidth == 10_000.0 and ex.shown.bandwidth == pytest.approx(1e10)
    ex.bandwidth = 0.0
    assert ex.bandwidth == 0.1
    with pytest.raises(traitlets.TraitError, match="MB/s"):
        ex.bandwidth = float("nan")


def test_a_source_or_a_report_is_needed() -> None:
    with pytest.raises(ValueError, match="give a source to budget, or report="):
        BudgetExplorer()


def test_the_static_picture_follows_the_bandwidth(ex: BudgetExplorer) -> None:
    first = ex.snapshot()
    picture = Image.open(io.BytesIO(first))
    assert picture.format == "JPEG" and picture.width > 300
    ex.bandwidth = 0.2
    assert ex.snapshot() != first


def test_the_module_reads_only_synced_traits_and_fetches_nothing(ex: BudgetExplorer) -> None:
    state = ex.get_state()
    esm = state["_esm"]
    assert "export default" in esm and "lmSuppressShortcuts" in esm
    assert not re.search(r"^\s*import\s", esm, re.M)  # chart.js inlined
    assert not re.search(r"\bimport\s*\(|\bfetch\s*\(", esm)
    assert set(re.findall(r"https?://[^\s\"'`]*", esm)) <= {"http://www.w3.org/2000/svg"}
    read = set(re.findall(r"\bget\(\"(\w+)\"\)", esm))
    written = set(re.findall(r"model\.set\(\"(\w+)\"", esm))
    watched = {
        k
        for group in re.findall(r"\bon\(\[([^\]]*)\]", esm)
        for k in re.findall(r"\"(\w+)\"", group)
    }
    assert {"bandwidth", "levels", "readout", "table"} <= read
    assert written == {"bandwidth", "presentation"}
    assert (read | written | watched) - set(ex.keys) == set()
    rest = {k: v for k, v in state.items() if k not in ("_esm", "_css")}
    text = json.dumps(rest, allow_nan=False)
    assert not re.search(r"<script|javascript:|\son\w+\s*=", text, re.I)
    assert "table.budget" in ex._css and ".pcr-present" in ex._css
