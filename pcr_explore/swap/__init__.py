"""Compressed tensor swapping: codecs, activation traces, a cost model and a step simulator.

Would compressing the activations a training step swaps to host memory pay
on a given GPU and link, and for which tensors? This subpackage measures
real codecs on real or realistic tensors (:mod:`.codecs`, :mod:`.tensors`),
prices them with a calibratable cost model (:mod:`.model`), and simulates a
step under vDNN, always-compress, CSWAP-style and oracle policies
(:mod:`.simulate`). See ``docs/SWAP.md``.
"""

from __future__ import annotations

from ..errors import MissingExtraError, SwapError
from .codecs import (
    CSR,
    LZ4,
    ZFP,
    ZVC,
    Binarize,
    Bitmap,
    Codec,
    CodecError,
    Delta8,
    Encoded,
    Measurement,
    ZeroRLE,
    Zstd,
    codec_names,
    get_codec,
    measure,
    zfp_available,
)
from .model import (
    PROFILES,
    Calibration,
    CodecCost,
    DeviceProfile,
    KernelCost,
    calibrate,
    fit_kernel_cost,
    get_profile,
    profile_names,
)
from .ratios import measure_ratios, ratio_curve
from .simulate import (
    Decision,
    Policy,
    SimResult,
    default_policies,
    parse_policy,
    simulate,
    simulate_many,
)
from .tensors import (
    SavedTensorCapture,
    bit_sparsity,
    capture_saved_tensors,
    cnn_activations,
    cnn_trace,
    sample_images,
    synthetic_activations,
)
from .traces import (
    BUILTIN_MODELS,
    TensorRecord,
    Trace,
    builtin_trace,
    resnet50_trace,
    sparsity_profile,
    vgg16_trace,
)

__all__ = [
    "BUILTIN_MODELS",
    "Binarize",
    "Bitmap",
    "CSR",
    "Calibration",
    "Codec",
    "CodecCost",
    "CodecError",
    "Decision",
    "Delta8",
    "DeviceProfile",
    "Encoded",
    "KernelCost",
    "LZ4",
    "Measurement",
    "MissingExtraError",
    "PROFILES",
    "Policy",
    "SavedTensorCapture",
    "SimResult",
    "SwapError",
    "TensorRecord",
    "Trace",
    "ZFP",
    "ZVC",
    "ZeroRLE",
    "Zstd",
    "bit_sparsity",
    "builtin_trace",
    "calibrate",
    "capture_saved_tensors",
    "cnn_activations",
    "cnn_trace",
    "codec_names",
    "default_policies",
    "fit_kernel_cost",
    "get_codec",
    "get_profile",
    "measure",
    "measure_ratios",
    "parse_policy",
    "profile_names",
    "ratio_curve",
    "resnet50_trace",
    "sample_images",
    "simulate",
    "simulate_many",
    "sparsity_profile",
    "synthetic_activations",
    "vgg16_trace",
    "zfp_available",
]
