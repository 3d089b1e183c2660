"""``bench_train.py --against webdataset``: PCR against the JPEGs a user trains from today.

The baseline reads the original (baseline) JPEGs of the training set from
WebDataset tar shards through WebDataset's own reader, at the same storage
bandwidth as the PCR reads (both go through
:class:`~pcr_explore.train.throttle.ThrottledFileSystem`), decodes them with
the same decoder at the same size in the same number of threads, puts them
in the PCR dataset's order, and trains the same model with the same seeds,
optimiser, schedule and flips. Only where the pixels come from differs.

Compared with it, per seed: PCR at the level ``budget()`` recommends at the
training size (its p5 MS-SSIM and gradient criteria, measured in this run),
and PCR with a curriculum ramping from level 1 to the full level. Reported:
the time to 95% of the best accuracy the WebDataset run reached (sequential
load + compute, and pipelined), and the final accuracy, as ratios to
WebDataset, at the given bandwidth and unthrottled.
"""

from __future__ import annotations

import importlib
import io
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pcr_explore import budget, open_dataset
from pcr_explore.jpeg import decode
from pcr_explore.train import (
    EpochStats,
    LevelRun,
    build_model,
    evaluate,
    read_level,
    stack_images,
    train_at_levels,
    train_epoch,
)
from pcr_explore.train.throttle import ThrottledFileSystem

__all__ = ["against_webdataset"]


def write_shards(
    train: Any, source_root: Path, out: Path, shard_bytes: int = 32 << 20
) -> list[str]:
    """The training set's original JPEGs as WebDataset shards (written once)."""
    import webdataset as wds

    done = out / "done"
    if not done.exists():
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("*.tar"):
            old.unlink()
        with wds.ShardWriter(str(out / "train-%05d.tar"), maxsize=shard_bytes, verbose=0) as sink:
            for name, label in zip(train.names, train.labels.tolist()):
                key = name.rsplit(".", 1)[0].replace(".", "_")
                sink.write({"__key__": key, "jpg": (source_root / name).read_bytes(), "cls": label})
        done.write_text("ok\n")
    return sorted(str(p) for p in out.glob("*.tar"))


class _ThrottledStream(io.RawIOBase):
    """A local file read through the package's throttled file system, chunk by chunk."""

    def __init__(self, fs: ThrottledFileSystem, path: str) -> None:
        self.fs, self.path, self.pos = fs, path, 0
        self.size = Path(path).stat().st_size
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), self.size - self.pos)
        if n <= 0:
            return 0
        data = self.fs.cat_file(self.path, start=self.pos, end=self.pos + n)
        b[: len(data)] = data
        self.pos += len(data)
        self.bytes_read += len(data)
        return len(data)


class WebDatasetReader:
    """One epoch of the shards through WebDataset, decoded like ``read_level`` decodes."""

    def __init__(
        self, shards: Sequence[str], order: Sequence[str], bandwidth: float | None, workers: int = 2
    ) -> None:
        import fsspec

        gopen = importlib.import_module("webdataset.gopen")

        self.shards, self.workers = list(shards), workers
        self.index = {name.rsplit(".", 1)[0].replace(".", "_"): i for i, name in enumerate(order)}
        self.streams: list[_ThrottledStream] = []
        local = fsspec.filesystem("file")
        link = ThrottledFileSystem(local, bandwidth) if bandwidth else None

        def opener(url: str, mode: str = "rb", bufsize: int = 8192, **kw: Any) -> Any:
            path = url.removeprefix("throttled:")
            if link is None:
                return open(path, "rb")
            s = _ThrottledStream(link, path)
            self.streams.append(s)
            return io.BufferedReader(s, buffer_size=1 << 20)

        gopen.gopen_schemes["throttled"] = opener

    def read(self, size: int) -> tuple[Any, Any, int, float]:
        import webdataset as wds

        t0 = time.perf_counter()
        urls = [f"throttled:{p}" for p in self.shards]
        ds = wds.WebDataset(urls, shardshuffle=False, workersplitter=None, empty_check=False)
        slots: list[Any] = [None] * len(self.index)
        labels = [0] * len(self.index)
        nbytes = 0
        with ThreadPoolExecutor(self.workers) as pool:
            futures = []
            for sample in ds:
                i = self.index[sample["__key__"]]
                nbytes += len(sample["jpg"])
                labels[i] = int(sample["cls"])
                futures.append(
                    (i, pool.submit(decode, sample["jpg"], size=(size, size), mode="RGB"))
                )
            for i, f in futures:
                slots[i] = f.result()
        images, targets = stack_images(slots, labels)
        return images, targets, nbytes, time.perf_counter() - t0


