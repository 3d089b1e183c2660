"""read.mix(): several datasets by weight, resumed exactly, every worker drawing from each."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _pcr_data import digest, random_dataset

pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from pcr_explore.read import mix  # noqa: E402

# more DataLoader workers than this machine's cores is part of what is tested
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A dataset of 24 photos in 2 records and one of 8 in a single record."""
    tmp = tmp_path_factory.mktemp("mix")
    big = random_dataset(tmp / "big", images=24, records=2, seed=1)
    small = random_dataset(tmp / "small", images=8, records=1, seed=2)
    return str(big), str(small)


def _mix(sets: tuple[str, str], **kw: Any) -> Any:
    return mix(list(sets), weights=[3, 1], scans=[2, 5], seed=4, size=(16, 16), shuffle=True, **kw)


def _run(m: Any, workers: int, stop: int | None = None) -> list[list[tuple[str, int]]]:
    """The batches a DataLoader gives, as (image digest, source) pairs; *stop* batches at most."""
    loader = DataLoader(m, batch_size=4, num_workers=workers, multiprocessing_context="forkserver")
    out = []
    for n, (images, _, sources) in enumerate(loader, 1):
        out.append([(digest(x), int(s)) for x, s in zip(images, sources)])
        if n == stop:
            break
    return out


def test_a_small_dataset_reaches_every_worker(sets: tuple[str, str]) -> None:
    m = _mix(sets)
    batches = _run(m, workers=2)
    assert sum(len(b) for b in batches) == len(m) == 32  # min(24 / 0.75, 8 / 0.25)
    # a DataLoader takes a batch from each worker in turn: both hold some of the small set
    for worker in (0, 1):
        assert any(s == 1 for b in batches[worker::2] for _, s in b)
    # whole records, as before: the second worker would hold none of the one-record set
    whole = _mix(sets, whole_records=True)
    assert whole.parts[1].spans(0, 1, 2) == [] and m.parts[1].spans(0, 1, 2) != []


def test_a_mixed_epoch_resumes_exactly_in_new_workers(sets: tuple[str, str]) -> None:
    m = _mix(sets, samples=20)
    m.set_epoch(3)
    full = [x for b in _run(m, workers=2) for x in b]
    assert len(full) == 20
    stopped = _mix(sets, samples=20)
    stopped.set_epoch(3)
    seen = [x for b in _run(stopped, workers=2, stop=3) for x in b]
    state = json.loads(json.dumps(stopped.state_dict(batches=3, batch_size=4, num_workers=2)))
    assert state["delivered"] == {"0": 8, "1": 4} and state["next"] == 1
    assert seen == full[:12]

    resumed = _mix(sets, samples=20)  # a new process would build it the same way
    resumed.load_state_dict(state)
    rest = [x for b in _run(resumed, workers=2) for x in b]
    assert seen + rest == full  # the same samples, sources and order

    other = _mix(sets, samples=20)
    other.load_state_dict(state)
    three = [x for b in _run(other, workers=3) for x in b]
    assert len(seen) + len(three) == len(other)  # the epoch keeps its length
    assert not set(three) & set(seen) and len(set(three)) == len(three)  # nothing again

    with pytest.raises(ValueError, match="the state is of another mix: its seed is 4"):
        mix(list(sets), weights=[3, 1], seed=5, samples=20).load_state_dict(state)
    with pytest.raises(ValueError, match="the state is of another mix: its samples is 20"):
        _mix(sets).load_state_dict(state)
