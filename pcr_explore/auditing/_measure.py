"""Quality on a sample of the readable images: the recommendation and the worst images."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PCRError
from ..quality._curve import QualityCurve
from ..quality._jobs import Outcome
from ..quality._sampler import Sampler
from ..quality.tune import Statistic, TuneResult, recommend
from ..read.sources import LevelSource
from ._thumbs import thumb_uri

__all__ = ["SampleQuality", "measure_sample", "quality_of_curve"]


@dataclass(frozen=True)
class SampleQuality:
    """What measuring the sample gave: the recommendation, the worst images, failures."""

    tune: TuneResult | None = None
    worst: list[dict[str, Any]] = field(default_factory=list)
    failed: tuple[tuple[str, str], ...] = ()


def measure_sample(
    src: LevelSource,
    order: list[int],
    want: int,
    *,
    level_bytes: np.ndarray,
    target: float,
    metric: str,
    statistic: Statistic,
    seed: int,
    luminance: bool,
    worst: int,
    workers: int | None,
    progress: Any,
    max_pixels: int | None = None,
    measured: list[Outcome] | None = None,
    client: Any = None,
) -> SampleQuality:
    """Measure *want* images taken in *order* and recommend a level.

    Parameters
    ----------
    src : LevelSource
        The audited images.
    order : list of int
        Readable images in the order to sample them (a seeded permutation).
    want : int
        Images to measure; failures are replaced by the next in *order*.
    level_bytes : ndarray of int
        Bytes per level over all readable images: the recommendation's
        bytes fraction is the whole dataset's, not the sample's.
    target, metric, statistic, seed, luminance
        As for :func:`~pcr_explore.auditing.audit`.
    worst : int
        Worst-degrading images to keep, with thumbnails.
    workers : int, optional
        Worker processes.
    progress : tqdm bar
        Advanced by one per image measured.
    max_pixels : int, optional
        Larger images are measured at a reduced size (bounded memory).
    measured : list of Outcome, optional
        Outcomes already measured for the first images of *order*, in that
        order; only the rest of the sample is measured here.
    client : dask.distributed.Client, optional
        Measure the rest on this Dask cluster.

    Returns
    -------
    SampleQuality
        ``tune`` None when no image could be measured.
    """
    sampler = Sampler(
        src,
        seed=seed,
        metric=metric,
        luminance=luminance,
        workers=workers,
        progress=progress,
        order=order,
        max_pixels=max_pixels,
        client=client,
    )
    sampler.add(measured or [])
    sampler.grow(want)
    curve = sampler.curve()
    if not curve.sample_size:
        return SampleQuality(failed=curve.failed)
    frac = level_bytes / level_bytes[-1]
    result = recommend(curve, target=target, statistic=statistic, seed=seed, bytes_fraction=frac)
    return SampleQuality(result, _worst_images(src, result, worst), curve.failed)


def quality_of_curve(
    src: LevelSource, curve: QualityCurve, *, level_bytes: np.ndarray, o: Any
) -> SampleQuality:
    """The recommendation and the worst images from a curve measured before the audit.

    *o* holds the audit's checked target, statistic, seed and worst count.
    """
    if not curve.sample_size:
        return SampleQuality(failed=curve.failed)
    frac = level_bytes / level_bytes[-1]
    result = recommend(
        curve, target=o.target, statistic=o.statistic, seed=o.seed, bytes_fraction=frac
    )
    return SampleQuality(result, _worst_images(src, result, o.worst), curve.failed)


def _worst_images(src: LevelSource, result: TuneResult, n: int) -> list[dict[str, Any]]:
    """Return the *n* sampled images with the lowest metric at the recommended level."""
    rows = []
    for row in result.curve.per_image.worst(result.scan, n=n):
        entry = {
            "file": row["name"],
            "index": row["index"],
            "value": row["value"],
            "bytes_fraction": row["bytes_fraction"],
        }
        try:
            entry["thumb_level"] = thumb_uri(src.jpeg_bytes(row["index"], result.scan))
            entry["thumb_full"] = thumb_uri(src.jpeg_bytes(row["index"]))
        except (PCRError, OSError, ValueError):
            pass  # the report shows the numbers without pictures
        rows.append(entry)
    return rows
