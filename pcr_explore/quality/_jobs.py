"""One image's measurement as a picklable job, and what a worker sends back.

A worker process gets an :class:`ImageJob` (never the source object, which
may hold open files) and returns an :class:`Outcome`; a broken image becomes
an outcome with an error instead of an exception, so one bad file never stops
a sample.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import FewerScalesWarning, JPEGError, PCRError
from ..jpeg import split_scans
from ..jpeg.scan_script import STANDARD, ScanScript
from ..jpeg.transcode import transcode
from ..read.reader import PCRDataset
from ..read.sources import FolderSource, LevelSource, scan_script_of
from ._levels import LevelQuality, custom_level_values, level_quality, source_levels
from .metrics import MetricFn

__all__ = ["ImageJob", "Outcome", "make_job", "measure"]


@dataclass(frozen=True)
class ImageJob:
    """What a worker needs to measure one image, without the source object."""

    index: int
    name: str
    num_scans: int
    path: str | None = None  # a folder's source file: the worker transcodes it
    backend: str = "auto"
    quality: int = 90
    full: bytes | None = None  # a dataset image's full JPEG: the worker splits it
    levels: tuple[bytes, ...] | None = None  # any other LevelSource
    script: ScanScript = STANDARD  # the source's scan script (grayscale level mapping)


@dataclass(frozen=True)
class Outcome:
    """One image's measurements, or why there are none (``error``)."""

    index: int
    quality: LevelQuality | None = None
    custom: np.ndarray | None = None
    error: str = ""
    note: str = ""


def make_job(src: LevelSource, i: int, names: list[str]) -> ImageJob:
    """Return the job that measures image *i* of *src*, as cheap to send as possible."""
    if isinstance(src, FolderSource):
        return ImageJob(
            i,
            names[i],
            src.num_scans,
            path=str(src.path(i)),
            backend=src.backend,
            quality=src.quality,
            script=src.scan_script,
        )
    if isinstance(src, PCRDataset):
        return ImageJob(
            i, names[i], src.num_scans, full=src.jpeg_bytes(i), script=scan_script_of(src)
        )
    return ImageJob(i, names[i], src.num_scans, levels=tuple(source_levels(src, i)))


def _levels_from_full(full: bytes, job: ImageJob) -> list[bytes]:
    """Return levels 1..num_scans of a progressive JPEG in the job's script (grayscale mapped)."""
    num_scans, source = job.num_scans, job.name
    pj = split_scans(full, source=source)
    if pj.num_components == 1 and pj.num_scans < num_scans:
        return [pj.level(job.script.gray_scans_at(k)) for k in range(1, num_scans + 1)]
    if pj.num_scans != num_scans:
        raise JPEGError(f"{source}: {pj.num_scans} scans, expected {num_scans}")
    return [pj.level(k) for k in range(1, num_scans + 1)]


def _job_levels(job: ImageJob) -> list[bytes]:
    if job.levels is not None:
        return list(job.levels)
    if job.full is not None:
        return _levels_from_full(job.full, job)
    if job.path is None:
        raise ValueError(f"{job.name}: nothing to measure")
    res = transcode(
        job.path,
        backend=job.backend,  # type: ignore[arg-type]
        quality=job.quality,
        name=job.name,
        scan_script=job.script,
    )
    return _levels_from_full(res.jpeg.data, job)


def measure(
    job: ImageJob,
    luminance: bool,
    custom: MetricFn | None = None,
    max_pixels: int | None = None,
) -> Outcome:
    """Measure every level of one image; never raises on bad data.

    Parameters
    ----------
    job : ImageJob
        The image.
    luminance : bool
        Measure the built-in metrics on Y only.
    custom : callable, optional
        A custom metric scored instead of the built-in ones (then
        ``Outcome.quality`` holds the bytes and NaN metrics).
    max_pixels : int, optional
        Measure the built-in metrics of a larger image at a reduced size
        (see :func:`~pcr_explore.quality.level_quality`).

    Returns
    -------
    Outcome
        With ``error`` set (first line of the message) when the image cannot
        be read, decoded or measured.
    """
    try:
        levels = _job_levels(job)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FewerScalesWarning)
            if custom is None:
                q = level_quality(
                    levels, luminance=luminance, source=job.name, max_pixels=max_pixels
                )
                return Outcome(job.index, quality=q, note=q.note)
            q = level_quality(levels, luminance=luminance, metrics=(), source=job.name)
            values = custom_level_values(levels, custom, source=job.name)
        note = "; ".join(str(w.message) for w in caught)
        return Outcome(job.index, quality=q, custom=values, note=note)
    except (PCRError, OSError, ValueError) as exc:
        return Outcome(job.index, error=str(exc).splitlines()[0] if str(exc) else repr(exc))
