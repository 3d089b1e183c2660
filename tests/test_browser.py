"""A real browser: JupyterLab in Chromium runs notebook 01 and the level slider works.

Starts JupyterLab on a free loopback port with a random token and private
config/runtime directories, opens ``notebooks/01_progressive_scans.ipynb``
in Debian's ``chromium`` through Playwright, runs every cell, moves the
level slider with the keyboard, and checks that the image element's content
changed and that Bokeh drew its plot. Screenshots go to ``test-artifacts/``;
browser console messages are printed (shown by pytest on failure).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
NOTEBOOK = "notebooks/01_progressive_scans.ipynb"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.browser


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on the repository; yields its base URL with the token."""
    tmp = tmp_path_factory.mktemp("lab")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        PCR_QUICK="1",
        PCR_SAMPLE_DIR=str(tmp / "sample"),
    )
    env.pop("PCR_OWN_DATA", None)
    # Answer "fetch Jupyter news?" in advance: no pop-up over the screenshots.
    settings = tmp / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # Serve a copy: JupyterLab autosaves run notebooks, which must not write
    # outputs into the repository's (stripped) notebooks.
    served = tmp / "root"
    shutil.copytree(ROOT / "notebooks", served / "notebooks")
    log = (tmp / "lab.log").open("w")
    # Nothing reaches outside the loopback: no extension manager, no update check.
    args = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={served}", "--LabApp.expose_app_in_browser=True",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    proc = subprocess.Popen(
        args,
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=served,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"JupyterLab did not start:\n{(tmp / 'lab.log').read_text()}")
                time.sleep(0.5)
        # one workspace per page, reset: a page never restores another's open tabs
        yield f"{base}/lab/workspaces/{{workspace}}/tree/{{notebook}}?token={token}&reset"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        print(f"--- JupyterLab log ---\n{(tmp / 'lab.log').read_text()[-4000:]}")


_KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === "idle";
}"""

_ALL_CELLS_RAN = """() => {
  const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""

_IMAGE_DIGEST = """async (img) => {
  const buf = await (await fetch(img.src)).arrayBuffer();
  const bytes = new Uint8Array(buf);
  let h = 0;
  for (const b of bytes) { h = (h * 31 + b) >>> 0; }
  return img.src + " " + bytes.length + " " + h;
}"""


def test_notebook_01_in_chromium(lab: str) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium binary (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    console: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        try:
            page.on("console", lambda m: console.append(f"[{m.type}] {m.text}"))
            page.on("pageerror", lambda e: console.append(f"[pageerror] {e}"))
            page.goto(lab.format(workspace="w01", notebook=NOTEBOOK), wait_until="domcontentloaded")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function(_KERNEL_IDLE, timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function(_ALL_CELLS_RAN, timeout=180_000, polling=500)
            page.wait_for_function(_KERNEL_IDLE, timeout=60_000)

            image = page.locator(".widget-image").first
            image.wait_for(state="visible", timeout=30_000)
            image.scroll_into_view_if_needed()
            # Bokeh renders into shadow DOM; Playwright's CSS engine pierces it.
            canvas = page.locator(".bk-Canvas canvas").first
            canvas.wait_for(state="attached", timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "01_before.png"), full_page=True)

            before = image.evaluate(_IMAGE_DIGEST)
            readout = page.locator(".widget-html", has_text="bytes at this level").first
            readout_before = readout.inner_text()
            slider = page.locator(".widget-slider", has_text="scan level").first
            handle = slider.locator(".noUi-handle").first
            handle.focus()
            for _ in range(3):
                handle.press("ArrowRight")
            page.wait_for_function(
                "([img, old]) => img.src.split(' ')[0] !== old.split(' ')[0]",
                arg=[image.element_handle(), before],
                timeout=15_000,
            )
            after = image.evaluate(_IMAGE_DIGEST)
            # the readout follows the image in the same update; wait for it, not a fixed time
            page.wait_for_function(
                "([el, old]) => el.innerText !== old",
                arg=[readout.element_handle(), readout_before],
                timeout=15_000,
            )
            image.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "01_after.png"), full_page=True)
            page.locator(".jp-OutputArea-output", has=image).first.screenshot(
                path=str(ARTIFACTS / "01_widget.png")
            )

            assert after != before
            assert after.split()[1] != before.split()[1]  # different byte length: new level
            assert "scan level" in readout.inner_text() and readout.inner_text() != readout_before
            box = canvas.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100
            drawn = canvas.evaluate(
                "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"
            )
            assert drawn > 1000, "the Bokeh canvas is blank"
        except BaseException:
            page.screenshot(path=str(ARTIFACTS / "01_failure.png"), full_page=True)
            raise
        finally:
            browser.close()
            print("--- browser console ---\n" + "\n".join(console))


_CANVAS_INK = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""


@pytest.mark.parametrize("name", ["02_tune_and_audit", "03_swap_simulation"])
def test_other_notebooks_draw_in_chromium(lab: str, name: str) -> None:
    """Notebooks 02 and 03 run in the browser without page errors and draw their plots."""
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium binary (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    console: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        try:
            page.on("console", lambda m: console.append(f"[{m.type}] {m.text}"))
            page.on("pageerror", lambda e: errors.append(str(e)))
            url = lab.format(workspace=f"w{name[:2]}", notebook=f"notebooks/{name}.ipynb")
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            page.wait_for_function(_KERNEL_IDLE, timeout=90_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function(_ALL_CELLS_RAN, timeout=180_000, polling=500)
            page.wait_for_function(_KERNEL_IDLE, timeout=60_000)
            canvases = page.locator(".bk-Canvas canvas")
            canvases.first.wait_for(state="attached", timeout=30_000)
            # Bokeh paints after attaching: wait until the first canvas has ink
            page.wait_for_function(
                f"c => ({_CANVAS_INK})(c) > 1000",
                arg=canvases.first.element_handle(),
                timeout=30_000,
            )
            first = page.locator(".jp-OutputArea-output", has=canvases.first).first
            first.scroll_into_view_if_needed()
            first.screenshot(path=str(ARTIFACTS / f"{name}_widget.png"))
            ink = [canvases.nth(i).evaluate(_CANVAS_INK) for i in range(min(canvases.count(), 4))]
            assert max(ink) > 1000, f"every Bokeh canvas is blank: {ink}"
            assert not page.locator(".jp-OutputArea-output[data-mime-type*='error']").count()
            assert not errors, errors
        except BaseException:
            page.screenshot(path=str(ARTIFACTS / f"{name}_failure.png"), full_page=True)
            raise
        finally:
            browser.close()
            print("--- browser console ---\n" + "\n".join(console))
