"""Where bytes live: remote stores, the prefix cache, publishing, atomic writes, the output lock.

:mod:`.remote` HTTP(S) and fsspec stores; :mod:`.cache` the on-disk prefix cache;
:mod:`._output` publishing whole files; :mod:`._atomic` atomic writes; :mod:`._lock`
the output-folder lock.
"""
