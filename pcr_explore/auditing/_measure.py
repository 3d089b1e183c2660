"""Quality on a sample of the readable images: the recommendation and the worst images."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PCRError
from ..quality._curve import QualityCurve
from ..quality._sampler import Sampler
from ..quality.tune import TuneResult, recommend
from ..read.sources import LevelSource
from ._options import Options
from ._pass import Pass
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
    p: Pass,
    *,
    level_bytes: np.ndarray,
    o: Options,
    progress: Any,
    client: Any = None,
) -> SampleQuality:
    """Finish the quality sample the pass began: replacements, the curve, the recommendation.

    Parameters
    ----------
    src : LevelSource
        The audited images.
    p : Pass
        The pass over the files: ``p.want`` images are taken in ``p.order``
        (failures replaced by the next), the first ``p.measured`` already.
    level_bytes : ndarray of int
        Bytes per level over all readable images: the recommendation's
        bytes fraction is the whole dataset's, not the sample's.
    o : Options
        The audit's checked settings: the target, metric, statistic, seed,
        luminance, workers, worst images kept (with thumbnails) and the
        pixels a sampled image is measured at, at most (bounded memory).
    progress : tqdm bar
        Advanced by one per image measured; its total set here.
    client : dask.distributed.Client, optional
        Measure the rest on this Dask cluster.

    Returns
    -------
    SampleQuality
        ``tune`` None when no image could be measured.
    """
    progress.total = min(p.want, len(p.order))
    progress.refresh()
    if not p.order or not p.want:
        return SampleQuality()
    sampler = Sampler(
        src,
        seed=o.seed,
        metric=o.metric,
        luminance=o.luminance,
        workers=o.workers,
        progress=progress,
        order=p.order,
        max_pixels=o.measured_pixels,
        client=client,
    )
    sampler.add(p.measured)
    sampler.grow(p.want)
    return quality_of_curve(src, sampler.curve(), level_bytes=level_bytes, o=o)


def quality_of_curve(
    src: LevelSource, curve: QualityCurve, *, level_bytes: np.ndarray, o: Options
) -> SampleQuality:
    """The recommendation and the worst images from a measured curve (this audit's or one before).

    *o* holds the audit's checked target, statistic, seed and worst count.
    """
    if not curve.sample_size:
        return SampleQuality(failed=curve.failed)
    frac = level_bytes / level_bytes[-1]
    result = recommend(
        curve,
        target=o.target,
        statistic=o.statistic,  # type: ignore[arg-type]
        seed=o.seed,
        bytes_fraction=frac,
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
