"""pcr_explore: see and measure how many bytes of your training data you need.

Progressive Compressed Records (PCRs) store each image as a progressive JPEG
and lay records out scan group by scan group, so a prefix read of a record
gives every image at a lower fidelity. This package encodes them, reads them
at any level, measures quality per level and picks the level for a target;
its ``swap`` subpackage simulates compressed activation swapping.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .audit import AuditReport, audit
from .discover import find_sources
from .encoder import EncodeSummary, encode_dataset
from .errors import (
    CorruptRecordError,
    DatasetError,
    FewerScalesWarning,
    JPEGError,
    PCRError,
    PCRFormatError,
    ScanScriptError,
    SourceImageError,
    WorkerError,
)
from .jpeg import ProgressiveJPEG, check_scan_script, decode, split_scans
from .quality import (
    METRICS,
    LevelQuality,
    QualityCurve,
    image_quality,
    level_quality,
    ms_ssim,
    psnr,
    quality_curve,
    ssim,
)
from .reader import PCRDataset, ReadStats, open_dataset
from .sample import build_sample
from .sources import FolderSource, LevelSource, open_source
from .transcode import TranscodeResult, find_jpegtran, transcode
from .tuner import TuneResult, recommend, tune

try:
    __version__ = version("pcr-explore")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "METRICS",
    "AuditReport",
    "FewerScalesWarning",
    "LevelQuality",
    "QualityCurve",
    "TuneResult",
    "WorkerError",
    "audit",
    "image_quality",
    "level_quality",
    "ms_ssim",
    "psnr",
    "quality_curve",
    "recommend",
    "ssim",
    "tune",
    "CorruptRecordError",
    "DatasetError",
    "EncodeSummary",
    "FolderSource",
    "JPEGError",
    "LevelSource",
    "PCRDataset",
    "PCRError",
    "PCRFormatError",
    "ProgressiveJPEG",
    "ReadStats",
    "ScanScriptError",
    "SourceImageError",
    "TranscodeResult",
    "__version__",
    "build_sample",
    "check_scan_script",
    "decode",
    "encode_dataset",
    "find_jpegtran",
    "find_sources",
    "open_dataset",
    "open_source",
    "split_scans",
    "transcode",
]
