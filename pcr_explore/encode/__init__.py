"""Writing a dataset: finding sources, planning records, transcoding and writing them.

:mod:`.discover` sources and labels; :mod:`._plan` records by source bytes; :mod:`._journal`
the resumable journal; :mod:`._spool` an unfinished record's images; :mod:`._shard` one
record (the unit of work); :mod:`.encoder` ``encode_dataset``; :mod:`.distributed` the
same on Dask; :mod:`.sample` the bundled sample.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
