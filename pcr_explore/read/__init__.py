"""Reading a dataset: prefix reads, sources, the PyTorch adapter, throughput, verification.

:mod:`.reader` ``open_dataset`` and ``PCRDataset``; :mod:`._fetch` prefix fetch through the
cache; :mod:`.sources` one interface over datasets, folders and files; :mod:`.loader` the
PyTorch adapter; :mod:`.throughput` timed read passes; :mod:`.verify` whole-dataset checks.
"""
