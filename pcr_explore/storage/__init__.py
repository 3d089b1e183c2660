"""Where bytes live: the store protocol, remote stores, the prefix cache, publishing, atomic writes.

:class:`Store` is what a dataset is read through (fsspec's verbs: any fsspec
file system, or a class of your own); :mod:`.remote` HTTP(S) and fsspec
stores; :mod:`.cache` the on-disk prefix cache; :mod:`.results` expensive results
kept on disk (:class:`ResultsCache`); :mod:`._output` publishing
whole files; :mod:`._atomic` atomic writes; :mod:`._lock` the output-folder lock.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
