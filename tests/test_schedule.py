"""The scan-level curriculum: ramps and steps, parsed and checked before any training."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcr_explore.read import schedule as schedule_module
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
        ("steps:1=0", r"schedule steps:1=0: scan levels \[0\] are outside 1\.\.64"),
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


# -- a schedule over any number of epochs costs its level changes, not its epochs --------


def _reference_ramp(start: int, end: int, e0: int, e1: int, epochs: int) -> list[int]:
    """The ramp's levels as first written: the formula at every epoch, one by one."""
    out = []
    for epoch in range(1, epochs + 1):
        if epoch >= e1:
            out.append(end)
        elif epoch <= e0:
            out.append(start)
        else:
            t = (epoch - e0) / (e1 - e0)
            out.append(int(round(start + t * (end - start))))
    return out


def _reference_steps(steps: list[tuple[int, int]], epochs: int) -> list[int]:
    return [next(k for e, k in reversed(steps) if e <= epoch) for epoch in range(1, epochs + 1)]


@settings(max_examples=300, deadline=None)
@given(
    start=st.integers(1, 64),
    end=st.integers(1, 64),
    e0=st.integers(1, 90),
    span=st.integers(0, 90),
    extra=st.integers(0, 30),
)
def test_a_ramp_gives_what_the_epoch_by_epoch_formula_gives(
    start: int, end: int, e0: int, span: int, extra: int
) -> None:
    e1 = e0 + span
    s = ScanSchedule.ramp(start, end, start_epoch=e0, end_epoch=e1)
    want = _reference_ramp(start, end, e0, e1, e1 + extra)
    assert s.levels(e1 + extra) == want
    assert [s.level(e) for e in range(1, e1 + extra + 1)] == want
    assert ScanSchedule.parse(f"ramp:{start}-{end}:{e0}-{e1}") == s
    # the steps are exactly where the level changes
    assert [k for _, k in s.steps] == [k for i, k in enumerate(want) if i == 0 or want[i - 1] != k]
    rows = s.segments(e1 + extra)
    assert [k for a, b, k in rows for _ in range(a, b + 1)] == want


@settings(max_examples=200, deadline=None)
@given(
    firsts=st.sets(st.integers(2, 60), max_size=8),
    levels=st.lists(st.integers(1, 64), min_size=9, max_size=9),
    epochs=st.integers(0, 70),
)
def test_steps_give_what_the_epoch_by_epoch_lookup_gives(
    firsts: set[int], levels: list[int], epochs: int
) -> None:
    steps = list(zip([1, *sorted(firsts)], levels))
    s = ScanSchedule.from_steps(steps)
    want = _reference_steps(steps, epochs)
    assert s.levels(epochs) == want
    assert [s.level(e) for e in range(1, epochs + 1)] == want
    assert ScanSchedule.parse(str(s)) == s


def _in_thread(work: Callable[[], object]) -> object:
    """Run *work*; a guard against a hang only (30 s), not a measure of speed."""
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(work()), daemon=True)
    t.start()
    t.join(30)
    assert done, "still running after 30 s: the schedule walks its epochs one by one"
    return done[0]


def test_a_ramp_over_a_hundred_million_epochs_is_built_from_its_level_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = Counter[str]()
    closed_form = getattr(schedule_module, "_ramp_level", None)

    def counted(*args: int) -> int:
        calls["level"] += 1
        assert closed_form is not None
        return closed_form(*args)

    monkeypatch.setattr(schedule_module, "_ramp_level", counted, raising=False)
    text = "ramp:1-10:1-100000000"
    s = cast(ScanSchedule, _in_thread(lambda: ScanSchedule.parse(text)))
    # a binary search per level change: about 10 x log2(1e8) evaluations, not 1e8
    assert 0 < calls["level"] < 10 * 2 * 28
    assert len(s.steps) == 10 and str(s) == text
    assert s.steps[0] == (1, 1) and s.steps[-1][1] == 10

    def formula(epoch: int) -> int:  # the ramp's formula, as _reference_ramp computes it
        return int(round(1 + (epoch - 1) / (10**8 - 1) * 9))

    # each step starts at the first epoch where the formula gives its level
    for (_, before), (first, k) in zip(s.steps, s.steps[1:]):
        assert formula(first) == k and formula(first - 1) == before
    calls.clear()
    assert s.level(50_000_000) == formula(50_000_000) == 5
    assert s.level(10**8) == 10 and s.level(10**12) == 10
    rows = s.segments(10**8)
    assert len(rows) == 10 and rows[0][0] == 1 and rows[-1] == (s.steps[-1][0], 10**8, 10)
    assert calls["level"] == 0  # the level of an epoch is a lookup over the steps


def test_levels_refuses_a_list_of_a_hundred_million_and_points_at_segments() -> None:
    s = ScanSchedule.parse("ramp:1-10:1-100000000")
    with pytest.raises(ValueError, match=r"100,000,000 epochs .*segments\(100000000\)"):
        s.levels(10**8)
    assert len(s.levels(10**6)) == 10**6


# -- what is not a schedule says so, naming it ------------------------------------------


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (None, r"a scan schedule is text, got None \(NoneType\)"),
        (3, r"a scan schedule is text, got 3 \(int\)"),
        (["ramp:1-10:2-6"], r"got \['ramp:1-10:2-6'\] \(list\)"),
        (b"ramp:1-10:2-6", r"got b'ramp:1-10:2-6' \(bytes\)"),
        ("", r"not a scan schedule: ''"),
        ("  ", r"not a scan schedule: '  '"),
        ("steps:", r"not a scan schedule: 'steps:'"),
        ("steps:1=2=3", r"not a scan schedule: 'steps:1=2=3'"),
        ("ramp:1-10:2-6:7", r"not a scan schedule"),
        ("ramp:1.5-10:2-6", r"not a scan schedule: 'ramp:1.5-10:2-6'"),
        ("ramp:1-10:0-6", r"start_epoch must be a whole number >= 1 .*got 0"),
        ("ramp:1-65:1-2", r"schedule ramp:1-65:1-2: scan levels \[65\] are outside 1\.\.64"),
        ("steps:0=3", r"first epoch must be a whole number >= 1 .*got 0"),
    ],
)
def test_what_is_not_a_schedule_is_named(value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ScanSchedule.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("steps", "match"),
    [
        ([(1, 2.7)], r"scan levels must be ints in 1\.\.64, got 2\.7 \(float\)"),
        ([(1, True)], r"got True \(bool\)"),
        ([(1, "3")], r"got '3' \(str\)"),
        ([(1.0, 3)], r"first epoch must be a whole number >= 1 .*got 1\.0"),
        ([(1, 2, 3)], r"must be \(first epoch, level\) pairs"),
        ("1=2", r"must be \(first epoch, level\) pairs, got '1=2'"),
        ([], r"must start at epoch 1"),
    ],
)
def test_explicit_steps_are_checked_not_rounded(steps: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ScanSchedule.from_steps(steps)  # type: ignore[arg-type]
    assert ScanSchedule.from_steps([(np.int64(1), np.int64(3))]).steps == ((1, 3),)


@pytest.mark.parametrize("epoch", [0, -1, 2.7, True, "3", None])
def test_an_epoch_is_a_whole_number_from_1(epoch: object) -> None:
    with pytest.raises(ValueError, match=rf"epoch must be a whole number >= 1 .*got {epoch!r}"):
        ScanSchedule.parse("steps:1=1,3=2").level(epoch)  # type: ignore[arg-type]
