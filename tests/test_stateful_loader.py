"""Resume the PyTorch way: torchdata's StatefulDataLoader, its state saved with torch.save.

Each run stops mid-epoch in this process with real DataLoader workers,
saves ``{"loader": loader.state_dict()}`` with ``torch.save``, and a new
process (a subprocess running :func:`_epoch`) resumes it from the file: the
samples before and after must be the uninterrupted epoch's, in order, and
the next epoch a whole one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _pcr_data import digest, random_dataset

pytest.importorskip("torch")
pytest.importorskip("torchdata")

from pcr_explore import DatasetError  # noqa: E402
from pcr_explore.read import mix, torch_dataset  # noqa: E402

pytestmark = [
    # more DataLoader workers than this machine's cores is part of what is tested
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),
    # torchdata 0.11 calls a torch function that newer torch deprecates
    pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning"),
]

TESTS = str(Path(__file__).parent)


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """24 photos in 2 records, and 8 others in one."""
    tmp = tmp_path_factory.mktemp("stateful")
    return [
        str(random_dataset(tmp / "a", images=24, records=2, seed=1)),
        str(random_dataset(tmp / "b", images=8, records=1, seed=2)),
    ]


def _make(cfg: dict[str, Any]) -> Any:
    """The dataset or mix a run reads: the same in every process."""
    if cfg["kind"] == "mix":
        return mix(
            cfg["urls"],
            weights=[3, 1],
            scans=[2, 5],
            seed=4,
            samples=20,
            size=(16, 16),
            shuffle=True,
        )
    made = 4 if cfg.get("made") else None  # batches made in the workers
    return torch_dataset(
        cfg["urls"][0], scan=3, size=(16, 16), shuffle=True, seed=5, batch_size=made
    )


def _loader(ds: Any, cfg: dict[str, Any]) -> Any:
    from torchdata.stateful_dataloader import StatefulDataLoader

    workers = cfg["workers"]
    return StatefulDataLoader(
        ds,
        batch_size=None if cfg.get("made") else 4,
        num_workers=workers,
        persistent_workers=bool(cfg.get("persistent")),
        multiprocessing_context="forkserver" if workers else None,
    )


def _samples(batch: Any) -> list[str]:
    """A batch's samples: each image's digest, with its source in a mix."""
    if len(batch) == 3:
        return [f"{digest(x)}:{int(s)}" for x, s in zip(batch[0], batch[2])]
    return [digest(x) for x in batch[0]]


def _epoch(cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Epoch ``cfg["epoch"]``: from the checkpoint ``cfg["load"]``, up to ``cfg["stop"]`` batches.

    At the stop, ``{"loader": loader.state_dict()}`` goes to ``cfg["save"]``
    with ``torch.save``; with ``cfg["next"]`` the following epoch is read too.
    """
    import torch

    ds = _make(cfg)
    loader = _loader(ds, cfg)
    ds.set_epoch(cfg["epoch"])  # as a training loop does at each epoch's start
    if cfg.get("load"):
        loader.load_state_dict(torch.load(cfg["load"])["loader"])
    out: dict[str, list[str]] = {"seen": []}
    for n, batch in enumerate(loader, 1):
        out["seen"] += _samples(batch)
        if n == cfg.get("stop"):
            torch.save({"loader": loader.state_dict()}, cfg["save"])
            return out
    if cfg.get("next"):
        ds.set_epoch(cfg["epoch"] + 1)
        out["next"] = [x for batch in loader for x in _samples(batch)]
    return out


