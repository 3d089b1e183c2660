"""Scan scripts compared on the same images, in the library and in the widget."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pcr_explore.quality import compare_scripts
from pcr_explore.widgets import ScriptExplorer

pytestmark = pytest.mark.jpegtran


@pytest.fixture(scope="module")
def comparison(photo_folder: Path):
    return compare_scripts(
        photo_folder, scripts=["standard", "spectral", "lean"], sample=3, repeats=1, progress=False
    )


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


def test_the_widget_shows_each_script_at_the_byte_budget(comparison) -> None:
    ex = ScriptExplorer("unused", comparison=comparison)
    assert ex.chosen() == ["standard", "spectral"]
    image = str(ex.image_pick.value)
    for budget in (0.1, 0.3, 0.6, 1.05):
        ex.budget.value = budget
        for name, level in zip(ex.chosen(), ex.levels_at_budget()):
            share = comparison[name].share(image, comparison.reference)
            assert level == 1 or share[level - 1] <= budget
            assert level == len(share) or share[level] > budget
    assert "level 5 of 5" in ex.captions[1].value
    # the table says what each number is, and which way a decode ratio goes
    table = ex.table.value
    assert "the standard script's bytes" in table and "worst MS-SSIM gap at equal bytes" in table
    assert "as fast as the reference" in table  # the reference against itself
    assert ("faster)" in table) or ("slower)" in table)
    ex.pick[1].value = "lean"
    assert len(ex.sources[1].data["x"]) == 9 and ex.sources[1].data["name"][0] == "lean"
    assert not ex.errors.outputs
    pic = Image.open(io.BytesIO(ex.snapshot()))
    assert pic.format == "JPEG" and pic.width > 600
    assert "image/jpeg" in ex._repr_mimebundle_()


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
