"""Benchmark the PyTorch adapter's batches made in the workers, against WebDataset's DataLoader.

Data: the flowers5 training set (1,200 photos) as encoded by bench_train.py
(``bench/_data/flowers5``), and the same original JPEGs as WebDataset shards
(``bench/_data/wds-train``, written on first use as ``bench_train.py --against
webdataset`` writes them; run ``bench_train.py`` once first to encode the photos).

Measured on this machine, per level and output size, images per second of a
full pass through a ``DataLoader`` with ``--workers`` worker processes and
batches of ``--batch`` (the second pass of persistent workers, so that start-up
is left out; the median of ``--repeat`` passes):

* ``per image``: ``torch_dataset(...)`` and the DataLoader's own batching;
* ``in workers``: ``torch_dataset(..., batch_size=B)`` and ``batch_size=None``;
* ``webdataset``: ``wds.WebDataset(shards).map(decode).batched(B)``, the
  JPEGs decoded by the same decoder at the same size, batched in its workers.

Usage::

    python bench/bench_loader.py [--sizes 32,224] [--scans 1,5,10] [--workers 2] [--batch 64]

Prints a table with ratios to WebDataset and writes bench/results/loader.json.
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from pcr_explore._json import to_json
from pcr_explore.jpeg import decode
from pcr_explore.read.loader import torch_dataset

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "loader.json"


class _WdsDecode:
    """Decode a WebDataset sample like the adapter does (picklable, for forkserver workers)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, sample: dict[str, Any]) -> tuple[Any, int]:
        import torch

        arr = decode(sample["jpg"], size=(self.size, self.size), mode="RGB")
        return torch.from_numpy(arr).permute(2, 0, 1), int(sample["cls"])


def _collate(items: list[tuple[Any, int]]) -> tuple[Any, Any]:
    import torch

    return torch.stack([x for x, _ in items]), torch.as_tensor([y for _, y in items])


def _passes(loader: Any, repeat: int) -> float:
    n, times = 0, []
    for k in range(repeat + 1):
        t0 = time.perf_counter()
        n = sum(len(y) for _, y in loader)
        if k:  # the first pass starts the workers
            times.append(time.perf_counter() - t0)
    return n / statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="32,224")
    ap.add_argument("--scans", default="1,5,10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import torch
    import webdataset as wds
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)
    train = glob.glob(str(HERE / "_data" / "flowers5" / "flowers" / "*" / "train.pcr"))[0]
    from _against_webdataset import write_shards

    from pcr_explore import open_dataset

    flowers = HERE.parent.parent / "shared" / "data" / "flowers5" / "train"
    shards = write_shards(open_dataset(train), flowers, HERE / "_data" / "wds-train")
    w, b = args.workers, args.batch
    common = dict(num_workers=w, persistent_workers=True, multiprocessing_context="forkserver")
    rows, record = [], []
    for size in (int(s) for s in args.sizes.split(",")):
        ds = (
            wds.WebDataset(
                shards, shardshuffle=False, workersplitter=wds.split_by_worker, empty_check=False
            )
            .map(_WdsDecode(size))
            .batched(b, collation_fn=_collate)
        )
        base = _passes(DataLoader(ds, batch_size=None, **common), args.repeat)
        for k in (int(s) for s in args.scans.split(",")):
            kw = dict(scan=k, size=(size, size))
            per = _passes(
                DataLoader(torch_dataset(train, **kw), batch_size=b, **common), args.repeat
            )
            inw = _passes(
                DataLoader(torch_dataset(train, batch_size=b, **kw), batch_size=None, **common),
                args.repeat,
            )
            rows.append((size, k, base, per, inw))
            record.append(
                {"size": size, "scan": k, "webdataset": base, "per_image": per, "in_workers": inw}
            )
            print(
                f"size {size} scan {k}: webdataset {base:.0f}, per image {per:.0f} "
                f"({per / base:.2f}x), in workers {inw:.0f} img/s ({inw / base:.2f}x)",
                flush=True,
            )
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        to_json(
            {
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                "args": vars(args),
                "rows": record,
            }
        )
        + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
