from .budget_explorer import BudgetExplorer
from ._scan_panel import ScanPanel
from .scan_explorer import ScanExplorer
from .script_explorer import ScriptExplorer
from .swap_explorer import SwapExplorer
from .training_explorer import TrainingExplorer
from .tuner_dashboard import TunerDashboard

__all__ = [
    "BudgetExplorer",
    "ScanExplorer",
    "ScanPanel",
    "ScriptExplorer",
    "SwapExplorer",
    "TrainingExplorer",
    "TunerDashboard",
]
