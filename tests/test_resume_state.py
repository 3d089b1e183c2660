"""Resume states: bound to a dataset's content and settings, and checked field by field.

No DataLoader workers here: a state is made by ``state_dict`` from counts,
and a resumed pass is read in this process.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pcr_data import digest, random_dataset

pytest.importorskip("torch")

from pcr_explore import DatasetError  # noqa: E402
from pcr_explore.read import mix, torch_dataset  # noqa: E402

KW: dict[str, Any] = dict(scan=3, size=(16, 16), shuffle=True, seed=3)


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """12 photos in 2 records, and 6 others in one."""
    tmp = tmp_path_factory.mktemp("resume")
    return (
        random_dataset(tmp / "a", images=12, records=2, seed=1),
        random_dataset(tmp / "b", images=6, records=1, seed=2),
    )


def _json(state: dict[str, Any]) -> dict[str, Any]:
    """*state* as it reads back from a file."""
    return json.loads(json.dumps(state))


def _dataset_state(url: str, **kw: Any) -> dict[str, Any]:
    """Epoch 1 of a 12-image dataset, 2 workers, after 3 batches of 2: shards 0 and 1 gave 4, 2."""
    tds = torch_dataset(url, **{**KW, **kw})
    tds.set_epoch(1)
    return _json(tds.state_dict(batches=3, batch_size=2, num_workers=2))


def _mix(a: str, b: str, **kw: Any) -> Any:
    """16 samples an epoch: min(12 / 0.75, 6 / 0.25)."""
    return mix([a, b], weights=[3, 1], scans=[2, 5], seed=4, size=(16, 16), shuffle=True, **kw)


def _mix_state(a: str, b: str) -> dict[str, Any]:
    m = _mix(a, b)
    m.set_epoch(1)
    return _json(m.state_dict(batches=2, batch_size=2, num_workers=2))


def _pass(ds: Any) -> list[tuple[str, int]]:
    """A pass read in this process: each sample's pixels (digest) and label or source."""
    return [(digest(x[0]), int(x[-1])) for x in ds]


def test_a_state_of_a_dataset_reencoded_at_the_same_path_is_refused(tmp_path: Path) -> None:
    path = random_dataset(tmp_path / "ds", images=12, records=2, seed=1)
    state = _dataset_state(str(path))
    shutil.rmtree(path)
    shutil.rmtree(tmp_path / "ds-src")
    random_dataset(path, images=12, records=2, seed=7)  # other photos, same count and names
    again = torch_dataset(str(path), **KW)
    with pytest.raises(
        DatasetError,
        match=r"resume state: saved for another dataset \(content digest [0-9a-f]{12}\.\.\. "
        r"vs [0-9a-f]{12}\.\.\. of .*ds\): its records are not these",
    ):
        again.load_state_dict(state)
    with pytest.raises(DatasetError, match="saved for another dataset"):
        again.delivered(state)
    assert (again.epoch, again.scan, again._resume) == (0, 3, None)  # nothing changed


