"""Atomic file writes: a temporary file in the same folder, fsync, rename.

A reader sees either the old file or the complete new one, never a torn
write, and a crash leaves no partial file under the final name.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def current_umask() -> int:
    """Return the process umask now (read per write: a program may change it).

    Linux reports it in ``/proc/self/status`` without touching it; elsewhere
    it is set and restored, which is not safe against other threads creating
    files at that instant, hence the preference.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: bytes | str | Iterable[bytes]) -> None:
    """Write *data* (bytes, text as UTF-8, or byte chunks) to *path* atomically.

    Raises
    ------
    OSError
        With ``filename`` set to *path* (not the temporary file), so a full
        disk or a read-only folder is reported against the file being written.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~current_umask())  # mkstemp creates 0600
            if isinstance(data, str):
                f.write(data.encode("utf-8"))
            elif isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                for chunk in data:
                    f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, f"cannot write: {exc.strerror or exc}", str(path)) from exc
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
