from ._audit import audit
from ._checks import CHECKS, ISSUE_TITLES, Check
from ._options import DEFAULT_TARGETS, AuditOptions
from ._report import AuditReport

__all__ = [
    "audit",
    "AuditOptions",
    "AuditReport",
    "CHECKS",
    "ISSUE_TITLES",
    "Check",
    "DEFAULT_TARGETS",
]
