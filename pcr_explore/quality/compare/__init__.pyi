from ._cache import LevelCache
from ._levels import level_note, level_strip, scan_content
from ._record import record_sheet
from ._scans import ScanStep, image_coverage, scan_step
from ._views import difference_map

__all__ = [
    "LevelCache",
    "level_strip",
    "scan_content",
    "level_note",
    "difference_map",
    "ScanStep",
    "scan_step",
    "image_coverage",
    "record_sheet",
]
