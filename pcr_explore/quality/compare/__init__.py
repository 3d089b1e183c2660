"""Look at a scan level next to the full image: display copies, differences, zooms, notes.

The pieces an interactive viewer needs, as plain functions a Python user can
call too: a display-sized copy of a level's JPEG (the bytes themselves when
the image is small enough), an amplified difference map and its scale, the
window where a level differs most, a zoom crop that keeps pixel blocks
visible, what each scan adds in words, a strip of an image at several
levels, and :class:`LevelCache`, a per-image, per-level cache over any
:class:`~pcr_explore.read.sources.LevelSource`.

=====================  ===============================================
:mod:`._views`         display copies, difference maps, zoom crops
:mod:`._levels`        what a level adds, in words and pictures
:mod:`._cache`         ``LevelCache``
=====================  ===============================================
"""

from ..._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
