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

from ..._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
