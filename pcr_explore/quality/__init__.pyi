from ._curve import PerImageQuality, QualityCurve
from ._levels import LevelQuality, image_quality, level_quality
from ._sampler import Sampler, quality_curve
from ._scripts import ScriptComparison, ScriptCurve, compare_scripts
from .metrics import (
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
from .tune import TuneOptions, TuneResult, level_intervals, recommend, tune

__all__ = [
    "TuneOptions",
    "TuneResult",
    "level_intervals",
    "recommend",
    "tune",
    "METRICS",
    "METRIC_LABELS",
    "MSSSIM_WEIGHTS",
    "PSNR_CAP",
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
