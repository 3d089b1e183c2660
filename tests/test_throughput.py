"""Reading a PCR dataset at several levels: bytes, speed and I/O estimates."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcr_explore import encode_dataset, open_dataset
from pcr_explore.read.throughput import measure_reading


@pytest.fixture(scope="module")
def dataset_dir(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pcr") / "ds"
    encode_dataset(photo_folder, out, record_size=16 * 1024, workers=1, progress=False)
    return out


def test_bytes_read_match_the_levels_and_the_full_pass_is_last(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    report = measure_reading(ds, scans=[2, 1], size=32, bandwidth=1000000.0)
    assert [r.scan for r in report.levels] == [2, 1, ds.num_scans]
    assert all(r.images == len(ds) for r in report.levels)
    for r in report.levels:
        image_bytes = sum(int(ds.level_bytes(i)[r.scan - 1]) - 2 for i in range(len(ds)))
        # Record headers come on top of the pieces; they are small.
        assert image_bytes <= r.bytes_read < image_bytes * 1.2 + 4096
    one, two, full = report.levels[1], report.levels[0], report.full
    assert one.bytes_read < two.bytes_read < full.bytes_read
    assert report.fraction(full) == 1.0
    assert report.io_seconds(one) == pytest.approx(one.bytes_read / 1e6)
    assert report.saved_seconds(one) == pytest.approx((full.bytes_read - one.bytes_read) / 1e6)
    rows = report.rows()
    assert rows[1]["I/O-bound speed-up"] == pytest.approx(full.bytes_read / one.bytes_read)
    html = report._repr_html_()
    assert html.count("<tr>") == 1 + len(report.levels)  # header + one row per level


def test_limit_and_bad_arguments(dataset_dir: Path) -> None:
    ds = open_dataset(str(dataset_dir))
    report = measure_reading(ds, scans=[1], size=None, limit=2)
    assert [r.images for r in report.levels] == [2, 2]
    r = report.levels[0]
    assert r.seconds > 0 and r.images_per_s == pytest.approx(2 / r.seconds)
    with pytest.raises(ValueError, match="bandwidth"):
        measure_reading(ds, scans=[1], bandwidth=0)
    with pytest.raises(ValueError, match="outside"):
        measure_reading(ds, scans=[11])
