"""Record files and the manifest: the on-disk format of a PCR dataset.

:mod:`.format` one record file's bytes (header, groups, CRCs); :mod:`.prefix` a checked
prefix read; :mod:`.manifest` the manifest and its checks; :mod:`.summary` the
``DatasetSummary`` result.
"""

from .._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