def _in_new_process(cfg: dict[str, Any], script: str = "_epoch") -> dict[str, Any]:
    """:func:`_epoch` (or *script*) run in a new Python process."""
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {TESTS!r})\n"
        f"from test_stateful_loader import {script}\n"
        "if __name__ == '__main__':\n"
        f"    print(json.dumps({script}(json.loads(sys.argv[1]))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param(dict(workers=0), id="0 workers"),
        pytest.param(dict(workers=1), id="1 worker"),
        pytest.param(dict(workers=2), id="2 workers"),
        pytest.param(dict(workers=2, persistent=True, made=True), id="persistent, made batches"),
    ],
)
def test_a_dataset_resumes_exactly_in_a_new_process(
    sets: list[str], tmp_path: Path, setup: dict[str, Any]
) -> None:
    cfg = dict(setup, kind="dataset", urls=sets[:1], epoch=1)
    full = _epoch(dict(cfg, next=True))
    assert len(full["seen"]) == len(set(full["seen"])) == 24
    assert len(full["next"]) == 24 and full["next"] != full["seen"]  # reshuffled
    ckpt = str(tmp_path / "ckpt.pt")
    before = _epoch(dict(cfg, stop=3, save=ckpt))["seen"]
    assert before == full["seen"][:12]
    after = _in_new_process(dict(cfg, load=ckpt, next=True))
    assert before + after["seen"] == full["seen"]  # the same samples, in the same order
    assert after["next"] == full["next"]  # and the next epoch is a whole one


@pytest.mark.parametrize("workers", [0, 2])
def test_a_mix_resumes_exactly_in_a_new_process(
    sets: list[str], tmp_path: Path, workers: int
) -> None:
    cfg = dict(kind="mix", urls=sets, epoch=3, workers=workers)
    full = _epoch(dict(cfg, next=True))
    assert len(full["seen"]) == 20 and {x[-1] for x in full["seen"]} == {"0", "1"}
    ckpt = str(tmp_path / "ckpt.pt")
    before = _epoch(dict(cfg, stop=3, save=ckpt))["seen"]
    after = _in_new_process(dict(cfg, load=ckpt, next=True))
    assert before == full["seen"][:12] and before + after["seen"] == full["seen"]
    assert after["next"] == full["next"] and len(full["next"]) == 20


def _train(cfg: dict[str, Any]) -> dict[str, Any]:
    """Two epochs of a tiny model; at ``cfg["stop"]`` (epoch, step) a checkpoint, and the end.

    The checkpoint holds the model, the optimizer, the loader and the epoch,
    saved with ``torch.save``; ``cfg["load"]`` resumes from one.
    """
    import hashlib

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)  # the same sums in every process
    torch.manual_seed(0)
    model = torch.nn.Linear(3 * 16 * 16, 2)
    optim = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ds = _make(dict(kind="dataset", urls=cfg["urls"]))
    loader = _loader(ds, dict(workers=2))
    first = 0
    if cfg.get("load"):
        ckpt = torch.load(cfg["load"])
        model.load_state_dict(ckpt["model"])
        optim.load_state_dict(ckpt["optim"])
        loader.load_state_dict(ckpt["loader"])
        first = ckpt["epoch"]
    seen: list[str] = []
    for epoch in range(first, 2):
        ds.set_epoch(epoch)
        for step, (images, labels) in enumerate(loader):
            loss = F.cross_entropy(model(images.flatten(1).float() / 255), labels)
            optim.zero_grad()
            loss.backward()
            optim.step()
            seen += _samples((images, labels))
            if [epoch, step] == cfg.get("stop"):
                state = {
                    "model": model.state_dict(),
                    "optim": optim.state_dict(),
                    "loader": loader.state_dict(),
                    "epoch": epoch,
                }
                torch.save(state, cfg["save"])
                return {"seen": seen}
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"seen": seen, "weights": hashlib.sha256(weights.numpy().tobytes()).hexdigest()}


def test_a_training_loop_checkpointed_mid_epoch_resumes_in_a_new_process(
    sets: list[str], tmp_path: Path
) -> None:
    ckpt = str(tmp_path / "ckpt.pt")
    full = _in_new_process(dict(urls=sets[:1]), "_train")
    stopped = _in_new_process(dict(urls=sets[:1], stop=[0, 2], save=ckpt), "_train")
    resumed = _in_new_process(dict(urls=sets[:1], load=ckpt), "_train")
    assert len(full["seen"]) == 48 and len(stopped["seen"]) == 12
    assert stopped["seen"] + resumed["seen"] == full["seen"]  # the same batches, in order
    assert resumed["weights"] == full["weights"]  # and so the same model, to the bit


