"""Encoding on a real Dask cluster of worker processes (dask.distributed.LocalCluster)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pcr_explore.cli import main
from pcr_explore.encode.encoder import EncodeOptions, encode_dataset
from pcr_explore.errors import DatasetError, MissingExtraError
from pcr_explore.read.reader import open_dataset

KW: dict[str, Any] = {"record_size": 20_000, "progress": False}


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    pytest.importorskip("distributed", reason="needs pcr-explore[dask]")
    from _cluster import local_cluster

    with local_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def reference(photo_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "ds"
    encode_dataset(photo_folder, out, workers=1, **KW)
    return out


def test_dask_encode_is_byte_identical_to_the_local_one(
    client: Any,
    photo_folder: Path,
    reference: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    written: list[int] = []
    summary = encode_dataset(
        photo_folder,
        tmp_path / "d",
        client=client,
        record_size=20000,
        options=EncodeOptions(on_record=written.append),
    )
    assert _tree(tmp_path / "d") == _tree(reference)
    assert sorted(written) == list(range(summary.records)) and summary.images == 7
    err = capsys.readouterr().err
    assert "encode: 100%" in err and "7/7" in err  # progress over completed images
    # and with another worker count locally: the plan, not the workers, decides the bytes
    encode_dataset(photo_folder, tmp_path / "l", workers=2, **KW)
    assert _tree(tmp_path / "l") == _tree(reference)


def test_cli_encodes_on_a_running_scheduler(
    client: Any, photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    argv = ["encode", str(photo_folder), str(tmp_path / "s"), "--quiet", "--record-size", "20000"]
    assert main([*argv, "--scheduler", client.scheduler.address]) == 0
    assert _tree(tmp_path / "s") == _tree(reference)


def test_strict_stops_at_a_bad_source(client: Any, photo_copy: Path, tmp_path: Path) -> None:
    (photo_copy / "things" / "broken.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(DatasetError, match=r"broken\.jpg: not a recognised image format"):
        encode_dataset(
            photo_copy, tmp_path / "o", client=client, **KW, options=EncodeOptions(strict=True)
        )
    summary = encode_dataset(photo_copy, tmp_path / "p", client=client, **KW)
    assert summary.skipped == 1 and summary.images == 7


def test_dask_workers_write_straight_to_s3(
    client: Any, photo_folder: Path, reference: Path
) -> None:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from _loopback import s3_server

    with s3_server() as s3:
        url = f"s3://{s3.bucket}/dask"
        encode_dataset(photo_folder, url, client=client, storage_options=s3.storage_options, **KW)
        puts = [
            r.path.rsplit("/", 1)[-1] for r in s3.log if r.method == "PUT" and "/dask/" in r.path
        ]
        assert puts[-1] == "manifest.json"
        ds = open_dataset(url, storage_options=s3.storage_options)
        local = open_dataset(str(reference))
        assert ds.manifest.raw == local.manifest.raw  # the same JSON, field for field
        assert [ds.jpeg_bytes(i) for i in range(len(ds))] == [
            local.jpeg_bytes(i) for i in range(len(local))
        ]


def test_resume_after_an_interrupted_dask_encode(
    client: Any, photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    def stop(idx: int) -> None:
        raise KeyboardInterrupt

    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        encode_dataset(
            photo_folder, out, client=client, **KW, options=EncodeOptions(on_record=stop)
        )
    assert not (out / "manifest.json").exists() and (out / ".pcr-journal.jsonl").exists()
    summary = encode_dataset(photo_folder, out, workers=1, **KW)  # resumed locally
    assert summary.resumed_records >= 1
    assert _tree(out) == _tree(reference)


def test_a_worker_dying_mid_task_has_its_record_redone(
    client: Any, photo_folder: Path, reference: Path, tmp_path: Path
) -> None:
    from distributed.diagnostics.plugin import WorkerPlugin

    marks = (str(tmp_path / "died-transcoding"), str(tmp_path / "died-writing"))

    class Dying(WorkerPlugin):  # set up on every worker, restarted ones too
        name = "pcr-test-dying"

        def setup(self, worker: Any) -> None:
            # The first worker to reach the second image of a record dies
            # there; the first to publish a record dies after writing its
            # temporary file, before the rename.
            import os

            import pcr_explore.encode._shard as shard
            import pcr_explore.storage._atomic as atomic

            def first(mark: str) -> bool:
                try:
                    os.close(os.open(mark, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return False
                return True

            transcode, real_os = shard.transcode_source, os

            def dying_transcode(index: int, *args: Any) -> Any:
                if index % 2 == 1 and first(marks[0]):
                    os._exit(1)
                return transcode(index, *args)

            class DyingOS:
                def __getattr__(self, name: str) -> Any:
                    return getattr(real_os, name)

                @staticmethod
                def replace(src: Any, dst: Any) -> None:
                    if str(dst).endswith(".pcr") and first(marks[1]):
                        os._exit(1)
                    real_os.replace(src, dst)

            shard.transcode_source = dying_transcode  # type: ignore[assignment]
            atomic.os = DyingOS()  # type: ignore[assignment]

    client.register_plugin(Dying())
    out = tmp_path / "k"
    encode_dataset(photo_folder, out, client=client, **KW)
    assert all(Path(m).exists() for m in marks)  # two workers really died
    assert _tree(out) == _tree(reference)  # every record complete, no temporary file left


def test_a_record_whose_workers_keep_dying_is_a_worker_error(
    client: Any, photo_folder: Path, tmp_path: Path
) -> None:
    from distributed.diagnostics.plugin import WorkerPlugin

    from pcr_explore.errors import WorkerError

    stop = str(tmp_path / "stop-killing")

    class Killing(WorkerPlugin):
        name = "pcr-test-killing"

        def setup(self, worker: Any) -> None:
            import os

            import pcr_explore.encode._shard as shard

            transcode = shard.transcode_source

            def dying(index: int, *args: Any) -> Any:
                if not os.path.exists(stop):
                    os._exit(1)
                return transcode(index, *args)

            shard.transcode_source = dying  # type: ignore[assignment]

    scheduler = client.cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    client.register_plugin(Killing())
    try:
        with pytest.raises(WorkerError, match=r"pcr-record-\d{5}-\w+: every Dask worker that ran"):
            encode_dataset(photo_folder, tmp_path / "o", client=client, **KW)
    finally:
        Path(stop).touch()  # patched workers, and restarted ones, pass through from now on
        scheduler.allowed_failures = allowed


def test_cli_starts_a_local_cluster(photo_folder: Path, reference: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    code = main(
        ["encode", str(photo_folder), str(tmp_path / "c"), "--dask-workers", "2", "--quiet",
         "--record-size", "20000"]
    )  # fmt: skip
    assert code == 0 and _tree(tmp_path / "c") == _tree(reference)


def test_a_missing_dask_names_the_extra(
    photo_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    from pcr_explore.encode.distributed import local_cluster

    with pytest.raises(MissingExtraError, match=r"pip install 'pcr-explore\[dask\]'"):
        local_cluster(workers=2)
    code = main(
        ["encode", str(photo_folder), str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:1"]
    )
    assert code == 1
    assert "pip install 'pcr-explore[dask]'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
