"""Object storage: encode to and read from a real S3 API server (moto, server mode) on loopback."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("s3fs", reason="needs s3fs (pip install 'pcr-explore[s3]')")
pytest.importorskip("moto.server", reason="needs moto's server mode (pip install moto[server])")

from _loopback import S3, s3_server  # noqa: E402

from pcr_explore.encode.encoder import encode_dataset  # noqa: E402
from pcr_explore.errors import DatasetError  # noqa: E402
from pcr_explore.read.reader import open_dataset  # noqa: E402


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


@pytest.fixture(scope="module")
def local_ds(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("s3ref") / "ds"
    encode_dataset(photo_folder, out, record_size=20_000, workers=1, progress=False)
    return out


@pytest.fixture(scope="module")
def remote_ds(s3: S3, photo_folder: Path, local_ds: Path) -> str:
    url = f"s3://{s3.bucket}/ds"
    s3.log.clear()
    encode_dataset(
        photo_folder,
        url,
        record_size=20_000,
        workers=2,
        progress=False,
        storage_options=s3.storage_options,
    )
    return url


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_encode_to_s3_is_the_local_encode_published_records_first(
    s3: S3, remote_ds: str, local_ds: Path
) -> None:
    import s3fs

    puts = [r.path.rsplit("/", 1)[-1] for r in s3.log if r.method == "PUT" and "/ds/" in r.path]
    assert puts[-1] == "manifest.json" and puts.count("manifest.json") == 1
    assert sorted(puts[:-1]) == sorted(p.name for p in local_ds.glob("record-*.pcr"))
    fs = s3fs.S3FileSystem(**s3.storage_options)
    remote = {p.rsplit("/", 1)[-1]: _digest(fs.cat_file(p)) for p in fs.ls(remote_ds)}
    assert remote == {p.name: _digest(p.read_bytes()) for p in local_ds.iterdir()}


def test_a_level_read_from_s3_is_one_ranged_get_of_exactly_its_bytes(
    s3: S3, remote_ds: str, local_ds: Path
) -> None:
    local = open_dataset(str(local_ds))
    for k in (1, 3, 10):
        ds = open_dataset(remote_ds, storage_options=s3.storage_options)
        s3.log.clear()
        imgs = [img for img, _ in ds.iter(scan=k, size=32)]
        gets = s3.gets()
        assert len(gets) == len(ds.records)
        assert sorted(g.range or "" for g in gets) == sorted(  # read ahead: in any order
            f"bytes=0-{r.bytes_per_scan[k - 1] - 1}" for r in ds.records
        )
        assert sum(g.sent for g in gets) == local.bytes_at(k) == ds.stats.bytes_read
        ref = [img for img, _ in local.iter(scan=k, size=32)]
        assert all(np.array_equal(a, b) for a, b in zip(imgs, ref))


def test_delta_fetch_from_s3(s3: S3, remote_ds: str, tmp_path: Path) -> None:
    ds = open_dataset(remote_ds, storage_options=s3.storage_options, cache_dir=tmp_path)
    s3.log.clear()
    assert ds.prefetch(2).bytes_read == ds.bytes_at(2)
    assert ds.prefetch(6).bytes_read == ds.bytes_at(6) - ds.bytes_at(2)
    assert sum(g.sent for g in s3.gets()) == ds.bytes_at(6)
    assert ds.prefetch(4).requests == 0


def test_s3_output_refuses_to_replace_a_dataset_unless_told(
    s3: S3, remote_ds: str, photo_folder: Path
) -> None:
    with pytest.raises(DatasetError, match=r"s3://pcr/ds: already holds a dataset"):
        encode_dataset(
            photo_folder, remote_ds, workers=1, progress=False, storage_options=s3.storage_options
        )
    url = f"s3://{s3.bucket}/other"
    opts = s3.storage_options
    encode_dataset(
        photo_folder, url, record_size=20_000, workers=1, progress=False, storage_options=opts
    )
    s3.log.clear()
    summary = encode_dataset(
        photo_folder, url, workers=1, progress=False, overwrite=True, storage_options=opts
    )
    deletes = [r for r in s3.log if r.method in ("DELETE", "POST") and "/other" in r.path]
    assert deletes  # the old manifest and records went first
    assert summary.records == 1
    ds = open_dataset(url, storage_options=opts)
    assert len(ds.records) == 1 and len(ds) == 7


def test_dataloader_workers_read_s3_on_the_given_endpoint(
    s3: S3, remote_ds: str, local_ds: Path
) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pcr_explore.read.loader import torch_dataset

    tds = torch_dataset(
        open_dataset(remote_ds, storage_options=s3.storage_options, retries=1),
        scan=3,
        size=(16, 16),
        batch_size=4,
    )
    assert tds.options["storage_options"] == s3.storage_options
    s3.log.clear()
    loader = DataLoader(tds, batch_size=None, num_workers=2, multiprocessing_context="forkserver")
    got = sorted(x.numpy().tobytes() for images, _ in loader for x in images)
    manifests = [r for r in s3.log if r.method == "GET" and r.path.endswith("/manifest.json")]
    local = open_dataset(str(local_ds))
    want = sorted(
        img.transpose(2, 0, 1).tobytes() for img, _ in local.iter(3, size=(16, 16), mode="RGB")
    )
    assert got == want  # every image, from the custom endpoint, once
    assert len(manifests) == 2 and s3.gets()
