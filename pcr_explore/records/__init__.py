"""Record files and the manifest: the on-disk format of a PCR dataset.

:mod:`.format` one record file's bytes (header, groups, CRCs); :mod:`.prefix` a checked
prefix read; :mod:`.manifest` the manifest and its checks; :mod:`.summary` the
``DatasetSummary`` result.
"""
