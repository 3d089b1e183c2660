"""Image-quality metrics: SSIM, MS-SSIM and PSNR, and the names they go by.

The kernels behind :mod:`pcr_explore.quality`. SSIM and MS-SSIM apply the
Gaussian window as banded matrix products evaluated only where the window
fits, and :class:`SSIMReference` keeps everything that depends only on the
reference image, so comparing every scan level of an image with the full
image computes the full image's statistics once.

This module is also the one place for metric names (:data:`METRICS`), their
display labels (:data:`METRIC_LABELS`) and the rule for infinite PSNR in
statistics (:data:`PSNR_CAP`, :func:`capped`).
"""

from __future__ import annotations

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
