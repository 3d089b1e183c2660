"""Training at scan levels: determinism, exactness at full level, bytes counted, tuners."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _photos import needs_jpegtran
from PIL import Image

from pcr_explore.errors import DatasetError, MissingExtraError
from pcr_explore.read.reader import open_dataset
from pcr_explore.train import (
    SplitDatasets,
    load_flowers,
    parse_bandwidth,
    throttled,
    write_stand_in_archive,
)

torch = pytest.importorskip("torch")

from pcr_explore.train import (  # noqa: E402 - after the torch check
    StepTuner,
    TrainOptions,
    evaluate,
    read_level,
    result_figure,
    small_cnn,
    stack_images,
    train_at_levels,
    train_epoch,
    tune_by_gradient,
    write_html,
)
from pcr_explore.train.gradient import _level_jpeg  # noqa: E402

SIZE = 32


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> SplitDatasets:
    """40 training and 10 validation 32-pixel pattern images in 5 classes."""
    tmp = tmp_path_factory.mktemp("train")
    archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=10, side=SIZE)
    return load_flowers(archive, cache_dir=tmp / "cache", workers=1, progress=False)


def _run(data: SplitDatasets, scans: object = (1, 10), **kw: object):  # type: ignore[no-untyped-def]
    args = dict(size=SIZE, epochs=2, batch_size=8, seed=0, progress=False, workers=1)
    args.update(kw)
    rare = {k: args.pop(k) for k in list(args) if k in TrainOptions.__dataclass_fields__}
    return train_at_levels(  # type: ignore[misc]
        data.train, val=data.val, scans=scans, **args, options=TrainOptions(**rare)
    )


@pytest.fixture(scope="module")
def run(data: SplitDatasets):  # type: ignore[no-untyped-def]
    return _run(data, (1, 3, 10))


def test_missing_torch_names_the_extra(
    data: SplitDatasets, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'pcr-explore\[torch\]'"):
        train_at_levels(data.train, val=data.val, size=SIZE, epochs=1)
    with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
        tune_by_gradient(data.train, model=object())
    with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
        small_cnn(5)


def test_identical_seeds_give_identical_losses(data: SplitDatasets, run) -> None:  # type: ignore[no-untyped-def]
    again = _run(data, (1, 3, 10))
    for a, b in zip(run.levels, again.levels):
        assert [e.train_loss for e in a.epochs] == [e.train_loss for e in b.epochs]
        assert [e.val_accuracy for e in a.epochs] == [e.val_accuracy for e in b.epochs]
    other = _run(data, (3,), seed=1)
    assert [e.train_loss for e in other.levels[0].epochs] != [
        e.train_loss for e in run.level(3).epochs
    ]
    # Same weights, order and flips at every level: only the pixels differ.
    assert run.level(1).epochs[0].train_loss != run.level(10).epochs[0].train_loss


def test_bytes_read_per_epoch_equal_bytes_at(data: SplitDatasets, run) -> None:  # type: ignore[no-untyped-def]
    ds = open_dataset(str(data.train))
    for level in run.levels:
        assert [e.bytes_read for e in level.epochs] == [ds.bytes_at(level.scan)] * 2
        assert [e.scan for e in level.epochs] == [level.scan] * 2
    assert run.level_bytes[1] == ds.bytes_at(1) < ds.bytes_at(10) == run.level_bytes[10]
    assert run.train_images == 40 and run.val_images == 10


@needs_jpegtran
def test_full_level_equals_training_on_source_jpegs_decoded_by_pillow(
    data: SplitDatasets, run
) -> None:  # type: ignore[no-untyped-def]
    ds, val = open_dataset(str(data.train)), open_dataset(str(data.val))

    def pillow(folder: Path, names: list[str]) -> np.ndarray:
        return [np.asarray(Image.open(folder / n).convert("RGB")) for n in names]  # type: ignore[return-value]

    x, y = stack_images(pillow(data.images / "train", ds.names), ds.labels.tolist())
    xv, yv = stack_images(pillow(data.images / "val", val.names), val.labels.tolist())
    torch.manual_seed(0)
    net = small_cnn(len(ds.classes))
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    gen = torch.Generator().manual_seed(0)
    losses, accs = [], []
    for _ in range(2):
        losses.append(train_epoch(net, opt, x, y, batch_size=8, generator=gen))
        sched.step()
        accs.append(evaluate(net, xv, yv))
    full = run.level(10)
    assert [e.train_loss for e in full.epochs] == losses
    assert [e.val_accuracy for e in full.epochs] == accs


def test_gradient_tuner_thresholds_and_model_left_alone(data: SplitDatasets) -> None:
    torch.manual_seed(0)
    net = small_cnn(5)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    kw = dict(batches=2, batch_size=8, size=SIZE, workers=1)
    top = tune_by_gradient(data.train, model=net, scans=(1, 2, 5, 10), threshold=1.0, **kw)  # type: ignore[arg-type]
    low = tune_by_gradient(data.train, model=net, scans=(1, 2, 5, 10), threshold=-1.0, **kw)  # type: ignore[arg-type]
    assert top.scan == 10 and top.met and low.scan == 1
    assert top.similarity[10] == 1.0 and top.similarity == low.similarity
    assert all(-1.0 <= s < 1.0 for k, s in top.similarity.items() if k < 10)
    assert len(top.per_batch[1]) == 2 and top.batches == 2
    ds = open_dataset(str(data.train))
    assert top.bytes_at == {k: ds.bytes_at(k) for k in (1, 2, 5, 10)}
    # Levels are cut from each image's full JPEG: the same bytes the reader gives.
    assert all(
        _level_jpeg(ds.jpeg_bytes(i), ds.level_bytes(i), k) == ds.jpeg_bytes(i, k)
        for i in range(0, len(ds), 7)
        for k in range(1, 11)
    )
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert net.training
    record = json.loads(json.dumps(top.to_dict()))
    assert record["scan"] == 10 and set(record["similarity"]) == {"1", "2", "5", "10"}
    assert record["threshold"] == 1.0


def test_gradient_tuner_stops_when_it_knows(data: SplitDatasets) -> None:
    torch.manual_seed(0)
    net = small_cnn(5)
    kw = dict(batch_size=8, size=SIZE, workers=1, scans=(1, 2, 5, 10))
    # every level's interval lies below 1.5 after the minimum of three batches
    sure = tune_by_gradient(data.train, model=net, batches=4, threshold=1.5, **kw)  # type: ignore[arg-type]
    assert sure.decided and sure.batches == 3 and sure.max_batches == 4
    assert all(hi < 1.5 for _, hi in sure.similarity_ci.values())
    assert sure.similarity_ci[10] == (1.0, 1.0)
    assert "3 of at most 4 batches" in sure.summary()
    # one batch gives no interval: the budget is spent and the tuner says it does not know
    unsure = tune_by_gradient(data.train, model=net, batches=1, threshold=0.8, **kw)  # type: ignore[arg-type]
    assert not unsure.decided and unsure.batches == 1
    assert "undecided" in unsure.summary()
    assert json.loads(json.dumps(unsure.to_dict()))["similarity_ci"]["1"] == [None, None]


def test_auto_follows_the_gradient_tuner(data: SplitDatasets) -> None:
    kw = dict(epochs=3, retune_every=1, auto_scans=(1, 10), tune_batches=1)
    low = _run(data, "auto", threshold=-1.0, **kw)
    high = _run(data, "auto", threshold=1.0, **kw)
    ds = open_dataset(str(data.train))
    assert [e.scan for e in low.levels[0].epochs] == [1, 1, 1]
    assert [e.scan for e in high.levels[0].epochs] == [10, 10, 10]
    # The tuner's own reads are counted on top of the level's records, in the epoch that
    # made them: before epoch 1 and during epochs 1 and 2 (for the next); none in the last.
    *tuned, last = low.levels[0].epochs
    assert all(e.bytes_read > ds.bytes_at(1) and e.tune_seconds > 0 for e in tuned)
    assert last.bytes_read == ds.bytes_at(1) and last.tune_seconds == 0
    assert low.levels[0].label == "auto" and low.to_dict()["levels"][0]["scan"] == "auto"


def _dropout_cnn(num_classes: int) -> Any:
    """The small CNN with dropout: a step's gradient depends on its random state."""
    return torch.nn.Sequential(small_cnn(num_classes), torch.nn.Dropout(0.5))


