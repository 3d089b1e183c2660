"""The dataset manifest: ``manifest.json`` beside the record files.

It names the records in order with their image counts, cumulative bytes per
scan level and header checksums, the class names, the source size, and the
files the encoder skipped or converted. The encoder writes it last, so a
folder without one is an unfinished encode.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ._atomic import atomic_write
from .errors import DatasetError

__all__ = [
    "MANIFEST",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "NUM_LEVELS",
    "check_manifest",
    "write_json_atomic",
]

MANIFEST = "manifest.json"
FORMAT_NAME = "pcr-explore-dataset"
FORMAT_VERSION = 1
NUM_LEVELS = 10  # every dataset uses the colour script's levels; see jpeg.GRAY_LEVELS_IN_COLOR


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Write JSON to *path* through a temporary file, fsync and a rename."""
    atomic_write(path, json.dumps(obj, indent=1) + "\n")


def check_manifest(m: Any, path: str) -> None:
    """Validate a parsed manifest.

    Raises
    ------
    DatasetError
        Naming *path* and the first problem found.
    """
    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise DatasetError(f"{path}: not a PCR dataset manifest (format field missing)")
    if m.get("format_version") != FORMAT_VERSION:
        raise DatasetError(
            f"{path}: manifest version {m.get('format_version')!r}; "
            f"this reader knows {FORMAT_VERSION}"
        )
    try:
        s = int(m["num_scans"])
        for i, r in enumerate(m["records"]):
            cum = [int(v) for v in r["bytes_per_scan"]]
            if len(cum) != s:
                raise ValueError(f"record entry {i} has {len(cum)} levels, expected {s}")
            if int(r["images"]) < 1 or int(r["header_bytes"]) < 1:
                raise ValueError(f"record entry {i} has no images or no header")
            name = str(r["file"])
            if "/" in name or "\\" in name or name.startswith("."):
                raise ValueError(f"record entry {i} has an unsafe file name {name!r}")
            if any(b < a for a, b in zip(cum, cum[1:])) or cum[0] < int(r["header_bytes"]):
                raise ValueError(f"record entry {i} has inconsistent bytes_per_scan")
        [str(c) for c in m["classes"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{path}: malformed manifest: {exc}") from exc
