"""Bokeh figure builders: columns, one-assignment updates, standalone rendering."""

from __future__ import annotations

import numpy as np
import pytest
from bokeh.embed import file_html
from bokeh.layouts import column
from bokeh.models import ColumnDataSource
from bokeh.resources import INLINE

from pcr_explore.plots import bytes_figure, quality_figure, reading_figure, set_font_size, to_db
from pcr_explore.plots._bytes import bytes_data, reading_data
from pcr_explore.plots._quality import curve_data, images_data, recommended_data, target_location
from pcr_explore.plots._scales import axis_label, drawable, level_label_offsets
from pcr_explore.plots._stages import STAGE_COLORS, stage_data, stage_figure
from pcr_explore.quality import QualityCurve
from pcr_explore.quality.metrics import PSNR_CAP
from pcr_explore.read import ReadStats
from pcr_explore.read.throughput import LevelReading, ReadingReport

BYTES = np.array([6, 14, 16, 18, 47, 60, 62, 65, 68, 100])


@pytest.fixture
def curve() -> QualityCurve:
    rng = np.random.default_rng(0)
    base = np.array([0.6, 0.8, 0.85, 0.9, 0.94, 0.96, 0.97, 0.98, 0.99, 1.0])
    v = np.clip(base + rng.normal(0, 0.01, (20, 10)), 0, 1)
    v[:, -1] = 1
    return QualityCurve.from_values(v, np.tile(BYTES, (20, 1)) * rng.integers(1, 4, (20, 1)))


def test_curve_figure_columns(curve: QualityCurve) -> None:
    cf = quality_figure(curve, target=0.95, recommended=6)
    fig, src, imgs, rec, span = cf
    d = src.data
    assert set(d) == {"scan", "label", "label_dx", "bytes_fraction", "mean", "p5", "p50", "p95"}
    np.testing.assert_array_equal(d["scan"], np.arange(1, 11))
    np.testing.assert_allclose(d["mean"], curve.mean)
    np.testing.assert_allclose(d["p5"], curve.p5)
    np.testing.assert_allclose(d["p95"], curve.p95)
    # every level keeps its own label; crowded ones are moved apart (2-4 and 6-8 here)
    assert d["label"] == [str(k) for k in range(1, 11)]
    x = d["bytes_fraction"]
    pad = 0.03 * (x.max() - x.min())
    centres = (x - x.min() + pad) * 260 / (x.max() - x.min() + 2 * pad) + d["label_dx"]
    assert np.diff(centres).min() >= 14 - 1e-9
    assert 0 < abs(d["label_dx"]).max() <= 2 * 14  # labels stay near their points
    assert len(imgs.data["xs"]) == 20 and imgs.data["xs"][0][-1] == 1.0
    assert rec.data["scan"] == [6]
    assert rec.data["bytes_fraction"] == [pytest.approx(curve.bytes_fraction[5])]
    assert span.location == 0.95 and span.visible
    # every glyph draws from one of the returned sources
    sources = {id(src), id(imgs), id(rec)}
    for r in fig.renderers:
        assert id(r.data_source) in sources


def test_update_replaces_each_source_once(curve: QualityCurve) -> None:
    cf = quality_figure()
    assert len(cf.source.data["scan"]) == 0 and not cf.target.visible
    seen: list[str] = []
    for name in ("source", "images", "recommended"):
        src: ColumnDataSource = getattr(cf, name)
        src.on_change("data", lambda attr, old, new, name=name: seen.append(name))
    cf.update(curve, target=0.9, recommended=4)
    assert sorted(seen) == ["images", "recommended", "source"]  # one assignment each
    np.testing.assert_allclose(cf.source.data["mean"], curve.mean)
    assert cf.target.location == 0.9 and cf.target.visible
    cf.update(None)
    assert len(cf.source.data["mean"]) == 0 and not cf.target.visible


def test_psnr_identical_levels_not_drawn() -> None:
    v = np.tile(np.linspace(20, 40, 10), (3, 1))
    v[:, -1] = np.inf
    c = QualityCurve.from_values(v, np.tile(BYTES, (3, 1)), metric="psnr")
    d = curve_data(c)
    assert np.isnan(d["mean"][-1]) and d["mean"][0] == pytest.approx(20)
    assert np.isnan(images_data(c)["ys"][0][-1])
    cf = quality_figure(c)
    assert cf.figure.yaxis[0].axis_label == "PSNR (dB)"


