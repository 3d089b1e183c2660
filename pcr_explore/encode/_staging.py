"""The folder a tar, Parquet or Hugging Face input is unpacked into before it is encoded.

Where. Beside a local output, under a name made of the output's and the
input's identity: ``.<output>.pcr-staging-<16 hex digits>``, the digits
from the output's path and what names the input's content (each shard's or
file's path, size and modification time, a URL's address, a dataset's
fingerprint; and the columns read). A re-run of an interrupted encode
therefore finds the same folder, and every staged file gets the same
modification time, so the plan (which covers names, sizes and times) is the
same and the encode resumes from its journal as a folder encode does. A
changed input gets another folder, and its plan another digest.

Whole or not. A marker, ``.pcr-staging.json`` (hidden, so never a source),
names the output and says whether staging finished. A folder staged whole
is encoded again as it is; one staged in part (a killed run) is emptied and
staged again.

Clean-up. The encoder holds the output's lock while it stages and encodes.
It removes the output's staging folders (this run's, and any a killed run
left for another input) once the manifest is written, and before staging
when asked to overwrite; it keeps this run's folder when an interrupted
encode left a journal to resume. Only folders of that exact name form whose
marker names the output are ever removed.

Writing. Samples are written as they are read, so memory holds one sample,
not the dataset. Integer classes go into unpadded folders (``7``) while the
largest is not known yet, and are renamed to their padded names (``007``)
at the end; nothing else can take those names, since staged file names end
in an image suffix and integer labels never mix with names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ..storage._atomic import atomic_write
from ._journal import read_json_object

__all__ = ["Sample", "Staging", "remove_staging", "shown", "staging_path"]

MARKER = ".pcr-staging.json"
# Every staged file's modification time (2000-01-01): the plan's digest covers
# it, and the same input staged twice must give the same plan.
_MTIME_NS = 946_684_800 * 10**9


def shown(value: Any) -> str:
    """*value*'s repr, cut short for a one-line message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Sample:
    """One image to stage: its file name, its bytes and its checked label."""

    name: str
    data: bytes
    label: str | int | None
    where: str  # the shard and member (or file and row) the label came from


def staging_path(out: Path, identity: Any) -> Path:
    """The staging folder of encoding the input of *identity* (JSON data) into the folder *out*."""
    key = json.dumps([str(out), identity], sort_keys=True, default=str)
    return out.parent / f".{out.name}.pcr-staging-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def remove_staging(out: Path, *, keep: Path | None = None) -> None:
    """Remove the staging folders of the output folder *out* but *keep* (call under its lock)."""
    name = re.compile(rf"\.{re.escape(out.name)}\.pcr-staging-[0-9a-f]{{16}}")
    for p in out.parent.iterdir():
        found = p != keep and name.fullmatch(p.name)
        if found and read_json_object(p / MARKER).get("output") == str(out):
            shutil.rmtree(p, ignore_errors=True)


class Staging:
    """A staging folder being filled for the output *out* (None: a private temporary one)."""

    def __init__(self, folder: Path, out: Path | None) -> None:
        self.folder = folder
        self.out = None if out is None else str(out)
        self.count = 0
        self._taken: set[str] = set()
        self._classes: dict[str | int, str] = {}
        self._first: dict[type, tuple[Any, str]] = {}  # int / str: its first label and where

    def whole(self) -> bool:
        """Whether an earlier run staged this folder to the end."""
        return read_json_object(self.folder / MARKER) == {"output": self.out, "complete": True}

    def start(self) -> None:
        """Empty the folder (what a killed run staged in part) and mark it as being staged."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        atomic_write(self.folder / MARKER, json.dumps({"output": self.out, "complete": False}))

    def add(self, sample: Sample) -> None:
        """Write *sample* into its class folder under a name not taken yet."""
        sub = "" if sample.label is None else self._class_folder(sample.label, sample.where)
        stem, _, ext = sample.name.rpartition(".")
        candidate, tries = sample.name, 0
        while True:
            rel = f"{sub}/{candidate}" if sub else candidate
            if rel not in self._taken:
                self._taken.add(rel)
                try:
                    with open(self.folder / rel, "xb") as f:
                        f.write(sample.data)
                    os.utime(self.folder / rel, ns=(_MTIME_NS, _MTIME_NS))
                    break
                except FileExistsError:  # a name this file system folds onto one staged
                    pass
            tries += 1  # two images of one name: keep both
            candidate = f"{stem}-{self.count}" + (f"-{tries}" if tries > 1 else "") + f".{ext}"
        self.count += 1

    def _class_folder(self, label: str | int, where: str) -> str:
        if label in self._classes:
            return self._classes[label]
        kind = int if isinstance(label, int) else str
        self._first.setdefault(kind, (label, where))
        if len(self._first) > 1:
            (a, a_where), (b, b_where) = self._first[int], self._first[str]
            raise DatasetError(
                f"{b_where}: class name {shown(b)} in a dataset with integer labels "
                f"(first: {a_where}: {a}); labels must be all integers or all names, since "
                "integers are stored as zero-padded names and could merge with one"
            )
        sub = str(label)
        try:
            (self.folder / sub).mkdir()
        except FileExistsError:
            other = next(
                (
                    f"class {shown(c)}"
                    for c, s in self._classes.items()
                    if os.path.samefile(self.folder / s, self.folder / sub)
                ),
                "an image's file name",
            )
            raise DatasetError(
                f"{where}: class {shown(label)} and {other} are one folder name on this "
                "file system (it folds case or Unicode forms); rename one of them"
            ) from None
        self._classes[label] = sub
        return sub

    def finish(self) -> None:
        """Give the integer classes their zero-padded names, and mark the folder whole."""
        ints = [c for c in self._classes if isinstance(c, int)]
        width = len(str(max(ints))) if ints else 0
        for c in ints:
            padded = f"{c:0{width}d}"
            if padded != self._classes[c]:
                (self.folder / self._classes[c]).rename(self.folder / padded)
        atomic_write(self.folder / MARKER, json.dumps({"output": self.out, "complete": True}))
