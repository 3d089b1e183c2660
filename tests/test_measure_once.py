"""Measure once: a curve from quality_curve is reused by tune, audit and the widgets."""

from __future__ import annotations

from pathlib import Path

import pytest

import pcr_explore as pcr
from pcr_explore.auditing import _audit as audit_module
from pcr_explore.quality import _sampler
from pcr_explore.quality.tune import recommend
from pcr_explore.widgets import scan_explorer, tuner_dashboard


@pytest.fixture(scope="module")
def curve(photo_folder: Path) -> pcr.QualityCurve:
    return pcr.quality_curve(photo_folder, sample=5, seed=1, workers=1, progress=False)


@pytest.fixture
def nothing_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything decodes a sample at every level."""

    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise AssertionError("a curve was given, yet a sample was measured again")

    monkeypatch.setattr(_sampler.Sampler, "grow", refuse)


def test_settings_after_the_source_are_keywords(photo_folder: Path) -> None:
    with pytest.raises(TypeError, match="positional"):
        pcr.tune(photo_folder, 64)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        pcr.audit(photo_folder, 64)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        pcr.quality_curve(photo_folder, 64)  # type: ignore[misc]


def test_tune_takes_a_curve(curve: pcr.QualityCurve, nothing_measured: None) -> None:
    got = pcr.tune(curve, target=0.97, statistic="p5")
    want = recommend(curve, target=0.97, statistic="p5")
    assert got.curve is curve
    assert (got.scan, got.value, got.ci) == (want.scan, want.value, want.ci)


def test_tune_from_a_curve_matches_tune_from_the_source(
    photo_folder: Path, curve: pcr.QualityCurve
) -> None:
    direct = pcr.tune(photo_folder, target=0.97, sample=5, seed=1, workers=1, progress=False)
    reused = pcr.tune(curve, target=0.97, seed=1)
    assert (reused.scan, reused.value, reused.ci) == (direct.scan, direct.value, direct.ci)


def test_tune_refuses_another_metric_than_the_curves(curve: pcr.QualityCurve) -> None:
    with pytest.raises(ValueError, match="measured with 'mssim', not 'psnr'"):
        pcr.tune(curve, metric="psnr")


def test_audit_recommends_from_a_curve(
    photo_folder: Path, curve: pcr.QualityCurve, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the audit measured a quality sample though it was given one")

    monkeypatch.setattr(audit_module, "measure_sample", refuse)
    report = pcr.audit(photo_folder, curve=curve, target=0.97, workers=1, progress=False)
    assert report.tune is not None and report.tune.curve is curve
    assert report.tune.scan == recommend(curve, target=0.97).scan
    assert report.options["sample"] == curve.sample_size
    assert report.images == 7 and report.worst  # every file still inspected


def test_audit_refuses_a_curve_of_other_images(
    photo_folder: Path, curve: pcr.QualityCurve, tmp_path: Path
) -> None:
    (tmp_path / "one.jpg").write_bytes((photo_folder / "animals" / "coffee.jpg").read_bytes())
    with pytest.raises(ValueError, match="measured on 7 images, this source holds 1"):
        pcr.audit(tmp_path, curve=curve, workers=1, progress=False)
    with pytest.raises(ValueError, match="not 'ssim'"):
        pcr.audit(photo_folder, curve=curve, metric="ssim", progress=False)


@pytest.mark.filterwarnings("ignore::pcr_explore.errors.FewerScalesWarning")  # 160 px photos
def test_scan_explorer_shows_the_curve_given(
    photo_folder: Path, curve: pcr.QualityCurve, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the explorer measured the dataset again")

    monkeypatch.setattr(scan_explorer, "quality_curve", refuse)
    ex = pcr.widgets.ScanExplorer(photo_folder, curve=curve, cache_size=4)
    assert ex._dataset_curve is curve
    assert ex.dataset["x"] == pytest.approx(list(curve.bytes_fraction))
    assert ex.dataset["mean_value"] == pytest.approx(list(curve.mean))


def test_tuner_dashboard_starts_from_the_curve_given(
    photo_folder: Path, curve: pcr.QualityCurve, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dashboard measured the sample again")

    monkeypatch.setattr(tuner_dashboard, "quality_curve", refuse)
    dash = pcr.widgets.TunerDashboard(photo_folder, curve=curve, worst=1)
    assert dash.curve() is curve and dash.sample == curve.sample_size
    dash.target = 0.99  # re-tuning is a recommend() on the same curve
    assert dash.result.scan == recommend(curve, target=0.99).scan
