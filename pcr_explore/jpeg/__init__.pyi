from ._blocks import (
    block_dct,
    block_idct,
    dct_basis,
    from_zigzag,
    partial_block,
    quant_table,
    quantize,
    to_zigzag,
)
from ._coverage import ZIGZAG, ScanCoverage, scan_coverage
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
    "ZIGZAG",
    "ScanCoverage",
    "scan_coverage",
    "dct_basis",
    "block_dct",
    "block_idct",
    "quant_table",
    "quantize",
    "to_zigzag",
    "from_zigzag",
    "partial_block",
]
