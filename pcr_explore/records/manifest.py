"""The dataset manifest: ``manifest.json`` beside the record files.

It names the records in order with their image counts, cumulative bytes per
scan level and header checksums, the scan script, the class names, the source
size, and the files the encoder skipped or converted. The encoder writes it last, so a
folder without one is an unfinished encode.
"""

from __future__ import annotations

import re
import unicodedata
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .._public import public
from ..errors import CorruptRecordError, DatasetError, ScanScriptError
from ..jpeg.scan_script import ScanScript, script_from_record
from .format import RecordHeader

__all__ = [
    "Manifest",
    "RecordEntry",
    "MANIFEST",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "NUM_LEVELS",
    "check_manifest",
    "check_header",
    "check_record_name",
]

MANIFEST = "manifest.json"
FORMAT_NAME = "pcr-explore-dataset"
FORMAT_VERSION = 2
_READABLE = (1, 2)  # version 1: no scan_script field, the standard script
NUM_LEVELS = 10  # levels of the standard scan script (the default)


_HEX8 = re.compile(r"[0-9a-f]{8}")
_RECORD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


def check_record_name(name: object) -> str:
    """Return *name* if it is a safe record file name, else raise ``ValueError``.

    A record name is joined to the dataset's folder, path or URL, so it must
    name a file *in* that folder however it is read: after URL-decoding (as
    many times as it changes) and Unicode normalisation it must still be the
    same plain name, with no separator, no ``..``, no scheme or drive
    (``:``), no leading dot and no control character.

    Examples
    --------
    >>> check_record_name("record-00000.pcr")
    'record-00000.pcr'
    >>> check_record_name("%2e%2e%2fsecret.pcr")
    Traceback (most recent call last):
    ...
    ValueError: unsafe file name '%2e%2e%2fsecret.pcr' (URL-decodes to '../secret.pcr')
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"no file name (file: {name!r:.60})")
    decoded = name
    for _ in range(8):  # %252e -> %2e -> .
        step = urllib.parse.unquote(decoded, errors="replace")
        if step == decoded:
            break
        decoded = step
    if decoded != name:
        raise ValueError(f"unsafe file name {name!r:.60} (URL-decodes to {decoded!r:.60})")
    if unicodedata.normalize("NFKC", name) != name or not _RECORD_NAME.fullmatch(name):
        raise ValueError(
            f"unsafe file name {name!r:.60} (letters, digits, '_', '.', '-' only, "
            "not starting with '.' or '-')"
        )
    if ".." in name:
        raise ValueError(f"unsafe file name {name!r:.60} (contains '..')")
    return name


_MAX_INT = (1 << 63) - 1  # what a record offset (u64, read as int64) can hold


def _int(value: object, what: str, minimum: int = 0) -> int:
    # JSON numbers only: 5.0, "5", true and 1e999 are all refused, and so is
    # a count no file offset can reach.
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r:.60}")
    if value > _MAX_INT:
        raise ValueError(f"{what} is {value:.3g}, more than a file offset can hold")
    return value


@public("pcr_explore.records")
def check_manifest(m: object, path: str) -> None:
    """Validate a parsed manifest, field by field.

    Parameters
    ----------
    m : object
        The parsed JSON.
    path : str
        Name used in messages.

    Raises
    ------
    DatasetError
        Naming *path*, the field and the value of the first problem found.

    Examples
    --------
    >>> check_manifest({"format": "x"}, "m.json")
    Traceback (most recent call last):
    ...
    pcr_explore.DatasetError: m.json: not a PCR dataset manifest (format field missing)
    """
    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise DatasetError(f"{path}: not a PCR dataset manifest (format field missing)")
    if m.get("format_version") not in _READABLE:
        raise DatasetError(
            f"{path}: manifest version {m.get('format_version')!r:.40}; "
            f"this reader knows {', '.join(map(str, _READABLE))}"
        )
    try:
        _check_fields(m)
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise DatasetError(f"{path}: malformed manifest: {what}") from exc


def _check_fields(m: dict[str, Any]) -> None:
    s = _int(m["num_scans"], "num_scans", 1)
    if s > 64:
        raise ValueError(f"num_scans must be at most 64, got {s}")
    if m["format_version"] >= 2:
        entry = m["scan_script"]
        if not isinstance(entry, dict) or not isinstance(entry.get("scans"), str):
            raise ValueError(f"scan_script must be an object with 'scans' text, got {entry!r:.60}")
        try:
            script = script_from_record(entry["scans"], source="scan_script")
        except ScanScriptError as exc:
            raise ValueError(str(exc)) from None
        if script.num_levels != s:
            raise ValueError(f"num_scans is {s}, but the scan script has {script.num_levels} scans")
    classes = m["classes"]
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise ValueError(f"classes must be a list of strings, got {classes!r:.60}")
    records = m["records"]
    if not isinstance(records, list):
        raise ValueError(f"records must be a list, got {type(records).__name__}")
    seen: set[str] = set()
    total = 0
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise ValueError(f"record entry {i} must be an object, got {r!r:.60}")
        try:
            name = check_record_name(r["file"])
        except ValueError as exc:
            raise ValueError(f"record entry {i}: {exc}") from None
        if name in seen:
            raise ValueError(f"record entry {i} names {name!r} a second time")
        seen.add(name)
        total += _int(r["images"], f"record entry {i} images", 1)
        head = _int(r["header_bytes"], f"record entry {i} header_bytes", 1)
        cum = r["bytes_per_scan"]
        if not isinstance(cum, list) or len(cum) != s:
            n = len(cum) if isinstance(cum, list) else "no"
            raise ValueError(f"record entry {i} has {n} levels, expected {s}")
        cum = [_int(v, f"record entry {i} bytes_per_scan", 1) for v in cum]
        if any(b < a for a, b in zip(cum, cum[1:])) or cum[0] < head:
            raise ValueError(f"record entry {i} has inconsistent bytes_per_scan {cum}")
        if not isinstance(r["checksum"], str) or not _HEX8.fullmatch(r["checksum"]):
            raise ValueError(f"record entry {i} checksum must be 8 hex digits")
    if "source_bytes" in m:
        _int(m["source_bytes"], "source_bytes")
    for key in ("skipped", "conversions"):
        listed = m.get(key, [])
        if not isinstance(listed, list) or not all(isinstance(e, dict) for e in listed):
            raise ValueError(f"{key} must be a list of objects, got {listed!r:.60}")
    if "images" in m and _int(m["images"], "images") != total:
        raise ValueError(f"images is {m['images']}, but the records hold {total}")


def _script(m: dict[str, Any], path: str) -> ScanScript:
    """The scan script of a checked manifest (version 1: the standard one)."""
    entry = m.get("scan_script")
    return script_from_record(entry["scans"] if entry else None, source=path)


@public("pcr_explore.records")
@dataclass(frozen=True)
class RecordEntry:
    """What the manifest says about one record file.

    Attributes
    ----------
    file : str
        The record's file name, in the dataset's folder (checked safe).
    images : int
        Images it holds.
    header_bytes : int
        Length of its header.
    bytes_per_scan : tuple of int
        Cumulative bytes of the record (header included) at levels 1..num_scans:
        the prefix each level reads.
    checksum : str
        CRC-32 of its header, 8 hex digits.
    """

    file: str
    images: int
    header_bytes: int
    bytes_per_scan: tuple[int, ...]
    checksum: str

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> RecordEntry:
        """The entry of a checked manifest."""
        return cls(
            file=entry["file"],
            images=int(entry["images"]),
            header_bytes=int(entry["header_bytes"]),
            bytes_per_scan=tuple(int(b) for b in entry["bytes_per_scan"]),
            checksum=entry["checksum"],
        )


@public("pcr_explore.records")
@dataclass(frozen=True)
class Manifest:
    """A dataset's ``manifest.json``, checked field by field and typed.

    Build it with :meth:`from_json`, which runs every check of
    :func:`check_manifest` first.

    Attributes
    ----------
    version : int
        The manifest format version.
    num_scans : int
        Scan levels of every image.
    scan_script : ScanScript
        The scans every image is stored in (version 1: the standard script).
    classes : tuple of str
        Class names, indexed by label.
    records : tuple of RecordEntry
        The record files, in order.
    images : int
        Images in all records.
    source_bytes : int
        Bytes of the source files encoded (0 where not recorded).
    skipped : tuple of dict
        Files the encoder skipped (``file``, ``issue``).
    conversions : tuple of dict
        Files the encoder noted something about (``file``, ``note``,
        ``lossless``): a lossy re-encode (PNG, CMYK, ...), the first frame
        of an animation, an EXIF rotation.
    raw : mapping
        The parsed JSON as it was, for the fields above don't cover
        (``source``, ``options``).
    """

    version: int
    num_scans: int
    scan_script: ScanScript
    classes: tuple[str, ...]
    records: tuple[RecordEntry, ...]
    images: int
    source_bytes: int = 0
    skipped: tuple[dict[str, Any], ...] = ()
    conversions: tuple[dict[str, Any], ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, m: object, path: str) -> Manifest:
        """Check a parsed manifest (see :func:`check_manifest`) and type it.

        Raises
        ------
        DatasetError
            Naming *path*, the field and the value of the first problem found.

        Examples
        --------
        >>> Manifest.from_json({"format": "x"}, "m.json")
        Traceback (most recent call last):
        ...
        pcr_explore.DatasetError: m.json: not a PCR dataset manifest (format field missing)
        """
        check_manifest(m, path)
        fields = cast(dict[str, Any], m)
        records = tuple(RecordEntry.from_json(r) for r in fields["records"])
        return cls(
            version=int(fields["format_version"]),
            num_scans=int(fields["num_scans"]),
            scan_script=_script(fields, path),
            classes=tuple(fields["classes"]),
            records=records,
            images=sum(r.images for r in records),
            source_bytes=int(fields.get("source_bytes", 0)),
            skipped=tuple(fields.get("skipped", [])),
            conversions=tuple(_conversion(c) for c in fields.get("conversions", [])),
            raw=fields,
        )

    @property
    def lossy_conversions(self) -> tuple[dict[str, Any], ...]:
        """The sources re-encoded with loss: their full level is that copy, not the file."""
        return tuple(c for c in self.conversions if not c["lossless"])


def _conversion(c: dict[str, Any]) -> dict[str, Any]:
    """A conversion entry with its three fields.

    Manifests written before ``lossless`` was recorded noted only CMYK
    conversions among the lossy ones.
    """
    note = str(c.get("note", ""))
    lossless = c.get("lossless", not note.startswith("CMYK"))
    return {"file": str(c.get("file", "?")), "note": note, "lossless": bool(lossless)}


def check_header(
    entry: RecordEntry, h: RecordHeader, path: str, classes: Sequence[str], script: ScanScript
) -> None:
    """Cross-check a record's header against its manifest entry and the dataset.

    Raises
    ------
    CorruptRecordError
        If the header's checksum, image count, scan group sizes or scan
        script differ from what the manifest says about this record.
    DatasetError
        If a label has no class name.
    """
    if f"{h.header_crc:08x}" != entry.checksum or h.num_images != entry.images:
        raise CorruptRecordError(
            f"{path}: header does not match the manifest's entry for this record"
        )
    if h.num_scans != len(entry.bytes_per_scan) or h.cumulative_bytes() != list(
        entry.bytes_per_scan
    ):
        raise CorruptRecordError(
            f"{path}: scan group sizes {h.cumulative_bytes()} disagree with the "
            f"manifest's bytes_per_scan {list(entry.bytes_per_scan)}"
        )
    if h.scan_script != script.text() and (
        script_from_record(h.scan_script, source=path).color != script.color
    ):
        raise CorruptRecordError(
            f"{path}: the record's scan script differs from the manifest's ({script.name})"
        )
    if h.num_images and int(h.labels.max()) >= len(classes):
        raise DatasetError(
            f"{path}: label {int(h.labels.max())} has no class name; the manifest "
            f"lists {len(classes)} classes"
        )
