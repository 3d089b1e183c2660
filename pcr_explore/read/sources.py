"""One interface over the three things a user points the tool at.

A PCR dataset, a folder of images, or a single image file all look like a
:class:`LevelSource`: ``len()``, ``names``, ``labels``, ``classes``,
``num_scans``, ``jpeg_bytes(i, scan)`` and ``level_bytes(i)``. Folders and
files are transcoded in memory on first use (nothing is written), so quality,
tuning, audits and widgets work the same on all three.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from cachetools import LRUCache

from .._checks import check_scan
from .._public import public
from ..encode.discover import find_sources
from ..errors import PCRError, no_such_path
from ..jpeg import Size
from ..jpeg._orient import decode_upright
from ..jpeg.scan_script import STANDARD, ScanScript, resolve_scan_script
from ..jpeg.transcode import IMAGE_SUFFIXES, Backend, TranscodeResult, transcode
from ..records.manifest import MANIFEST
from . import pipeline
from .pipeline import ErrorChoice, OnError
from .reader import PCRDataset, open_dataset

__all__ = [
    "LevelSource",
    "FolderSource",
    "open_source",
    "gray_scans_at",
    "scan_script_of",
    "orientation_of",
    "source_name",
]


@public("pcr_explore")
@runtime_checkable
class LevelSource(Protocol):
    """Anything with images available at every scan level."""

    num_scans: int
    classes: list[str]

    def __len__(self) -> int: ...

    @property
    def names(self) -> list[str]:
        """Image names (paths relative to the source), in index order."""
        ...

    @property
    def labels(self) -> np.ndarray:
        """Integer class label per image (-1: none)."""
        ...

    def jpeg_bytes(self, i: int, scan: int | None = None) -> bytes:
        """Image *i* as a JPEG file at level *scan* (``None``: full)."""
        ...

    def level_bytes(self, i: int) -> np.ndarray:
        """Cumulative bytes of image *i* at levels 1..num_scans."""
        ...


def gray_scans_at(level: int, script: ScanScript = STANDARD) -> int:
    """How many of a grayscale image's scans colour level *level* of *script* holds."""
    return script.gray_scans_at(level)


def orientation_of(src: object, i: int) -> int:
    """EXIF orientation (1-8) image *i* of *src* is stored with (1 for sources that have none)."""
    fn = getattr(src, "orientation", None)
    return int(fn(i)) if callable(fn) else 1


def source_name(src: object) -> str:
    """What messages call *src*: its path, root or URL (its repr for sources that have none)."""
    for attr in ("path", "root", "url"):
        value = getattr(src, attr, None)
        if isinstance(value, (str, os.PathLike)):
            return os.fspath(value)
    return repr(src)


def scan_script_of(src: object) -> ScanScript:
    """The scan script of a source (one without a ``scan_script``: the standard one)."""
    script = getattr(src, "scan_script", None)
    return script if isinstance(script, ScanScript) else STANDARD


