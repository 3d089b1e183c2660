"""An exclusive lock on an output folder, held for the whole of an encode.

Two encodes into one folder would interleave their records and journals; the
second one must fail at once and say who holds the folder. The lock is
``filelock``'s on ``.pcr-lock`` in the folder (``flock`` on POSIX, ``msvcrt``
locking on Windows, both released by the system when the holder dies, so a
crash never leaves a stale lock); the file's text names the holder for the
message, and the holder removes the file as it lets go.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from ..errors import DatasetError

LOCK = ".pcr-lock"


def _sign(fd: int) -> None:
    """Write who holds the lock into the lock file (called by filelock once it is held)."""
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {when}\n".encode())


class FolderLock:
    """Context manager holding an exclusive lock on *folder*.

    Parameters
    ----------
    folder : Path
        An existing folder.
    doing : str
        What holds the lock ("encode", "export"), for the message.

    Raises
    ------
    DatasetError
        On entry, if another process holds the lock; the message names it.
    """

    def __init__(self, folder: Path, doing: str = "encode") -> None:
        from filelock import FileLock  # imported by the encoder only, not by readers

        self.path = folder / LOCK
        self.doing = doing
        self._lock = FileLock(self.path, timeout=0, thread_local=False, on_acquired=_sign)

    def __enter__(self) -> FolderLock:
        from filelock import Timeout

        try:
            self._lock.acquire()
        except Timeout:
            try:
                holder = self.path.read_text("utf-8", "replace").strip() or "unknown"
            except OSError:
                holder = "unknown"
            raise DatasetError(
                f"{self.path.parent}: another {self.doing} is writing to this folder "
                f"({holder}); wait for it to finish, then run again"
            ) from None
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Removed while still held: a contender that opened the old file sees it
        # unlinked once it gets the lock, and filelock makes it try again.
        with contextlib.suppress(OSError):  # Windows: an open file cannot be removed
            self.path.unlink()
        self._lock.release()
