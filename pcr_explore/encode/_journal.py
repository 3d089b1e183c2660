"""The encoder's journal: which records of an interrupted encode are done.

Two files beside the records while an encode runs:

* ``.pcr-plan.json``: the plan's digest (source names, labels, sizes,
  modification times, and the options; see :mod:`pcr_explore.encode._plan`). A
  re-run with the same digest resumes; a different one is refused unless the
  caller overwrites.
* ``.pcr-journal.jsonl``: one line per finished record (or per planned
  record whose sources were all skipped), appended and fsynced after the
  record's atomic write, in the order records finish (any order, on Dask).
  On resume each line is checked against the plan and the files on disk;
  the first line that does not hold (torn, malformed, not a planned record,
  a record missing or of the wrong size) ends the kept lines, and every
  record not kept is redone.

Both are removed once the manifest is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..errors import DatasetError
from ..storage._atomic import atomic_write
from ._plan import record_file

PLAN = ".pcr-plan.json"
JOURNAL = ".pcr-journal.jsonl"


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in the file at *path*; {} if it is missing, torn or not an object."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


_ENTRY_KEYS = ("slice", "start", "end", "skipped", "notes", "source_bytes", "images", "file")


def _valid_entry(
    entry: Any, out: Path, slices: Sequence[tuple[int, int]], seen: dict[int, Any]
) -> bool:
    """Whether one journal line describes a planned record still on disk."""
    if not isinstance(entry, dict) or any(k not in entry for k in _ENTRY_KEYS):
        return False
    i = entry["slice"]
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(slices) or i in seen:
        return False
    if [entry["start"], entry["end"]] != list(slices[i]):
        return False
    if entry["file"] is None:  # a planned record whose sources were all skipped
        return entry["images"] == 0
    if entry["file"] != record_file(i):
        return False
    rec = out / entry["file"]
    cum = entry.get("bytes_per_scan")
    return isinstance(cum, list) and bool(cum) and rec.is_file() and rec.stat().st_size == cum[-1]


class Journal:
    """The plan and journal files of one encode in folder *out*.

    Parameters
    ----------
    out : Path
        The output folder.
    digest : str
        The digest of this run's plan (:class:`~pcr_explore.encode._plan.EncodePlan`).
    options : dict
        This run's options, recorded in the plan so that a refused resume
        can say which option differs.
    """

    def __init__(self, out: Path, digest: str, options: dict[str, Any]) -> None:
        self.out = out
        self.digest = digest
        self.options = options
        self._fh: TextIO | None = None

    def load(self, slices: Sequence[tuple[int, int]]) -> dict[int, dict[str, Any]]:
        """Entries an earlier run of the same plan finished, verified on disk, by record.

        Raises
        ------
        DatasetError
            If *out* holds an interrupted encode of another plan.
        """
        old = read_json_object(self.out / PLAN)
        if not isinstance(old.get("digest"), str):
            return {}  # none, or not a plan this encoder wrote whole: start over
        if old["digest"] != self.digest:
            raise DatasetError(
                f"{self.out}: holds an interrupted encode of different sources or options "
                f"({self._difference(old.get('options'))}); re-run with the same options "
                "to resume, or pass overwrite=True (--overwrite) to start again"
            )
        done: dict[int, dict[str, Any]] = {}
        journal = self.out / JOURNAL
        if not journal.exists():
            return done
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                break  # a torn last line: that record is redone
            if not _valid_entry(entry, self.out, slices, done):
                break
            done[entry["slice"]] = entry
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

    def start(self, resumed: dict[int, dict[str, Any]]) -> None:
        """Open the journal for appending; a fresh run rewrites the plan first."""
        journal = self.out / JOURNAL
        if resumed:
            # Drop lines past the kept ones so that every line stays valid.
            atomic_write(journal, "".join(json.dumps(e) + "\n" for e in resumed.values()))
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
