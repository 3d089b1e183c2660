"""Each notebook's Run All and the app's first paint of notebook 01 (marimo, Voila), cold and warm.

Run All is executed headless (nbclient, one kernel per run) with the
notebook's default settings (``PCR_QUICK`` unset, the sample in
``data/sample``, built before any timing), twice over a results cache of its
own (``PCR_RESULTS_CACHE``, a fresh folder per notebook):

- **cold**: the cache is empty, every measurement runs;
- **warm**: the same cache, filled by the cold run, as a re-run, a kernel
  restart or a class's app finds it.

The comparison is within the run (warm / cold), so a busy machine weighs on
both; the load average before and after is printed with the table. Per-cell
times of the cold run name where a notebook's time goes.

The app (the ``[app]`` extra): marimo runs notebook 01 converted as
``make app`` does (``make app-files``), and Voila (``make app-voila``) the
notebook itself; Debian's Chromium, through Playwright (the browser tests'
helpers), opens it and the first paint is the time from the request until
the explorer's picture and its curve are drawn; cold over an empty results
cache, warm on a fresh session over the filled one. Skipped without marimo
or Voila, Playwright or Chromium.

Usage::

    python bench/bench_notebooks.py                    # every notebook and the app
    python bench/bench_notebooks.py --notebooks 01 02 06 --label busy

Prints a table and writes ``bench/results/notebooks[_LABEL].json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(HERE.parent / "tests"))


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_all(
    path: Path, timeout: int, keep: Path | None = None
) -> tuple[float, list[tuple[int, float, str]]]:
    """Execute *path* top to bottom on a fresh kernel: (seconds, per-cell seconds).

    With *keep*, the executed notebook (outputs included) is written there.
    """
    import nbformat
    from nbclient import NotebookClient

    book = nbformat.read(path, as_version=4)
    client = NotebookClient(
        book,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    cells: list[tuple[int, float, str]] = []
    start = time.perf_counter()
    with client.setup_kernel():
        for i, cell in enumerate(book.cells):
            if cell.cell_type != "code":
                continue
            t = time.perf_counter()
            client.execute_cell(cell, i)
            first = next((s for s in cell.source.splitlines() if s.strip()), "")
            cells.append((i, time.perf_counter() - t, first[:60]))
    seconds = time.perf_counter() - start
    if keep is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(book, keep)
    return seconds, cells


def bench_notebook(name: str, timeout: int) -> dict[str, Any]:
    """Cold and warm Run All of one notebook over its own results cache."""
    (path,) = NOTEBOOKS.glob(f"{name}*.ipynb")
    cache = Path(tempfile.mkdtemp(prefix="pcr-results-"))
    os.environ["PCR_RESULTS_CACHE"] = str(cache)  # the kernel inherits it
    try:
        # the cold run's outputs, to read what the default settings show
        cold, cells = run_all(path, timeout, HERE / "results" / "executed" / path.name)
        warm, warm_cells = run_all(path, timeout)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "notebook": path.stem,
        "cold_s": cold,
        "warm_s": warm,
        "cold_cells": cells,
        "warm_cells": warm_cells,
    }


def _wait_port(port: int, proc: subprocess.Popen[Any], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the app server did not start") from None
            time.sleep(0.5)  # polling the server's port


def _first_paint(browser: Any, url: str, timeout_s: int) -> float:
    """Seconds from the request until the explorer's picture and its curve are drawn."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.route(
        "**/*",
        lambda r: r.continue_() if r.request.url.startswith("http://127.0.0.1") else r.abort(),
    )
    try:
        start = time.perf_counter()
        page.goto(url, wait_until="commit", timeout=60_000)
        # locators look inside shadow roots (marimo draws each widget in one)
        picture = page.locator(".pcr-scan .pcr-stage img").first
        picture.wait_for(state="visible", timeout=timeout_s * 1000)
        page.locator(".pcr-scan circle.pcr-point").nth(9).wait_for(timeout=timeout_s * 1000)
        return time.perf_counter() - start
    finally:
        page.close()


