"""Quality of every scan level of an image against the full image, over a sample.

The measures are SSIM, MS-SSIM and PSNR from :mod:`pcr_explore.quality.metrics`
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

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
