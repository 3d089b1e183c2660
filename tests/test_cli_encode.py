"""``pcr-explore encode``'s options: sizes with units, bounded Dask clusters, fast refusals."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pcr_explore.cli import build_parser, main
from pcr_explore.encode.encoder import encode_dataset


def _records(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.glob("record-*.pcr"))}


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_record_size_takes_units(photo_folder: Path, tmp_path: Path) -> None:
    parse = build_parser().parse_args
    for text, size in (("4MB", 4_000_000), ("64MiB", 64 * 2**20), ("20000", 20_000)):
        assert parse(["encode", "a", "b", "--record-size", text]).record_size == size
    encode_dataset(photo_folder, tmp_path / "ref", record_size=20_000, workers=1, progress=False)
    argv = ["encode", str(photo_folder), str(tmp_path / "kb"), "--record-size", "20kB"]
    assert main([*argv, "--workers", "1", "--quiet"]) == 0
    assert len(_records(tmp_path / "ref")) > 1
    assert _records(tmp_path / "kb") == _records(tmp_path / "ref")


def test_a_record_size_that_is_not_a_size_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["encode", "a", "b", "--record-size", "4 parsecs"])
    assert info.value.code == 2
    assert "argument --record-size: not a size: '4 parsecs'" in capsys.readouterr().err


@pytest.mark.timeout(60)  # a guard: without the bound, the cluster starts every process asked
def test_dask_workers_beyond_the_machine_are_refused_in_one_line(
    photo_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("distributed")
    from pcr_explore.encode.distributed import WORKERS_PER_CPU, max_local_workers

    out = tmp_path / "o"
    limit = max_local_workers()
    assert limit == WORKERS_PER_CPU * (os.cpu_count() or 1)
    assert main(["encode", str(photo_folder), str(out), "--dask-workers", "100000"]) == 1
    err = _one_line(capsys.readouterr().err)
    assert "--dask-workers 100000: at most" in err and f" {limit} " in err
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # one CPU: 4 workers at most
    assert main(["encode", str(photo_folder), str(out), "--dask-workers", "5"]) == 1
    err = _one_line(capsys.readouterr().err)
    assert (
        "--dask-workers 5: at most 4 local worker processes (4 per CPU; this machine has 1)" in err
    )
    assert not out.exists()


def _refused_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(25)  # a guard: Dask's own connection waits 30 s before it gives up
def test_a_scheduler_that_does_not_answer_is_named_at_once(
    photo_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "o"
    for address in (f"tcp://127.0.0.1:{_refused_port()}", "tcp://127.0.0.1", "nowhere"):
        assert main(["encode", str(photo_folder), str(out), "--scheduler", address]) == 1
        err = _one_line(capsys.readouterr().err)
        assert err.startswith(f"pcr-explore: error: {address}: no Dask scheduler answers there")
    assert not out.exists()


def test_a_label_file_over_the_limit_is_refused_in_one_line(
    photo_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pcr_explore.encode import discover

    # the real limit is 256 MiB: a smaller one keeps the test's memory small
    monkeypatch.setattr(discover, "MAX_LABELS_BYTES", 1 << 16)
    argv = ["encode", str(photo_folder), str(tmp_path / "o"), "--labels", "/dev/zero"]
    assert main([*argv, "--quiet"]) == 1
    err = _one_line(capsys.readouterr().err)
    assert "/dev/zero: label CSV is larger than 65,536 bytes" in err


def test_the_help_shows_the_librarys_dask_worker_bound() -> None:
    from pcr_explore.cli import _defaults
    from pcr_explore.encode.distributed import WORKERS_PER_CPU

    assert _defaults.DASK_WORKERS_PER_CPU == WORKERS_PER_CPU
