"""What one file holds: hash, format, mode, size, JPEG coding, bytes per level, issues.

:func:`inspect_file` runs in a worker process per file of a folder and never
raises on bad data: a broken file becomes a :class:`FileInfo` with issues.
:func:`inspect_dataset` gathers the same facts for a PCR dataset's images,
reading them once, in order.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import JPEGError, PCRError, ScanScriptError
from ..jpeg import ProgressiveJPEG, check_scan_script, split_scans
from ..manifest import NUM_LEVELS
from ..metrics import WINDOW
from ..reader import PCRDataset
from ..sources import gray_scans_at
from ..transcode import transcode

__all__ = [
    "BASELINE",
    "NOT_JPEG",
    "OTHER_JPEG",
    "OTHER_PROGRESSIVE",
    "STANDARD",
    "TINY_SIDE",
    "UNREADABLE",
    "FileInfo",
    "FileJob",
    "inspect_dataset",
    "inspect_file",
]

# Images with a side below this are reported: too small for most training
# resolutions, and near or below SSIM's 11-pixel window.
TINY_SIDE = 32

_SUFFIX_FORMATS = {
    ".jpg": ("JPEG", "MPO"),
    ".jpeg": ("JPEG", "MPO"),
    ".jpe": ("JPEG", "MPO"),
    ".jfif": ("JPEG", "MPO"),
    ".png": ("PNG",),
    ".webp": ("WEBP",),
    ".bmp": ("BMP",),
    ".tif": ("TIFF",),
    ".tiff": ("TIFF",),
    ".gif": ("GIF",),
}

# How a source file is coded, as the audit counts it.
BASELINE = "baseline JPEG"
STANDARD = "standard progressive JPEG"
OTHER_PROGRESSIVE = "progressive JPEG, other scan script"
OTHER_JPEG = "other JPEG coding"
NOT_JPEG = "not JPEG"
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class FileJob:
    """One file to inspect, as a worker receives it."""

    index: int
    path: str
    name: str
    backend: str
    quality: int


@dataclass(frozen=True)
class FileInfo:
    """What inspection learned about one file (``level_bytes`` None: unreadable)."""

    index: int
    name: str
    file_bytes: int = 0
    digest: str = ""
    format: str = ""
    mode: str = ""
    width: int = 0
    height: int = 0
    coding: str = UNREADABLE
    level_bytes: np.ndarray | None = None
    issues: tuple[str, ...] = ()
    conversion: str = ""


def _coding(pj: ProgressiveJPEG, name: str) -> tuple[str, str]:
    """Return (coding category, issue or "") of a JPEG file, from its markers alone."""
    if pj.sof in (0xC0, 0xC1):
        return BASELINE, ""
    if not pj.progressive:
        return OTHER_JPEG, f"JPEG frame type 0x{pj.sof:02X} (lossless, arithmetic or hierarchical)"
    try:
        check_scan_script(pj, source=name)
    except ScanScriptError as exc:
        return OTHER_PROGRESSIVE, f"progressive with a non-standard scan script: {exc}"
    return STANDARD, ""


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _tiny(w: int, h: int) -> str:
    return f"tiny image {w}x{h} px (a side under {TINY_SIDE} px; SSIM's window is {WINDOW} px)"


def inspect_file(job: FileJob) -> FileInfo:
    """Hash, identify, check and transcode one file; never raises on bad data.

    Parameters
    ----------
    job : FileJob
        The file, its name in the report and how to transcode it.

    Returns
    -------
    FileInfo
        The file's facts; ``issues`` says what is wrong with it, and
        ``level_bytes`` (bytes at each scan level after the progressive
        transcode, from the scan offsets, without decoding) is None when it
        cannot be transcoded.
    """
    name = job.name
    try:
        raw = Path(job.path).read_bytes()
    except OSError as exc:
        return FileInfo(job.index, name, issues=(f"cannot read file: {exc.strerror or exc}",))
    base: dict[str, Any] = {
        "index": job.index,
        "name": name,
        "file_bytes": len(raw),
        "digest": hashlib.sha256(raw).hexdigest(),
    }
    if not raw:
        return FileInfo(**base, issues=("empty file",))
    issues: list[str] = []
    try:
        with Image.open(io.BytesIO(raw)) as im:
            fmt, mode, (w, h) = im.format or "?", im.mode, im.size
            base.update(format=fmt, mode=mode, width=w, height=h)
            im.load()  # a full decode finds truncated or corrupt data
    except UnidentifiedImageError:
        return FileInfo(
            **base, issues=(f"not a recognised image format (first bytes: {raw[:8].hex(' ')})",)
        )
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        return FileInfo(**base, issues=(f"cannot decode: {_first_line(exc)}",))
    suffix = Path(name).suffix.lower()
    expected = _SUFFIX_FORMATS.get(suffix, ())
    if expected and fmt not in expected:
        issues.append(f"a {fmt} file named {suffix}")
    coding = NOT_JPEG
    if fmt in ("JPEG", "MPO"):
        try:
            coding, odd = _coding(split_scans(raw, source=name), name)
        except JPEGError as exc:
            return FileInfo(**base, coding=UNREADABLE, issues=(*issues, str(exc)))
        if odd:
            issues.append(odd)
    if min(w, h) < TINY_SIDE:
        issues.append(_tiny(w, h))
    if mode == "CMYK":
        issues.append(
            "CMYK image: converted to RGB with a lossy re-encode (its 18-scan progression "
            "would not share levels with the others)"
        )
    try:
        res = transcode(raw, backend=job.backend, quality=job.quality, name=name)  # type: ignore[arg-type]
    except (PCRError, OSError, ValueError) as exc:
        return FileInfo(
            **base, coding=coding, issues=(*issues, f"cannot transcode: {_first_line(exc)}")
        )
    pj = res.jpeg
    ends = np.asarray(pj.scan_ends, np.int64) + 2  # + EOI
    if pj.num_components == 1:
        ends = ends[[gray_scans_at(k) - 1 for k in range(1, NUM_LEVELS + 1)]]
    conversion = res.note
    if not res.lossless:
        conversion = res.note or f"{fmt} {mode} source encoded as JPEG (quality {job.quality})"
    return FileInfo(
        **base, coding=coding, level_bytes=ends, issues=tuple(issues), conversion=conversion
    )


def inspect_dataset(ds: PCRDataset, progress: Any) -> list[FileInfo]:
    """Return the facts of every image of a PCR dataset, read once, in order.

    Parameters
    ----------
    ds : PCRDataset
        The dataset.
    progress : tqdm bar
        Advanced by one per image.

    Returns
    -------
    list of FileInfo
        One per image, in index order; ``level_bytes`` from the dataset's index.
    """
    names = ds.names
    out: list[FileInfo] = []
    for idx, data, _label in ds.iter_jpeg(None):
        name = names[idx]
        try:
            pj = split_scans(data, source=name)
            coding, odd = _coding(pj, name)
        except JPEGError as exc:
            out.append(FileInfo(idx, name, file_bytes=len(data), issues=(str(exc),)))
            progress.update(1)
            continue
        issues = [odd] if odd else []
        if min(pj.width, pj.height) < TINY_SIDE:
            issues.append(f"tiny image {pj.width}x{pj.height} px (a side under {TINY_SIDE} px)")
        out.append(
            FileInfo(
                idx,
                name,
                file_bytes=len(data),
                digest=hashlib.sha256(data).hexdigest(),
                format="JPEG",
                mode="L" if pj.num_components == 1 else "RGB",
                width=pj.width,
                height=pj.height,
                coding=coding,
                level_bytes=ds.level_bytes(idx),
                issues=tuple(issues),
            )
        )
        progress.update(1)
    return out
