"""The audit's single pass: the quality sample measured in it equals one measured apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pcr_explore.auditing import AuditReport, audit
from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.quality import Sampler
from pcr_explore.quality._jobs import Outcome
from pcr_explore.read.reader import open_dataset
from pcr_explore.read.sources import FolderSource, LevelSource

# the package exports the audit function under the subpackage's name
inspect_mod = import_module("pcr_explore.auditing._inspect")
jobs_mod = import_module("pcr_explore.quality._jobs")
BROKEN = ("things/truncated.jpg", "things/empty.jpg")


@pytest.fixture
def folder(photo_copy: Path) -> Path:
    """The photo folder with a truncated and an empty file among the photos."""
    whole = (photo_copy / "things" / "camera.jpg").read_bytes()
    (photo_copy / "things" / "truncated.jpg").write_bytes(whole[: len(whole) // 2])
    (photo_copy / "things" / "empty.jpg").write_bytes(b"")
    return photo_copy


def _perm(n: int, seed: int) -> list[int]:
    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


def _seed_sampling_a_broken_file(names: list[str], want: int) -> int:
    """The first seed whose sample starts with a broken file among its first *want*."""
    return next(
        s for s in range(100) if any(names[i] in BROKEN for i in _perm(len(names), s)[:want])
    )


def _apart(src: LevelSource, order: list[int], want: int, seed: int) -> Sampler:
    """The sample measured on its own, as the audit measured it before it had one pass."""
    s = Sampler(src, seed=seed, workers=1, order=order)
    s.grow(want)
    return s


def _assert_same_sample(report: AuditReport, apart: Sampler) -> None:
    got, ref = report.curve, apart.curve()
    assert got is not None
    np.testing.assert_array_equal(got.per_image.indices, ref.per_image.indices)
    np.testing.assert_array_equal(got.per_image.bytes, ref.per_image.bytes)
    for m, values in ref.per_image.metrics.items():
        np.testing.assert_array_equal(got.per_image.metrics[m], values)
    assert got.failed == ref.failed
    np.testing.assert_array_equal(got.mean, ref.mean)


@pytest.mark.jpegtran
def test_sample_in_the_pass_equals_the_sample_apart_and_transcodes_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = FolderSource(folder)
    names = src.names
    want = 3
    seed = _seed_sampling_a_broken_file(names, want)
    calls = {"inspect": 0, "levels": 0}

    def counting(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kw: Any) -> Any:
            calls[key] += 1
            return fn(*args, **kw)

        return wrapped

    monkeypatch.setattr(inspect_mod, "transcode", counting("inspect", inspect_mod.transcode))
    monkeypatch.setattr(jobs_mod, "transcode", counting("levels", jobs_mod.transcode))
    r = audit(folder, sample=want, seed=seed, workers=1, progress=False)
    readable = [i for i in range(len(names)) if names[i] not in BROKEN]
    order = [i for i in _perm(len(names), seed) if i in readable]
    replaced = sum(names[i] in BROKEN for i in _perm(len(names), seed)[:want])
    # every readable image transcoded once; the sample's levels come from that
    # transcode, except for the images that replace broken ones
    assert calls == {"inspect": len(readable), "levels": replaced} and replaced >= 1
    monkeypatch.undo()
    apart = _apart(src, order, want, seed)
    _assert_same_sample(r, apart)
    assert r.curve is not None and r.curve.sample_size == want
    # the same images, in the same order, with two workers
    _assert_same_sample(audit(folder, sample=want, seed=seed, workers=2, progress=False), apart)


@pytest.mark.jpegtran
def test_whole_folder_sampled_in_the_pass(folder: Path) -> None:
    r = audit(folder, sample=None, workers=2, progress=False)
    src = FolderSource(folder)
    order = [i for i in _perm(len(src.names), 0) if src.names[i] not in BROKEN]
    _assert_same_sample(r, _apart(src, order, len(src.names), 0))
    assert r.curve is not None and r.curve.sample_size == len(order)


def test_dataset_sample_in_the_pass(photo_folder: Path, tmp_path: Path) -> None:
    encode_dataset(photo_folder, tmp_path / "pcr", workers=1, progress=False)
    r = audit(tmp_path / "pcr", sample=4, seed=2, workers=2, progress=False)
    ds = open_dataset(tmp_path / "pcr")
    _assert_same_sample(r, _apart(ds, _perm(len(ds), 2), 4, 2))


@pytest.mark.jpegtran
def test_a_sampled_image_that_cannot_be_measured_is_replaced(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = FolderSource(folder).names
    first = next(i for i in _perm(len(names), 0) if names[i] not in BROKEN)
    measure = inspect_mod.measure_levels

    def failing_first(job: Any, **kw: Any) -> Outcome:
        if job.index == first:
            return Outcome(job.index, error="cannot decode: planted failure")
        return measure(job, **kw)

    monkeypatch.setattr(inspect_mod, "measure_levels", failing_first)
    r = audit(folder, sample=2, workers=1, progress=False)
    assert r.curve is not None and r.curve.sample_size == 2
    assert r.curve.failed == ((names[first], "cannot decode: planted failure"),)
    assert first not in r.curve.per_image.indices.tolist()
    problem = {
        "file": names[first],
        "type": "quality",
        "issue": "cannot measure quality: cannot decode: planted failure",
    }
    assert problem in r.problems


def test_sampler_takes_outcomes_only_in_its_order(photo_folder: Path) -> None:
    s = Sampler(photo_folder, order=[2, 0, 1], workers=1)
    with pytest.raises(ValueError, match="outcome for image 0; the next in the order is 2"):
        s.add([Outcome(0, error="x")])
    s.add([Outcome(2, error="x")])
    assert s.failed == [(s.source.names[2], "x")] and not s.exhausted


# A fresh interpreter (the forkserver and its preload are set once per process)
# starts the pool as the audit and the sampler do and asks one worker which
# modules it holds before it runs anything of theirs: the probe's own module
# imports nothing, and the main module imports nothing outside its guard.
PROBE_MAIN = """
if __name__ == "__main__":
    import json, sys
    from importlib import import_module

    from pcr_explore._pool import worker_pool

    import probe

    preload = getattr(import_module(sys.argv[1]), "WORKER_MODULES")
    with worker_pool(2, preload=preload) as pool:
        print(json.dumps(pool.submit(probe.loaded).result()))
"""
PROBE = "import sys\n\n\ndef loaded():\n    return sorted(sys.modules)\n"


@pytest.mark.parametrize(
    ("pool_of", "needed"),
    [
        (
            "pcr_explore.auditing._pass",
            {"pcr_explore.auditing._pass", "pcr_explore.auditing._inspect"},
        ),
        ("pcr_explore.quality._sampler", {"pcr_explore.quality._jobs"}),
    ],
)
def test_workers_fork_with_their_modules_imported(
    pool_of: str, needed: set[str], tmp_path: Path
) -> None:
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "main.py").write_text(PROBE_MAIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    r = subprocess.run(
        [sys.executable, str(tmp_path / "main.py"), pool_of],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    loaded = set(json.loads(r.stdout))
    assert needed | {"numpy", "PIL.Image", "pcr_explore.quality._levels"} <= loaded