def _stopped(sets: list[str], tmp_path: Path, workers: int, kind: str = "dataset") -> Any:
    """The loader state a run of *workers* workers saved after 3 batches of epoch 1."""
    import torch

    cfg = dict(kind=kind, urls=sets if kind == "mix" else sets[:1], epoch=1, workers=workers)
    _epoch(dict(cfg, stop=3, save=str(tmp_path / "ckpt.pt")))
    return torch.load(tmp_path / "ckpt.pt")["loader"]


@pytest.mark.parametrize(("kind", "workers"), [("dataset", 3), ("mix", 1)])
def test_another_worker_count_is_refused_by_name(
    sets: list[str], tmp_path: Path, kind: str, workers: int
) -> None:
    state = _stopped(sets, tmp_path, 2, kind)
    cfg = dict(kind=kind, urls=sets, workers=workers)
    ds = _make(cfg)
    loader = _loader(ds, cfg)
    loader.load_state_dict(state)
    with pytest.raises(DatasetError, match=r"state of DataLoader worker \d of 2 .* num_workers=2"):
        next(iter(loader))


def test_worker_processes_and_none_do_not_mix(sets: list[str], tmp_path: Path) -> None:
    # torchdata's own check: a state of worker processes is not one of the main process
    cfg = dict(kind="dataset", urls=sets, workers=0)
    loader = _loader(_make(cfg), cfg)
    loader.load_state_dict(_stopped(sets, tmp_path, 2))
    with pytest.raises(AssertionError, match="_num_yielded"):
        next(iter(loader))
    many = dict(cfg, workers=2)
    loader = _loader(_make(many), many)
    loader.load_state_dict(_stopped(sets, tmp_path, 0))
    with pytest.raises(AssertionError, match="_snapshot"):
        next(iter(loader))


def test_a_worker_state_says_where_its_shard_stands(sets: list[str]) -> None:
    tds = _make(dict(kind="dataset", urls=sets))
    tds.set_epoch(2)
    fresh = tds.state_dict()  # before a pass in this process: the one it would read
    whole = [digest(x) for x, _ in tds]
    done = tds.state_dict()  # after it: that pass, every sample delivered
    it = iter(tds)
    first = [digest(next(it)[0]) for _ in range(5)]
    state = json.loads(json.dumps(tds.state_dict()))
    counts = [s["delivered"] for s in (fresh, done, state)]
    assert counts == [{"0": 0}, {"0": 24}, {"0": 5}]
    assert (state["worker"], state["num_workers"], state["epoch"], state["scan"]) == (0, 1, 2, 3)
    assert tds.delivered(state) == set(tds.sequence(2, 0, 1)[:5])
    again = _make(dict(kind="dataset", urls=sets))
    again.load_state_dict(state)
    assert (again.epoch, again.scan) == (0, 3)  # the state is the next pass's, not the dataset's
    assert first + [digest(x) for x, _ in again] == whole
    assert len(list(again)) == 24  # and the pass after it a whole epoch (0: never set)


def test_with_workers_this_process_does_not_know_the_position(sets: list[str]) -> None:
    from torch.utils.data import DataLoader

    tds, m = _make(dict(kind="dataset", urls=sets)), _make(dict(kind="mix", urls=sets))
    for ds in (tds, m):
        assert sum(len(b[0]) for b in DataLoader(ds, batch_size=4, num_workers=0)) == len(ds)
        ds.state_dict()  # read in this process: its position is known
        batches = DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="forkserver")
        assert sum(len(b[0]) for b in batches) == len(ds)
        with pytest.raises(ValueError, match=r"DataLoader workers read this .* StatefulDataLoader"):
            ds.state_dict()
        ds.state_dict(batches=1, batch_size=4, num_workers=2)  # counting still serves


