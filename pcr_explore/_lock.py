"""An exclusive lock on an output folder, held for the whole of an encode.

Two encodes into one folder would interleave their records and journals; the
second one must fail at once and say who holds the folder. The lock is an
``flock`` on ``.pcr-lock`` in the folder (released by the kernel when the
holder dies, so a crash never leaves a stale lock); the file's text names the
holder for the message.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from types import TracebackType

from .errors import DatasetError

LOCK = ".pcr-lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, run unlocked
    fcntl = None  # type: ignore[assignment]


class FolderLock:
    """Context manager holding an exclusive lock on *folder*.

    Parameters
    ----------
    folder : Path
        An existing folder.

    Raises
    ------
    DatasetError
        On entry, if another process holds the lock; the message names it.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        if fcntl is None:  # pragma: no cover
            return self
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "unknown"
                os.close(fd)
                raise DatasetError(
                    f"{self.path.parent}: another encode is writing to this folder ({holder}); "
                    "wait for it to finish or stop it, then run again"
                ) from None
            # The holder before us may have removed the file after we opened it:
            # then we locked an orphan and must try again on the new file.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {when}\n".encode())
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # while still held: no one can lock the orphan
            os.close(self._fd)
            self._fd = None