def test_a_training_steps_gradient_is_its_levels_gradient_computed_again(
    data: SplitDatasets,
) -> None:
    ds = open_dataset(str(data.train))
    level = read_level(ds, scan=3, size=SIZE, workers=1)
    torch.manual_seed(0)
    net = _dropout_cnn(5)
    params = list(net.parameters())
    pairs = []

    def again(idx: Any, flips: Any, rng: Any) -> None:
        step = torch.cat([p.grad.reshape(-1) for p in params]).double()
        i = idx.numpy()
        arrays = probe._pixels(i, [ds.jpeg_bytes(int(j), 3) for j in i])
        y = torch.as_tensor(ds.labels[i], dtype=torch.int64)
        pairs.append((step, probe._grad(arrays, y, rng, flips), probe._grad(arrays, y, 7, flips)))

    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(0)
    with StepTuner(ds, model=net, trained=3, size=SIZE, workers=1) as probe:
        x, y = level.images, level.labels
        train_epoch(net, opt, x, y, batch_size=8, generator=gen, on_step=again)
    assert len(pairs) == 5
    for step, same, other_masks in pairs:
        # Same images, flips, weights and dropout masks: the same gradient.
        torch.testing.assert_close(step, same, rtol=1e-6, atol=1e-9)
        assert not torch.allclose(step, other_masks, rtol=1e-3)


