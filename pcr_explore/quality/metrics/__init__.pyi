from ._names import METRIC_LABELS, METRICS, PSNR_CAP, MetricFn, metric_name
from ._psnr import psnr
from ._structural import K1, K2, MSSSIM_WEIGHTS, SIGMA, WINDOW, ms_ssim, ssim
from ._targets import DEFAULT_TARGETS

__all__ = [
    "ms_ssim",
    "ssim",
    "psnr",
    "METRICS",
    "METRIC_LABELS",
    "MSSSIM_WEIGHTS",
    "PSNR_CAP",
    "DEFAULT_TARGETS",
    "K1",
    "K2",
    "SIGMA",
    "WINDOW",
    "MetricFn",
    "metric_name",
]