def test_a_relative_and_an_absolute_path_resume_alike(
    sets: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = sets
    monkeypatch.chdir(a.parent)
    state = _dataset_state(a.name)  # saved with a relative path
    assert state["url"] == "a" and sum(state["delivered"].values()) == 6
    relative, absolute = torch_dataset(a.name, **KW), torch_dataset(str(a.resolve()), **KW)
    relative.load_state_dict(state)
    absolute.load_state_dict(state)
    assert absolute.delivered(state) == relative.delivered(state)
    assert relative.content_digest == absolute.content_digest == state["digest"]
    rest = _pass(absolute)
    assert rest == _pass(relative) and len(rest) == 6  # the 6 not delivered, read alike


def test_a_mix_resumes_alike_by_a_relative_and_an_absolute_path(
    sets: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = sets
    monkeypatch.chdir(a.parent)
    state = _mix_state(a.name, b.name)
    relative, absolute = _mix(a.name, b.name), _mix(str(a.resolve()), str(b.resolve()))
    relative.load_state_dict(state)
    absolute.load_state_dict(state)
    rest = _pass(absolute)
    assert rest == _pass(relative) and len(rest) == 16 - 4


def test_a_mix_state_of_a_dataset_reencoded_at_the_same_path_is_refused(
    sets: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = sets
    b = random_dataset(tmp_path / "b", images=6, records=1, seed=2)
    state = _mix_state(str(a), str(b))
    shutil.rmtree(b)
    shutil.rmtree(tmp_path / "b-src")
    random_dataset(b, images=6, records=1, seed=8)
    with pytest.raises(
        DatasetError,
        match=r"resume state, dataset 1: saved for another dataset \(content digest",
    ):
        _mix(str(a), str(b)).load_state_dict(state)


def test_a_state_at_another_level_resumes_at_its_level_and_says_so(
    sets: tuple[Path, Path],
) -> None:
    a, _ = sets
    state = _dataset_state(str(a), scan=5)
    tds = torch_dataset(str(a), **KW)  # built with scan=3
    with pytest.warns(
        UserWarning,
        match=r"saved at scan level 5; epoch 1 resumes at level 5, not at level 3 this dataset",
    ):
        tds.load_state_dict(state)
    assert (tds.epoch, tds.scan) == (1, 5)
    # with a schedule, the level it gives the epoch is the one compared
    ramp = torch_dataset(str(a), **{**KW, "schedule": "steps:1=1,2=5"})
    ramp.load_state_dict(state)  # epoch 1 is the schedule's epoch 2: level 5, no warning
    assert ramp.scan == 5


def test_a_mix_state_at_other_levels_says_which_change(sets: tuple[Path, Path]) -> None:
    a, b = map(str, sets)
    saved = _mix(a, b)
    saved.parts[1].set_scan(7)
    state = _json(saved.state_dict(batches=2, batch_size=2, num_workers=2))
    m = _mix(a, b)
    with pytest.warns(UserWarning, match=r"resumes dataset 1 \(.*b\) level 7, not 5$"):
        m.load_state_dict(state)
    assert [p.scan for p in m.parts] == [2, 7]


@pytest.mark.parametrize("of", ["dataset", "mix"])
def test_a_resumed_pass_stopped_again_counts_on_and_resumes_exactly(
    sets: tuple[Path, Path], of: str
) -> None:
    a, b = map(str, sets)
    make = (lambda: torch_dataset(a, **KW)) if of == "dataset" else (lambda: _mix(a, b))
    full = _pass(make())  # epoch 0, read in this process (one worker)
    first = make()
    first.load_state_dict(_json(first.state_dict(batches=2, batch_size=2, num_workers=0)))
    assert len(full) == (12 if of == "dataset" else 16)
    it = iter(first)
    for _ in range(6):  # 3 batches of 2, then the run stops again
        next(it)
    again = _json(first.state_dict(batches=3, batch_size=2, num_workers=0))
    assert again["delivered"] == {"0": 10}  # the 4 the state had, and the 6 since
    second = make()
    second.load_state_dict(again)
    assert _pass(second) == full[10:]


@pytest.mark.parametrize("of", ["dataset", "mix"])
def test_a_state_of_an_earlier_format_is_refused_by_name(sets: tuple[Path, Path], of: str) -> None:
    a, b = map(str, sets)
    ds = torch_dataset(a, **KW) if of == "dataset" else _mix(a, b)
    state = _dataset_state(a) if of == "dataset" else _mix_state(a, b)
    old = {k: v for k, v in state.items() if k != "format"}
    old["version"] = 4  # how states were marked before their format had a name
    with pytest.raises(
        DatasetError,
        match=r"resume state: written in an earlier format \('version' 4, no 'format'\)",
    ):
        ds.load_state_dict(old)
    assert ds._resume is None and ds.epoch == 0


@pytest.mark.parametrize("of", ["dataset", "mix"])
def test_a_foreign_state_is_refused_with_its_keys(sets: tuple[Path, Path], of: str) -> None:
    a, b = map(str, sets)
    ds = torch_dataset(a, **KW) if of == "dataset" else _mix(a, b)
    loaders = {"_snapshot": {}, "_steps_since_snapshot": 0}  # a StatefulDataLoader's, say
    with pytest.raises(
        DatasetError,
        match=r"no 'format': not a state that state_dict\(\) wrote \(its keys: \['_snapshot'",
    ):
        ds.load_state_dict(loaders)
    assert ds._resume is None and ds.epoch == 0


def test_shard_sizes_are_the_lengths_of_the_shards(sets: tuple[Path, Path]) -> None:
    a, _ = sets
    for whole in (False, True):
        for shuffle in (False, True):
            tds = torch_dataset(str(a), shuffle=shuffle, seed=5, whole_records=whole)
            for w in (1, 3, 5):
                want = {str(s): len(tds.sequence(2, s, w, whole)) for s in range(w)}
                assert tds._shard_sizes(2, w, [whole]) == want


def test_a_state_of_numpy_settings_is_json_ready(sets: tuple[Path, Path]) -> None:
    a, _ = sets
    kw = dict(KW, size=(np.int64(16), np.int64(16)), seed=np.int64(3))
    state = _dataset_state(str(a), **kw)
    assert state["size"] == [16, 16] and state["seed"] == 3
    torch_dataset(str(a), **kw).load_state_dict(state)


# -- malformed states and arguments ----------------------------------------------------------
def _set(path: str, value: Any) -> Callable[[Any], Any]:
    """A change to a state: the field at *path* ("delivered", "datasets.0.scan") set to *value*."""

    def change(state: Any) -> Any:
        *keys, last = path.split(".")
        target = state
        for k in keys:
            target = target[int(k) if isinstance(target, list) else k]
        target[int(last) if isinstance(target, list) else last] = value
        return state

    return change


def _drop(key: str) -> Callable[[Any], Any]:
    def change(state: Any) -> Any:
        del state[key]
        return state

    return change


def _whole(value: Any) -> Callable[[Any], Any]:
    return lambda state: value


_OF_A_MIX = "of a mix"  # replaced by a real mix's state
_OF_A_DATASET = "of a dataset"  # replaced by a real dataset's state

BAD_DATASET_STATES = [
    ("a list", _whole([]), r"resume state must be a dict, as state_dict\(\) returns, got \[\]"),
    ("None", _whole(None), r"must be a dict, .*got None \(NoneType\)"),
    ("no epoch", _drop("epoch"), r"resume state: no 'epoch' \(state_dict\(\) writes it\)"),
    ("no delivered", _drop("delivered"), "no 'delivered'"),
    ("no digest", _drop("digest"), "no 'digest'"),
    ("no next", _drop("next"), "no 'next'"),
    ("no format", _drop("format"), r"no 'format': not a state that state_dict\(\) wrote"),
    ("a newer format", _set("format", "pcr_explore.resume/2"), r"'format' must be 'pcr_explore"),
    ("format None", _set("format", None), r"'format' must be .*, got None \(NoneType\)"),
    ("no worker", _drop("worker"), r"no 'worker' \(state_dict\(\) writes it\)"),
    ("no kind", _drop("kind"), r"no 'kind'"),
    ("negative epoch", _set("epoch", -1), r"'epoch' must be within 0\.\.\d+, got -1"),
    ("epoch as text", _set("epoch", "1"), r"'epoch' must be an integer, got '1' \(str\)"),
    ("bool epoch", _set("epoch", True), r"'epoch' must be an integer, got True \(bool\)"),
    ("float epoch", _set("epoch", 1.0), r"'epoch' must be an integer, got 1\.0 \(float\)"),
    ("scan 0", _set("scan", 0), r"'scan' must be within 1\.\.10, got 0"),
    ("scan 11", _set("scan", 11), r"'scan' must be within 1\.\.10, got 11"),
    ("scan None", _set("scan", None), r"'scan' must be an integer, got None"),
    ("delivered a list", _set("delivered", [4, 2]), r"'delivered' must map shard numbers"),
    ("delivered None", _set("delivered", None), r"must map shard numbers .* got None"),
    ("int shard keys", _set("delivered", {0: 4}), r"must map shard numbers \(as strings\)"),
    ("negative count", _set("delivered.0", -1), r"gives shard 0 -1 \(int\) samples; .* 0\.\.6"),
    ("huge count", _set("delivered.0", 10**15), r"gives shard 0 1000000000000000 \(int\)"),
    ("count over a shard", _set("delivered.1", 7), r"shard 1 7 \(int\) samples; .*0\.\.6"),
    ("float count", _set("delivered.0", 4.0), r"gives shard 0 4\.0 \(float\) samples"),
    ("bool count", _set("delivered.0", True), r"gives shard 0 True \(bool\) samples"),
    ("count as text", _set("delivered.0", "4"), r"gives shard 0 '4' \(str\) samples"),
    ("unknown shard", _set("delivered.7", 1), r"names shards \['7'\] .*\(its shards: \['0', '1'"),
    ("no workers", _set("num_workers", 0), r"'num_workers' must be within 1\.\.4096, got 0"),
    ("a billion workers", _set("num_workers", 10**9), r"'num_workers' must be within 1\.\.4096"),
    ("next past the workers", _set("next", 2), r"'next' must be within 0\.\.1, got 2"),
    ("next negative", _set("next", -1), r"'next' must be within 0\.\.1, got -1"),
    ("batch_size 0", _set("batch_size", 0), r"'batch_size' must be within 1\.\.\d+, got 0"),
    ("whole_records as text", _set("whole_records", "no"), r"'whole_records' must be true or"),
    ("another rank", _set("rank", 1), r"another run: its rank is 1, this run's 0"),
    ("another world_size", _set("world_size", 2), r"another run: its world_size is 2"),
    ("world_size true", _set("world_size", True), r"another run: its world_size is True"),
    ("another seed", _set("seed", 4), r"the state is of another run: its seed is 4, this run's 3"),
    ("shuffle as 1", _set("shuffle", 1), r"another run: its shuffle is 1, this run's True"),
    ("another size", _set("size", [32, 32]), r"another run: its size is \[32, 32\]"),
    ("another mode", _set("mode", "L"), r"another run: its mode is 'L', this run's 'RGB'"),
    ("digest a number", _set("digest", 5), r"'digest' must be a string, got 5 \(int\)"),
    ("another digest", _set("digest", "0" * 64), r"saved for another dataset \(content digest 0"),
    ("unknown kind", _set("kind", "zip"), r"'kind' must be 'dataset', got 'zip'"),
    ("kind mix", _set("kind", "mix"), r"this is a mix's state \(MixedDataset\.state_dict\)"),
    ("a mix's state", _OF_A_MIX, r"this is a mix's state"),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [pytest.param(c, m, id=i) for i, c, m in BAD_DATASET_STATES],
)
def test_a_malformed_dataset_state_is_refused(
    sets: tuple[Path, Path], change: Any, message: str
) -> None:
    a, b = map(str, sets)
    state = _mix_state(a, b) if change == _OF_A_MIX else change(_dataset_state(a))
    tds = torch_dataset(a, **KW)
    with pytest.raises(DatasetError, match=message):
        tds.load_state_dict(state)
    assert (tds.epoch, tds.scan, tds._resume) == (0, 3, None)  # nothing changed
    with pytest.raises(DatasetError, match=message):
        tds.delivered(state)


BAD_MIX_STATES = [
    ("a list", _whole([1, 2]), r"resume state must be a dict, .*got \[1, 2\] \(list\)"),
    ("None", _whole(None), r"must be a dict, .*got None"),
    ("a dataset's state", _OF_A_DATASET, r"this is a dataset's state \(PCRIterableDataset"),
    ("kind dataset", _set("kind", "dataset"), r"this is a dataset's state"),
    ("no kind", _drop("kind"), r"no 'kind'"),
    ("unknown kind", _set("kind", "zip"), r"'kind' must be 'mix', got 'zip'"),
    ("a newer format", _set("format", "pcr_explore.resume/2"), r"'format' must be 'pcr_explore"),
    ("another seed", _set("seed", 5), r"the state is of another mix: its seed is 5, this mix's 4"),
    ("other samples", _set("samples", 10), r"another mix: its samples is 10, this mix's 16"),
    ("no samples", _drop("samples"), r"no 'samples'"),
    ("another rank", _set("rank", 1), r"another mix: its rank is 1"),
    ("another world_size", _set("world_size", 3), r"another mix: its world_size is 3"),
    ("other weights", _set("shares", [0.5, 0.5]), r"another mix: its shares are \[0\.5, 0\.5\]"),
    ("shares None", _set("shares", None), r"'shares' must list one number per dataset \(2\)"),
    ("one share", _set("shares", [1.0]), r"'shares' must list one number per dataset"),
    ("shares as text", _set("shares", ["a", "b"]), r"'shares' must list one number"),
    ("a share NaN", _set("shares", [float("nan"), 1]), r"'shares' must list one number"),
    ("datasets None", _set("datasets", None), r"'datasets' must list the mix's 2 datasets"),
    ("one dataset", _set("datasets", [{}]), r"'datasets' must list the mix's 2 datasets"),
    ("a dataset a list", _set("datasets.0", []), r"resume state, dataset 0 must be a dict"),
    ("a dataset's digest", _set("datasets.1.digest", "f" * 64), r"dataset 1: saved for another"),
    ("a dataset's seed", _set("datasets.0.seed", 9), r"dataset 0: the state is of another run"),
    ("a dataset's size", _set("datasets.1.size", 8), r"dataset 1: .*its size is 8"),
    ("a dataset's scan", _set("datasets.0.scan", 99), r"dataset 0: 'scan' must be within 1\.\.10"),
    ("an empty dataset entry", _set("datasets.1", {}), r"dataset 1: no 'digest'"),
    ("negative epoch", _set("epoch", -3), r"'epoch' must be within 0\.\.\d+, got -3"),
    ("epoch None", _set("epoch", None), r"'epoch' must be an integer, got None"),
    ("no workers", _set("num_workers", 0), r"'num_workers' must be within 1\.\.4096"),
    ("next past the workers", _set("next", 5), r"'next' must be within 0\.\.1, got 5"),
    ("batch_size 0", _set("batch_size", 0), r"'batch_size' must be within 1\.\."),
    ("delivered a list", _set("delivered", [2, 2]), r"'delivered' must map shard numbers"),
    ("huge count", _set("delivered.0", 10**15), r"shard 0 1000000000000000 \(int\).*0\.\.8,"),
    ("negative count", _set("delivered.1", -2), r"shard 1 -2 \(int\) samples"),
    ("float count", _set("delivered.1", 2.5), r"shard 1 2\.5 \(float\) samples"),
    ("unknown shard", _set("delivered.9", 1), r"names shards \['9'\] that this rank does not"),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [pytest.param(c, m, id=i) for i, c, m in BAD_MIX_STATES],
)
def test_a_malformed_mix_state_is_refused(
    sets: tuple[Path, Path], change: Any, message: str
) -> None:
    a, b = map(str, sets)
    state = _dataset_state(a) if change == _OF_A_DATASET else change(_mix_state(a, b))
    m = _mix(a, b)
    with pytest.raises(DatasetError, match=message):
        m.load_state_dict(state)
    assert (m.epoch, [p.scan for p in m.parts], m._resume) == (0, [2, 5], None)


BAD_ARGUMENTS = [
    ("batch_size 0", dict(batch_size=0), ValueError, r"batch_size must be at least 1, got 0"),
    ("batch_size -2", dict(batch_size=-2), ValueError, r"batch_size must be at least 1, got -2"),
    ("batch_size 2.0", dict(batch_size=2.0), TypeError, r"batch_size must be an integer, got 2\.0"),
    ("batch_size True", dict(batch_size=True), TypeError, r"batch_size must be an integer, got T"),
    ("batch_size None", dict(batch_size=None), TypeError, r"batch_size must be an integer, got N"),
    ("batches -1", dict(batches=-1), ValueError, r"state_dict: batches must be at least 0, got -1"),
    ("batches text", dict(batches="3"), TypeError, r"batches must be an integer, got '3' \(str\)"),
    ("num_workers -1", dict(num_workers=-1), ValueError, r"num_workers must be at least 0, got -1"),
    ("num_workers 1e6", dict(num_workers=10**6), ValueError, r"num_workers must be at most 4096"),
    ("num_workers 2.5", dict(num_workers=2.5), TypeError, r"num_workers must be an integer, got 2"),
    ("too many batches", dict(batches=99), ValueError, r"99 batches is more than this epoch hol"),
]


@pytest.mark.parametrize("of", ["dataset", "mix"])
@pytest.mark.parametrize(
    ("args", "error", "message"),
    [pytest.param(a, e, m, id=i) for i, a, e, m in BAD_ARGUMENTS],
)
def test_malformed_state_dict_arguments_are_refused(
    sets: tuple[Path, Path], of: str, args: dict[str, Any], error: type, message: str
) -> None:
    a, b = map(str, sets)
    ds = torch_dataset(a, **KW) if of == "dataset" else _mix(a, b)
    with pytest.raises(error, match=message):
        ds.state_dict(**{**dict(batches=3, batch_size=2, num_workers=2), **args})


def test_batches_made_in_the_workers_are_counted_at_their_size(sets: tuple[Path, Path]) -> None:
    a, _ = sets
    tds = torch_dataset(str(a), batch_size=4, **KW)
    with pytest.raises(ValueError, match=r"makes batches of 4 in its workers.*batch_size=4, not 2"):
        tds.state_dict(batches=1, batch_size=2, num_workers=2)
    assert tds.state_dict(batches=1, batch_size=4, num_workers=2)["delivered"] == {"0": 4, "1": 0}
