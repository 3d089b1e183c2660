from .capture import capture_saved_tensors
from .capture._images import LabelledImages, load_labelled_images
from .capture.cnn import cnn_trace
from .capture.nets import build_net
from .capture.sparsity_table import SparsityTable
from .capture.train_capture import TrainingCapture, capture_training
from .codecs import Codec, CodecError, Encoded, Measurement, codec_names, get_codec, measure
from .codecs.activations import bit_sparsity, synthetic_activations
from .codecs.ratios import measure_ratios, ratio_curve
from .model.calibration import Calibration, calibrate
from .model.profiles import DeviceProfile, get_profile, profile_names
from .simulator.policies import default_policies
from .simulator.report import SwapReport, report
from .simulator.results import Decision, SimResult
from .simulator.simulate import simulate, simulate_many
from .traces import TensorRecord, Trace
from .traces.architectures import builtin_trace
from .traces.catalog import (
    TraceOption,
    list_traces,
    load_trace,
    measured_trace,
    measured_trace_names,
)
from .training.activation_policy import least_stall, smallest_encoding
from .training.codec_sweep import CodecSweep, codec_sweep
from .training.codec_training import SwapTrainResult, TrainRun, swap_train, train_run
from .training.compressed import ActivationLog, SavedTensorInfo, compressed_activations

__all__ = [
    "ActivationLog",
    "Calibration",
    "Codec",
    "CodecError",
    "CodecSweep",
    "Decision",
    "DeviceProfile",
    "Encoded",
    "LabelledImages",
    "Measurement",
    "SavedTensorInfo",
    "SimResult",
    "SparsityTable",
    "SwapReport",
    "SwapTrainResult",
    "TensorRecord",
    "Trace",
    "TraceOption",
    "TrainRun",
    "TrainingCapture",
    "bit_sparsity",
    "build_net",
    "builtin_trace",
    "calibrate",
    "capture_saved_tensors",
    "capture_training",
    "cnn_trace",
    "codec_names",
    "codec_sweep",
    "compressed_activations",
    "default_policies",
    "get_codec",
    "get_profile",
    "least_stall",
    "list_traces",
    "load_labelled_images",
    "load_trace",
    "measure",
    "measure_ratios",
    "measured_trace",
    "measured_trace_names",
    "profile_names",
    "ratio_curve",
    "report",
    "simulate",
    "simulate_many",
    "smallest_encoding",
    "swap_train",
    "synthetic_activations",
    "train_run",
]
