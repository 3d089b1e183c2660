from ._trace import (
    TRACE_FORMAT_VERSION,
    TensorRecord,
    Trace,
)

__all__ = [
    "TensorRecord",
    "Trace",
    "TRACE_FORMAT_VERSION",
]
