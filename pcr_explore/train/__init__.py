"""Train at scan levels: the PCR paper's accuracy and time-to-accuracy claims, measured.

Needs PyTorch (``pip install 'pcr-explore[torch]'``). Importing this package
does not import PyTorch; each function does on its first call and raises
:class:`~pcr_explore.errors.MissingExtraError` naming the extra when it is
missing.

- :func:`train_at_levels` trains one fresh model per level and records, per
  epoch, the training loss, validation accuracy, bytes read from storage
  and the time spent loading and computing.
- :func:`tune_by_gradient` picks the lowest level whose loss gradients agree
  with full quality's (cosine similarity of flattened gradients).
- :func:`throttled` holds a dataset's reads to a storage bandwidth.
- :func:`load_flowers` gives TensorFlow's flower photos (downloaded once, or
  a local copy) as training and validation PCR datasets; no PyTorch needed.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
