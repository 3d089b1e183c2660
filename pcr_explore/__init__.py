"""pcr_explore: see and measure how many bytes of your training data you need.

Progressive Compressed Records (PCRs) store each image as a progressive JPEG
and lay records out scan group by scan group, so a prefix read of a record
gives every image at a lower fidelity. This package encodes them, reads them
at any level, measures quality per level and picks the level for a target,
audits image folders, and (``pcr_explore.train``, with PyTorch) trains at
each level. Its ``swap`` subpackage measures and simulates compressed
activation swapping.

The names here are the user's verbs and their results; lower-level tools
(scan splitting, metric kernels, the record format) are imported from their
modules, e.g. ``from pcr_explore.jpeg import split_scans``.

References
----------
.. [1] M. Kuchnik, G. Amvrosiadis, V. Smith, "Progressive Compressed
   Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11), 2021.
.. [2] P. Chen et al., "CSWAP: A Self-Tuning Compression Framework for
   Accelerating Tensor Swapping in GPUs", IEEE CLUSTER 2021, and its journal
   version in IEEE TPDS 33(12), 2022.
"""

from __future__ import annotations

from ._version import __version__
from .audit import AuditReport, audit
from .discover import find_sources
from .encoder import EncodeSummary, encode_dataset
from .errors import (
    CorruptRecordError,
    DatasetError,
    FewerScalesWarning,
    JPEGError,
    LabelWarning,
    MissingExtraError,
    PCRError,
    PCRFormatError,
    RangeIgnoredWarning,
    RemoteReadError,
    ScanScriptError,
    SourceImageError,
    SwapError,
    WorkerError,
)
from .quality import LevelQuality, QualityCurve, image_quality, quality_curve
from .reader import PCRDataset, open_dataset
from .sample import build_sample
from .sources import FolderSource, LevelSource, open_source
from .summary import DatasetSummary
from .transcode import find_jpegtran
from .tuner import TuneResult, tune
from .verify import VerifyReport, verify_dataset

__all__ = [
    "__version__",
    # encode, open, read
    "encode_dataset",
    "EncodeSummary",
    "find_sources",
    "find_jpegtran",
    "open_dataset",
    "PCRDataset",
    "DatasetSummary",
    "open_source",
    "FolderSource",
    "LevelSource",
    "verify_dataset",
    "VerifyReport",
    "build_sample",
    # measure, tune, audit
    "quality_curve",
    "QualityCurve",
    "image_quality",
    "LevelQuality",
    "tune",
    "TuneResult",
    "audit",
    "AuditReport",
    # errors and warnings
    "PCRError",
    "JPEGError",
    "ScanScriptError",
    "SourceImageError",
    "PCRFormatError",
    "CorruptRecordError",
    "DatasetError",
    "RemoteReadError",
    "WorkerError",
    "SwapError",
    "MissingExtraError",
    "FewerScalesWarning",
    "LabelWarning",
    "RangeIgnoredWarning",
]
