"""Quality of every scan level of an image against the full image, over a sample.

The measures are SSIM, MS-SSIM and PSNR from :mod:`pcr_explore.metrics`
(re-exported here). :func:`level_quality` measures every level of one image,
:func:`quality_curve` a random sample of a dataset, folder or file, giving a
:class:`QualityCurve` for the tuner and the plots.

One pass per image
    Each level is decoded once, and everything that depends only on the full
    image (its local means and variances at every MS-SSIM scale) is computed
    once and shared by all levels.

RGB by default
    ``luminance=False`` compares the decoded RGB images channel by channel
    (the mean over channels, as scikit-image and the MS-SSIM reference code
    do). Scans 3, 4, 8 and 9 carry only chroma; on luminance alone they would
    look free, and the tuner would recommend levels whose colour is visibly
    blocky. ``luminance=True`` compares the JPEG's own Y channel (libjpeg
    skips colour conversion), about three times faster; use it when the
    model sees grayscale.

Custom metrics
    A callable ``(full_images, level_images) -> float`` replaces the built-in
    metrics; it is called for every level, the full one included, so the
    full level reads the metric's own value for identical images.
"""

from __future__ import annotations

from ..errors import FewerScalesWarning
from ..metrics import (
    METRIC_LABELS,
    METRICS,
    MSSSIM_WEIGHTS,
    PSNR_CAP,
    MetricFn,
    metric_name,
    ms_ssim,
    psnr,
    ssim,
)
from ._curve import PerImageQuality, QualityCurve
from ._levels import LevelQuality, image_quality, level_quality
from ._sampler import Sampler, quality_curve
from ._scripts import ScriptComparison, ScriptCurve, compare_scripts

__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "MSSSIM_WEIGHTS",
    "PSNR_CAP",
    "FewerScalesWarning",
    "LevelQuality",
    "MetricFn",
    "PerImageQuality",
    "QualityCurve",
    "Sampler",
    "ScriptComparison",
    "ScriptCurve",
    "compare_scripts",
    "image_quality",
    "level_quality",
    "metric_name",
    "ms_ssim",
    "psnr",
    "quality_curve",
    "ssim",
]
