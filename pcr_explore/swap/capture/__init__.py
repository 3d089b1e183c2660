"""Activations of real PyTorch models: saved-tensor capture, training-step capture, small nets."""

import lazy_loader as _lazy

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