def _train_webdataset(
    reader: WebDatasetReader, val_level: Any, *, size: int, epochs: int, seed: int, num_classes: int
) -> LevelRun:
    """The loop of ``train_at_levels``, step for step, on the WebDataset images."""
    import torch

    torch.manual_seed(seed)
    net = build_model("small-cnn", num_classes=num_classes)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    gen = torch.Generator().manual_seed(seed)
    stats = []
    for epoch in range(1, epochs + 1):
        images, labels, nbytes, load_s = reader.read(size)
        t0 = time.perf_counter()
        loss = train_epoch(net, opt, images, labels, batch_size=32, generator=gen)
        compute = time.perf_counter() - t0
        sched.step()
        t0 = time.perf_counter()
        acc = evaluate(net, val_level.images, val_level.labels)
        stats.append(
            EpochStats(epoch, 0, loss, acc, nbytes, load_s, compute, time.perf_counter() - t0)
        )
    return LevelRun("webdataset", tuple(stats))


def _time_to(run: LevelRun, target: float, pipelined: bool) -> float | None:
    return run.time_to_accuracy(target, pipelined=pipelined)


def _ratio(base: float | None, other: float | None) -> float | None:
    if base is None or other is None or other <= 0:
        return None
    return base / other


def _ms(values: list[float | None]) -> str:
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    if len(v) == 1:
        return f"{v[0]:.2f}"
    return f"{statistics.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})"


def against_webdataset(
    data: Any,
    source_root: Path,
    work: Path,
    *,
    size: int,
    epochs: int,
    seeds: Sequence[int],
    bandwidth: float,
    schedule: str,
    workers: int = 2,
) -> dict[str, Any]:
    """Run every configuration, print the tables, return the record."""
    train = open_dataset(str(data.train))
    shards = write_shards(train, source_root, work / "wds-train")
    shard_bytes = sum(Path(s).stat().st_size for s in shards)
    report = budget(train, size=size, sample=64, progress=False, workers=workers)
    tuned = report.recommended
    print(
        f"WebDataset: {len(shards)} shards, {shard_bytes / 1e6:.1f} MB; PCR full level "
        f"{train.bytes_at(None) / 1e6:.1f} MB, level {tuned} (budget at {size} px: "
        f"{report.choices}) {train.bytes_at(tuned) / 1e6:.1f} MB; curriculum {schedule}\n"
    )
    val_level = read_level(open_dataset(str(data.val)), scan=None, size=size, workers=workers)
    record: dict[str, Any] = {
        "tuned_level": tuned,
        "budget_choices": dict(report.choices),
        "schedule": schedule,
        "shard_bytes": shard_bytes,
        "runs": {},
    }
    for label, bw in ((f"{bandwidth / 1e6:g} MB/s", bandwidth), ("unthrottled", None)):
        rows = {"tuned": [], "schedule": []}
        per_seed = []
        for seed in seeds:
            t0 = time.perf_counter()
            reader = WebDatasetReader(shards, train.names, bw, workers)
            base = _train_webdataset(
                reader,
                val_level,
                size=size,
                epochs=epochs,
                seed=seed,
                num_classes=len(train.classes),
            )
            pcr = train_at_levels(
                train,
                val=data.val,
                scans=(tuned,),
                schedule=schedule,
                size=size,
                epochs=epochs,
                seed=seed,
                bandwidth=bw,
                workers=workers,
                progress=False,
            )
            target = 0.95 * base.best_val_accuracy
            runs = {"tuned": pcr.level(tuned), "schedule": pcr.level("schedule")}
            seed_rec = {"webdataset": base.to_dict(), "target": target}
            for name, run in runs.items():
                row = {
                    "speedup": _ratio(_time_to(base, target, False), _time_to(run, target, False)),
                    "speedup_pipelined": _ratio(
                        _time_to(base, target, True), _time_to(run, target, True)
                    ),
                    "final_accuracy": run.final_val_accuracy,
                    "final_accuracy_delta": run.final_val_accuracy - base.final_val_accuracy,
                    "bytes_ratio": run.bytes_read / max(1, base.bytes_read),
                }
                rows[name].append(row)
                seed_rec[name] = {**row, "run": run.to_dict()}
            seed_rec["webdataset_final_accuracy"] = base.final_val_accuracy
            per_seed.append(seed_rec)
            print(f"{label} seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
        record["runs"][label] = per_seed
        base_acc = [s["webdataset_final_accuracy"] for s in per_seed]
        print(
            f"\n{label}: ratios to WebDataset (mean, min-max over seeds {list(seeds)}); "
            f"WebDataset final accuracy {_ms(base_acc)}"
        )
        print(
            f"{'':>22} {'time to 95%':>22} {'pipelined':>22} {'final acc':>22} "
            f"{'acc - WebDataset':>24} {'bytes':>8}"
        )
        for name, title in (("tuned", f"PCR level {tuned}"), ("schedule", f"PCR {schedule}")):
            r = rows[name]
            print(
                f"{title:>22} {_ms([x['speedup'] for x in r]):>22} "
                f"{_ms([x['speedup_pipelined'] for x in r]):>22} "
                f"{_ms([x['final_accuracy'] for x in r]):>22} "
                f"{_ms([x['final_accuracy_delta'] for x in r]):>24} "
                f"{statistics.mean(x['bytes_ratio'] for x in r):>7.2f}x"
            )
        print()
    return record
