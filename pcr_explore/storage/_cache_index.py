"""The prefix cache's index: the one record of what a cache folder holds, and its one lock.

One SQLite database per cache folder, ``.pcr-cache.sqlite``, shared by every
process that opens the cache. Table ``prefixes`` holds a row per cached
prefix (dataset folder, file name, bytes, the lowest level whose prefix is
that long, last use in nanoseconds, and its rank: where it stands in the
order a dataset's records are kept in when a pass cannot fit); table
``datasets`` the dataset folders the rows were taken from, with the digest
of the manifest whose levels they carry (None: levels unknown). The size of
the cache is the sum of the rows, never a running total kept beside them;
the least recently used prefix, overall or of one dataset above a level,
and the last ranked prefix of a dataset are each one step down an index.

The database's write transactions (``BEGIN IMMEDIATE``, rollback journal) are
the cache's lock: :mod:`.cache` changes a prefix file and its row inside one,
so no two processes ever change the cache at once, and a process killed in
the middle leaves the rows as they were before it.

The index is filled from the folders (one listing of each) in the transaction
that finds it empty or of another layout (``PRAGMA user_version``), so one
process fills it and the others wait. A database found damaged is removed and
made again the same way; every transaction first checks that the file at the
index's path is the one it is connected to, so a process whose index was
removed or replaced meanwhile connects to the new one.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

INDEX = ".pcr-cache.sqlite"
LAYOUT = 3  # PRAGMA user_version of this layout; 0 is a new (empty) database
_BUSY_SECONDS = 300.0  # filling the index lists every folder inside one transaction

# (file name, bytes, level or None, last use in ns) of one prefix
Row = tuple[str, int, int | None, int]
# (dataset folder name, its manifest digest or None, its prefixes' rows)
FolderRows = tuple[str, str | None, Iterable[Row]]
T = TypeVar("T")

_TABLES = (
    "CREATE TABLE datasets (folder TEXT PRIMARY KEY, manifest_sha256 TEXT) WITHOUT ROWID",
    "CREATE TABLE prefixes (folder TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL, "
    "level INTEGER, used INTEGER NOT NULL, rank INTEGER NOT NULL, "
    "PRIMARY KEY (folder, name)) WITHOUT ROWID",
    "CREATE INDEX prefixes_by_use ON prefixes (used, folder, name)",
    "CREATE INDEX prefixes_by_rank ON prefixes (folder, rank)",
    "CREATE INDEX prefixes_by_level ON prefixes (folder, level, used, name)",
)

# Connections a forked child inherited: never used nor closed there (SQLite's rule:
# closing one could roll back a transaction the parent has open).
_INHERITED: list[sqlite3.Connection] = []


def rank(name: str) -> int:
    """Where prefix *name* stands in the order a dataset's records are kept in: lower stays.

    A hash of the name, so every process agrees on it and it is spread evenly
    over the records whatever their order in the manifest.
    """
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=7).digest(), "big")


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether *exc* says the database file is damaged (not busy, not read-only)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name:
        return str(name).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return type(exc) is sqlite3.DatabaseError  # pragma: no cover - Python < 3.11


def refuse_link(path: Path) -> None:
    """Raise ELOOP if *path* is a symbolic link (SQLite and lock files would follow it)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise OSError(errno.ELOOP, "a symbolic link where the cache keeps its own file", str(path))


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction: committed if the block ends, rolled back if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class CacheIndex:
    """The shared index of one cache folder, connected on first use in each process.

    Parameters
    ----------
    root : Path
        The cache folder.
    listing : callable
        Returns every dataset folder's rows, read from the disk: what a new
        index is filled with (inside the transaction that fills it).

    Raises
    ------
    OSError, sqlite3.Error
        On use, if the folder cannot hold the index (read-only, full), or the
        index or its journal is a symbolic link.
    """

    def __init__(self, root: Path, listing: Callable[[], Iterator[FolderRows]]) -> None:
        self.root = Path(root)
        self.path = self.root / INDEX
        self._listing = listing
        self._mutex = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._file: tuple[int, int] | None = None  # (device, inode) connected to
        self.rebuilt = 0  # times this process filled the index from the folders

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "listing": self._listing}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"], state["listing"])  # type: ignore[misc]

    def close(self) -> None:
        """Close this process's connection (the next use connects again)."""
        self._forked()
        with self._mutex:
            if self._db is not None:
                self._db.close()
            self._db = None

    def _forked(self) -> None:
        """In a forked child: leave the parent's connection (and lock) be, and connect anew."""
        if self._pid != os.getpid():
            if self._db is not None:
                _INHERITED.append(self._db)
            self._db, self._pid, self._mutex = None, os.getpid(), threading.RLock()

    def run(self, step: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """*step* on the connection, alone or (*write*) in one write transaction: the lock.

        A database found damaged is made again from the folders and *step*
        run once more.
        """
        self._forked()
        with self._mutex:
            try:
                return self._step(step, write)
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise
            self._replace()
            return self._step(step, write)

    def _step(self, step: Callable[[sqlite3.Connection], T], write: bool) -> T:
        db = self._conn()
        if not write:
            return step(db)
        with _transaction(db):
            return step(db)

    def _conn(self) -> sqlite3.Connection:
        """The connection of this process to the file now at the index's path."""
        try:
            st = os.lstat(self.path)
            now: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            now = None
        if self._db is not None and now == self._file:
            return self._db
        self.close()  # removed or replaced since: connect to what is there now
        for name in (INDEX, f"{INDEX}-journal"):
            refuse_link(self.root / name)
        db = sqlite3.connect(
            self.path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            st = os.lstat(self.path)
            self._file = (st.st_dev, st.st_ino)
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "delete":
                db.execute("PRAGMA journal_mode=DELETE")  # no -wal or -shm for a new file to share
            # No fsync: a process killed mid-transaction still rolls back; only a power
            # cut can damage the file, and a damaged index is filled again from the folders.
            db.execute("PRAGMA synchronous=OFF")
            self._fill(db)
        except BaseException:
            db.close()
            raise
        self._db = db
        return db

    def _fill(self, db: sqlite3.Connection) -> None:
        """Make the tables and fill them from the folders, unless they are of this layout."""
        if db.execute("PRAGMA user_version").fetchone()[0] == LAYOUT:
            return
        with _transaction(db):
            if db.execute("PRAGMA user_version").fetchone()[0] != LAYOUT:  # not meanwhile
                old = db.execute(
                    "SELECT name FROM sqlite_master "
                    "WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                ).fetchall()
                for (table,) in old:  # another layout: its indexes and triggers go with it
                    db.execute(f'DROP TABLE "{table}"')
                for sql in _TABLES:
                    db.execute(sql)
                for folder, digest, rows in self._listing():
                    put_folder(db, folder, digest, rows)
                db.execute(f"PRAGMA user_version = {LAYOUT}")
                self.rebuilt += 1

    def _replace(self) -> None:
        """Remove the damaged database (unless another process did); the next use makes it anew."""
        damaged = self._file
        self.close()
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if (st.st_dev, st.st_ino) == damaged:
            for suffix in ("", "-journal"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)


# -- the statements, each run inside CacheIndex.run -------------------------------------


def row(db: sqlite3.Connection, folder: str, name: str) -> int | None:
    """The bytes the index says prefix *name* holds (None: no row)."""
    got = db.execute(
        "SELECT size FROM prefixes WHERE folder = ? AND name = ?", (folder, name)
    ).fetchone()
    return None if got is None else int(got[0])


def put(
    db: sqlite3.Connection, folder: str, name: str, size: int, level: int | None, used: int | None
) -> None:
    """Set prefix *name*'s bytes and level, and its last use unless *used* is None."""
    db.execute(
        "INSERT INTO prefixes VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (folder, name) DO UPDATE "
        "SET size = excluded.size, level = excluded.level, used = coalesce(?, used)",
        (folder, name, size, level, time.time_ns() if used is None else used, rank(name), used),
    )


def touch(db: sqlite3.Connection, folder: str, name: str, used: int) -> None:
    db.execute("UPDATE prefixes SET used = ? WHERE folder = ? AND name = ?", (used, folder, name))


def forget(db: sqlite3.Connection, folder: str, name: str) -> None:
    db.execute("DELETE FROM prefixes WHERE folder = ? AND name = ?", (folder, name))


def total(db: sqlite3.Connection) -> int:
    """Bytes of every prefix the index holds: the sum of the rows (a negative size is not one)."""
    return int(db.execute("SELECT coalesce(sum(max(size, 0)), 0) FROM prefixes").fetchone()[0])


def oldest(db: sqlite3.Connection, keep: tuple[str, str]) -> tuple[str, str, int] | None:
    """The least recently used prefix other than *keep*: (folder, name, bytes)."""
    got = db.execute(
        "SELECT folder, name, max(size, 0) FROM prefixes WHERE NOT (folder = ? AND name = ?) "
        "ORDER BY used, folder, name LIMIT 1",
        keep,
    ).fetchone()
    return None if got is None else (str(got[0]), str(got[1]), int(got[2]))


def last_kept(db: sqlite3.Connection, folder: str, keep: str) -> tuple[str, int] | None:
    """The prefix of *folder* that is kept last (the highest rank) if it ranks after *keep*.

    (name, bytes), or None where every other prefix of *folder* ranks before *keep*.
    """
    got = db.execute(
        "SELECT name, max(size, 0) FROM prefixes WHERE folder = ? AND rank > ? "
        "ORDER BY rank DESC LIMIT 1",
        (folder, rank(keep)),
    ).fetchone()
    return None if got is None else (str(got[0]), int(got[1]))


def oldest_above(
    db: sqlite3.Connection, folder: str, level: int, top: int, keep: str
) -> tuple[str, int] | None:
    """The least recently used prefix of *folder* beyond its level *level*: (name, bytes).

    One step down the index by (folder, level, use) per level above *level*.
    """
    heads = []
    for k in range(level + 1, top + 2):
        got = db.execute(
            "SELECT used, name, max(size, 0) FROM prefixes WHERE folder = ? AND level = ? "
            "AND name != ? ORDER BY used, name LIMIT 1",
            (folder, k, keep),
        ).fetchone()
        if got is not None:
            heads.append((int(got[0]), str(got[1]), int(got[2])))
    return min(heads)[1:] if heads else None


def folders(db: sqlite3.Connection) -> dict[str, str | None]:
    """The dataset folders the index was filled from, with their manifests' digests."""
    return dict(db.execute("SELECT folder, manifest_sha256 FROM datasets").fetchall())


def rows(db: sqlite3.Connection) -> dict[tuple[str, str], tuple[int, int | None, int]]:
    """Every row: (size, level, last use) by (folder, name)."""
    got = db.execute("SELECT folder, name, size, level, used FROM prefixes")
    return {(f, n): (s, k, u) for f, n, s, k, u in got}


def put_folder(
    db: sqlite3.Connection, folder: str, digest: str | None, rows: Iterable[Row]
) -> None:
    """Replace *folder*'s rows by *rows*."""
    db.execute("DELETE FROM prefixes WHERE folder = ?", (folder,))
    db.executemany(
        "INSERT OR REPLACE INTO prefixes VALUES (?, ?, ?, ?, ?, ?)",
        ((folder, name, size, level, used, rank(name)) for name, size, level, used in rows),
    )
    db.execute("INSERT OR REPLACE INTO datasets VALUES (?, ?)", (folder, digest))


def forget_folder(db: sqlite3.Connection, folder: str) -> None:
    """Drop every row of *folder*, and the folder itself (its cache was cleared)."""
    db.execute("DELETE FROM prefixes WHERE folder = ?", (folder,))
    db.execute("DELETE FROM datasets WHERE folder = ?", (folder,))


def saved_rows(root: Path) -> dict[tuple[str, str], tuple[int, int | None, int]]:
    """Every row of *root*'s index, read without writing anything (empty: no usable index)."""
    path = root / INDEX
    try:
        refuse_link(path)
        if not path.is_file():
            return {}
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=_BUSY_SECONDS)
    except (OSError, sqlite3.Error):
        return {}
    try:
        if db.execute("PRAGMA user_version").fetchone()[0] != LAYOUT:
            return {}
        return rows(db)
    except sqlite3.Error:
        return {}
    finally:
        db.close()
