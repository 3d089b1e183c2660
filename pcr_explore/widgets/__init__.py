"""Notebook widgets: ScanExplorer, ScriptExplorer, TunerDashboard, SwapExplorer, TrainingExplorer.

Each is ipywidgets 8 plus Bokeh 3 (through ``jupyter_bokeh.BokehModel``),
holds no logic of its own beyond wiring controls to library calls, and shows
a static picture where widgets cannot run.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
