"""Exception classes raised by pcr_explore.

Every message names the file (and, where it applies, the record, image and
scan group) and says what was expected.
"""

from __future__ import annotations

__all__ = [
    "PCRError",
    "JPEGError",
    "ScanScriptError",
    "SourceImageError",
    "PCRFormatError",
    "CorruptRecordError",
    "DatasetError",
    "WorkerError",
    "SwapError",
    "MissingExtraError",
    "FewerScalesWarning",
    "LabelWarning",
]


class PCRError(Exception):
    """Base class of every error pcr_explore raises on bad input."""


class JPEGError(PCRError, ValueError):
    """A JPEG stream is malformed (bad marker, truncated segment, no scans)."""


class ScanScriptError(JPEGError):
    """A progressive JPEG does not follow the standard libjpeg scan script."""


class SourceImageError(PCRError, ValueError):
    """A source image cannot be read or converted."""


class PCRFormatError(PCRError, ValueError):
    """A record file is not a valid PCR file (magic, version, header)."""


class CorruptRecordError(PCRFormatError):
    """A record's checksum does not match or its data is truncated."""


class DatasetError(PCRError, ValueError):
    """A dataset directory or its manifest is missing or inconsistent."""


class WorkerError(PCRError, RuntimeError):
    """A worker process died or could not start."""


class SwapError(PCRError, ValueError):
    """Bad input to the swap simulation: a tensor, codec, trace, profile or policy."""


class MissingExtraError(PCRError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class FewerScalesWarning(UserWarning):
    """An image too small for 5-scale MS-SSIM was measured with fewer scales.

    Also raised when an image is smaller than the 11-pixel window, which then
    shrinks to fit.
    """


class LabelWarning(UserWarning):
    """Some images get no class label (for example, files beside the class folders)."""
