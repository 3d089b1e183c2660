"""Look at a scan level next to the full image: display copies, differences, zooms, notes.

The pieces an interactive viewer needs, as plain functions a Python user can
call too: a display-sized copy of a level's JPEG (the bytes themselves when
the image is small enough), an amplified difference map and its scale, the
window where a level differs most, a zoom crop that keeps pixel blocks
visible, what each scan adds in words, a strip of an image at several
levels, and :class:`LevelCache`, a per-image, per-level cache over any
:class:`~pcr_explore.sources.LevelSource`.

=====================  ===============================================
:mod:`._views`         display copies, difference maps, zoom crops
:mod:`._levels`        what a level adds, in words and pictures
:mod:`._cache`         ``LevelCache``
=====================  ===============================================
"""

from __future__ import annotations

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
