from ._filter import one_blas_thread
from ._names import (
    METRIC_LABELS,
    METRICS,
    PSNR_CAP,
    MetricFn,
    capped,
    format_value,
    metric_label,
    metric_name,
)
from ._psnr import psnr, psnr_from_mse
from ._structural import (
    K1,
    K2,
    MSSSIM_WEIGHTS,
    SIGMA,
    WINDOW,
    Similarity,
    SSIMReference,
    ms_ssim,
    ssim,
)
from ._targets import DEFAULT_TARGETS, check_target

__all__ = [
    "DEFAULT_TARGETS",
    "check_target",
    "K1",
    "K2",
    "METRICS",
    "METRIC_LABELS",
    "MSSSIM_WEIGHTS",
    "PSNR_CAP",
    "SIGMA",
    "WINDOW",
    "MetricFn",
    "SSIMReference",
    "Similarity",
    "capped",
    "format_value",
    "metric_label",
    "metric_name",
    "ms_ssim",
    "one_blas_thread",
    "psnr",
    "psnr_from_mse",
    "ssim",
]
