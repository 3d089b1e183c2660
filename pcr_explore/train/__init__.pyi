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
from .levels import TrainOptions, train_at_levels
from .loop import LevelImages, evaluate, read_level, stack_images, to_input, train_epoch
from .model import MODELS, build_model, small_cnn
from .plot import (
    SimilarityFigure,
    TrainingFigure,
    result_figure,
    similarity_figure,
    training_figure,
    write_html,
)
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
    "TrainOptions",
    "train_epoch",
    "training_figure",
    "result_figure",
    "write_html",
    "tune_by_gradient",
    "default_levels",
]
