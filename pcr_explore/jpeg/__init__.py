"""JPEG handling: frame headers, scan splitting, scan scripts, decoding, transcoding.

=====================  ==================================================
:mod:`._segments`      one walk over a JPEG's marker segments
:mod:`._frame`         the frame header (segments before the first scan)
:mod:`._progressive`   scan splitting, level rebuild, decoding (this facade)
:mod:`.scan_script`    scan scripts: parsing, checks, the named scripts
:mod:`._decoders`      decoder backends (simplejpeg or Pillow)
:mod:`._eighth`        the 1/8-scale rewrite that skips needless AC scans
:mod:`._orient`        EXIF orientation
:mod:`.transcode`      any source to a progressive JPEG in a scan script
:mod:`._tjtransform`   the in-process lossless transcode (TurboJPEG)
=====================  ==================================================
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
