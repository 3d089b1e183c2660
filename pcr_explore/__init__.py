"""pcr_explore: see and measure how many bytes of your training data you need."""

from __future__ import annotations

from .errors import (
    CorruptRecordError,
    DatasetError,
    JPEGError,
    PCRError,
    PCRFormatError,
    ScanScriptError,
    SourceImageError,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptRecordError",
    "DatasetError",
    "JPEGError",
    "PCRError",
    "PCRFormatError",
    "ScanScriptError",
    "SourceImageError",
    "__version__",
]
