"""What one file holds: hash, format, mode, size, coding, properties, bytes per level, issues.

:func:`inspect_file` runs in a worker process per image and never raises on
bad data: a broken file becomes a :class:`FileInfo` with issues. It decodes
the image once, small (:func:`~pcr_explore.auditing._properties.reduced_image`:
TurboJPEG with libjpeg's warnings as errors where it can), which also finds
truncated or corrupt data, and measures every property on that decode. A
folder's file of the bytes sample is then transcoded (``jpegtran`` for a
JPEG: no decode) for its bytes at each scan level; a PCR dataset's image already is
the progressive JPEG, and its bytes per level come from the record index.
An image of the quality sample has every level measured in the same task,
from that progressive JPEG, so it is read and transcoded once.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import JPEGError, PCRError, ScanScriptError
from ..jpeg import ProgressiveJPEG, split_scans
from ..jpeg._frame import read_frame
from ..jpeg._tjtransform import read_check
from ..jpeg.scan_script import STANDARD as STANDARD_SCRIPT
from ..jpeg.scan_script import ScanScript
from ..jpeg.transcode import MAX_PIXELS, MAX_SOURCE_BYTES, transcode
from ..quality._jobs import ImageJob, Outcome
from ..quality._jobs import measure as measure_levels
from ..quality.metrics import WINDOW
from ._properties import ONE_CHANNEL_MODES, Properties, measure, reduced_image

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
    "SampleSpec",
    "inspect_file",
]

# Images with a side below this are reported: too small for most training
# resolutions, and near or below SSIM's 11-pixel window.
TINY_SIDE = 32

# How a source file is coded, as the audit counts it.
BASELINE = "baseline JPEG"
STANDARD = "standard progressive JPEG"
OTHER_PROGRESSIVE = "progressive JPEG, other scan script"
OTHER_JPEG = "other JPEG coding"
NOT_JPEG = "not JPEG"
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class SampleSpec:
    """How a sampled image is measured at every level (as ``level_quality`` does)."""

    num_scans: int
    script: ScanScript  # the source's scan script (how a grayscale image's levels map)
    luminance: bool = False
    max_pixels: int | None = None


@dataclass(frozen=True)
class FileJob:
    """One image to inspect, as a worker receives it: a file's path, or a dataset's bytes.

    ``sample`` is set for an image of the quality sample: its levels are
    measured too.
    """

    index: int
    name: str
    path: str | None = None
    data: bytes | None = None
    backend: str = "auto"
    quality: int = 90
    sample: SampleSpec | None = None
    script: ScanScript = STANDARD_SCRIPT  # the dataset's (a folder: the standard one)
    transcode: bool = True  # False: a folder's file outside the bytes sample


@dataclass(frozen=True)
class FileInfo:
    """What inspection learned about one image.

    ``issues`` holds ``(type, text)`` pairs; ``level_bytes`` is None when the
    image cannot be transcoded (or, for a dataset image, until the audit
    fills it in from the record index); ``props`` is None when it cannot be
    decoded; ``measured`` holds the quality of every level of an image of
    the quality sample (or why it could not be measured), else None.
    """

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
    issues: tuple[tuple[str, str], ...] = ()
    conversion: str = ""
    lossy: bool = False
    props: Properties | None = None
    measured: Outcome | None = None

    @property
    def broken(self) -> bool:
        """True when the image cannot be read, decoded or transcoded."""
        return any(kind == "bad_file" for kind, _ in self.issues)


def _coding(pj: ProgressiveJPEG, name: str, script: ScanScript) -> tuple[str, str]:
    """Return (coding category, issue or "") of a JPEG file, from its markers alone.

    ``STANDARD`` means the standard script; a dataset's images in its own
    other script are counted as "progressive JPEG, <name> scan script".
    """
    if pj.sof in (0xC0, 0xC1):
        return BASELINE, ""
    if not pj.progressive:
        return OTHER_JPEG, f"JPEG frame type 0x{pj.sof:02X} (lossless, arithmetic or hierarchical)"
    try:
        script.check(pj, source=name)
    except ScanScriptError as exc:
        return OTHER_PROGRESSIVE, f"progressive with another scan script: {exc}"
    return (STANDARD if script.is_standard else f"progressive JPEG, {script.name} scan script"), ""


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _tiny(w: int, h: int) -> str:
    return f"tiny image {w}x{h} px (a side under {TINY_SIDE} px; SSIM's window is {WINDOW} px)"


def _read(job: FileJob) -> tuple[bytes | None, str, int]:
    """Return (bytes or None, why not, size): a regular file of sane size, read whole."""
    if job.data is not None:
        return job.data, "", len(job.data)
    assert job.path is not None  # for mypy: a job has a path or its data
    try:
        # O_NONBLOCK: opening a FIFO named like an image must not wait for a writer
        fd = os.open(job.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None, "not a regular file", 0
            if st.st_size > MAX_SOURCE_BYTES:
                why = f"{st.st_size:,} bytes: larger than any image source allowed"
                return None, why, st.st_size
            return f.read(), "", st.st_size
    except OSError as exc:
        return None, f"cannot read file: {exc.strerror or exc}", 0


def _bad(base: dict[str, Any], text: str, *issues: tuple[str, str]) -> FileInfo:
    return FileInfo(**base, issues=(*issues, ("bad_file", text)))


def inspect_file(job: FileJob) -> FileInfo:
    """Hash, identify, decode once (small), measure, check and transcode one image.

    Never raises on bad data.

    Parameters
    ----------
    job : FileJob
        The image (a file's path, or a dataset image's JPEG bytes), its name
        in the report and how to transcode it.

    Returns
    -------
    FileInfo
        The image's facts and properties; ``issues`` says what is wrong with
        it, and ``level_bytes`` holds a file's bytes at each scan level after
        the progressive transcode, from the scan offsets.
    """
    base: dict[str, Any] = {"index": job.index, "name": job.name}
    raw, why, size = _read(job)
    if raw is None:
        return _bad({**base, "file_bytes": size}, why)
    base.update(file_bytes=len(raw), digest=hashlib.sha256(raw).hexdigest())
    if not raw:
        return _bad(base, "empty file")
    try:
        with warnings.catch_warnings():
            # Pillow warns above 89 M pixels; the audit says so itself, below.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(raw))
        fmt, mode, (w, h) = im.format or "?", im.mode, im.size
        base.update(format=fmt, mode=mode, width=w, height=h)
        if w * h > MAX_PIXELS:
            return _bad(base, f"{w}x{h} pixels is more than the {MAX_PIXELS:,} allowed")
        small, checked = reduced_image(im, data=raw)
    except UnidentifiedImageError:
        # The file's own bytes are never quoted: a reason lands in reports.
        return _bad(base, "not a recognised image format")
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        return _bad(base, f"cannot decode: {_first_line(exc)}")
    issues: list[tuple[str, str]] = []
    suffix = Path(job.name).suffix.lower()
    named = Image.registered_extensions().get(suffix)  # the format the name says
    if job.data is None and named and fmt != named and {fmt, named} != {"JPEG", "MPO"}:
        issues.append(("misnamed", f"a {fmt} file named {suffix}"))
    coding = NOT_JPEG
    frame = read_frame(raw) if fmt in ("JPEG", "MPO") else None
    if frame is not None and frame.sof in (0xC0, 0xC1):
        coding = BASELINE  # from the frame header: no scan search needed
    elif fmt in ("JPEG", "MPO"):
        try:
            coding, odd = _coding(split_scans(raw, source=job.name), job.name, job.script)
        except JPEGError as exc:
            return _bad(base, str(exc), *issues)
        if odd:
            issues.append(("coding", odd))
    if min(w, h) < TINY_SIDE:
        issues.append(("tiny", _tiny(w, h)))
    if mode == "CMYK":
        issues.append(
            (
                "cmyk",
                "CMYK image: converted to RGB with a lossy re-encode (its 18-scan progression "
                "would not share levels with the others)",
            )
        )
    props = measure(small, w, h, one_channel=mode in ONE_CHANNEL_MODES)
    del small, im  # before the transcode, which may decode the image again
    base.update(coding=coding, props=props)
    if job.data is not None:  # a dataset image: bytes per level come from its record
        return FileInfo(**base, issues=tuple(issues), measured=_measured(job, job.data))
    if not job.transcode:  # outside the bytes sample: checked by its decode, or read here
        if fmt in ("JPEG", "MPO") and mode in ("L", "RGB") and not checked:
            try:  # the transcode's own reading (and its corrupt-data warnings), no encode
                read_check(raw, job.name)
            except JPEGError as exc:
                return _bad(base, f"cannot transcode: {_first_line(exc)}", *issues)
        return FileInfo(**base, issues=tuple(issues))
    try:
        # the bytes already read: no second read of the file
        res = transcode(raw, backend=job.backend, quality=job.quality, name=job.name)  # type: ignore[arg-type]
    except (PCRError, OSError, ValueError) as exc:
        return _bad(base, f"cannot transcode: {_first_line(exc)}", *issues)
    pj = res.jpeg
    ends = np.asarray(pj.scan_ends, np.int64) + 2  # + EOI
    if pj.num_components == 1:
        gray = job.script.gray_scans_at
        ends = ends[[gray(k) - 1 for k in range(1, job.script.num_levels + 1)]]
    conversion = res.note  # always set when the transcode was not lossless
    return FileInfo(
        **base,
        level_bytes=ends,
        issues=tuple(issues),
        conversion=conversion,
        lossy=not res.lossless,
        measured=_measured(job, pj.data),
    )


def _measured(job: FileJob, full: bytes) -> Outcome | None:
    """Every level's quality of a sampled image, from its progressive JPEG; else None."""
    spec = job.sample
    if spec is None:
        return None
    level_job = ImageJob(job.index, job.name, spec.num_scans, full=full, script=spec.script)
    return measure_levels(level_job, luminance=spec.luminance, max_pixels=spec.max_pixels)
