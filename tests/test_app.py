"""The notebooks as an app without code (``make app``): marimo serves notebook 01 to Chromium.

``make app-files`` converts the notebooks into marimo apps (as ``make app``
does before ``marimo run``); marimo runs notebook 01's app on a free
loopback port, Voila (``make app-voila``) the notebook itself. In Chromium,
every request that would leave the machine is aborted: the explorer's
picture and its curve draw, no cell shows an error, the level the
explorer shows is the one the notebook's text and its readout below name
(scan 5), and a key on the level slider moves the byte counter in the page.
Screenshots at 1440x900 and 1280x720 go to ``test-artifacts/``. Skipped
where marimo or Voila (the ``[app]`` extra) is missing. Every wait waits on
a condition, for as long as the test may take (``tests/_budget.py``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _budget
import pytest
from _lab import (
    ARTIFACTS,
    ROOT,
    TWO_FRAMES,
    _free_port,
    caption_text,
    new_page,
    stop_server,
    wait_caption,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NOTEBOOK = "01_progressive_scans"


def _serve(argv: list[str], tmp: Path, name: str, url: str) -> Iterator[str]:
    """Run a server (*argv*, from *tmp*) on a free port until the test is done; yield *url*."""
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
    log_path = tmp / f"{name}.log"
    log = log_path.open("w")
    argv = [a.replace("{port}", str(port)) for a in argv]
    proc = subprocess.Popen(argv, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        while True:  # until the port takes connections, while the server runs and the test has time
            try:
                socket.create_connection(
                    ("127.0.0.1", port), timeout=_budget.seconds_left()
                ).close()
                break
            except OSError as exc:
                if proc.poll() is not None or _budget.out_of_time():
                    log.flush()
                    raise RuntimeError(f"{name} did not start:\n{log_path.read_text()}") from exc
                time.sleep(0.5)  # polling the server's port
        yield url.format(port=port)
    finally:
        stop_server(proc)
        log.close()
        print(f"--- {name} log ---\n{log_path.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def marimo_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("marimo", reason="the [app] extra (pip install pcr-explore[app])")
    if shutil.which("make") is None:
        pytest.skip("needs make")
    tmp = tmp_path_factory.mktemp("marimo")
    apps = tmp / "app"
    made = subprocess.run(
        ["make", "-s", "-C", str(ROOT), f"BIN={Path(sys.executable).parent}",
         f"APP_DIR={apps}", "app-files"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert sorted(p.stem for p in apps.glob("*.py")) == sorted(
        p.stem for p in (ROOT / "notebooks").glob("0*.ipynb")
    )
    argv = [sys.executable, "-m", "marimo", "run", str(apps / f"{NOTEBOOK}.py"), "--headless",
            "--host", "127.0.0.1", "--port", "{port}", "--no-token"]  # fmt: skip
    yield from _serve(argv, tmp, "marimo", "http://127.0.0.1:{port}")


@pytest.fixture(scope="module")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("voila", reason="the [app] extra (pip install pcr-explore[app])")
    tmp = tmp_path_factory.mktemp("voila")
    shutil.copytree(ROOT / "notebooks", tmp / "notebooks")
    argv = [
        sys.executable,
        "-m",
        "voila",
        "notebooks",
        "--port={port}",
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        "--show_tracebacks=True",
    ]
    url = "http://127.0.0.1:{port}/voila/render/" + f"{NOTEBOOK}.ipynb"
    yield from _serve(argv, tmp, "voila", url)  # fmt: skip


def _local_only(route: Any) -> None:
    if route.request.url.startswith("http://127.0.0.1"):
        route.continue_()
    else:
        route.abort()


def _runs_as_an_app(browser: Any, url: str, viewport: dict[str, int], name: str) -> None:
    page = new_page(browser, viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", _local_only)
    try:
        # the page comes as the cells run (the first run builds the sample)
        page.goto(url, wait_until="commit", timeout=_budget.ms())
        # (Playwright's locators look inside shadow roots, where marimo draws a widget)
        picture = page.locator(".pcr-scan .pcr-stage img").first
        picture.wait_for(state="visible", timeout=_budget.ms())
        points = page.locator(".pcr-scan circle.pcr-point")
        expect(points).to_have_count(10, timeout=_budget.ms())
        assert picture.evaluate("img => img.complete && img.naturalWidth > 0")
        body = page.inner_text("body")
        assert "Traceback" not in body
        assert "from pcr_explore" not in body  # no code shown
        # what the class sees agrees with itself: the explorer and the readout printed
        # under it both name scan 5, the level the notebook's text names
        wait_caption(page, "scan 5 of 10")
        readout = page.get_by_text("5 / 10").filter(has_not=page.locator(".pcr-scan"))
        expect(readout.first).to_be_attached(timeout=_budget.ms())
        assert page.get_by_text("5 / 10").count() >= 2  # the explorer's and the readout's
        slider = page.locator(".pcr-scan input[type=range][aria-valuetext]").first
        slider.scroll_into_view_if_needed()
        before = caption_text(page)
        slider.focus()
        page.keyboard.press("ArrowLeft")
        wait_caption(page, "scan 4 of 10")  # in the page
        assert caption_text(page) != before
        page.evaluate(TWO_FRAMES)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(
            path=str(ARTIFACTS / f"app_{name}_01_{viewport['width']}x{viewport['height']}.png")
        )
        assert errors == []
    finally:
        page.close()


VIEWPORTS = [{"width": 1440, "height": 900}, {"width": 1280, "height": 720}]


@pytest.mark.timeout(900)  # the first run builds the sample: minutes on a busy machine
@pytest.mark.parametrize("viewport", VIEWPORTS, ids=str)
def test_notebook_01_runs_as_a_marimo_app(
    browser: Any, marimo_app: str, viewport: dict[str, int]
) -> None:
    _runs_as_an_app(browser, marimo_app, viewport, "marimo")


@pytest.mark.timeout(900)
def test_notebook_01_runs_in_voila(browser: Any, voila: str) -> None:
    _runs_as_an_app(browser, voila, VIEWPORTS[1], "voila")
