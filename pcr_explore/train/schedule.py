"""The scan-level curriculum, where trainers look for it.

:class:`ScanSchedule` is defined with the readers (``pcr_explore.read.schedule``),
because the PyTorch adapter switches levels by it too; training takes it
from here.
"""

from ..read.schedule import ScanSchedule

__all__ = ["ScanSchedule"]
