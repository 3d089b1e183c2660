from ._saved import (
    SavedTensorCapture,
    capture_saved_tensors,
)

__all__ = [
    "SavedTensorCapture",
    "capture_saved_tensors",
]
