"""The defaults and choices that the sub-commands' help shows, without importing their modules.

``pcr-explore --help`` and each sub-command's ``--help`` build every parser,
so whatever a parser's text needs is imported on every call. The modules that
define these values import numpy, PIL, urllib3 or the audit; the values are
copied here instead, and ``tests/test_cli.py`` checks every copy against the
library's own (a change there fails that test until it is made here too).
"""

from __future__ import annotations

__all__ = [
    "BUILTIN_MODELS",
    "DASK_WORKERS_PER_CPU",
    "DEFAULT_DATASET_SAMPLE",
    "DEFAULT_DEADLINE",
    "DEFAULT_RECORD_SIZE",
    "DEFAULT_RETRIES",
    "DEFAULT_STATISTIC",
    "DEFAULT_TARGETS",
    "DEFAULT_TIMEOUT",
    "MAX_QUALITY_PIXELS",
    "METRICS",
    "PROFILES",
    "SCRIPT_LEVELS",
    "STATISTICS",
]

# pcr_explore.quality.metrics: METRICS and DEFAULT_TARGETS
METRICS: tuple[str, ...] = ("mssim", "ssim", "psnr")
DEFAULT_TARGETS: dict[str, float] = {"mssim": 0.95, "ssim": 0.95, "psnr": 35.0}
# pcr_explore.quality.tune.STATISTICS and DEFAULT_STATISTIC
STATISTICS: tuple[str, ...] = ("mean", "p5")
DEFAULT_STATISTIC = "p5"
# pcr_explore.auditing._options.MAX_QUALITY_PIXELS
MAX_QUALITY_PIXELS = 1 << 22

# pcr_explore.jpeg.scan_script.SCRIPTS: each built-in script's name and levels
SCRIPT_LEVELS: dict[str, int] = {
    "standard": 10,
    "lean": 9,
    "spectral": 5,
    "hybrid": 7,
    "reduced": 10,
}
# pcr_explore.encode.encoder.DEFAULT_RECORD_SIZE
DEFAULT_RECORD_SIZE = 64 * 1024 * 1024
# pcr_explore.encode.distributed.WORKERS_PER_CPU
DASK_WORKERS_PER_CPU = 4
# pcr_explore.storage.remote
DEFAULT_TIMEOUT = 10.0
DEFAULT_RETRIES = 3
DEFAULT_DEADLINE = 120.0

# pcr_explore.widgets._scan_demo.DEFAULT_DATASET_SAMPLE (the demo page's dataset band)
DEFAULT_DATASET_SAMPLE = 16

# pcr_explore.swap.model.profiles.profile_names()
PROFILES: tuple[str, ...] = ("v100-pcie3", "a100-pcie4", "h100-pcie5")
# pcr_explore.swap.traces.architectures.BUILTIN_MODELS, sorted
BUILTIN_MODELS: tuple[str, ...] = ("resnet50", "vgg16")
