from .archive import extract, write_stand_in_archive
from .flowers import SplitDatasets, load_flowers, prepare_split, split_folder
from .gradient import GradientTuneResult, StepTuner, default_levels, tune_by_gradient
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
from .schedule import ScanSchedule
from .sharpness import sharpness_task
from .throttle import parse_bandwidth, throttled

__all__ = [
    "train_at_levels",
    "TrainOptions",
    "ScanSchedule",
    "TrainResult",
    "LevelRun",
    "EpochStats",
    "tune_by_gradient",
    "StepTuner",
    "GradientTuneResult",
    "default_levels",
    "load_flowers",
    "sharpness_task",
    "prepare_split",
    "split_folder",
    "SplitDatasets",
    "extract",
    "write_stand_in_archive",
    "small_cnn",
    "build_model",
    "MODELS",
    "result_figure",
    "training_figure",
    "TrainingFigure",
    "similarity_figure",
    "SimilarityFigure",
    "write_html",
    "throttled",
    "parse_bandwidth",
    "read_level",
    "LevelImages",
    "evaluate",
    "train_epoch",
    "to_input",
    "stack_images",
]
