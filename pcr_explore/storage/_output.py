"""Where an encode writes: a local (or shared) folder, or object storage through fsspec.

Both publish a file whole or not at all. In a folder that is
:func:`~pcr_explore.storage._atomic.atomic_write` (temporary file, fsync, rename);
on object storage it is one PUT of the whole object (S3 and its kin make an
object visible only once its upload completes). Output objects pickle, so
Dask workers write records straight to the destination.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import MissingExtraError
from ._atomic import atomic_write
from .remote import install_hint

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["FolderOutput", "ObjectOutput", "open_output"]


class FolderOutput:
    """An output folder on a local or shared file system."""

    local = True

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = str(folder)

    def write(self, name: str, data: bytes | Iterable[bytes]) -> None:
        """Publish *name* atomically."""
        atomic_write(self.folder / name, data)

    def exists(self, name: str) -> bool:
        """Whether *name* is there."""
        return (self.folder / name).exists()

    def remove(self, name: str) -> None:
        """Delete *name* if it is there."""
        (self.folder / name).unlink(missing_ok=True)

    def names(self) -> list[str]:
        """Names of the files in the folder."""
        return sorted(p.name for p in self.folder.iterdir() if p.is_file())


class _ObjectState(TypedDict):
    """What a pickled :class:`ObjectOutput` carries: where, not the file system."""

    url: str
    storage_options: dict[str, Any]


class ObjectOutput:
    """An output prefix on object storage (``s3://bucket/prefix``), through fsspec."""

    local = False

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self._fs: AbstractFileSystem | None = None
        self._root = ""

    def __getstate__(self) -> _ObjectState:
        return {"url": self.url, "storage_options": self.storage_options}

    def __setstate__(self, state: _ObjectState) -> None:
        ObjectOutput.__init__(self, state["url"], state["storage_options"])

    @property
    def fs(self) -> AbstractFileSystem:
        """The fsspec file system (made on first use, in each process)."""
        return self._fs_root()[0]

    def _fs_root(self) -> tuple[AbstractFileSystem, str]:
        if self._fs is None:
            import fsspec

            scheme = self.url.partition("://")[0]
            try:
                self._fs, root = fsspec.core.url_to_fs(self.url, **self.storage_options)
            except ImportError as exc:
                raise MissingExtraError(
                    f"{self.url}: writing {scheme}:// needs {exc.name}: {install_hint(scheme)}"
                ) from exc
            self._root = root.rstrip("/")
        return self._fs, self._root

    def _path(self, name: str) -> str:
        return posixpath.join(self._fs_root()[1], name)

    def write(self, name: str, data: bytes | Iterable[bytes]) -> None:
        """Publish *name* with one PUT of the whole object."""
        body = data if isinstance(data, (bytes, bytearray)) else b"".join(data)
        self.fs.pipe_file(self._path(name), bytes(body))

    def exists(self, name: str) -> bool:
        """Whether the object *name* is there."""
        return bool(self.fs.exists(self._path(name)))

    def remove(self, name: str) -> None:
        """Delete the object *name* if it is there."""
        path = self._path(name)
        if self.fs.exists(path):
            self.fs.rm_file(path)

    def names(self) -> list[str]:
        """Names of the objects directly under the prefix."""
        fs, root = self._fs_root()
        fs.invalidate_cache(root)
        try:
            paths = fs.ls(root, detail=False)
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(p.rstrip("/")) for p in paths)


def open_output(
    out: str | os.PathLike[str], storage_options: dict[str, Any] | None = None
) -> FolderOutput | ObjectOutput:
    """The output for *out*: a URL with a scheme other than ``file://`` is object storage.

    Examples
    --------
    >>> type(open_output("/tmp/ds")).__name__, type(open_output("s3://b/ds")).__name__
    ('FolderOutput', 'ObjectOutput')
    """
    text = os.fspath(out)
    if "://" in text and not text.startswith("file://"):
        return ObjectOutput(text, storage_options)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return FolderOutput(Path(text).resolve())
