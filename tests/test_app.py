"""The notebooks as an app without code (``make app``): Voila serves notebook 01 to Chromium.

Voila runs on a free loopback port over a copy of ``notebooks/`` and
executes notebook 01 on its own kernel, as ``make app`` does for a class.
In Chromium, every request that would leave the machine is aborted (the
page still asks a CDN for Font Awesome, whose icons ipywidgets bundles
anyway): the explorer's picture and its Bokeh plot render, no cell shows an
error, and a key on the level slider goes through the kernel and back
(the byte counter follows). Screenshots at 1440x900 and 1280x720 go to
``test-artifacts/``. Skipped where Voila (the ``[app]`` extra) is missing.
Every wait waits on a condition, for as long as the test may take
(``tests/_budget.py``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import _budget
import pytest
from _lab import (
    ALL_CANVASES,
    ARTIFACTS,
    CANVAS_INK,
    ROOT,
    TWO_FRAMES,
    _free_port,
    caption_text,
    new_page,
    stop_server,
    wait_caption,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "01_progressive_scans.ipynb"


@pytest.fixture(scope="module")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("voila", reason="the [app] extra (pip install pcr-explore[app])")
    tmp = tmp_path_factory.mktemp("app")
    shutil.copytree(ROOT / "notebooks", tmp / "notebooks")
    port = _free_port()
    env = dict(
        os.environ,
        PCR_QUICK="1",
        PCR_SAMPLE_DIR=str(tmp / "sample"),
        PCR_RESULTS_CACHE=str(tmp / "results"),  # the test's own, not the user's
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
    )
    env.pop("PCR_OWN_DATA", None)
    log_path = tmp / "voila.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "voila",
            "notebooks",
            f"--port={port}",
            "--no-browser",
            "--Voila.ip=127.0.0.1",
            "--ServerApp.port_retries=0",
            "--show_tracebacks=True",
        ],  # fmt: skip
        cwd=tmp,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        while True:  # until the port takes connections, while Voila runs and the test has time
            try:
                socket.create_connection(
                    ("127.0.0.1", port), timeout=_budget.seconds_left()
                ).close()
                break
            except OSError as exc:
                if proc.poll() is not None or _budget.out_of_time():
                    log.flush()
                    raise RuntimeError(f"Voila did not start:\n{log_path.read_text()}") from exc
                time.sleep(0.5)  # polling the server's port
        yield f"http://127.0.0.1:{port}/voila/render/{NOTEBOOK}"
    finally:
        stop_server(proc)
        log.close()
        print(f"--- Voila log ---\n{log_path.read_text()[-3000:]}")


def _local_only(route: Any) -> None:
    if route.request.url.startswith("http://127.0.0.1"):
        route.continue_()
    else:
        route.abort()


@pytest.mark.timeout(900)  # Voila's first run builds the sample: minutes on a busy machine
@pytest.mark.parametrize(
    "viewport", [{"width": 1440, "height": 900}, {"width": 1280, "height": 720}], ids=str
)
def test_notebook_01_runs_as_an_app(browser: Any, voila: str, viewport: dict[str, int]) -> None:
    page = new_page(browser, viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", _local_only)
    try:
        # Voila sends the page as it executes the cells (the first run builds the sample).
        page.goto(voila, wait_until="commit", timeout=_budget.ms())
        page.wait_for_selector("img.widget-image:visible", timeout=_budget.ms())
        page.wait_for_function(
            f"() => ({ALL_CANVASES})().filter(c => c.width > 0 && ({CANVAS_INK})(c) > 1000)"
            ".length >= 1",
            timeout=_budget.ms(),
            polling=500,
        )
        assert page.locator(".jp-CodeCell .jp-InputArea").count() == 0  # no code shown
        assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
        assert "Traceback" not in page.inner_text("body")

        slider = page.locator(".widget-slider").first
        before = caption_text(page)
        level = int(slider.locator(".widget-readout").inner_text())
        slider.evaluate("el => el.closest('.widget-box').scrollIntoView({block: 'start'})")
        slider.locator(".noUi-handle").first.focus()
        page.keyboard.press("ArrowLeft" if level > 1 else "ArrowRight")
        want = level - 1 if level > 1 else level + 1
        wait_caption(page, f"scan {want} of 10")  # in the page
        assert caption_text(page) != before
        page.evaluate(TWO_FRAMES)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(
            path=str(ARTIFACTS / f"app_01_{viewport['width']}x{viewport['height']}.png")
        )
        assert errors == []
    finally:
        page.close()
