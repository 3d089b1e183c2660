from ._decoders import decoder_name, set_decoder, use_decoder
from ._progressive import (
    EOI,
    GRAY_LEVELS_IN_COLOR,
    STANDARD_SCRIPT_COLOR,
    STANDARD_SCRIPT_GRAY,
    ProgressiveJPEG,
    ScanHeader,
    Size,
    decode,
    split_scans,
)

__all__ = [
    "EOI",
    "STANDARD_SCRIPT_COLOR",
    "STANDARD_SCRIPT_GRAY",
    "GRAY_LEVELS_IN_COLOR",
    "ScanHeader",
    "ProgressiveJPEG",
    "split_scans",
    "decode",
    "decoder_name",
    "set_decoder",
    "use_decoder",
    "Size",
]