def _tuned_epoch(data: SplitDatasets, **kw: Any) -> tuple[Any, float, dict[str, Any]]:
    """One seeded epoch at level 3 with a step tuner (or none), from the same weights."""
    ds = open_dataset(str(data.train))
    level = read_level(ds, scan=3, size=SIZE, workers=1)
    torch.manual_seed(0)
    net = _dropout_cnn(5)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(0)
    args = dict(batch_size=8, generator=gen)
    if not kw:
        return None, train_epoch(net, opt, level.images, level.labels, **args), net.state_dict()
    with StepTuner(ds, model=net, trained=3, scans=(1, 3, 5, 10), size=SIZE, workers=1, **kw) as t:
        loss = train_epoch(net, opt, level.images, level.labels, **args, on_step=t)
    return t.result(), loss, net.state_dict()


def test_the_step_tuner_reuses_the_steps_gradient_and_decides_the_same(
    data: SplitDatasets,
) -> None:
    kw = dict(batches=3, min_batches=3, start=1, threshold=0.5)
    reused, loss, weights = _tuned_epoch(data, **kw)
    own, own_loss, own_weights = _tuned_epoch(data, reuse=False, **kw)
    _, plain_loss, plain_weights = _tuned_epoch(data)
    assert reused.scan == own.scan and reused.batches == own.batches == 3
    assert reused.decided == own.decided and reused.max_batches == 3
    for k in (1, 3, 5, 10):
        np.testing.assert_allclose(reused.per_batch[k], own.per_batch[k], rtol=0, atol=1e-6)
    assert reused.similarity[10] == 1.0 and reused.similarity[3] < 1.0
    # Level 3's gradient came from each step: one pass fewer per batch, the rest the same.
    assert (reused.passes, reused.passes_reused) == (12, 3)
    assert (own.passes, own.passes_reused) == (12, 0)
    assert "3 of 12 gradients taken from training steps" in reused.summary()
    assert reused.to_dict()["passes_reused"] == 3
    # Measuring leaves training as it was: the same losses and weights as with no tuner.
    assert loss == own_loss == plain_loss
    assert all(torch.equal(v, own_weights[k]) for k, v in weights.items())
    assert all(torch.equal(v, plain_weights[k]) for k, v in weights.items())
    with pytest.raises(ValueError, match="no training step measured"):
        StepTuner(open_dataset(str(data.train)), model=small_cnn(5), trained=3).result()
    with pytest.raises(ValueError, match=r"train\.pcr: trained: scan level 11 is outside 1\.\.10"):
        StepTuner(open_dataset(str(data.train)), model=small_cnn(5), trained=11)


