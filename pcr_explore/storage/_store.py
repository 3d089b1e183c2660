"""The store a dataset is read through: the five file-system verbs the reader calls.

They are fsspec's own names and signatures, so every fsspec file system is a
store (the local one the reader uses for a path among them), as are
:class:`~pcr_explore.storage.remote.HTTPStore` and
:class:`~pcr_explore.storage.remote.FsspecStore`; a class of your own with these
five methods is one too (docs/API.md, "Your own store").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .._public import public

__all__ = ["Store", "missing_verbs"]

# the methods a store has: what missing_verbs looks for (Store's members, in order)
_VERBS = ("cat_file", "info", "isfile", "exists", "ls")


@public("pcr_explore.storage")
@runtime_checkable
class Store(Protocol):
    """What a dataset is read through: byte ranges of its files, their facts, a listing.

    Any object with these five methods is a store; no base class is needed.
    The reader passes *start*, *end* and *detail* by keyword, so a store may
    take them by position too (fsspec's do).
    Paths are the dataset folder's path (or URL) joined with ``/`` and a
    file name: ``"<root>/manifest.json"``, ``"<root>/<record file>"``.
    Threads of one dataset call a store at once (reads ahead), and a
    PyTorch DataLoader pickles it into its workers: a store must be safe to
    share between threads, and picklable to be used there.

    A store may also have ``range_support`` (``False``: its files are read
    whole, into a cache; ``None``: not known until the first read) and
    ``protocol`` (``"file"``: a local store, read with no threads ahead).

    Examples
    --------
    >>> import fsspec
    >>> isinstance(fsspec.filesystem("memory"), Store)
    True
    """

    def cat_file(self, path: str, *, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes *start*..*end* of the file *path* (*end* exclusive; None: its start or end).

        A range past the file's end gives what the file holds of it (fewer
        bytes); the reader treats that as a truncated file. Raises
        ``FileNotFoundError`` if there is no such file.
        """
        ...

    def info(self, path: str) -> Mapping[str, Any]:
        """Facts about *path*: ``"type"`` (``"file"`` for a file) and ``"size"`` (bytes, or None).

        Raises ``FileNotFoundError`` if there is nothing at *path*.
        """
        ...

    def isfile(self, path: str) -> bool:
        """Whether *path* is a file (asked only to word an error: a file given as the dataset)."""
        ...

    def exists(self, path: str) -> bool:
        """Whether anything is at *path* (asked only to word an error: no such dataset)."""
        ...

    def ls(self, path: str, *, detail: bool = False) -> Sequence[str]:
        """The paths in the folder *path* (the reader passes ``detail=False``).

        Raises ``OSError`` where the store cannot list (a plain HTTP server).
        """
        ...


def missing_verbs(store: object) -> list[str]:
    """The methods of :class:`Store` that *store* lacks (none: it is a store).

    Examples
    --------
    >>> missing_verbs({})
    ['cat_file', 'info', 'isfile', 'exists', 'ls']
    """
    return [name for name in _VERBS if not callable(getattr(store, name, None))]
