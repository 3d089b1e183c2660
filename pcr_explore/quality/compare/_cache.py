"""A per-image, per-level cache over any level source: what a viewer shows when a slider moves."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np
from cachetools import LRUCache

from ..._public import public
from ...jpeg import decode
from ...read.sources import LevelSource, orientation_of
from ._views import difference_map, display_jpeg, encode_jpeg, split_view, zoom_crop

VIEW_MODES: tuple[str, ...] = ("level", "side", "split", "diff")

__all__ = ["LevelCache", "VIEW_MODES"]

_V = TypeVar("_V")


def _cached(cache: LRUCache[Hashable, _V], key: Hashable, make: Callable[[], _V]) -> _V:
    """``cache[key]``, made by ``make()`` and kept on a miss (maxsize 0: never kept)."""
    if key in cache:
        return cache[key]  # a lookup marks it recently used
    value = make()
    if cache.maxsize > 0:
        cache[key] = value
    return value


@public("pcr_explore.quality.compare")
class LevelCache:
    """Cached per-level views of the images of a :class:`LevelSource`.

    Everything an explorer shows when a slider moves, computed once per
    (image, level) and kept in least-recently-used order: the level's JPEG
    bytes, a display copy no larger than *max_side*, its decoded pixels, the
    byte count of every level, and any per-image value such as a quality
    table (:meth:`per_image`).

    Parameters
    ----------
    source : LevelSource
        A PCR dataset, a folder or an image file (see
        :func:`~pcr_explore.read.sources.open_source`).
    max_side : int or None
        Longer side of display copies (None: full size).
    maxsize : int
        Entries kept per kind; 0 disables caching (every call recomputes),
        which is the baseline the widget benchmark compares against.

    Examples
    --------
    >>> from pcr_explore import open_source
    >>> cache = LevelCache(open_source("photos.pcr"))
    >>> cache.jpeg(0, 3) == cache.source.jpeg_bytes(0, 3)
    True
    """

    def __init__(
        self, source: LevelSource, *, max_side: int | None = 768, maxsize: int = 256
    ) -> None:
        self.source = source
        self.max_side = max_side
        self._jpeg: LRUCache[Hashable, bytes] = LRUCache(maxsize)
        self._display: LRUCache[Hashable, bytes] = LRUCache(maxsize)
        self._pixels: LRUCache[Hashable, np.ndarray] = LRUCache(maxsize)
        self._level_bytes: LRUCache[Hashable, np.ndarray] = LRUCache(maxsize)
        self._per_image: LRUCache[Hashable, Any] = LRUCache(maxsize)

    @property
    def num_scans(self) -> int:
        """Scan levels of the source."""
        return int(self.source.num_scans)

    def jpeg(self, i: int, scan: int | None = None) -> bytes:
        """Image *i* at level *scan* (None: all scans), as the source's JPEG bytes."""
        return _cached(self._jpeg, (i, scan), lambda: self.source.jpeg_bytes(i, scan))

    def display(self, i: int, scan: int | None = None) -> bytes:
        """The display copy of image *i* at level *scan* (see :func:`display_jpeg`)."""
        o = orientation_of(self.source, i)

        def make() -> bytes:
            return display_jpeg(self.jpeg(i, scan), self.max_side, orientation=o)

        return _cached(self._display, (i, scan), make)

    def pixels(self, i: int, scan: int | None = None) -> np.ndarray:
        """The display copy of image *i* at level *scan*, decoded (read-only array)."""

        def make() -> np.ndarray:
            arr = decode(self.display(i, scan))
            arr.flags.writeable = False
            return arr

        return _cached(self._pixels, (i, scan), make)

    def views(
        self,
        i: int,
        scan: int,
        *,
        mode: str = "level",
        zoom: float = 1.0,
        center: tuple[float, float] = (0.5, 0.5),
        gain: float = 4.0,
    ) -> tuple[bytes, bytes | None]:
        """The JPEG bytes of a level viewer's two pictures for image *i* at level *scan*.

        Parameters
        ----------
        i, scan : int
            Image index and level.
        mode : {"level", "side", "split", "diff"}
            The level alone; next to the full image; left of a line at
            ``center[0]`` with the full image right of it (:func:`split_view`);
            next to its amplified difference (:func:`difference_map`).
        zoom : float
            Magnification around *center* (:func:`zoom_crop`); 1 shows all.
        center : (float, float)
            Zoom centre (and split position) as fractions of width and height.
        gain : float
            Amplification of the difference map.

        Returns
        -------
        (bytes, bytes or None)
            The left picture and the right one (None in "level" and "split").
            Unzoomed "level" and "side" pictures are the display copies
            themselves (no re-encode).

        Raises
        ------
        ValueError
            For an unknown *mode*.
        """
        if mode not in VIEW_MODES:
            raise ValueError(f"mode must be one of {VIEW_MODES}, got {mode!r}")
        if zoom <= 1.0 and mode in ("level", "side"):
            return self.display(i, scan), (self.display(i, None) if mode == "side" else None)
        level, full = self.pixels(i, scan), self.pixels(i, None)

        def view(arr: np.ndarray) -> bytes:
            return encode_jpeg(zoom_crop(arr, center, zoom) if zoom > 1.0 else arr)

        if mode == "split":  # a zoom centres on the line
            return view(split_view(level, full, center[0])), None
        if mode == "diff":
            return view(level), view(difference_map(level, full, gain=gain))
        return view(level), (view(full) if mode == "side" else None)

    def level_bytes(self, i: int) -> np.ndarray:
        """Bytes of image *i* at levels 1..num_scans."""
        return _cached(self._level_bytes, i, lambda: np.asarray(self.source.level_bytes(i)))

    def per_image(self, key: Hashable, i: int, make: Callable[[], _V]) -> _V:
        """A cached per-image value: ``make()`` on the first call for (*key*, *i*).

        Parameters
        ----------
        key : hashable
            What the value is, e.g. ``"quality"``.
        i : int
            Image index.
        make : callable
            Computes the value.
        """
        return _cached(self._per_image, (key, i), make)

    def cached(self, key: Hashable, i: int) -> object | None:
        """The per-image value for (*key*, *i*) if it is cached, else None."""
        return self._per_image.get((key, i))

    def clear(self) -> None:
        """Drop every cached entry."""
        for lru in (self._jpeg, self._display, self._pixels, self._level_bytes, self._per_image):
            lru.clear()
