"""The prefix cache's shared index: every prefix's size, level and last use, and their total.

One SQLite database per cache folder, ``.pcr-cache.sqlite``, that every
process opening the cache shares (write-ahead log: readers do not wait for
writers, and a transaction is all or nothing, also after a crash). Table
``entries`` holds a row per cached prefix (dataset folder, file name, bytes,
the lowest level whose prefix is that long, last use in nanoseconds); triggers
keep their sum in ``total``, so the size of the cache is one row, and the least
recently used prefix, overall or of one dataset above a level, one step down
an index: no write lists a folder.

The database is rebuilt from the folders (one listing of each) when it is
missing, damaged, of another layout, or was left half built by a crash. Only
a process that holds the cache alone may remove and rebuild it: each process
holds a shared ``flock`` on ``.pcr-cache.sqlite.lock`` while connected, and
the rebuild needs the exclusive one. A process that finds the index gone or
damaged while others use it gets a :class:`~pcr_explore.errors.DatasetError`
saying so, rather than a second index that would count apart from theirs.

What the rows say is kept true by the cache (``storage.cache``): a prefix's
row changes under the lock on its file, before it grows and after it shrinks,
so that a crash in between leaves a row that counts too many bytes, never
too few.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ..errors import DatasetError

if sys.platform == "win32":  # pragma: no cover - no flock: the index is never rebuilt under others
    fcntl = None
else:
    import fcntl

INDEX = ".pcr-cache.sqlite"
_SCHEMA = "1"
_BUSY_SECONDS = 300.0  # a rebuild lists every folder inside one transaction

# (file name, bytes, level or None, last use in ns) of one prefix
Row = tuple[str, int, int | None, int]
# (dataset folder name, its manifest digest or None, its prefixes' rows)
FolderRows = tuple[str, str | None, Iterable[Row]]
T = TypeVar("T")

# One script, one transaction (executescript commits any transaction open before it).
_TABLES = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS folders (folder TEXT PRIMARY KEY, manifest_sha256 TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entries (
    folder TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL, level INTEGER,
    used INTEGER NOT NULL, PRIMARY KEY (folder, name)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_by_use ON entries (used, folder, name);
CREATE INDEX IF NOT EXISTS entries_by_level ON entries (folder, level, used, name);
CREATE TABLE IF NOT EXISTS total (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO total VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS entries_in AFTER INSERT ON entries
    BEGIN UPDATE total SET bytes = bytes + NEW.size; END;
CREATE TRIGGER IF NOT EXISTS entries_out AFTER DELETE ON entries
    BEGIN UPDATE total SET bytes = bytes - OLD.size; END;
CREATE TRIGGER IF NOT EXISTS entries_resized AFTER UPDATE OF size ON entries
    BEGIN UPDATE total SET bytes = bytes + NEW.size - OLD.size; END;
INSERT OR IGNORE INTO meta VALUES ('schema', '1');
COMMIT;
"""

# Connections a forked child inherited: never used nor closed there (SQLite's rule:
# closing one could checkpoint and delete the write-ahead log the parent still uses).
_INHERITED: list[object] = []
_LIVE: weakref.WeakSet[CacheIndex] = weakref.WeakSet()


class IndexDamaged(Exception):
    """The index file is not a database of this layout (internal: it is rebuilt)."""


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether *exc* says the database file is damaged (not busy, not read-only)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name:
        return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return type(exc) is sqlite3.DatabaseError  # pragma: no cover - Python < 3.11