def bench_app(kind: str, timeout: int) -> dict[str, Any] | None:
    """The first paint of notebook 01 as an app (``marimo`` or ``voila``), cold and warm.

    Cold: an empty results cache; warm: the next page load, its results cached.
    """
    try:
        __import__(kind)
        from _lab import CHROMIUM_ARGS, _free_port, chromium_path, stop_server
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        print(f"{kind} skipped: {exc}")
        return None
    chromium = chromium_path()
    if chromium is None:
        print(f"{kind} skipped: no chromium")
        return None
    tmp = Path(tempfile.mkdtemp(prefix=f"pcr-{kind}-"))
    port = _free_port()
    env = dict(os.environ, PCR_RESULTS_CACHE=str(tmp / "results"))
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    env["PCR_SAMPLE_DIR"] = str(ROOT / "data" / "sample")
    if kind == "marimo":  # what `make app` serves
        bin_dir = Path(sys.executable).parent
        subprocess.run(["make", "-s", "-C", str(ROOT), f"BIN={bin_dir}",
                        f"APP_DIR={tmp / 'app'}", "app-files"], check=True)  # fmt: skip
        argv = [sys.executable, "-m", "marimo", "run", str(tmp / "app" / "01_progressive_scans.py"),
                "--headless", "--host", "127.0.0.1", "--port", str(port), "--no-token"]  # fmt: skip
        url = f"http://127.0.0.1:{port}"
    else:
        argv = [sys.executable, "-m", "voila", str(NOTEBOOKS), f"--port={port}", "--no-browser"]
        argv += ["--Voila.ip=127.0.0.1", "--ServerApp.port_retries=0"]
        url = f"http://127.0.0.1:{port}/voila/render/01_progressive_scans.ipynb"
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, 90)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                cold = _first_paint(browser, url, timeout)
                warm = _first_paint(browser, url, timeout)
            finally:
                browser.close()
    finally:
        stop_server(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"notebook": f"01 in {kind} (first paint)", "cold_s": cold, "warm_s": warm}


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'notebook':<34} {'cold s':>8} {'warm s':>8} {'warm/cold':>10}"]
    for r in rows:
        ratio = r["warm_s"] / r["cold_s"]
        lines.append(f"{r['notebook']:<34} {r['cold_s']:>8.1f} {r['warm_s']:>8.1f} {ratio:>10.2f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notebooks", nargs="*", default=None, help="numbers, e.g. 01 06")
    ap.add_argument("--no-app", "--no-voila", action="store_true", help="no app first paint")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per cell or paint")
    ap.add_argument("--label", default="", help="suffix of the JSON file (e.g. the load)")
    args = ap.parse_args()
    for var in ("PCR_QUICK", "PCR_OWN_DATA", "PCR_TRACE", "PCR_SAMPLE_DIR"):
        os.environ.pop(var, None)
    names = args.notebooks or sorted(p.name[:2] for p in NOTEBOOKS.glob("[0-9]*.ipynb"))
    from pcr_explore import build_sample

    build_sample(ROOT / "data" / "sample", progress=False)  # not timed: made once per clone
    load_before = _load()
    rows = []
    for name in names:
        rows.append(bench_notebook(name, args.timeout))
        r = rows[-1]
        print(f"{r['notebook']}: cold {r['cold_s']:.1f} s, warm {r['warm_s']:.1f} s", flush=True)
        for i, sec, first in r["cold_cells"]:
            print(f"    cell {i:>2} {sec:7.1f} s  {first}", flush=True)
    if not args.no_app and "01" in names:
        for kind in ("marimo", "voila"):
            row = bench_app(kind, args.timeout)
            if row:
                rows.append(row)
    load_after = _load()
    print(f"\nmachine: {platform.node()}, {os.cpu_count()} cores; load average (1, 5, 15 min)")
    print(f"before {load_before}; after {load_after}\n")
    print(_table(rows))
    from pcr_explore._json import to_json

    out = HERE / "results" / f"notebooks{'_' + args.label if args.label else ''}.json"
    out.parent.mkdir(exist_ok=True)
    record = {"cores": os.cpu_count(), "load_before": load_before, "load_after": load_after}
    out.write_text(to_json({**record, "rows": rows}) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
