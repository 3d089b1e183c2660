from ._demo import DemoPage
from ._page import show
from ._scan_demo import scan_demo
from ._scan_panel import ScanPanel
from ._swap_demo import swap_demo
from .budget_explorer import BudgetExplorer
from .scan_explorer import ScanExplorer
from .script_explorer import ScriptExplorer
from .swap_explorer import SwapExplorer
from .training_explorer import TrainingExplorer
from .tuner_dashboard import TunerDashboard

__all__ = [
    "BudgetExplorer",
    "DemoPage",
    "ScanExplorer",
    "ScanPanel",
    "ScriptExplorer",
    "SwapExplorer",
    "TrainingExplorer",
    "TunerDashboard",
    "scan_demo",
    "show",
    "swap_demo",
]
