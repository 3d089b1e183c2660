"""Parallel work from plain scripts: the default encode needs no main guard; processes do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
