"""Sharding records across DataLoader workers and ranks; the torch adapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.jpeg import decode
from pcr_explore.read.loader import record_shard
from pcr_explore.read.reader import open_dataset


@pytest.mark.parametrize("seed", [None, 3])
def test_shards_partition_the_records(seed: int | None) -> None:
    shards = [record_shard(11, s, 4, seed) for s in range(4)]
    flat = sorted(r for sh in shards for r in sh)
    assert flat == list(range(11))
    assert all(len(sh) in (2, 3) for sh in shards)
    if seed is not None:
        assert [r for sh in zip(*shards) for r in sh] != list(range(8))
    with pytest.raises(ValueError, match="shard 4 out of range"):
        record_shard(11, 4, 4, None)


def test_torch_dataset_reads_every_image_once(photo_folder: Path, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    encode_dataset(photo_folder, tmp_path / "ds", record_size=20_000, workers=1, progress=False)
    ds = open_dataset(str(tmp_path / "ds"))
    tds = torch_dataset(str(tmp_path / "ds"), scan=2, size=(32, 24), shuffle=True, seed=1)
    loader = DataLoader(tds, batch_size=4, num_workers=2, multiprocessing_context="forkserver")
    labels = []
    for images, lab in loader:
        assert images.dtype == torch.uint8 and images.shape[1:] == (3, 24, 32)
        labels.extend(lab.tolist())
    assert sorted(labels) == sorted(ds.labels.tolist()) and len(labels) == len(ds)
    ref = [decode(b, size=(32, 24), mode="RGB") for _, b, _ in ds.iter_jpeg(scan=2)]
    one = next(iter(torch_dataset(str(tmp_path / "ds"), scan=2, size=(32, 24))))[0]
    np.testing.assert_array_equal(one.permute(1, 2, 0).numpy(), ref[0])
