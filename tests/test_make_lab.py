"""``make lab`` answers JupyterLab's news question: no pop-up over the notebooks.

The Makefile writes a file of its own into the environment's JupyterLab
``settings/overrides.d``; JupyterLab, started on that settings folder with
no user settings at all, then serves ``fetchNews: "false"`` as the
notification plugin's default, which is what stops the pop-up asking to
fetch Jupyter's news (it covered notebook 01's readouts at 1280x720).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import _budget
import pytest
from _lab import ROOT, jupyterlab

PLUGIN = "@jupyterlab/apputils-extension:notification"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_turns_off_the_news_pop_up(tmp_path: Path) -> None:
    pytest.importorskip("jupyterlab")
    venv = tmp_path / "venv"
    target = venv / "share/jupyter/lab/settings/overrides.d/pcr-explore.json"
    # only the settings file: no venv, no install (make -n lab lists it among lab's steps)
    made = subprocess.run(
        ["make", "-s", "-C", str(ROOT), f"VENV={venv}", str(target)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(target.read_text()) == {PLUGIN: {"fetchNews": "false"}}
    steps = subprocess.run(
        ["make", "-n", "-C", str(ROOT), f"VENV={venv}", "lab"], capture_output=True, text=True
    ).stdout
    assert str(target) not in steps  # made already: lab depends on it, and it is up to date
    again = subprocess.run(
        ["make", "-n", "-C", str(ROOT), f"VENV={tmp_path / 'other'}", "lab"],
        capture_output=True,
        text=True,
    ).stdout
    assert "overrides.d/pcr-explore.json" in again  # a fresh environment gets it with lab

    settings = f"--LabApp.app_settings_dir={target.parent.parent}"
    with jupyterlab(tmp_path / "lab", {}, args=[settings], news_answered=False) as lab:
        url = f"{lab.base}/lab/api/settings/{PLUGIN}?token={lab.token}"
        with urllib.request.urlopen(url, timeout=_budget.seconds_left()) as r:
            served = json.loads(r.read())
    assert served["schema"]["properties"]["fetchNews"]["default"] == "false"
    assert "fetchNews" not in json.loads(served["raw"] or "{}")  # no user answered it
