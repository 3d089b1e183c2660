from ._findings import BudgetLevel, format_bandwidth
from .budget import BudgetOptions, budget
from .decode import DecodeCost, measure_decode
from .report import BudgetReport

__all__ = [
    "budget",
    "BudgetOptions",
    "BudgetReport",
    "BudgetLevel",
    "DecodeCost",
    "measure_decode",
    "format_bandwidth",
]
