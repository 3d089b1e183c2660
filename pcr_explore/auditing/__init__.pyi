from ._audit import audit
from ._checks import CHECKS, ISSUE_TITLES, Check
from ._inspect import TINY_SIDE
from ._options import DEFAULT_TARGETS, MAX_QUALITY_PIXELS, AuditOptions
from ._properties import ANALYSIS_SIDE
from ._report import AuditReport

__all__ = [
    "AuditOptions",
    "ANALYSIS_SIDE",
    "CHECKS",
    "DEFAULT_TARGETS",
    "ISSUE_TITLES",
    "MAX_QUALITY_PIXELS",
    "TINY_SIDE",
    "AuditReport",
    "Check",
    "audit",
]
