"""Notebook widgets: ScanExplorer, ScriptExplorer, TunerDashboard, SwapExplorer, TrainingExplorer.

Each is ipywidgets 8 plus Bokeh 3 (through ``jupyter_bokeh.BokehModel``),
holds no logic of its own beyond wiring controls to library calls, and shows
a static picture where widgets cannot run.
"""

from __future__ import annotations

from .scan_explorer import ScanExplorer
from .script_explorer import ScriptExplorer
from .swap_explorer import SwapExplorer
from .training_explorer import TrainingExplorer
from .tuner_dashboard import TunerDashboard

__all__ = [
    "ScanExplorer",
    "ScriptExplorer",
    "SwapExplorer",
    "TrainingExplorer",
    "TunerDashboard",
]
