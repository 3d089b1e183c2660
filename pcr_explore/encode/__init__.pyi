from .discover import find_sources
from .distributed import local_cluster
from .encoder import EncodeOptions, EncodeSummary, encode_dataset
from .sample import build_sample

__all__ = [
    "find_sources",
    "local_cluster",
    "EncodeOptions",
    "EncodeSummary",
    "encode_dataset",
    "build_sample",
]
