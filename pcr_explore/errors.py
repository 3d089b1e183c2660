"""Exception classes raised by pcr_explore.

Every message names the file (and, where it applies, the record, image and
scan group) and says what was expected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T", bound=type)


def public(where: str) -> Callable[[_T], _T]:
    """Name *where* as the module users import a class from (``_public.public``'s rule).

    This module imports nothing of the package: the facades' finder raises
    :class:`MissingExtraError` from here.
    """

    def mark(cls: _T) -> _T:
        globals().setdefault("__test__", {})[cls.__name__] = cls  # doctest finds it here
        cls.__module__ = where
        return cls

    return mark


__all__ = [
    "PCRError",
    "JPEGError",
    "ScanScriptError",
    "SourceImageError",
    "PCRFormatError",
    "CorruptRecordError",
    "DatasetError",
    "WorkerError",
    "SwapError",
    "MissingExtraError",
    "FewerScalesWarning",
    "LabelWarning",
    "SkippedWarning",
    "RemoteReadError",
    "RangeIgnoredWarning",
    "CacheTooSmallWarning",
    "TooLargeError",
]


@public("pcr_explore")
class PCRError(Exception):
    """Base class of every error pcr_explore raises on bad input."""


@public("pcr_explore")
class JPEGError(PCRError, ValueError):
    """A JPEG stream is malformed (bad marker, truncated segment, no scans)."""


@public("pcr_explore")
class ScanScriptError(JPEGError):
    """A progressive JPEG does not follow the standard libjpeg scan script."""


@public("pcr_explore")
class SourceImageError(PCRError, ValueError):
    """A source image cannot be read or converted."""


@public("pcr_explore")
class PCRFormatError(PCRError, ValueError):
    """A record file is not a valid PCR file (magic, version, header)."""


@public("pcr_explore")
class CorruptRecordError(PCRFormatError):
    """A record's checksum does not match or its data is truncated."""


@public("pcr_explore")
class DatasetError(PCRError, ValueError):
    """A dataset directory or its manifest is missing or inconsistent."""


@public("pcr_explore")
class WorkerError(PCRError, RuntimeError):
    """A worker process died or could not start."""


@public("pcr_explore")
class SwapError(PCRError, ValueError):
    """Bad input to the swap simulation: a tensor, codec, trace, profile or policy."""


@public("pcr_explore")
class MissingExtraError(PCRError, ModuleNotFoundError):
    """An optional dependency is missing; the message names the extra to install."""


@public("pcr_explore")
class FewerScalesWarning(UserWarning):
    """An image too small for 5-scale MS-SSIM was measured with fewer scales.

    Also raised when an image is smaller than the 11-pixel window, which then
    shrinks to fit.
    """


@public("pcr_explore")
class LabelWarning(UserWarning):
    """Some images get no class label (for example, files beside the class folders)."""


@public("pcr_explore")
class SkippedWarning(UserWarning):
    """A read with ``on_error="skip"`` left out unreadable records or images; says how many."""


@public("pcr_explore")
class RemoteReadError(PCRError, OSError):
    """A remote read failed for good: retries spent, or the server cannot serve it.

    The message names the URL, the record, the bytes asked for and the last
    answer (an HTTP status or the connection error). The same facts are
    attributes, for code that handles the failure.

    Attributes
    ----------
    url : str
        The file asked for.
    start, end : int or None
        The byte range asked for (``end`` exclusive); None for a whole file.
    status : int or None
        The last HTTP status received (None: no answer, e.g. a dropped
        connection or a timeout).
    attempts : int
        Requests made before giving up.
    range_ignored : bool
        The server answered a range request with the whole file (no Range
        support), so retrying the same request cannot help.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str = "",
        start: int | None = None,
        end: int | None = None,
        status: int | None = None,
        attempts: int = 1,
        range_ignored: bool = False,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.start = start
        self.end = end
        self.status = status
        self.attempts = attempts
        self.range_ignored = range_ignored

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class TooLargeError(ValueError):
    """A body longer than the caller's limit; its rest was not read.

    Raised by the remote store's ``cat_file(..., limit=)``; the manifest reader
    turns it into a :class:`DatasetError`, so users never meet it (hence not in
    the package's public names).
    """


@public("pcr_explore")
class RangeIgnoredWarning(UserWarning):
    """A server ignores Range requests: a read takes the bytes it needs from the whole file."""


@public("pcr_explore")
class CacheTooSmallWarning(UserWarning):
    """A bounded prefix cache cannot hold the level being read for every record.

    Each pass then fetches part of the dataset again; the message says how
    many bytes at least and the highest level whose prefixes fit.
    """


def no_such_path(path: object) -> FileNotFoundError:
    """The one error every entry point raises for a path that does not exist.

    Examples
    --------
    >>> no_such_path("photoz")
    FileNotFoundError('photoz: no such file or folder')
    """
    return FileNotFoundError(f"{path}: no such file or folder")
