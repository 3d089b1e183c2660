"""Notebook widgets (the explorers) and the kernel-free pages (scan_demo, swap_demo).

ScanExplorer, ScriptExplorer, ScanPanel, TunerDashboard, BudgetExplorer,
SwapExplorer and TrainingExplorer.
Each explorer is one anywidget: its state is in traitlets, its front end one
ES module of ``static/`` (drawing its own SVG charts), so it runs in
JupyterLab, Notebook 7, VS Code, Colab and marimo with no extension. It
holds no logic of its own beyond wiring its state to library calls, and
shows a static picture where widgets cannot run.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
