"""The scan-level curriculum: ramps and steps, parsed and checked before any training."""

from __future__ import annotations

import pytest

from pcr_explore.train import ScanSchedule


def test_a_ramp_rises_like_ffcvs_resolution_ramp() -> None:
    s = ScanSchedule.ramp(1, 10, start_epoch=2, end_epoch=6)
    assert s.levels(8) == [1, 1, 3, 6, 8, 10, 10, 10]
    assert ScanSchedule.parse("ramp:1-10:2-6") == s and str(s) == "ramp:1-10:2-6"
    assert ScanSchedule.ramp(2, 5, start_epoch=3, end_epoch=3).levels(4) == [2, 2, 5, 5]
    assert ScanSchedule.ramp(10, 1, start_epoch=1, end_epoch=4).levels(5) == [10, 7, 4, 1, 1]


def test_steps_hold_until_the_next() -> None:
    s = ScanSchedule.parse("steps:1=2,4=5,7=10")
    assert s.levels(9) == [2, 2, 2, 5, 5, 5, 10, 10, 10]
    assert s.steps == ((1, 2), (4, 5), (7, 10)) and str(s) == "steps:1=2,4=5,7=10"
    assert ScanSchedule.from_steps([(1, 3)]).level(100) == 3


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("ramp:1-10", "not a scan schedule: 'ramp:1-10'"),
        ("ramp:a-10:1-2", "not a scan schedule"),
        ("steps:1=2,3=x", "not a scan schedule"),
        ("curriculum", r"examples: ramp:1-10:2-6"),
        ("steps:2=3", "must start at epoch 1"),
        ("steps:1=3,1=4", "must start at epoch 1 and rise"),
        ("ramp:1-10:5-2", r"need 1 <= start_epoch <= end_epoch"),
        ("steps:1=0", "levels must be whole numbers >= 1"),
    ],
)
def test_bad_schedules_say_what_was_expected(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ScanSchedule.parse(text)


def test_levels_are_checked_against_the_script() -> None:
    ScanSchedule.parse("ramp:1-10:1-3").check(10)
    with pytest.raises(ValueError, match=r"levels \[12\] are outside 1\.\.10"):
        ScanSchedule.parse("steps:1=1,3=12").check(10)
    with pytest.raises(ValueError, match="epochs count from 1"):
        ScanSchedule.parse("steps:1=1").level(0)