def _worker_state(sets: list[str], kind: str) -> dict[str, Any]:
    """The state of worker 1 of 2 after 4 samples of epoch 1 (as a StatefulDataLoader keeps it)."""
    ds = _make(dict(kind=kind, urls=sets))
    ds.set_epoch(1)
    state = json.loads(json.dumps(ds.state_dict()))
    return dict(state, num_workers=2, worker=1, delivered={"1": 4})


BAD_WORKER_STATES = [
    ("another worker", {}, r"state of DataLoader worker 1 of 2 .* this process is worker 0 of 1"),
    ("worker 2 of 2", dict(worker=2), r"'worker' must be within 0\.\.1, got 2"),
    ("worker as text", dict(worker="1"), r"'worker' must be an integer, got '1'"),
    ("another shard", dict(delivered={"0": 4}), r"worker 1 must count its own shard alone \(1,"),
    ("two shards", dict(delivered={"0": 1, "1": 1}), r"got shards \['0', '1'\]"),
    ("turned", dict(next=1), r"its own shard alone \(0, with 'next' 1\), got shards \['1'\]"),
    ("no count", dict(delivered=None), r"worker 1 read a pass that resumed a state of another"),
    ("no worker", "drop", r"no 'worker'"),
]


@pytest.mark.parametrize("kind", ["dataset", "mix"])
@pytest.mark.parametrize(
    ("change", "message"), [pytest.param(c, m, id=i) for i, c, m in BAD_WORKER_STATES]
)
def test_a_malformed_worker_state_is_refused(
    sets: list[str], kind: str, change: Any, message: str
) -> None:
    state = _worker_state(sets, kind)
    if change == "drop":
        del state["worker"]
    else:
        state.update(change)
    ds = _make(dict(kind=kind, urls=sets))
    with pytest.raises(DatasetError, match=message):
        ds.load_state_dict(state)
    assert ds._resume is None and ds.epoch == 0


def test_an_epoch_resumed_with_another_worker_count_says_it_cannot_be_resumed_again(
    sets: list[str],
) -> None:
    tds = _make(dict(kind="dataset", urls=sets))
    tds.set_epoch(1)
    tds.load_state_dict(tds.state_dict(batches=2, batch_size=4, num_workers=2))  # counted
    it = iter(tds)  # one process: another sharding, so what it skips is a set
    next(it)
    state = tds.state_dict()
    assert state["delivered"] is None
    with pytest.raises(DatasetError, match="resumed a state of another worker count"):
        _make(dict(kind="dataset", urls=sets)).load_state_dict(state)
    assert len(list(it)) == 24 - 8 - 1  # the pass itself goes on: every sample not delivered


def test_a_counted_resume_read_by_a_stateful_loader_resumes_again(sets: list[str]) -> None:
    cfg = dict(kind="dataset", urls=sets[:1], epoch=1, workers=2)
    full = _epoch(cfg)["seen"]
    counted = _make(cfg)
    counted.set_epoch(1)
    state = counted.state_dict(batches=3, batch_size=4, num_workers=2)
    assert (state["delivered"], state["next"]) == ({"0": 8, "1": 4}, 1)
    ds = _make(cfg)
    ds.load_state_dict(state)  # worker 0 now plays shard 1, whose turn it is
    loader = _loader(ds, cfg)
    seen = _samples(next(iter(loader)))
    saved = loader.state_dict()
    assert seen == full[12:16]
    again = _make(cfg)
    again.set_epoch(1)
    loader = _loader(again, cfg)
    loader.load_state_dict(saved)
    assert seen + [x for batch in loader for x in _samples(batch)] == full[12:]
    # where a pass whose workers resumed their own states stands is not a count of batches
    with pytest.raises(ValueError, match="resumed a StatefulDataLoader's states in its workers"):
        again.state_dict(batches=1, batch_size=4, num_workers=2)
