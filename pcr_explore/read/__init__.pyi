from ._stats import StageSeconds
from .export import ExportSummary, export_dataset
from .loader import PCRIterableDataset, torch_dataset
from .mix import MixedDataset, mix
from .pipeline import OnError
from .reader import PCRDataset, ReadStats, open_dataset
from .sources import FolderSource, LevelSource, open_source
from .throughput import LevelReading, ReadingReport, measure_reading
from .verify import VerifyReport, verify_dataset

__all__ = [
    "export_dataset",
    "ExportSummary",
    "PCRIterableDataset",
    "torch_dataset",
    "MixedDataset",
    "mix",
    "OnError",
    "PCRDataset",
    "ReadStats",
    "StageSeconds",
    "open_dataset",
    "FolderSource",
    "LevelSource",
    "open_source",
    "LevelReading",
    "ReadingReport",
    "measure_reading",
    "VerifyReport",
    "verify_dataset",
]
