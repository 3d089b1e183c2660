"""Train at scan levels: the PCR paper's accuracy and time-to-accuracy claims, measured.

Needs PyTorch (``pip install pcr-explore[torch]``). Importing this package
does not import PyTorch; each function does on its first call and raises
:class:`~pcr_explore.errors.MissingExtraError` naming the extra when it is
missing.

- :func:`train_at_levels` trains one fresh model per level and records, per
  epoch, the training loss, validation accuracy, bytes read from storage
  and the time spent loading and computing.
- :func:`tune_by_gradient` picks the lowest level whose loss gradients agree
  with full quality's (cosine similarity of flattened gradients).
- :func:`throttled` holds a dataset's reads to a storage bandwidth.
- :func:`load_flowers` gives TensorFlow's flower photos (downloaded once, or
  a local copy) as training and validation PCR datasets; no PyTorch needed.
"""

from __future__ import annotations

from .archive import download, extract, sha256_of, write_stand_in_archive
from .flowers import (
    FLOWERS_ENV,
    FLOWERS_SHA256,
    FLOWERS_URL,
    SplitDatasets,
    load_flowers,
    prepare_split,
    split_folder,
)
from .gradient import GradientTuneResult, default_levels, tune_by_gradient
from .levels import train_at_levels
from .loop import LevelImages, evaluate, read_level, stack_images, to_input, train_epoch
from .model import MODELS, build_model, small_cnn
from .plot import SimilarityFigure, TrainingFigure, similarity_figure, training_figure
from .result import EpochStats, LevelRun, TrainResult
from .throttle import ThrottledFileSystem, parse_bandwidth, throttled

__all__ = [
    "FLOWERS_ENV",
    "FLOWERS_SHA256",
    "FLOWERS_URL",
    "MODELS",
    "SplitDatasets",
    "download",
    "extract",
    "load_flowers",
    "prepare_split",
    "sha256_of",
    "split_folder",
    "write_stand_in_archive",
    "EpochStats",
    "GradientTuneResult",
    "LevelImages",
    "LevelRun",
    "SimilarityFigure",
    "ThrottledFileSystem",
    "TrainResult",
    "TrainingFigure",
    "build_model",
    "evaluate",
    "parse_bandwidth",
    "read_level",
    "similarity_figure",
    "small_cnn",
    "stack_images",
    "throttled",
    "to_input",
    "train_at_levels",
    "train_epoch",
    "training_figure",
    "tune_by_gradient",
    "default_levels",
]
