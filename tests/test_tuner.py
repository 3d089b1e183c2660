"""The tuner: the right level on constructed cases, bootstrap intervals, sample="auto"."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pcr_explore.errors import DatasetError
from pcr_explore.jpeg import ProgressiveJPEG
from pcr_explore.jpeg.transcode import transcode
from pcr_explore.quality import QualityCurve
from pcr_explore.quality.tune import TuneOptions, TuneResult, recommend, tune
from pcr_explore.read.sources import FolderSource

MEANS = np.array([0.6, 0.8, 0.85, 0.9, 0.94, 0.96, 0.97, 0.98, 0.99, 1.0])
BYTES = np.array([6, 14, 16, 18, 47, 60, 62, 65, 68, 100])


def _curve(values: np.ndarray, population: int | None = None) -> QualityCurve:
    n = len(values)
    return QualityCurve.from_values(values, np.tile(BYTES, (n, 1)), population=population)


def _noisy(n: int, sd: float, seed: int = 0, means: np.ndarray = MEANS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = np.clip(means + rng.normal(0, sd, (n, len(means))), 0, 1)
    v[:, -1] = 1.0
    return v


def test_picks_smallest_level_meeting_the_target() -> None:
    r = recommend(_curve(_noisy(300, 0.01), population=10000), target=0.95, statistic="mean")
    assert r.scan == 6  # 0.94 at scan 5 misses, 0.96 at scan 6 meets
    assert r.met and r.decided
    assert r.ci[0] <= r.value <= r.ci[1] and r.ci[0] >= 0.95
    assert r.ci_below is not None and r.ci_below[1] < 0.95
    assert r.value_below == pytest.approx(0.94, abs=0.003)
    assert r.bytes_fraction == pytest.approx(0.60)
    assert r.bandwidth_saving == pytest.approx(0.40)
    assert r.sample_size == 300 and r.population == 10_000
    for target, scan in [(0.5, 1), (0.79, 2), (0.88, 4), (0.975, 8), (0.995, 10)]:
        assert recommend(r.curve, target=target, statistic="mean").scan == scan


def test_small_noisy_sample_cannot_separate_close_levels() -> None:
    means = MEANS.copy()
    means[4], means[5] = 0.947, 0.953
    small = _curve(_noisy(6, 0.03, seed=2, means=means), population=1000)
    r = recommend(small, target=0.95, statistic="mean")
    assert not r.decided
    assert "not clear" in r.explanation
    many = _curve(_noisy(4000, 0.03, seed=2, means=means), population=100000)
    big = recommend(many, target=0.95, statistic="mean")
    assert big.decided and big.scan == 6
    # more images, narrower interval
    assert big.ci[1] - big.ci[0] < (r.ci[1] - r.ci[0]) / 5


def test_whole_dataset_measured_is_exact() -> None:
    means = MEANS.copy()
    means[5] = 0.9502
    r = recommend(_curve(_noisy(20, 0.02, means=means), population=20), target=0.95)
    assert r.decided and "every image" in r.explanation


def test_p5_statistic_guards_the_tail() -> None:
    v = np.tile(MEANS, (100, 1))
    v[:10, :-1] -= 0.06  # one image in ten degrades much more
    c = _curve(v, population=1000)
    assert recommend(c, target=0.95, statistic="mean").scan == 6  # mean 0.954
    assert recommend(c, target=0.95, statistic="p5").scan == 10  # p5 is the bad tail: 0.90 ... 0.93
    assert recommend(c, target=0.915, statistic="p5").scan == 8


def test_the_tuner_the_audit_and_the_budget_threshold_the_same_statistic() -> None:
    """One recommendation story: every verb that picks a level by quality defaults to p5."""
    import inspect

    from pcr_explore import audit, budget
    from pcr_explore.plots import quality_figure
    from pcr_explore.quality.tune import DEFAULT_STATISTIC, level_intervals
    from pcr_explore.widgets import TunerDashboard

    verbs = (tune, recommend, level_intervals, audit, budget, TunerDashboard, quality_figure)
    defaults = {f.__name__: inspect.signature(f).parameters["statistic"].default for f in verbs}
    assert defaults == {name: "p5" for name in defaults} and DEFAULT_STATISTIC == "p5"
    # p5 guards the tail: one image in ten much worse keeps the level from passing
    v = np.tile(MEANS, (100, 1))
    v[:10, :-1] -= 0.06
    assert recommend(_curve(v, population=1000), target=0.95).scan == 10


def test_bootstrap_interval_covers_the_true_mean_mostly() -> None:
    hits = 0
    for seed in range(40):
        c = _curve(_noisy(40, 0.02, seed=seed), population=10**6)
        r = recommend(c, target=0.95, statistic="mean", seed=seed)
        hits += r.ci[0] <= MEANS[r.scan - 1] <= r.ci[1]
    assert hits >= 33  # nominal 95%: 38 of 40; allow for the bootstrap's small-sample bias


def test_target_not_reached() -> None:
    v = np.tile(np.linspace(0.1, 0.7, 10), (5, 1))
    c = QualityCurve.from_values(v, np.tile(BYTES, (5, 1)), metric="task_score", population=50)
    r = recommend(c, target=0.9)
    assert not r.met and not r.decided and r.scan == 10
    assert "no level reaches" in r.explanation


def test_bytes_fraction_override() -> None:
    r = recommend(
        _curve(_noisy(50, 0.01)),
        target=0.95,
        statistic="mean",
        bytes_fraction=np.linspace(0.1, 1.0, 10),
    )
    assert r.bytes_fraction == pytest.approx(0.6)


def test_bad_arguments() -> None:
    c = _curve(_noisy(10, 0.01))
    with pytest.raises(ValueError, match="statistic"):
        recommend(c, target=0.95, statistic="median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="target"):
        recommend(c, target=1.5)
    with pytest.raises(ValueError, match="confidence"):
        recommend(c, target=0.9, options=TuneOptions(confidence=1.0))
    empty = QualityCurve.from_values(np.zeros((0, 10)), np.zeros((0, 10)))
    with pytest.raises(DatasetError, match="no image"):
        recommend(empty, target=0.9)


def test_result_renders() -> None:
    r = recommend(_curve(_noisy(30, 0.01)), target=0.95, statistic="mean")
    d = json.loads(json.dumps(r.to_dict()))
    assert d["scan"] == r.scan == 6 and d["ci"] == list(r.ci)
    assert d["value"] == r.value and d["ci_below"] == list(r.ci_below or ())
    exact = "every image was measured: the statistic is exact for this dataset"
    assert d["explanation"] == r.explanation == exact
    row = "<tr><th style='text-align:left'>recommended scan</th><td><b>6</b> of 10</td></tr>"
    assert row in r._repr_html_()
    assert str(r) == r.summary()
    assert r.summary().startswith(f"scan 6 of 10: mean mssim {r.value:.4f} (target 0.95), 60.0%")


# -- on real images ----------------------------------------------------------
class MemorySource:
    """A LevelSource held in memory (exercises the generic LevelSource path)."""

    num_scans = 10

    def __init__(self, images: list[ProgressiveJPEG]) -> None:
        self._pj = images
        self.classes: list[str] = []

    def __len__(self) -> int:
        return len(self._pj)

    @property
    def names(self) -> list[str]:
        return [f"mem{i}" for i in range(len(self._pj))]

    @property
    def labels(self) -> np.ndarray:
        return np.full(len(self._pj), -1, np.int32)

    def jpeg_bytes(self, i: int, scan: int | None = None) -> bytes:
        return self._pj[i].level(scan)

    def level_bytes(self, i: int) -> np.ndarray:
        return np.asarray(self._pj[i].scan_ends, np.int64) + 2


@pytest.fixture(scope="module")
def memory_source(encode_jpeg: Callable[..., bytes]) -> MemorySource:
    rng = np.random.default_rng(3)
    images = []
    for _ in range(24):
        # smooth random colour fields: cheap, and every level differs
        small = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
        big = np.kron(small, np.ones((8, 8, 1), np.uint8))
        big = np.clip(big + rng.normal(0, 6, big.shape), 0, 255).astype(np.uint8)
        images.append(transcode(encode_jpeg(big, quality=92)).jpeg)
    return MemorySource(images)


def _neg_mae(full: list[np.ndarray], level: list[np.ndarray]) -> float:
    return 1.0 - float(np.mean(np.abs(full[0].astype(float) - level[0]))) / 50


def test_tune_with_a_custom_metric(memory_source: MemorySource) -> None:
    r = tune(memory_source, target=0.9, metric=_neg_mae, statistic="mean", sample=None)
    assert r.metric == "_neg_mae" and r.sample_size == 24 and r.decided
    stats = r.curve.mean
    assert stats[r.scan - 1] >= 0.9 and (r.scan == 1 or stats[r.scan - 2] < 0.9)
    assert stats[-1] == 1.0  # the full level scored against itself: 1 - 0 / 50


def test_auto_sample_grows_until_clear_or_budget(memory_source: MemorySource) -> None:
    easy = tune(
        memory_source,
        target=0.3,
        metric=_neg_mae,
        statistic="mean",
        sample="auto",
        options=TuneOptions(start=4, budget=16),
    )
    assert easy.decided and easy.sample_size == 4  # clear at once: no more images
    full = tune(memory_source, target=0.9, metric=_neg_mae, statistic="mean", sample=None).curve
    # a target just above the mean at one level: the hardest call to make
    k = int(np.flatnonzero(full.mean < 0.999)[-1])
    hard_target = float(full.mean[k]) + 1e-4
    hard = tune(
        memory_source,
        target=hard_target,
        metric=_neg_mae,
        statistic="mean",
        sample="auto",
        options=TuneOptions(start=4, budget=16),
    )
    assert hard.sample_size in (4, 8, 16)
    assert hard.decided or hard.sample_size == 16
    timed = tune(
        memory_source,
        target=hard_target,
        metric=_neg_mae,
        statistic="mean",
        sample="auto",
        options=TuneOptions(start=4, budget=16, max_seconds=0.0),
    )
    assert timed.sample_size == 4


def test_tune_builtin_metric_on_photos(
    tmp_path: Path, sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]
) -> None:
    for n in ("astronaut", "coffee", "chelsea"):
        (tmp_path / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 192)))
    r = tune(tmp_path, target=0.95, sample=None, workers=1)
    c = r.curve  # the 5th percentile, by default
    assert c.p5[r.scan - 1] >= 0.95 and (r.scan == 1 or c.p5[r.scan - 2] < 0.95)
    assert r.decided and r.population == 3
    with pytest.raises(ValueError, match="statistic"):
        tune(tmp_path, statistic="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sample must be a positive int, 'auto' or None"):
        tune(tmp_path, sample="many")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown metric 'vif'"):
        tune(tmp_path, metric="vif")
    with pytest.raises(ValueError, match="need 2 <= start <= budget"):
        tune(tmp_path, sample="auto", options=TuneOptions(start=8, budget=4))


@pytest.mark.jpegtran
def test_the_training_size_decides_the_level_of_the_reduced_script(
    tmp_path: Path, sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]
) -> None:
    # 512x512 and 600x400: at most 128 * 128 pixels is 1/4 of each side for both
    for n in ("astronaut", "coffee"):
        (tmp_path / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n)))
    source = FolderSource(tmp_path, scan_script="reduced")

    def at(max_pixels: int | None) -> TuneResult:
        return tune(
            source, target=0.995, sample=None, workers=1, progress=False, max_pixels=max_pixels
        )

    quarter = at(128 * 128)
    # the level after the 1-4 bands of every component (DC; Cb, Cr, Y 1-4)
    assert quarter.scan == 4 and quarter.met and quarter.decided
    assert quarter.curve.p5[2] < 0.995 <= quarter.curve.p5[3]
    assert quarter.bytes_fraction < 0.4
    full = at(None)
    assert full.scan > 4 and full.curve.p5[3] < 0.95  # at full size the 1-4 level is far off
    assert np.array_equal(full.curve.per_image.bytes, quarter.curve.per_image.bytes)
    with pytest.raises(ValueError, match="max_pixels must be a positive int"):
        at(0)


def test_each_metric_gets_its_own_default_target() -> None:
    from pcr_explore.quality import QualityCurve
    from pcr_explore.quality.tune import recommend

    db = np.tile([20.0, 30.0, 36.0, 100.0], (8, 1))
    curve = QualityCurve.from_values(db, np.tile([10, 40, 70, 100], (8, 1)), metric="psnr")
    r = recommend(curve)
    assert r.target == 35.0 and r.scan == 3  # not 0.95 dB, which every level meets
    sim = QualityCurve.from_values(
        np.tile([0.6, 0.9, 0.97, 1.0], (8, 1)), np.tile([1, 2, 3, 4], (8, 1))
    )
    assert recommend(sim).target == 0.95
    with pytest.raises(
        ValueError, match="must be in \\(0, 1\\], got 95 \\(did you mean 0.95\\?\\)"
    ):
        recommend(sim, target=95)
    with pytest.raises(ValueError, match="PSNR target is in dB"):
        tune("no-such-folder", target=0.95, metric="psnr")  # refused before the folder is opened
    with pytest.raises(ValueError, match="give a target for the custom metric"):
        tune("no-such-folder", metric=lambda a, b: 0.0)