@public("pcr_explore")
class FolderSource:
    """A folder of images (or one image file), transcoded in memory on demand.

    Parameters
    ----------
    path : path
        A folder (searched recursively; class sub-folders give labels) or a
        single image file.
    backend, quality, scan_script
        As for :func:`pcr_explore.jpeg.transcode.transcode`; the scan script sets
        the levels (default: the standard script's 10).
    cache_size : int
        Transcoded images kept in memory (least recently used dropped).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        backend: Backend = "auto",
        quality: int = 90,
        cache_size: int = 64,
        scan_script: str | os.PathLike[str] | ScanScript | None = None,
    ) -> None:
        self.scan_script = resolve_scan_script(scan_script)
        self.num_scans = self.scan_script.num_levels
        p = Path(path)
        if p.is_file():
            if p.suffix.lower() not in IMAGE_SUFFIXES:
                raise ValueError(f"{p}: not an image file ({', '.join(sorted(IMAGE_SUFFIXES))})")
            self.root = p.parent
            self._names = [p.name]
            self._labels = np.array([-1], np.int32)
            self.classes: list[str] = []
        else:
            items, classes = find_sources(p)
            self.root = p
            self._names = [it.name for it in items]
            index = {c: i for i, c in enumerate(classes)}
            self._labels = np.array(
                [index[it.label] if it.label is not None else -1 for it in items], np.int32
            )
            self.classes = classes
        self.url = str(path)
        self.backend: Backend = backend
        self.quality = quality
        self._cache: LRUCache[int, TranscodeResult] = LRUCache(maxsize=max(1, cache_size))

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"<FolderSource {self.url!r}: {len(self)} images>"

    @property
    def names(self) -> list[str]:
        """Image names (paths relative to the folder), sorted."""
        return list(self._names)

    @property
    def labels(self) -> np.ndarray:
        """Integer class label per image (-1: none)."""
        return self._labels.copy()

    def path(self, i: int) -> Path:
        """The source file of image *i*."""
        return self.root / self._names[i]

    def transcoded(self, i: int) -> TranscodeResult:
        """Image *i* transcoded to a progressive JPEG in the source's scan script (cached).

        Raises
        ------
        SourceImageError, JPEGError
            If the file cannot be read or transcoded; the message names it.
        """
        if not -len(self) <= i < len(self):
            raise IndexError(f"image index {i} out of range for {len(self)} images")
        i %= len(self)
        hit = self._cache.get(i)
        if hit is not None:
            return hit
        res = transcode(
            self.path(i),
            backend=self.backend,
            quality=self.quality,
            name=self._names[i],
            scan_script=self.scan_script,
        )
        self._cache[i] = res
        return res

    def _check_scan(self, scan: int | None) -> int:
        """*scan* checked (None: full quality), as every scan level is checked."""
        return check_scan(scan, self.num_scans, where=self.url, full=True)

    def _scans_at(self, i: int, scan: int | None) -> int:
        k = self._check_scan(scan)  # before the transcode
        pj = self.transcoded(i).jpeg
        if scan is None:
            return pj.num_scans
        return self.scan_script.gray_scans_at(k) if pj.num_components == 1 else k

    def orientation(self, i: int) -> int:
        """EXIF orientation (1-8) the image is stored with; the decoders turn it upright."""
        return self.transcoded(i).orientation

    def jpeg_bytes(self, i: int, scan: int | None = None) -> bytes:
        """Image *i* at colour level *scan* (grayscale images mapped), as JPEG bytes."""
        return self.transcoded(i).jpeg.level(self._scans_at(i, scan))

    def level_bytes(self, i: int) -> np.ndarray:
        """Bytes of image *i*'s JPEG at levels 1..num_scans (EOI included)."""
        pj = self.transcoded(i).jpeg
        ends = np.asarray(pj.scan_ends, dtype=np.int64) + 2
        if pj.num_components == 1:
            gray = self.scan_script.gray_scans_at
            return ends[[gray(k) - 1 for k in range(1, self.num_scans + 1)]]
        return ends

    def image(self, i: int, scan: int | None = None, *, size: Size | None = None) -> np.ndarray:
        """Image *i* decoded at level *scan*, as for :meth:`PCRDataset.image`."""
        o = self.transcoded(i).orientation
        return decode_upright(
            self.jpeg_bytes(i, scan), size, o, source=f"{self.path(i)} (level {scan})"
        )

    def iter(
        self,
        scan: int | None = None,
        *,
        size: Size | None = None,
        shuffle: bool = False,
        seed: int | None = None,
        mode: str | None = None,
        workers: int = 1,
        on_error: ErrorChoice | OnError = "raise",
    ) -> Iterator[tuple[np.ndarray, int]]:
        """Yield ``(image, label)`` for every image at level *scan*, as :meth:`PCRDataset.iter`.

        Each image is transcoded in memory on first use; for repeated passes
        over many images, encode the folder once with :func:`encode_dataset`.
        A source that cannot be transcoded, or a level that does not decode,
        does what *on_error* says.
        """
        self._check_scan(scan)  # at the call, not at the first image
        errors = OnError.of(on_error)
        rng = np.random.default_rng(seed) if shuffle else None
        items = self._encoded(pipeline.record_order(len(self), rng), scan, errors)
        # built here, so that it decodes with the decoder in force at this call
        decoded = pipeline.decode(items, size=size, mode=mode, workers=workers, on_error=errors)
        return errors.reported(decoded)

    def _encoded(
        self, order: list[int], scan: int | None, errors: OnError
    ) -> Iterator[pipeline.Encoded]:
        """The transcode stage: each image's JPEG at *scan*, in *order*."""
        for i in order:
            where = str(self.path(i))
            try:
                data, o = self.jpeg_bytes(i, scan), self.transcoded(i).orientation
            except PCRError as exc:
                errors.handle(where, exc)
                continue
            yield pipeline.Encoded(i, data, int(self._labels[i]), o, where)

    def bytes_per_scan(self) -> list[int]:
        """Total bytes of every image's JPEG at levels 1..num_scans (transcodes them all)."""
        total = np.zeros(self.num_scans, np.int64)
        for i in range(len(self)):
            total += self.level_bytes(i)
        return [int(v) for v in total]

    def bytes_at(self, scan: int | None) -> int:
        """Bytes of every image's JPEG at level *scan* (None: full), as for a dataset.

        A folder has no record headers, so this is the images' bytes only.
        """
        return self.bytes_per_scan()[self._check_scan(scan) - 1]


@public("pcr_explore")
def open_source(source: str | os.PathLike[str] | LevelSource, **kwargs: object) -> LevelSource:
    """Open a PCR dataset, a folder of images or an image file as a LevelSource.

    Parameters
    ----------
    source : path, URL or LevelSource
        A folder with ``manifest.json`` or a URL opens as a
        :class:`~pcr_explore.read.reader.PCRDataset`; another folder or an image
        file as a :class:`FolderSource`; a LevelSource is returned as is.
    **kwargs
        Passed to :class:`FolderSource` (``backend``, ``quality``, ``scan_script``).

    Raises
    ------
    DatasetError
        If a folder holds no images.
    FileNotFoundError
        If the path does not exist.

    Examples
    --------
    >>> src = open_source("photos/")
    >>> len(src.jpeg_bytes(0, scan=1)) < len(src.jpeg_bytes(0))
    True
    """
    if isinstance(source, (PCRDataset, FolderSource)):
        return source
    if not isinstance(source, (str, os.PathLike)) and isinstance(source, LevelSource):
        return source
    s = os.fspath(source)  # type: ignore[arg-type]
    if "://" in s:
        return open_dataset(s)
    p = Path(s)
    if not p.exists():
        raise no_such_path(p)
    if p.is_dir() and (p / MANIFEST).exists():
        return open_dataset(s)
    return FolderSource(p, **kwargs)  # type: ignore[arg-type]
