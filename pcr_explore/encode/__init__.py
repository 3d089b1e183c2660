"""Writing a dataset: finding sources, planning records, transcoding and writing them.

:mod:`.discover` sources and labels; :mod:`._plan` records by source bytes; :mod:`._journal`
the resumable journal; :mod:`._spool` an unfinished record's images; :mod:`._shard` one
record (the unit of work); :mod:`.encoder` ``encode_dataset``; :mod:`.distributed` the
same on Dask; :mod:`.sample` the bundled sample.
"""
