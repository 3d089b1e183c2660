from ._progressive import (
    EOI,
    GRAY_LEVELS_IN_COLOR,
    STANDARD_SCRIPT_COLOR,
    STANDARD_SCRIPT_GRAY,
    ProgressiveJPEG,
    ScanHeader,
    Size,
    decode,
    decoder_name,
    set_decoder,
    split_scans,
    use_decoder,
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
