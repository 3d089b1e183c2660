from ._cache import LevelCache
from ._levels import level_note, level_strip, scan_content
from ._views import difference_map

__all__ = [
    "LevelCache",
    "level_strip",
    "scan_content",
    "level_note",
    "difference_map",
]
