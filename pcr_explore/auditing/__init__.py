"""Dataset audit: broken and odd images, duplicates, and bytes and quality per scan level.

What a folder of images (or a PCR dataset) holds, what is wrong with it, what
each scan level costs and is worth, and which level to train on.

:func:`audit` checks its options first, then reads every image once (in
worker processes): its content hash, format, colour mode, size and JPEG
coding; one small decode (:data:`ANALYSIS_SIDE` pixels, DCT scaling) on which
every image property of :data:`CHECKS` is scored (blurry, dark, light, low
information, grayscale, odd aspect ratio, odd size) and a perceptual hash is
taken; and its bytes at each scan level after the progressive transcode.
Exact and near duplicates are grouped into sets, and a set that spans
classes is called out as a label leak. Only a random sample is decoded at
every level to measure quality (:class:`~pcr_explore.quality.Sampler`), from
which :func:`~pcr_explore.quality.tune.recommend` picks the level. Broken files
never stop the audit: each one becomes an entry in ``problems`` with its
reason. The :class:`AuditReport` saves as JSON, prints as text, becomes a
pandas frame, shows in a notebook and writes a standalone HTML page.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
