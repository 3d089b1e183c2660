"""The encoder's journal: which records of an interrupted encode are done.

Two files beside the records while an encode runs:

* ``.pcr-plan.json``: a digest of the source list (names, labels, sizes,
  modification times) and the options. A re-run with the same digest
  resumes; a different one is refused unless the caller overwrites.
* ``.pcr-journal.jsonl``: one line per finished record (or per run of
  sources that were all skipped), appended and fsynced after the record's
  atomic write. On resume the lines are checked against the files on disk;
  the first line that does not hold (torn, malformed, a record missing or of
  the wrong size, a gap in the source order) ends the kept prefix, and
  everything from there is redone.

Both are removed once the manifest is written.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ._atomic import atomic_write
from .discover import SourceItem
from .errors import DatasetError

PLAN = ".pcr-plan.json"
JOURNAL = ".pcr-journal.jsonl"

_ENTRY_KEYS = ("start", "end", "skipped", "notes", "source_bytes", "images", "file")


def plan_digest(items: Sequence[SourceItem], src: Path, options: dict[str, Any]) -> str:
    """SHA-256 over the options and each source's name, label, size and mtime."""
    h = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    for it in items:
        st = (src / it.name).stat()
        line = f"{it.name}\0{it.label}\0{st.st_size}\0{st.st_mtime_ns}\n"
        h.update(line.encode("utf-8", "surrogateescape"))  # names are bytes on POSIX
    return h.hexdigest()


def _valid_entry(entry: Any, out: Path, expected_start: int) -> bool:
    """Whether one journal line describes a finished record still on disk."""
    if not isinstance(entry, dict) or any(k not in entry for k in _ENTRY_KEYS):
        return False
    if entry["start"] != expected_start or not isinstance(entry["end"], int):
        return False
    if entry["file"] is None:  # a run of sources that were all skipped
        return entry["images"] == 0
    name = entry["file"]
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        return False
    rec = out / name
    cum = entry.get("bytes_per_scan")
    return isinstance(cum, list) and bool(cum) and rec.is_file() and rec.stat().st_size == cum[-1]


class Journal:
    """The plan and journal files of one encode in folder *out*.

    Parameters
    ----------
    out : Path
        The output folder.
    digest : str
        :func:`plan_digest` of this run.
    options : dict
        This run's options, recorded in the plan so that a refused resume
        can say which option differs.
    """

    def __init__(self, out: Path, digest: str, options: dict[str, Any]) -> None:
        self.out = out
        self.digest = digest
        self.options = options
        self._fh: TextIO | None = None

    def load(self) -> list[dict[str, Any]]:
        """Entries an earlier run of the same plan finished, verified on disk.

        Raises
        ------
        DatasetError
            If *out* holds an interrupted encode of another plan.
        """
        plan = self.out / PLAN
        if not plan.exists():
            return []
        try:
            old = json.loads(plan.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []  # a torn plan: nothing can be trusted, start over
        if not isinstance(old, dict) or not isinstance(old.get("digest"), str):
            return []  # not a plan this encoder wrote whole: start over
        if old["digest"] != self.digest:
            raise DatasetError(
                f"{self.out}: holds an interrupted encode of different sources or options "
                f"({self._difference(old.get('options'))}); re-run with the same options "
                "to resume, or pass overwrite=True (--overwrite) to start again"
            )
        done: list[dict[str, Any]] = []
        journal = self.out / JOURNAL
        if not journal.exists():
            return done
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                break  # a torn last line: that record is redone
            if not _valid_entry(entry, self.out, done[-1]["end"] if done else 0):
                break
            done.append(entry)
        return done

    def _difference(self, old: Any) -> str:
        if not isinstance(old, dict):
            return "its plan records no options"
        changed = [
            f"{k} {old.get(k)!r} -> {self.options.get(k)!r}"
            for k in sorted(set(old) | set(self.options))
            if old.get(k) != self.options.get(k)
        ]
        if changed:
            return "options differ: " + ", ".join(changed)
        return "same options, but the source files were added, removed or modified"

    def start(self, resumed: Sequence[dict[str, Any]]) -> None:
        """Open the journal for appending; a fresh run rewrites the plan first."""
        journal = self.out / JOURNAL
        if resumed:
            # Drop lines past the kept prefix so the file stays a valid prefix.
            atomic_write(journal, "".join(json.dumps(e) + "\n" for e in resumed))
        else:
            journal.unlink(missing_ok=True)
            atomic_write(
                self.out / PLAN, json.dumps({"digest": self.digest, "options": self.options}) + "\n"
            )
        self._fh = journal.open("a", encoding="utf-8")

    def append(self, entry: dict[str, Any]) -> None:
        """Append one finished entry and make it durable before returning."""
        if self._fh is None:
            raise RuntimeError("Journal.start() was not called")
        self._fh.write(json.dumps(entry) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the journal file (it stays on disk for a resume)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def remove(self) -> None:
        """Remove both files: the encode is complete."""
        self.close()
        (self.out / JOURNAL).unlink(missing_ok=True)
        (self.out / PLAN).unlink(missing_ok=True)
