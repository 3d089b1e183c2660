"""The audit, the quality curve and the budget's quality part on a real Dask cluster of processes.

Each runs here and on the cluster; the findings and numbers must be the same,
the worker processes must write nothing but their Dask scratch space, and
the progress bars must advance as for a local run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pcr_explore import audit, budget, quality_curve
from pcr_explore._pool import parallel_map
from pcr_explore.budgeting.decode import measure_decode
from pcr_explore.cli import main
from pcr_explore.encode.encoder import encode_dataset
from pcr_explore.errors import WorkerError
from pcr_explore.read.reader import open_dataset

GOOD = {
    "cats": ["chelsea", "coffee", "astronaut"],
    "scenes": ["rocket", "camera", "coins", "moon", "page", "immunohistochemistry"],
}
# what differs between two runs of the same audit: how long it took
TIMED = ("seconds", "timings")


def _files(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under *root*: its content hash and modification time."""
    return {
        p.relative_to(root).as_posix(): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def folder(
    tmp_path_factory: pytest.TempPathFactory,
    sk_photo: Callable[..., np.ndarray],
    encode_jpeg: Callable[..., bytes],
) -> Path:
    """A dozen small photos: nine good ones, an exact and a near duplicate, a broken file."""
    root = tmp_path_factory.mktemp("photos")
    for cls, names in GOOD.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 96)))
    (root / "scenes" / "rocket_copy.jpg").write_bytes((root / "scenes" / "rocket.jpg").read_bytes())
    near = Image.fromarray(sk_photo("coffee", 96)).resize((90, 60))
    (root / "cats" / "coffee_small.jpg").write_bytes(encode_jpeg(near, quality=70))
    whole = (root / "cats" / "chelsea.jpg").read_bytes()
    (root / "cats" / "torn.jpg").write_bytes(whole[: len(whole) // 3])
    return root


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The folder the workers start in, and their scratch space."""
    base = tmp_path_factory.mktemp("workers")
    (base / "cwd").mkdir()
    return {"cwd": base / "cwd", "scratch": base / "scratch"}


@pytest.fixture(scope="module")
def client(places: dict[str, Path]) -> Iterator[Any]:
    pytest.importorskip("distributed", reason="needs pcr-explore[dask]")
    from _cluster import local_cluster

    with local_cluster(cwd=places["cwd"], scratch=places["scratch"]) as c:
        yield c


def _untimed(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in TIMED}


@pytest.mark.jpegtran
def test_the_audit_on_dask_is_the_local_audit(
    client: Any,
    folder: Path,
    places: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = (_files(folder), _files(places["cwd"]))
    local = audit(folder, sample=4, seed=2, workers=1, progress=False)
    on_dask = audit(folder, sample=4, seed=2, client=client)
    assert _untimed(on_dask.to_dict()) == _untimed(local.to_dict())
    # the planted problems are among what both found
    kinds = {(p["file"], p["type"]) for p in local.problems}
    assert {
        ("scenes/rocket_copy.jpg", "exact_duplicate"),
        ("cats/coffee_small.jpg", "near_duplicate"),
        ("cats/torn.jpg", "bad_file"),
    } <= kinds
    assert local.images == 12 and local.readable == 11 and local.tune is not None
    # the bars advanced over every file and every sampled image
    err = capsys.readouterr().err
    assert "audit: files: 100%" in err and "12/12" in err
    assert "audit: quality sample (10 levels each): 100%" in err and "4/4" in err
    # the workers wrote nothing in the source folder nor in the folder they run in
    assert (_files(folder), _files(places["cwd"])) == before
    assert places["scratch"].is_dir()  # their scratch space is where they were told


@pytest.mark.jpegtran
def test_a_dataset_audit_on_dask_reads_records_on_the_workers(
    client: Any, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    for p in folder.rglob("*.jpg"):
        if p.name != "torn.jpg":
            (src / p.parent.name).mkdir(parents=True, exist_ok=True)
            (src / p.parent.name / p.name).write_bytes(p.read_bytes())
    encode_dataset(src, tmp_path / "pcr", workers=1, progress=False, record_size=30_000)
    monkeypatch.chdir(tmp_path)  # a relative path: the workers run in another folder
    from distributed import get_task_stream

    local = audit("pcr", sample=3, workers=1, progress=False)
    with get_task_stream(client) as stream:
        on_dask = audit("pcr", sample=3, client=client, progress=False)
    # one task per sampled image, then one per record: the workers read the records
    records = len(open_dataset(str(tmp_path / "pcr")).records)
    tasks = [t["key"] for t in stream.data if str(t["key"]).startswith("pcr-audit-")]
    assert records >= 2 and len(tasks) == 3 + records
    assert _untimed(on_dask.to_dict()) == _untimed(local.to_dict())
    assert local.kind == "pcr" and local.images == 11
    # one of the two rockets (which one comes second depends on the encoded order)
    dup = [p["file"] for p in local.problems if p["type"] == "exact_duplicate"]
    assert dup in (["scenes/rocket.jpg"], ["scenes/rocket_copy.jpg"])


def test_the_quality_curve_on_dask_is_the_local_one(client: Any, folder: Path) -> None:
    local = quality_curve(folder, sample=4, seed=1, workers=1, progress=False)
    on_dask = quality_curve(folder, sample=4, seed=1, client=client, progress=False)
    assert on_dask.to_dict() == local.to_dict()
    np.testing.assert_array_equal(on_dask.per_image.indices, local.per_image.indices)
    for m in local.per_image.metrics:
        np.testing.assert_array_equal(on_dask.per_image.metrics[m], local.per_image.metrics[m])
    np.testing.assert_array_equal(on_dask.per_image.bytes, local.per_image.bytes)
    assert on_dask.failed == local.failed and local.sample_size == 4


def test_the_budget_measures_its_quality_on_dask(client: Any, folder: Path, tmp_path: Path) -> None:
    flat = tmp_path / "flat"  # no classes: no gradients, only the quality part is measured
    flat.mkdir()
    for p in (folder / "scenes").glob("*.jpg"):
        (flat / p.name).write_bytes(p.read_bytes())
    decode = measure_decode(flat, indices=[0, 1], size=32, repeats=1)
    kw: dict[str, Any] = {"sample": 4, "size": 32, "decode": decode, "progress": False}
    local = budget(flat, workers=1, **kw)
    on_dask = budget(flat, workers=1, client=client, **kw)
    assert on_dask.to_dict() == local.to_dict()
    assert local.choices["quality"] is not None and len(local.levels) == 10


@pytest.mark.jpegtran
def test_cli_audits_and_tunes_on_a_running_scheduler(
    client: Any, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", str(folder), "--sample", "3", "--json", "-", "--quiet"]
    assert main([*argv, "--workers", "1"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*argv, "--scheduler", client.scheduler.address]) == 0
    assert _untimed(json.loads(capsys.readouterr().out)) == _untimed(local)
    argv = ["tune", str(folder), "--sample", "3", "--json", "--quiet"]
    assert main([*argv, "--workers", "1"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*argv, "--scheduler", client.scheduler.address]) == 0
    assert json.loads(capsys.readouterr().out) == local


def test_results_come_back_in_order(client: Any) -> None:
    # the first items take longest: the results still come in input order
    assert list(parallel_map(_slow_square, range(9, 3, -1), workers=1, client=client)) == [
        n * n for n in range(9, 3, -1)
    ]
    with pytest.raises(ValueError, match="no square of 3"):
        list(parallel_map(_slow_square, [1, 2, 3, 4], workers=1, client=client))


def _slow_square(n: int) -> int:
    import time

    if n == 3:
        raise ValueError("no square of 3")
    time.sleep(0.01 * n)  # uneven task lengths, not a timing assertion
    return n * n


def test_a_client_that_is_not_one_is_refused_before_any_work(folder: Path) -> None:
    for call in (audit, quality_curve, budget):
        with pytest.raises(TypeError, match=r"dask\.distributed\.Client.*Client\(address\)"):
            call(folder, client="tcp://127.0.0.1:8786")


def test_a_task_whose_workers_keep_dying_is_a_worker_error(
    client: Any, folder: Path, tmp_path: Path
) -> None:
    # last in the module: it kills workers (the cluster restarts them)
    from distributed.diagnostics.plugin import WorkerPlugin

    stop = str(tmp_path / "stop-killing")

    class Killing(WorkerPlugin):
        name = "pcr-test-killing-audit"

        def setup(self, worker: Any) -> None:
            import os

            import pcr_explore.auditing._pass as audit_pass

            inspect = audit_pass.inspect_file

            def dying(job: Any) -> Any:
                if not os.path.exists(stop):
                    os._exit(1)
                return inspect(job)

            audit_pass.inspect_file = dying  # type: ignore[assignment]

    scheduler = client.cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    client.register_plugin(Killing())
    try:
        with pytest.raises(WorkerError, match=r"pcr-audit: every Dask worker that ran"):
            audit(folder, sample=2, client=client, progress=False)
    finally:
        Path(stop).touch()  # patched workers, and restarted ones, pass through from now on
        scheduler.allowed_failures = allowed
