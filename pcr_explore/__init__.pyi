from . import (  # the subpackages, loaded on use
    auditing,
    budgeting,
    encode,
    jpeg,
    plots,
    quality,
    read,
    records,
    storage,
    swap,
    train,
    widgets,
)
from ._version import __version__
from .auditing import AuditOptions, AuditReport, audit
from .budgeting import BudgetOptions, BudgetReport, budget
from .encode.discover import find_sources
from .encode.encoder import EncodeOptions, EncodeSummary, encode_dataset
from .encode.sample import build_sample
from .errors import (
    CacheTooSmallWarning,
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
    SkippedWarning,
    SourceImageError,
    SwapError,
    WorkerError,
)
from .jpeg.transcode import find_jpegtran
from .quality import LevelQuality, QualityCurve, image_quality, quality_curve
from .quality.tune import TuneOptions, TuneResult, tune
from .read.export import ExportSummary, export_dataset
from .read.reader import PCRDataset, open_dataset
from .read.sources import FolderSource, LevelSource, open_source
from .read.verify import VerifyReport, verify_dataset
from .records.summary import DatasetSummary

__all__ = [
    "__version__",
    "encode_dataset",
    "EncodeSummary",
    "EncodeOptions",
    "find_sources",
    "find_jpegtran",
    "open_dataset",
    "export_dataset",
    "ExportSummary",
    "PCRDataset",
    "DatasetSummary",
    "open_source",
    "FolderSource",
    "LevelSource",
    "verify_dataset",
    "VerifyReport",
    "build_sample",
    "quality_curve",
    "QualityCurve",
    "image_quality",
    "LevelQuality",
    "tune",
    "TuneResult",
    "TuneOptions",
    "audit",
    "AuditReport",
    "AuditOptions",
    "budget",
    "BudgetReport",
    "BudgetOptions",
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
    "CacheTooSmallWarning",
    "FewerScalesWarning",
    "LabelWarning",
    "RangeIgnoredWarning",
    "SkippedWarning",
]
