"""Every notebook runs top to bottom in a real kernel, with CI's small parameters.

A cell may run for as long as the test may take (``tests/_budget.py``): on a busy
machine a notebook runs longer, it does not fail. The kernel, and any worker it
started, ends with the test however the notebook went (``tests/_procs.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import _budget
import _procs
import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
WIDGET_NOTEBOOKS = {
    "00_how_progressive_jpeg_works",
    "01_progressive_scans",
    "02_tune_and_audit",
    "03_swap_simulation",
    "05_train_at_levels",
}

# Notebooks that keep their expensive measurements in a ResultsCache
CACHING_NOTEBOOKS = {
    "01_progressive_scans",
    "02_tune_and_audit",
    "05_train_at_levels",
    "06_swap_on_real_training",
}


def _is_progress_bar(text: str) -> bool:
    """Whether a widget's text form is a tqdm bar ("desc:  40%|####  | 4/10 [...]")."""
    return bool(re.search(r"\d+%\|.*\| *\d+/\d+", text))


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sample dataset for all notebooks, built by the first that runs."""
    return tmp_path_factory.mktemp("nb") / "sample"


def test_notebooks_are_found() -> None:
    names = [p.stem for p in PATHS]
    assert names == [
        "00_how_progressive_jpeg_works",
        "01_progressive_scans",
        "02_tune_and_audit",
        "03_swap_simulation",
        "04_read_pcr_for_training",
        "05_train_at_levels",
        "06_swap_on_real_training",
    ]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_is_committed_stripped_and_thin(path: Path) -> None:
    book = json.loads(path.read_text())
    cells = book["cells"]
    assert cells[0]["cell_type"] == "markdown"
    assert all(
        not c.get("outputs") and c.get("execution_count") is None
        for c in cells
        if c["cell_type"] == "code"
    )
    headings = [
        line
        for c in cells
        if c["cell_type"] == "markdown"
        for line in "".join(c["source"]).splitlines()
        if line.startswith("## ")
    ]
    assert headings[-1] == "## Try it on your own data"


WIDGET_MODULES = {"@jupyter-widgets/base", "@jupyter-widgets/controls", "@jupyter-widgets/output"}
WIDGET_MODULES |= {"anywidget"}


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path: Path, sample_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel inherits this process's environment.
    monkeypatch.setenv("PCR_QUICK", "1")
    monkeypatch.setenv("PCR_SAMPLE_DIR", str(sample_dir))
    results = sample_dir.parent / "results"  # a results cache shared by the notebooks
    monkeypatch.setenv("PCR_RESULTS_CACHE", str(results))
    for var in ("PCR_OWN_DATA", "PCR_TRACE", "PCR_FLOWERS_DIR"):
        monkeypatch.delenv(var, raising=False)
    book = nbformat.read(path, as_version=4)
    kernel = _procs.Started()
    client = NotebookClient(
        book,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        # every wait for the kernel lasts as long as the test may: a cell's run, the
        # kernel's start, the outputs that follow a cell's reply
        timeout_func=lambda cell: _budget.seconds_left(),
        startup_timeout=_budget.whole_seconds(),
        iopub_timeout=_budget.whole_seconds(),
        raise_on_iopub_timeout=True,  # a cell's outputs are all there, or the test fails
        on_notebook_start=lambda notebook: kernel.add(client.km.provisioner.pid),
    )
    kept = len(list(results.rglob("*.pickle")))
    try:
        client.execute()  # raises CellExecutionError, naming the cell, on any error
    finally:
        ended = kernel.end()  # the kernel is shut down: what of it still runs
        if ended:
            print(f"ended what the kernel left running: {ended}")
    if path.stem in CACHING_NOTEBOOKS:  # its measurements were kept for the next run
        assert len(list(results.rglob("*.pickle"))) > kept
    outputs = [o for c in book.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # Every widget displayed has a static picture for renderers without widgets: its own,
    # or in the output just before it (the explorers'). A finished progress bar leaves
    # its text, not a widget.
    widget_views = [
        k
        for k, o in enumerate(outputs)
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        and not _is_progress_bar(o["data"].get("text/plain", ""))
    ]
    assert all(
        "image/jpeg" in outputs[k]["data"]
        or k > 0
        and "data:image/jpeg;base64," in outputs[k - 1].get("data", {}).get("text/html", "")
        for k in widget_views
    )
    if path.stem in WIDGET_NOTEBOOKS:
        assert widget_views, f"{path.name} displayed no widget"
    # The widget state a saved notebook carries needs no front end but anywidget's and the
    # core widgets' (JupyterLab, Notebook 7, VS Code, Colab and marimo have both)
    state = book.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    modules = {m["model_module"] for m in state.get("state", {}).values()}
    assert modules <= WIDGET_MODULES, f"{path.name}: widget models from {sorted(modules)}"
    if path.stem in WIDGET_NOTEBOOKS:
        assert "anywidget" in modules
    # BokehJS once per notebook, Bokeh's core bundle (about 1.3 MB; its INLINE is about 4),
    # shared by the explorers and pcr_explore.widgets.show
    loaders = [o for o in outputs if "application/vnd.bokehjs_load.v0+json" in o.get("data", {})]
    assert len(loaders) <= 1, f"{path.name} carries BokehJS {len(loaders)} times"
    for o in loaders:
        assert len(o["data"]["application/vnd.bokehjs_load.v0+json"]) < 2_000_000