class CacheIndex:
    """The shared index of one cache folder, connected on first use in each process.

    Parameters
    ----------
    root : Path
        The cache folder.
    listing : callable
        Returns every dataset folder's rows, read from the disk: what a
        rebuild fills the index with. Called inside the rebuild's
        transaction, so no write lands between the listing and the rows.

    Raises
    ------
    DatasetError
        On first use, if the index is missing or damaged while other
        processes use the cache.
    OSError, sqlite3.Error
        If the cache folder cannot hold an index (a read-only folder).
    """

    def __init__(self, root: Path, listing: Callable[[], Iterator[FolderRows]]) -> None:
        self.root = Path(root)
        self.path = self.root / INDEX
        self._listing = listing
        self._mutex = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._closer: weakref.finalize[Any, Any] | None = None
        self.rebuilt = 0  # times this process rebuilt the index from the folders

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "listing": self._listing}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"], state["listing"])  # type: ignore[misc]

    # -- connecting ------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        """The connection of the calling process, made on first use."""
        if self._db is None:
            self._connect()
        assert self._db is not None
        return self._db

    def _hold(self, db: sqlite3.Connection, fd: int) -> None:
        """Keep *db* and the lock *fd* until closed, collected, or the process ends."""
        self._db = db
        self._closer = weakref.finalize(self, _release, db, fd)
        _LIVE.add(self)

    def _inherited(self) -> None:
        """In a forked child: leave the parent's connection be, and connect anew on use."""
        if self._closer is not None:
            _INHERITED.append(self._closer.detach())
        self._db = self._closer = None
        self._mutex = threading.RLock()  # another thread may have held it at the fork

    def _connect(self) -> None:
        for _ in range(3):
            fd = os.open(self.root / f"{INDEX}.lock", os.O_RDWR | os.O_CREAT, 0o666)
            alone = _flock(fd, exclusive=True)
            try:
                db = self._open(alone)
            except BaseException:
                os.close(fd)
                raise
            if db is not None:
                if alone:
                    _flock(fd, exclusive=False)  # let others in: the index is whole
                self._hold(db, fd)
                return
            os.close(fd)  # half built by a process that died: try to be the one to finish
        raise DatasetError(_in_use(self.path, "is incomplete"))

    def _open(self, alone: bool) -> sqlite3.Connection | None:
        """A connection to a whole index (rebuilt first when *alone*); None: half built."""
        if not alone and not self.path.exists():
            raise DatasetError(_in_use(self.path, "was removed"))
        if alone and not self.path.exists():
            self._remove_files()  # a write-ahead log left without its database
        try:
            db = self._checked()
        except IndexDamaged as exc:
            if not alone:
                raise DatasetError(_in_use(self.path, f"is damaged ({exc})")) from None
            self._remove_files()
            db = self._checked()
        if _meta(db, "complete") == "1":
            return db
        if not alone:
            db.close()
            return None
        self._rebuild(db)
        return db

    def _checked(self) -> sqlite3.Connection:
        """Connect, set the journal and create the tables; IndexDamaged if it is not ours."""
        db = sqlite3.connect(
            self.path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # A commit is then no fsync: a power cut may lose the last rows, and a
            # row found behind its file is corrected (storage.cache, "mismatch").
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_TABLES)
            schema = _meta(db, "schema")
            if schema != _SCHEMA:
                raise IndexDamaged(f"layout {schema!r}, expected {_SCHEMA!r}")
        except sqlite3.DatabaseError as exc:
            db.close()
            if _damaged(exc):
                raise IndexDamaged(str(exc)) from None
            raise
        except IndexDamaged:
            db.close()
            raise
        return db

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _rebuild(self, db: sqlite3.Connection) -> None:
        """Fill the index from the folders, in one transaction."""
        with _writing(db):
            db.execute("DELETE FROM entries")
            db.execute("DELETE FROM folders")
            for folder, digest, rows in self._listing():
                _put_folder(db, folder, digest, rows)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('complete', '1')")
        self.rebuilt += 1

    def close(self) -> None:
        """Close this process's connection and let go of the index."""
        with self._mutex:
            if self._closer is not None:
                self._closer()
            self._db = self._closer = None

    def _run(self, step: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """*step* on the connection, alone or in one write transaction.

        A database found damaged meanwhile is rebuilt when this process holds
        the cache alone (and *step* run again), else a DatasetError.
        """
        with self._mutex:
            try:
                return _step(self._conn(), step, write)
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise
            self._recover()
            return _step(self._conn(), step, write)

    def _recover(self) -> None:
        """Drop the damaged database and rebuild it, if no other process uses it."""
        self.close()
        fd = os.open(self.root / f"{INDEX}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if not _flock(fd, exclusive=True):
                raise DatasetError(_in_use(self.path, "is damaged"))
            self._remove_files()
            db = self._checked()
            self._rebuild(db)
            _flock(fd, exclusive=False)
        except BaseException:
            os.close(fd)
            raise
        self._hold(db, fd)

    # -- reading ---------------------------------------------------------------------
    def total(self) -> int:
        """Bytes of every prefix the index knows."""
        return self._run(lambda db: int(db.execute("SELECT bytes FROM total").fetchone()[0]))

    def folders(self) -> dict[str, str | None]:
        """The dataset folders the index was filled from, with their manifests' digests."""
        return self._run(
            lambda db: dict(db.execute("SELECT folder, manifest_sha256 FROM folders").fetchall())
        )

    def entries(self) -> dict[tuple[str, str], tuple[int, int | None, int]]:
        """Every row: (size, level, last use) by (folder, name). For checks: O(rows)."""

        def rows(db: sqlite3.Connection) -> dict[tuple[str, str], tuple[int, int | None, int]]:
            got = db.execute("SELECT folder, name, size, level, used FROM entries")
            return {(f, n): (s, k, u) for f, n, s, k, u in got}

        return self._run(rows)

    def oldest(self, keep: tuple[str, str]) -> tuple[str, str] | None:
        """The least recently used prefix other than *keep*, as (folder, name)."""
        row = self._run(
            lambda db: db.execute(
                "SELECT folder, name FROM entries WHERE NOT (folder = ? AND name = ?) "
                "ORDER BY used, folder, name LIMIT 1",
                keep,
            ).fetchone()
        )
        return None if row is None else (str(row[0]), str(row[1]))

    def oldest_above(self, folder: str, level: int, top: int, keep: str) -> str | None:
        """The least recently used prefix of *folder* longer than its level *level* needs.

        One lookup per level above *level* (up to *top* and beyond), each a
        step down the index by (folder, level, use): no scan of the rows.
        """

        def heads(db: sqlite3.Connection) -> list[tuple[int, str]]:
            out = []
            for k in range(level + 1, top + 2):
                row = db.execute(
                    "SELECT used, name FROM entries WHERE folder = ? AND level = ? "
                    "AND name != ? ORDER BY used, name LIMIT 1",
                    (folder, k, keep),
                ).fetchone()
                if row is not None:
                    out.append((int(row[0]), str(row[1])))
            return out

        found = self._run(heads)
        return min(found)[1] if found else None

    # -- writing ---------------------------------------------------------------------
    def grow(self, folder: str, name: str, size: int, level: int | None, used: int) -> int:
        """Record that *name* is about to hold *size* bytes; return the bytes it had (0: none)."""

        def step(db: sqlite3.Connection) -> int:
            row = db.execute(
                "SELECT size FROM entries WHERE folder = ? AND name = ?", (folder, name)
            ).fetchone()
            db.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?) ON CONFLICT (folder, name) DO UPDATE "
                "SET size = excluded.size, level = excluded.level, used = excluded.used",
                (folder, name, size, level, used),
            )
            return 0 if row is None else int(row[0])

        return self._run(step, write=True)

    def resize(self, folder: str, name: str, size: int, level: int | None) -> None:
        """Record that *name* now holds *size* bytes (its last use unchanged)."""
        self._run(
            lambda db: db.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?) ON CONFLICT (folder, name) "
                "DO UPDATE SET size = excluded.size, level = excluded.level",
                (folder, name, size, level, time.time_ns()),
            ),
            write=True,
        )

    def touch(self, folder: str, name: str, used: int) -> None:
        """Record that *name* was used at *used* (ns)."""
        self._run(
            lambda db: db.execute(
                "UPDATE entries SET used = ? WHERE folder = ? AND name = ?", (used, folder, name)
            ),
            write=True,
        )

    def forget(self, folder: str, name: str) -> None:
        """Drop the row of *name* (its file is gone, or is not a prefix)."""
        self._run(
            lambda db: db.execute(
                "DELETE FROM entries WHERE folder = ? AND name = ?", (folder, name)
            ),
            write=True,
        )

    def forget_folder(self, folder: str) -> None:
        """Drop every row of *folder*, and the folder itself (its cache was cleared)."""

        def step(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM entries WHERE folder = ?", (folder,))
            db.execute("DELETE FROM folders WHERE folder = ?", (folder,))

        self._run(step, write=True)

    def put_folder(self, folder: str, digest: str | None, rows: Iterable[Row]) -> None:
        """Replace *folder*'s rows by *rows*, read inside the transaction."""
        self._run(lambda db: _put_folder(db, folder, digest, rows), write=True)


def _step(db: sqlite3.Connection, step: Callable[[sqlite3.Connection], T], write: bool) -> T:
    if not write:
        return step(db)
    with _writing(db):
        return step(db)


def _in_use(path: Path, what: str) -> str:
    return (
        f"{path}: the cache index {what} while the cache is in use (by another process, "
        "or another dataset this process opened with that cache_dir); end those and open "
        "it again: it is then rebuilt from the folders"
    )


def _release(db: sqlite3.Connection, fd: int) -> None:
    db.close()
    os.close(fd)  # and with it the shared lock


def _forked_child() -> None:
    for index in list(_LIVE):
        index._inherited()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)


def _put_folder(
    db: sqlite3.Connection, folder: str, digest: str | None, rows: Iterable[Row]
) -> None:
    db.execute("DELETE FROM entries WHERE folder = ?", (folder,))
    db.executemany(
        "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?)",
        ((folder, name, size, level, used) for name, size, level, used in rows),
    )
    db.execute("INSERT OR REPLACE INTO folders VALUES (?, ?)", (folder, digest))


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


@contextmanager
def _writing(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at its start (a read turned write could not wait)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _flock(fd: int, *, exclusive: bool) -> bool:
    """Take the index lock: exclusive without waiting (whether it was got), or shared.

    Shared waits while another process holds it exclusively (rebuilding).
    """
    if fcntl is None:  # pragma: no cover - no flock: each process takes itself to be alone
        return True
    if not exclusive:
        fcntl.flock(fd, fcntl.LOCK_SH)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            raise
        fcntl.flock(fd, fcntl.LOCK_SH)
        return False
    return True