def test_throttled_reads_take_as_long_as_their_bytes(data: SplitDatasets) -> None:
    ds = open_dataset(str(data.train))
    bw = ds.bytes_at(10) / 0.4  # a full pass should take 0.4 s
    slow = throttled(ds, bandwidth=bw)
    t0 = time.perf_counter()
    level = read_level(slow, scan=10, size=SIZE, workers=1)
    took = time.perf_counter() - t0
    assert level.bytes_read == ds.bytes_at(10)
    # a throttle can only make a read slower: the lower bound holds on any machine, an upper
    # bound would measure how busy the machine is
    assert took >= 0.4 and level.seconds >= 0.4
    assert parse_bandwidth("50MB/s") == 50e6 and parse_bandwidth("2 GiB/s") == 2 * 2**30
    assert parse_bandwidth(1e6) == 1e6
    with pytest.raises(ValueError, match="not a bandwidth"):
        parse_bandwidth("fast")
    with pytest.raises(ValueError, match="positive"):
        parse_bandwidth(0)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_throttled_keeps_the_settings_and_its_link_holds_in_dataloader_workers(
    data: SplitDatasets, tmp_path: Path, context: str
) -> None:
    from torch.utils.data import DataLoader

    from pcr_explore.read import torch_dataset

    cache = tmp_path / "cache"
    ds = open_dataset(str(data.train), cache_dir=cache, read_ahead="1MB", timeout=7)
    slow = throttled(ds, bandwidth="1GB/s")
    assert {k: v for k, v in slow.options.items() if k not in ("store", "storage_options")} == {
        k: v for k, v in ds.options.items() if k not in ("store", "storage_options")
    }
    assert slow.read_ahead == ds.read_ahead == 1_000_000 and slow._fetch.cache is not None
    link = slow._fs
    carried = link.bytes_carried  # the manifest, read through the link when opened
    tds = torch_dataset(slow, scan=3, size=SIZE)
    loader = DataLoader(tds, batch_size=8, num_workers=2, multiprocessing_context=context)
    assert sum(len(labels) for _, labels in loader) == len(ds)
    # the workers' records came through the one shared link (and each reopened the
    # manifest through it); the prefixes they read are in the cache the dataset had
    first_pass = link.bytes_carried - carried
    assert first_pass >= ds.bytes_at(3)
    assert sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) >= ds.bytes_at(3)
    # a second pass is served by that cache: only the manifests cross the link
    before = link.bytes_carried
    assert sum(len(labels) for _, labels in loader) == len(ds)
    assert link.bytes_carried - before == first_pass - ds.bytes_at(3)


