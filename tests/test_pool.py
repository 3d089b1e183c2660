"""Parallel work from plain scripts: the default encode needs no main guard; processes do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import pcr_explore as pcr
from pcr_explore import encode_dataset
s = encode_dataset({src!r}, {out!r}, workers=2, progress=False, record_size=20000{extra})
print("IMAGES", s.images)
"""


def test_unguarded_script_encodes_with_the_default_threads(
    photo_folder: Path, tmp_path: Path
) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(SCRIPT.format(src=str(photo_folder), out=str(tmp_path / "o"), extra=""))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "IMAGES 7" in r.stdout


def test_unguarded_script_with_processes_gets_a_clear_error(
    photo_folder: Path, tmp_path: Path
) -> None:
    script = tmp_path / "unguarded.py"
    extra = ", options=pcr.EncodeOptions(parallel='processes')"
    script.write_text(SCRIPT.format(src=str(photo_folder), out=str(tmp_path / "o"), extra=extra))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "WorkerError" in r.stderr and "if __name__ == '__main__':" in r.stderr


def test_script_on_stdin_runs_in_process(photo_folder: Path, tmp_path: Path) -> None:
    code = SCRIPT.format(
        src=str(photo_folder),
        out=str(tmp_path / "o"),
        extra=", options=pcr.EncodeOptions(parallel='processes')",
    )
    r = subprocess.run(
        [sys.executable, "-"], input=code, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "IMAGES 7" in r.stdout


def _proc_as(monkeypatch: pytest.MonkeyPatch, error: type[OSError], proc_self: bool) -> None:
    """``/proc/<pid>/stat`` raises *error*; ``/proc/self/stat`` exists or not."""
    from pcr_explore import _pool

    def refuse(path: str, *args: object, **kwargs: object) -> None:
        raise error(f"refused here: {path}")

    monkeypatch.setattr(_pool, "open", refuse, raising=False)
    monkeypatch.setattr(_pool.os.path, "exists", lambda p: proc_self and p == "/proc/self/stat")


@pytest.mark.parametrize(
    ("error", "proc_self"),
    [(FileNotFoundError, False), (PermissionError, True), (PermissionError, False)],
    ids=["no-proc", "unreadable-proc", "unreadable-empty-proc"],
)
def test_a_worker_without_a_readable_proc_asks_the_kernel(
    monkeypatch: pytest.MonkeyPatch, error: type[OSError], proc_self: bool
) -> None:
    """Without /proc (macOS), with an empty one or an unreadable one, a parent that runs
    is alive and one that has ended is not: the workers' watch on their parent holds."""
    from pcr_explore._pool import _alive

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # reaped: its pid names no process now
    _proc_as(monkeypatch, error, proc_self)
    assert _alive(os.getpid())
    assert not _alive(ended.pid)


def test_a_pid_missing_from_a_proc_that_lists_this_process_has_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pcr_explore._pool import _alive

    _proc_as(monkeypatch, FileNotFoundError, proc_self=True)
    assert not _alive(os.getpid())  # /proc is the authority where it lists this process
