from ._cache import VIEW_MODES, LevelCache
from ._levels import level_note, level_strip, scan_content
from ._views import (
    difference_map,
    difference_scale,
    display_jpeg,
    encode_jpeg,
    jpeg_size,
    split_view,
    worst_detail,
    worst_window,
    zoom_crop,
)

__all__ = [
    "VIEW_MODES",
    "LevelCache",
    "difference_map",
    "difference_scale",
    "display_jpeg",
    "encode_jpeg",
    "jpeg_size",
    "level_note",
    "level_strip",
    "scan_content",
    "split_view",
    "worst_detail",
    "worst_window",
    "zoom_crop",
]