def test_drawable_leaves_out_identical_psnr_only() -> None:
    got = drawable([20.0, PSNR_CAP, np.inf, np.nan], "psnr")
    np.testing.assert_array_equal(got, [20.0, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(drawable([0.5, 1.0], "mssim"), [0.5, 1.0])
    np.testing.assert_array_equal(drawable([150.0], "task_score"), [150.0])


def test_axis_label_follows_the_metric(curve: QualityCurve) -> None:
    cf = quality_figure(curve)
    assert cf.figure.yaxis[0].axis_label == "MS-SSIM"
    v = curve.per_image.values
    custom = QualityCurve.from_values(v, curve.per_image.bytes, metric="task_score")
    cf.update(custom)
    assert cf.figure.yaxis[0].axis_label == "task_score"


def test_helpers_edge_cases(curve: QualityCurve) -> None:
    assert recommended_data(curve, None)["scan"] == []
    assert recommended_data(curve, 11)["scan"] == []
    assert images_data(curve, 5)["name"] == list(curve.per_image.names[:5])
    b = bytes_data([10, 20, 40])
    np.testing.assert_allclose(b["bytes_fraction"], [0.25, 0.5, 1.0])
    assert b["label"] == ["25%", "50%", "100%"]


def test_bytes_figure_update() -> None:
    bf = bytes_figure(BYTES)
    np.testing.assert_allclose(bf.source.data["bytes_fraction"], BYTES / 100)
    bf.update([1, 2, 4])
    np.testing.assert_allclose(bf.source.data["bytes_fraction"], [0.25, 0.5, 1.0])


def test_standalone_render_without_warnings(curve: QualityCurve) -> None:
    # pytest turns warnings into errors: Bokeh validation must stay quiet
    page = file_html(
        column(
            quality_figure(curve, target=0.95, recommended=6).figure,
            quality_figure().figure,
            bytes_figure(BYTES).figure,
        ),
        INLINE,
        "plots",
    )
    assert page.count("Quality per scan level") == 2 and "Bytes read per scan level" in page
    assert "<script src=" not in page.replace('<script src="data:', "")


def test_star_sits_on_the_statistic_it_was_chosen_by(curve: QualityCurve) -> None:
    mean = recommended_data(curve, 6, "mean")
    p5 = recommended_data(curve, 6)  # the tuner's default statistic
    assert mean["value"] == [pytest.approx(curve.mean[5])]
    assert p5["value"] == [pytest.approx(curve.p5[5])]
    assert p5["value"][0] < mean["value"][0]
    cf = quality_figure(curve, target=0.95, recommended=6, statistic="p5")
    assert cf.recommended.data["value"] == p5["value"]
    # the 5th percentile is drawn as a line of its own, not only as the band's edge
    lines = [r for r in cf.figure.renderers if type(r.glyph).__name__ == "Line"]
    assert "p5" in {r.glyph.y for r in lines}
    cf.update(curve, recommended=6, statistic="mean")
    assert cf.recommended.data["value"] == mean["value"]


def test_db_scale_spreads_the_top_levels(curve: QualityCurve) -> None:
    np.testing.assert_allclose(to_db([0.9, 0.99, 0.999]), [10, 20, 30])
    assert np.isinf(to_db([1.0])[0])
    d = curve_data(curve, "db")
    np.testing.assert_allclose(d["mean"][:-1], to_db(curve.mean[:-1]))
    assert np.isnan(d["mean"][-1])  # the full level is the full image
    np.testing.assert_array_equal(drawable([30.0], "psnr", "db"), [30.0])  # PSNR is dB already
    cf = quality_figure(curve, target=0.99, scale="db")
    assert cf.target.location == pytest.approx(20.0)
    assert cf.figure.yaxis[0].axis_label == axis_label("mssim", "db")
    assert target_location(1.0, "mssim", "db") is None
    with pytest.raises(ValueError, match="scale"):
        drawable([0.5], "mssim", "log")


def test_crowded_level_labels_are_moved_apart_not_merged() -> None:
    def centres(x: list[float], width: float, dx: np.ndarray) -> np.ndarray:
        return np.asarray(x) * width + dx

    apart = [0.1, 0.5, 1.0]
    assert level_label_offsets(apart, x_range=(0, 1.1)).tolist() == [0.0, 0.0, 0.0]
    crowded = [0.1, 0.11, 0.12, 0.12, 0.5, 0.9]  # two levels add no bytes at all
    dx = level_label_offsets(crowded, x_range=(0, 1), width=200, gap=14)
    assert np.diff(centres(crowded, 200, dx)).min() >= 14 - 1e-9
    assert abs(dx).max() <= 2 * 14  # as little as it takes
    # a wider plot spreads the points and their labels further: they still do not touch
    assert np.diff(centres(crowded, 400, dx)).min() >= 14 - 1e-9
    # at the axis's end the labels move inwards, not out of the plot
    end = level_label_offsets([1.0, 1.0, 1.0], x_range=(0, 1), width=200, gap=14)
    assert centres([1.0] * 3, 200, end).max() <= 200 - 7
    assert level_label_offsets([], x_range=(0, 1)).tolist() == []


def test_font_sizes_for_a_projector(curve: QualityCurve) -> None:
    fig = quality_figure(curve, title="t").figure
    set_font_size(fig, "large")
    assert fig.title.text_font_size == "18px" and fig.legend[0].label_text_font_size == "15px"
    assert fig.yaxis[0].axis_label_text_font_size == "17px"
    labels = [r for r in fig.center if type(r).__name__ == "LabelSet"]
    assert labels and all(lab.text_font_size == "12pt" for lab in labels)
    set_font_size(fig, "normal", legend="11px")
    assert fig.title.text_font_size == "13px" and fig.legend[0].label_text_font_size == "11px"
    with pytest.raises(ValueError, match="size"):
        set_font_size(fig, "huge")


def test_reading_figure_plots_bytes_and_speed_per_level() -> None:
    levels = (
        LevelReading(1, 16, 100, 0.02, (0.02, 0.04, 0.01)),
        LevelReading(10, 16, 400, 0.08, (0.08, 0.08, 0.08)),
    )
    rep = ReadingReport(levels, 1e8, 224)
    d = reading_data(rep)
    assert d["level"] == ["1", "full"] and d["label"] == ["25%", "100%"]
    assert d["images_per_s"] == [800.0, 200.0]
    assert (d["low"], d["high"]) == ([400.0, 200.0], [1600.0, 200.0])  # slowest, fastest pass
    assert d["speedup"] == [4.0, 1.0]
    row = reading_figure(rep)
    left, right = row.children
    assert left.x_range is right.x_range and list(left.x_range.factors) == ["1", "full"]
    assert right.y_range.end == pytest.approx(1600 * 1.12)
    page = file_html(row, INLINE, "reading")  # renders without a validation warning
    assert "Images per second" in page


def test_stage_figure_draws_a_bar_per_stage_and_level() -> None:
    stats = ReadStats()
    stats.clock(5).waited(0.5)
    stats.clock(5).decoded(0.25, 0.125, images=50)
    stats.clock(5).batched(0.125)
    stats.clock(1).decoded(0.1, 0.1, images=0)  # decoded nothing: no time per image
    d = stage_data(stats)
    assert d["x"] == [(f"level {k}", s) for k in (1, 5) for s in ("waiting", "decode", "batch")]
    assert d["seconds"] == [0.0, 0.1, 0.0, 0.5, 0.25, 0.125]
    assert d["ms_per_image"][3:] == [10.0, 5.0, 2.5] and all(map(np.isnan, d["ms_per_image"][:3]))
    assert d["cpu"][4] == 0.125 and np.isnan(d["cpu"][3])
    assert d["color"][3:] == list(STAGE_COLORS.values())
    sf = stage_figure(stats)
    assert list(sf.figure.x_range.factors) == d["x"]
    page = file_html(sf.figure, INLINE, "stages")  # renders without a validation warning
    assert "Seconds per read stage" in page
    later = ReadStats()
    later.clock(3).waited(1.0)
    sf.update(later)
    assert list(sf.figure.x_range.factors) == [("level 3", s) for s in STAGE_COLORS]
    assert sf.source.data["seconds"] == [1.0, 0.0, 0.0]
    assert stage_data(ReadStats())["x"] == []  # nothing read: no bars
