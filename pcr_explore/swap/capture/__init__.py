"""Activations of real PyTorch models: saved-tensor capture, training-step capture, small nets."""

from ..._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
