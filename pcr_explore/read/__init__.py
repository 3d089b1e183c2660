"""Reading a dataset: the read pipeline, prefix reads, sources, the PyTorch adapter, verification.

:mod:`.reader` ``open_dataset`` and ``PCRDataset``; :mod:`.pipeline` the read stages
(records, prefix fetch, split, decode, batch) and ``on_error``; :mod:`._fetch` prefix fetch
through the cache; :mod:`._stats` what a read cost (bytes, seconds per stage and level) and
:mod:`._tally` its sum over DataLoader workers; :mod:`.sources` one interface over datasets,
folders and files; :mod:`.loader` the PyTorch adapter and :mod:`.mix` several datasets in
one stream, both resuming through :mod:`._resume`; :mod:`.throughput` timed read passes;
:mod:`.verify` whole-dataset checks.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
