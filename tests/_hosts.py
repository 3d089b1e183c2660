"""Notebook 7 and marimo servers for the browser tests, and what those tests share with them.

``tests/_lab.py`` starts JupyterLab; this module starts Jupyter Notebook 7
(``jupyter notebook``) and marimo (``marimo edit``) the same way: a free
loopback port, a random token, private config and runtime directories, nothing
fetched from outside the machine, and the server (with the kernels it started)
ended on exit. Also here: writing a notebook, asking the kernel behind a
Jupyter page for a value, and running axe-core (the copy bundled by
``axe-playwright-python``) on one element of a page. Every wait waits on a
condition, for as long as the test may take (``tests/_budget.py``).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _lab import _free_port, stop_server, wait_until_serving

__all__ = [
    "Marimo",
    "Notebook7",
    "axe_violations",
    "kernel_value",
    "marimo",
    "notebook7",
    "write_notebook",
]


def _root_flag() -> list[str]:
    return ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []


@dataclass
class Notebook7:
    """A running Jupyter Notebook 7: its base URL, token and served root."""

    base: str
    token: str
    root: Path
    log: Path

    def url(self, notebook: str) -> str:
        """The URL of the page showing *notebook* (a path under :attr:`root`)."""
        return f"{self.base}/notebooks/{notebook}?token={self.token}"


@contextmanager
def notebook7(tmp: Path, env_extra: dict[str, str]) -> Iterator[Notebook7]:
    """Start Jupyter Notebook 7 serving the empty folder ``tmp/root``; stop it on exit.

    The page exposes its application as ``window.jupyterapp`` (as JupyterLab
    does in ``tests/_lab.py``), so that the helpers waiting for the kernel work
    in both.
    """
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        **env_extra,
    )
    env.pop("PCR_OWN_DATA", None)
    env.pop("PCR_TRACE", None)
    # No news pop-up over the screenshots (Notebook 7 reads JupyterLab's settings).
    settings = tmp / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    served = tmp / "root"
    served.mkdir()
    log_path = tmp / "notebook.log"
    log = log_path.open("w")
    argv = [
        sys.executable, "-m", "jupyter", "notebook", "--no-browser",
        f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={served}",
        "--JupyterNotebookApp.expose_app_in_browser=True",
        # the JupyterLab extension loaded beside it: no extension manager, no update check
        "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        *_root_flag(),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=served)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, f"{base}/api/status?token={token}", log, log_path)
        yield Notebook7(base, token, served, log_path)
    finally:
        stop_server(proc)
        log.close()


@dataclass
class Marimo:
    """A running ``marimo edit`` server on one app file: its URL and log."""

    base: str
    app: Path
    log: Path

    @property
    def url(self) -> str:
        return f"{self.base}/"


@contextmanager
def marimo(
    tmp: Path, app: Path, env_extra: dict[str, str], *, args: Sequence[str] = ()
) -> Iterator[Marimo]:
    """Start ``marimo edit`` on the app file *app*, headless, on loopback; stop it on exit.

    Its user config is a private one under *tmp* (no completion as one types, no
    copilot); with no update check, the app's cells run when the page opens.
    """
    port = _free_port()
    config_home = tmp / "xdg-config"
    (config_home / "marimo").mkdir(parents=True)
    (config_home / "marimo" / "marimo.toml").write_text(
        '[runtime]\nauto_instantiate = true\non_cell_change = "autorun"\n'
        "[completion]\nactivate_on_typing = false\ncopilot = false\n"
    )
    env = dict(
        os.environ,
        XDG_CONFIG_HOME=str(config_home),
        XDG_STATE_HOME=str(tmp / "xdg-state"),
        XDG_CACHE_HOME=str(tmp / "xdg-cache"),
        MARIMO_SKIP_UPDATE_CHECK="1",
        **env_extra,
    )
    log_path = tmp / "marimo.log"
    log = log_path.open("w")
    argv = [
        sys.executable, "-m", "marimo", "edit", str(app), "--headless", "--no-token",
        "--host", "127.0.0.1", "--port", str(port), "--skip-update-check", "--no-sandbox",
        *args,
    ]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=app.parent)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, f"{base}/health", log, log_path)
        yield Marimo(base, app, log_path)
    finally:
        stop_server(proc)
        log.close()


def write_notebook(path: Path, sources: Sequence[str]) -> Path:
    """Write a notebook of code cells with *sources* (no outputs) to *path*."""
    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
        for s in sources
    ]
    nb = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1))
    return path


# The repr of *expression* in the kernel of the notebook shown (JupyterLab or Notebook 7),
# asked for as a user expression of an empty, silent request: no cell runs, no count moves.
_KERNEL_VALUE = """async expr => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const reply = await k.requestExecute(
    {code: '', silent: true, store_history: false, user_expressions: {v: expr}}).done;
  const v = reply.content.user_expressions.v;
  return v.status === 'ok' ? v.data['text/plain'] : 'error: ' + v.ename + ': ' + v.evalue;
}"""


def kernel_value(page: Any, expression: str) -> str:
    """The repr of *expression* in the kernel behind the Jupyter notebook page *page*."""
    return str(page.evaluate(_KERNEL_VALUE, expression))


def axe_script() -> Path:
    """The axe-core bundled with ``axe-playwright-python``."""
    import axe_playwright_python

    return Path(axe_playwright_python.__file__).parent / "axe.min.js"


def axe_violations(page: Any, element: Any) -> list[dict[str, Any]]:
    """axe-core's violations inside *element* (an element handle of *page*).

    Each is ``{id, impact, help, nodes}``, nodes being the offending elements' HTML
    (cut short). Fails when axe-core found no rule to check there.
    """
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_script()))
    found = element.evaluate(
        """async el => { const r = await axe.run(el, {resultTypes: ['violations']});
          return {passes: r.passes.length, violations: r.violations.map(v => ({id: v.id,
            impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.html.slice(0, 160))}))}; }"""
    )
    # a run that checked nothing (the element not found, or empty) finds nothing either
    assert found["passes"] > 0, f"axe-core checked nothing in {element}"
    return list(found["violations"])