def test_result_json_table_plot_and_time_to_accuracy(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    record = json.loads(run.to_json())
    assert record["size"] == SIZE and record["model"] == "small-cnn" and record["seed"] == 0
    level = record["levels"][0]
    assert {"scan", "bytes_read", "epochs", "best_val_accuracy"} <= set(level)
    assert {"epoch", "train_loss", "val_accuracy", "load_seconds", "compute_seconds"} <= set(
        level["epochs"][0]
    )
    full = run.level(10)
    t = full.time_to_accuracy(full.best_val_accuracy)
    assert t is not None and t == pytest.approx(
        sum(
            e.load_seconds + e.compute_seconds
            for e in full.epochs[: int(np.argmax(full.val_accuracy)) + 1]
        )
    )
    assert full.time_to_accuracy(1.01) is None
    best = int(np.argmax(full.val_accuracy))
    assert full.bytes_to_accuracy(full.best_val_accuracy) == int(full.cumulative_bytes()[best])
    assert full.bytes_to_accuracy(1.01) is None
    assert run.speedup(0.95)["scan 10"] == pytest.approx(1.0)
    html = run._repr_html_()
    assert "scan 1" in html and "scan 10" in html and "<table>" in html
    fig = result_figure(run)
    assert len(fig.children) == 3
    page = write_html(run, tmp_path / "report.html").read_text()
    assert "Bokeh" in page and "scan 3" in page
    with pytest.raises(KeyError, match="no run at scan 7"):
        run.level(7)


def test_bad_input_is_refused(data: SplitDatasets, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="1..10"):
        _run(data, (0, 10))
    with pytest.raises(ValueError, match="'auto'"):
        _run(data, "all")
    with pytest.raises(ValueError, match="size >= 8"):
        _run(data, (1,), size=4)
    with pytest.raises(ValueError, match=r"train\.pcr: scan levels \[11\] are outside 1\.\.10"):
        tune_by_gradient(data.train, model=small_cnn(5), scans=(11,))


def test_different_classes_are_refused(data: SplitDatasets, tmp_path: Path) -> None:
    import shutil

    from pcr_explore import encode_dataset

    val4 = tmp_path / "val4"
    shutil.copytree(data.images / "val", val4)
    shutil.rmtree(val4 / "frame")
    encode_dataset(val4, tmp_path / "v4", workers=1, progress=False)
    with pytest.raises(DatasetError, match="different classes"):
        train_at_levels(
            data.train, val=tmp_path / "v4", scans=(1,), size=SIZE, epochs=1, progress=False
        )


def test_loader_switches_level_in_persistent_workers(data: SplitDatasets) -> None:
    from torch.utils.data import DataLoader

    from pcr_explore.jpeg import decode
    from pcr_explore.read.loader import torch_dataset

    ds = open_dataset(str(data.train))
    tds = torch_dataset(str(data.train), scan=1, size=(SIZE, SIZE))
    loader = DataLoader(
        tds,
        batch_size=64,
        num_workers=1,
        persistent_workers=True,
        multiprocessing_context="forkserver",
    )
    first = next(iter(loader))[0]
    pids = [p.pid for p in loader._iterator._workers]  # type: ignore[union-attr]
    tds.set_scan(10)
    tds.set_epoch(3)
    second = next(iter(loader))[0]
    assert [p.pid for p in loader._iterator._workers] == pids  # type: ignore[union-attr]
    ref = {
        k: [decode(b, size=(SIZE, SIZE), mode="RGB") for _, b, _ in ds.iter_jpeg(k)]
        for k in (1, 10)
    }
    np.testing.assert_array_equal(first[0].permute(1, 2, 0).numpy(), ref[1][0])
    np.testing.assert_array_equal(second[0].permute(1, 2, 0).numpy(), ref[10][0])
    assert tds.scan == 10 and tds.epoch == 3
    with pytest.raises(ValueError, match="outside 1..10"):
        tds.set_scan(11)


def test_loader_follows_a_schedule_in_persistent_workers(data: SplitDatasets) -> None:
    from torch.utils.data import DataLoader

    from pcr_explore.jpeg import decode
    from pcr_explore.read.loader import torch_dataset

    ds = open_dataset(str(data.train))
    tds = torch_dataset(str(data.train), schedule="ramp:1-10:1-3", size=(SIZE, SIZE))
    loader = DataLoader(
        tds,
        batch_size=64,
        num_workers=1,
        persistent_workers=True,
        multiprocessing_context="forkserver",
    )
    seen, pids = [], None
    for epoch in range(4):
        tds.set_epoch(epoch)
        batch = next(iter(loader))[0]
        workers = [p.pid for p in loader._iterator._workers]  # type: ignore[union-attr]
        assert pids is None or workers == pids  # the same workers every epoch
        pids = workers
        seen.append((tds.scan, batch[0].permute(1, 2, 0).numpy()))
    assert [k for k, _ in seen] == [1, 6, 10, 10]
    first = {k: decode(ds.jpeg_bytes(0, k), size=(SIZE, SIZE), mode="RGB") for k in (1, 6, 10)}
    for k, image in seen:
        np.testing.assert_array_equal(image, first[k])
    with pytest.raises(ValueError, match=r"levels \[12\] are outside 1\.\.10"):
        torch_dataset(str(data.train), schedule="steps:1=12")


def test_a_schedule_run_reads_each_epochs_level(data: SplitDatasets) -> None:
    ds = open_dataset(str(data.train))
    result = _run(data, scans=(10,), schedule="ramp:1-10:1-3", epochs=4)
    assert [r.label for r in result.levels] == ["scan 10", "schedule"]
    ramp = result.level("schedule")
    assert [e.scan for e in ramp.epochs] == [1, 6, 10, 10]
    assert [e.bytes_read for e in ramp.epochs] == [ds.bytes_at(k) for k in (1, 6, 10, 10)]
    assert ramp.bytes_read < result.level(10).bytes_read
    assert result.schedule == "ramp:1-10:1-3"
    assert json.loads(result.to_json())["schedule"] == "ramp:1-10:1-3"
    only = _run(data, scans=None, schedule="steps:1=2,2=10", epochs=2)
    assert [r.label for r in only.levels] == ["schedule"]
    assert [e.scan for e in only.levels[0].epochs] == [2, 10]


def test_a_bad_schedule_fails_before_training(data: SplitDatasets) -> None:
    with pytest.raises(ValueError, match=r"levels \[11\] are outside 1\.\.10"):
        _run(data, schedule="steps:1=1,2=11")
    with pytest.raises(ValueError, match="not a scan schedule"):
        _run(data, schedule="warmup")


_RESUME = """
import hashlib, json, sys
from torch.utils.data import DataLoader
from pcr_explore.read.loader import torch_dataset

def main():
    url, workers = sys.argv[1], int(sys.argv[3])
    state = json.loads(sys.argv[2]) if sys.argv[2] else None
    tds = torch_dataset(url, scan=3, size=(16, 16), shuffle=True, seed=5)
    if state:
        tds.load_state_dict(state)
    else:
        tds.set_epoch(1)
    loader = DataLoader(tds, batch_size=4, num_workers=workers,
                        multiprocessing_context="forkserver")
    out = [hashlib.sha256(x.numpy().tobytes()).hexdigest()[:16] for b, _ in loader for x in b]
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


def _hashes(batch: Any) -> list[str]:
    import hashlib

    return [hashlib.sha256(x.numpy().tobytes()).hexdigest()[:16] for x in batch[0]]


def _run_script(tmp_path: Path, *args: str) -> list[str]:
    import subprocess

    script = tmp_path / "resume.py"
    script.write_text(_RESUME)
    out = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(out.stdout)


def test_a_stopped_epoch_resumes_exactly_in_a_new_process(
    data: SplitDatasets, tmp_path: Path
) -> None:
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    url = str(data.train)
    full = _run_script(tmp_path, url, "", "2")  # the uninterrupted epoch 1, 2 workers
    assert len(full) == len(set(full)) == len(open_dataset(url))
    tds = torch_dataset(url, scan=3, size=(16, 16), shuffle=True, seed=5)
    tds.set_epoch(1)
    loader = DataLoader(tds, batch_size=4, num_workers=2, multiprocessing_context="forkserver")
    seen: list[str] = []
    for n, batch in enumerate(loader, 1):
        seen += _hashes(batch)
        if n == 3:
            break  # the run stops here (a kernel restart)
    state = json.loads(json.dumps(tds.state_dict(batches=3, batch_size=4, num_workers=2)))
    assert state["epoch"] == 1 and sum(state["delivered"].values()) == 12
    rest = _run_script(tmp_path, url, json.dumps(state), "2")
    assert seen + rest == full  # the same samples, in the same order
    # another worker count: every sample not yet delivered, once
    other = _run_script(tmp_path, url, json.dumps(state), "3")
    assert sorted(other) == sorted(set(full) - set(seen)) and len(other) == len(set(other))
    with pytest.raises(ValueError, match="the state is of another run: its seed is 5"):
        torch_dataset(url, shuffle=True, seed=6).load_state_dict(state)


def _descendants(pid: int) -> set[int]:
    """Every process below *pid* now (Linux: from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended while listed
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        kids = [c for c, p in parents.items() if p == parent]
        found.update(kids)
        todo += kids
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_a_killed_loader_leaves_nothing_that_blocks_the_next(
    data: SplitDatasets, tmp_path: Path
) -> None:
    import signal
    import subprocess

    script = tmp_path / "resume.py"
    stuck = (
        "    import time\n    for _ in loader:\n"
        "        print('batch', flush=True)\n        time.sleep(60)\n    out = ["
    )
    script.write_text(_RESUME.replace("    out = [", stuck, 1))
    p = subprocess.Popen(
        [sys.executable, str(script), str(data.train), "", "2"], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    assert p.stdout.readline() == "batch\n"  # workers started and delivered a batch
    assert p.poll() is None  # still running: killed below, not ended by itself
    left = _descendants(p.pid)  # the fork server, its resource tracker, the two workers
    assert len(left) >= 3
    p.send_signal(signal.SIGKILL)
    assert p.wait(timeout=30) == -signal.SIGKILL
    p.stdout.close()
    # the workers notice that the run is gone and end; with them the fork server and the
    # resource tracker (no limit here but the test's own: a process left behind hangs it)
    while left := {pid for pid in left if _running(pid)}:
        time.sleep(0.2)
    full = _run_script(tmp_path, str(data.train), "", "2")
    assert len(full) == len(open_dataset(str(data.train)))


def test_resume_after_a_kernel_restart(data: SplitDatasets, tmp_path: Path) -> None:
    """In a notebook's kernel: stop mid-epoch, save the state, restart the kernel, resume."""
    from jupyter_client.manager import start_new_kernel

    setup = f"""
import hashlib, json
from torch.utils.data import DataLoader
from pcr_explore.read.loader import torch_dataset
def make():
    tds = torch_dataset({str(data.train)!r}, scan=2, size=(16, 16), shuffle=True, seed=3)
    return tds, DataLoader(tds, batch_size=4, num_workers=2, multiprocessing_context="forkserver")
def h(b):
    return [hashlib.sha256(x.numpy().tobytes()).hexdigest()[:16] for x in b[0]]
"""
    state_file, out_file = tmp_path / "state.json", tmp_path / "out.json"
    km, kc = start_new_kernel(kernel_name="python3")
    try:

        def run(code: str) -> None:
            reply = kc.execute_interactive(code, timeout=240)
            assert reply["content"]["status"] == "ok", reply["content"]

        run(
            setup
            + f"""
tds, loader = make(); tds.set_epoch(2)
full = [x for b in loader for x in h(b)]
tds, loader = make(); tds.set_epoch(2)
seen = []
for n, b in enumerate(loader, 1):
    seen += h(b)
    if n == 2:
        break
open({str(state_file)!r}, "w").write(json.dumps(tds.state_dict(batches=2, batch_size=4,
                                                                 num_workers=2)))
json.dump({{"full": full, "seen": seen}}, open({str(out_file)!r}, "w"))
"""
        )
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        run(
            setup
            + f"""
tds, loader = make()
tds.load_state_dict(json.load(open({str(state_file)!r})))
rest = [x for b in loader for x in h(b)]
d = json.load(open({str(out_file)!r}))
assert d["seen"] + rest == d["full"], "the resumed epoch differs"
"""
        )
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_batches_made_in_the_workers_hold_the_same_images(data: SplitDatasets) -> None:
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    url = str(data.train)
    kw = dict(scan=2, size=(SIZE, SIZE), shuffle=True, seed=1)
    per_image = DataLoader(
        torch_dataset(url, **kw),
        batch_size=8,
        num_workers=2,  # type: ignore[arg-type]
        multiprocessing_context="forkserver",
    )
    batched = DataLoader(
        torch_dataset(url, batch_size=8, **kw),
        batch_size=None,  # type: ignore[arg-type]
        num_workers=2,
        multiprocessing_context="forkserver",
        pin_memory=False,
    )
    a, b = list(per_image), list(batched)
    assert [x.shape for x, _ in a] == [x.shape for x, _ in b]
    assert all(torch.equal(x, y) and torch.equal(la, lb) for (x, la), (y, lb) in zip(a, b))
    assert b[0][0].dtype == torch.uint8 and tuple(b[0][0].shape[1:]) == (3, SIZE, SIZE)
    with pytest.raises(ValueError, match=r"need one shape: give size=\(width, height\)"):
        torch_dataset(url, batch_size=8, size=SIZE)


def test_mix_draws_by_weight_each_dataset_at_its_level(
    data: SplitDatasets, photo_folder: Path, tmp_path: Path
) -> None:
    from collections import Counter

    from torch.utils.data import DataLoader

    from pcr_explore import encode_dataset
    from pcr_explore.read import mix

    # small records, so that both workers hold records of both datasets
    first_set, other = tmp_path / "a.pcr", tmp_path / "other.pcr"
    encode_dataset(data.images / "train", first_set, record_size=8_000, workers=1, progress=False)
    encode_dataset(photo_folder, other, record_size=20_000, workers=1, progress=False)
    kw = dict(size=(SIZE, SIZE), shuffle=True)
    m = mix([str(first_set), str(other)], weights=[3, 1], scans=[1, 10], seed=4, **kw)  # type: ignore[arg-type]
    n_a, n_b = len(open_dataset(str(first_set))), len(open_dataset(str(other)))
    assert len(m) == int(min(n_a / 0.75, n_b / 0.25))  # the first to run out, at its weight
    loader = DataLoader(m, batch_size=5, num_workers=2, multiprocessing_context="forkserver")
    first = [(x, y, s) for xb, yb, sb in loader for x, y, s in zip(xb, yb, sb)]
    again = [(x, y, s) for xb, yb, sb in loader for x, y, s in zip(xb, yb, sb)]
    assert len(first) == len(m)
    assert all(torch.equal(a[0], b[0]) and a[2] == b[2] for a, b in zip(first, again))
    counts = Counter(int(s) for _, _, s in first)
    assert counts[0] > counts[1] > 0  # 3 to 1, drawn
    # each source at its own level: a source-1 image is a full-quality photo of the other set
    from pcr_explore.jpeg import decode

    ds_b = open_dataset(str(other))
    full = {decode(ds_b.jpeg_bytes(i), size=(SIZE, SIZE), mode="RGB").tobytes() for i in range(n_b)}
    got_b = [x.permute(1, 2, 0).numpy().tobytes() for x, _, s in first if int(s) == 1]
    assert got_b and all(g in full for g in got_b)
    m.set_epoch(1)
    other_epoch = [s for _, _, sb in loader for s in sb.tolist()]
    assert other_epoch != [int(s) for _, _, s in first]  # another epoch, other draws
    with pytest.raises(ValueError, match="one positive weight per dataset"):
        mix([str(data.train)], weights=[1, 2])
