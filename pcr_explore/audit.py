"""Dataset audit: what a folder of images (or a PCR dataset) holds, what each
scan level costs and is worth, which level to train on, and what is broken.

:func:`audit` reads every file once (in worker processes): its content hash,
format, colour mode, size, how its JPEG is coded, and its bytes at each scan
level after the progressive transcode, computed from the scan offsets, without
decoding. Only a random sample is decoded at every level to measure quality
(:func:`~pcr_explore.quality.quality_curve`), from which
:func:`~pcr_explore.tuner.recommend` picks the level. Broken files never stop
the audit: each one becomes an entry in ``problems``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image, UnidentifiedImageError

from ._atomic import atomic_write
from .discover import find_sources
from .errors import JPEGError, PCRError, ScanScriptError
from .jpeg import ProgressiveJPEG, check_scan_script, decode, split_scans
from .manifest import MANIFEST, NUM_LEVELS
from .metrics import METRICS, MSSSIM_WEIGHTS, WINDOW
from .quality import QualityCurve, Sampler
from .quality.runner import run_jobs
from .reader import PCRDataset, open_dataset
from .sources import FolderSource, LevelSource, gray_scans_at
from .transcode import IMAGE_SUFFIXES, transcode
from .tuner import STATISTICS, Statistic, TuneResult, recommend

__all__ = ["AuditReport", "audit", "TINY_SIDE"]

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
class _FileJob:
    index: int
    path: str
    name: str
    backend: str
    quality: int


@dataclass(frozen=True)
class _FileInfo:
    """What one worker learned about one file."""

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
    """(coding category, issue or "") of a JPEG file, from its markers alone."""
    if pj.sof in (0xC0, 0xC1):
        return BASELINE, ""
    if not pj.progressive:
        return OTHER_JPEG, f"JPEG frame type 0x{pj.sof:02X} (lossless, arithmetic or hierarchical)"
    try:
        check_scan_script(pj, source=name)
    except ScanScriptError as exc:
        return OTHER_PROGRESSIVE, f"progressive with a non-standard scan script: {exc}"
    return STANDARD, ""


def _inspect_file(job: _FileJob) -> _FileInfo:
    """Hash, identify, check and transcode one file; never raises on bad data."""
    name = job.name
    try:
        raw = Path(job.path).read_bytes()
    except OSError as exc:
        return _FileInfo(job.index, name, issues=(f"cannot read file: {exc.strerror or exc}",))
    base: dict[str, Any] = {
        "index": job.index,
        "name": name,
        "file_bytes": len(raw),
        "digest": hashlib.sha256(raw).hexdigest(),
    }
    if not raw:
        return _FileInfo(**base, issues=("empty file",))
    issues: list[str] = []
    try:
        with Image.open(io.BytesIO(raw)) as im:
            fmt, mode, (w, h) = im.format or "?", im.mode, im.size
            base.update(format=fmt, mode=mode, width=w, height=h)
            im.load()  # a full decode finds truncated or corrupt data
    except UnidentifiedImageError:
        return _FileInfo(
            **base, issues=(f"not a recognised image format (first bytes: {raw[:8].hex(' ')})",)
        )
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _FileInfo(**base, issues=(f"cannot decode: {msg}",))
    suffix = Path(name).suffix.lower()
    expected = _SUFFIX_FORMATS.get(suffix, ())
    if expected and fmt not in expected:
        issues.append(f"a {fmt} file named {suffix}")
    coding = NOT_JPEG
    if fmt in ("JPEG", "MPO"):
        try:
            coding, odd = _coding(split_scans(raw, source=name), name)
        except JPEGError as exc:
            return _FileInfo(**base, coding=UNREADABLE, issues=(*issues, str(exc)))
        if odd:
            issues.append(odd)
    if min(w, h) < TINY_SIDE:
        issues.append(
            f"tiny image {w}x{h} px (a side under {TINY_SIDE} px; SSIM's window is {WINDOW} px)"
        )
    if mode == "CMYK":
        issues.append(
            "CMYK image: converted to RGB with a lossy re-encode (its 18-scan progression "
            "would not share levels with the others)"
        )
    try:
        res = transcode(raw, backend=job.backend, quality=job.quality, name=name)  # type: ignore[arg-type]
    except (PCRError, OSError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _FileInfo(**base, coding=coding, issues=(*issues, f"cannot transcode: {msg}"))
    pj = res.jpeg
    ends = np.asarray(pj.scan_ends, np.int64) + 2  # + EOI
    if pj.num_components == 1:
        ends = ends[[gray_scans_at(k) - 1 for k in range(1, NUM_LEVELS + 1)]]
    conversion = ""
    if not res.lossless:
        conversion = res.note or f"{fmt} {mode} source encoded as JPEG (quality {job.quality})"
    elif res.note:
        conversion = res.note
    return _FileInfo(
        **base,
        coding=coding,
        level_bytes=ends,
        issues=tuple(issues),
        conversion=conversion,
    )


def _pcr_infos(ds: PCRDataset, progress: Any) -> list[_FileInfo]:
    """The same facts for a PCR dataset's images (read once, in order)."""
    names = ds.names
    out: list[_FileInfo] = []
    for idx, data, _label in ds.iter_jpeg(None):
        name = names[idx]
        try:
            pj = split_scans(data, source=name)
            coding, odd = _coding(pj, name)
        except JPEGError as exc:
            out.append(_FileInfo(idx, name, file_bytes=len(data), issues=(str(exc),)))
            progress.update(1)
            continue
        issues = [odd] if odd else []
        if min(pj.width, pj.height) < TINY_SIDE:
            issues.append(f"tiny image {pj.width}x{pj.height} px (a side under {TINY_SIDE} px)")
        out.append(
            _FileInfo(
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


def _thumb_uri(data: bytes, size: int = 192) -> str:
    """A small JPEG of *data* as a ``data:`` URI (for a self-contained report)."""
    arr = decode(data, size)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _summary(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    lo, med, hi = np.percentile(values, [0, 50, 100])
    return {"min": float(lo), "median": float(med), "max": float(hi)}


def _json_safe(obj: Any) -> Any:
    """Replace non-finite floats by None and numpy scalars/arrays by Python values."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        return _json_safe(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@dataclass(frozen=True)
class AuditReport:
    """Everything :func:`audit` found.

    Attributes
    ----------
    path : str
        What was audited.
    kind : {"folder", "file", "pcr"}
        A folder of images, one image file, or a PCR dataset.
    images : int
        Image files found (a PCR dataset: images stored).
    readable : int
        Images that decode and transcode.
    formats, modes : dict of str to int
        Counts by source format ("JPEG", "PNG" ...) and Pillow colour mode.
    sizes : dict
        ``width``, ``height``, ``megapixels`` (min, median, max) and
        ``shorter_side`` (counts per bucket).
    widths, heights : ndarray of int
        Per readable image.
    classes : dict of str to int
        Images per class (class sub-folders or the dataset's labels).
    coding : dict of str to int
        How the source JPEGs are coded (baseline, standard progressive ...).
    problems : list of dict
        ``{"file": ..., "issue": ...}``, one per problem (a file may have several).
    duplicates : list of list of str
        Groups of files with identical bytes.
    conversions : list of dict
        ``{"file": ..., "note": ...}`` for sources that could not be
        transcoded losslessly (non-JPEG formats, CMYK, EXIF rotations).
    level_bytes : ndarray of int
        Bytes of all readable images at each scan level (cumulative).
    source_bytes : int
        Bytes of the readable source files.
    tune : TuneResult or None
        The recommendation (None when no image could be measured).
    worst : list of dict
        The sampled images that degrade most at the recommended level:
        ``file``, ``index``, ``value``, ``bytes_fraction``, and thumbnails
        ``thumb_level`` and ``thumb_full`` (``data:`` URIs).
    options : dict
        The audit's settings (sample, target, metric, statistic, seed, luminance).
    seconds : float
        Wall time of the audit.
    """

    path: str
    kind: str
    images: int
    readable: int
    formats: dict[str, int]
    modes: dict[str, int]
    sizes: dict[str, Any]
    widths: np.ndarray
    heights: np.ndarray
    classes: dict[str, int]
    coding: dict[str, int]
    problems: list[dict[str, str]]
    duplicates: list[list[str]]
    conversions: list[dict[str, str]]
    level_bytes: np.ndarray
    source_bytes: int
    tune: TuneResult | None
    worst: list[dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    # -- derived ---------------------------------------------------------
    @property
    def recommended_scan(self) -> int | None:
        """The recommended scan level (None when nothing could be measured)."""
        return self.tune.scan if self.tune is not None else None

    @property
    def curve(self) -> QualityCurve | None:
        """The quality measurements of the sample."""
        return self.tune.curve if self.tune is not None else None

    @property
    def bytes_fraction(self) -> np.ndarray:
        """Bytes at each level as a fraction of the full (all readable images)."""
        b = self.level_bytes.astype(np.float64)
        return b / b[-1] if len(b) and b[-1] > 0 else np.full(len(b), np.nan)

    def levels(self) -> list[dict[str, Any]]:
        """Per level: scan, bytes, bytes_fraction (whole dataset) and the metric's
        mean, p5, p50, p95 (sample)."""
        curve = self.curve
        frac = self.bytes_fraction
        out = []
        for k in range(len(self.level_bytes)):
            row: dict[str, Any] = {
                "scan": k + 1,
                "bytes": int(self.level_bytes[k]),
                "bytes_fraction": float(frac[k]),
            }
            for stat in ("mean", "p5", "p50", "p95"):
                row[stat] = float(curve.statistic(stat)[k]) if curve is not None else None
            out.append(row)
        return out

    # -- output ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (no thumbnails, no per-image arrays)."""
        curve = self.curve
        d = {
            "path": self.path,
            "kind": self.kind,
            "images": self.images,
            "readable": self.readable,
            "formats": self.formats,
            "modes": self.modes,
            "sizes": self.sizes,
            "classes": self.classes,
            "coding": self.coding,
            "problems": self.problems,
            "duplicates": self.duplicates,
            "conversions": self.conversions,
            "source_bytes": self.source_bytes,
            "levels": self.levels(),
            "recommended_scan": self.recommended_scan,
            "target": self.options.get("target"),
            "metric": self.options.get("metric"),
            "statistic": self.options.get("statistic"),
            "luminance": self.options.get("luminance"),
            "sample_size": curve.sample_size if curve is not None else 0,
            "tune": self.tune.to_dict() if self.tune is not None else None,
            "worst": [
                {k: v for k, v in w.items() if not k.startswith("thumb")} for w in self.worst
            ],
            "quality_notes": [
                {"file": n, "note": t} for n, t in (curve.notes if curve is not None else ())
            ],
            "options": self.options,
            "seconds": self.seconds,
        }
        return _json_safe(d)  # type: ignore[no-any-return]

    def to_json(self, path: str | os.PathLike[str] | None = None, *, indent: int = 1) -> str:
        """The report as JSON text; also written (atomically) to *path* if given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False) + "\n"
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
        return text

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write a standalone HTML report (plots, tables, thumbnails; works offline).

        Bokeh's JavaScript is inlined and thumbnails are ``data:`` URIs, so the
        one file opens anywhere without a network. Written atomically.

        Returns
        -------
        Path
            The file written.
        """
        from ._report_html import render_page

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, render_page(self))
        return p

    def summary(self) -> str:
        """A plain-text summary for a terminal."""
        from ._report_html import render_text

        return render_text(self)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        from ._report_html import render_fragment

        return render_fragment(self)


def _shorter_side_buckets(widths: np.ndarray, heights: np.ndarray) -> dict[str, int]:
    edges = [0, TINY_SIDE, 128, 256, 512, 1024, 2048]
    side = np.minimum(widths, heights)
    out = {}
    for lo, hi in zip(edges, [*edges[1:], None]):
        label = f"{lo}-{hi - 1}" if hi is not None else f"{lo}+"
        out[label] = int(np.count_nonzero((side >= lo) & ((side < hi) if hi else True)))
    return out


def audit(
    path: str | os.PathLike[str],
    sample: int | None = 64,
    target: float = 0.95,
    metric: str = "mssim",
    statistic: Statistic = "mean",
    workers: int | None = None,
    progress: bool = False,
    *,
    seed: int = 0,
    luminance: bool = False,
    worst: int = 6,
    backend: Literal["auto", "jpegtran", "pillow"] = "auto",
    quality: int = 90,
) -> AuditReport:
    """Audit a folder of images, one image file, or a PCR dataset.

    Parameters
    ----------
    path : path
        A folder of images (class sub-folders give classes), an image file,
        or a PCR dataset folder (one holding ``manifest.json``).
    sample : int or None
        Images decoded at every level to measure quality (None: all).
    target : float
        Quality target for the recommended level.
    metric : {"mssim", "ssim", "psnr"}
        The metric the target refers to.
    statistic : {"mean", "p5"}
        Mean over images or their 5th percentile.
    workers : int, optional
        Worker processes (default: all cores).
    progress : bool
        Show a progress bar.
    seed : int
        Seed of the quality sample.
    luminance : bool
        Measure quality on the Y channel only (default RGB).
    worst : int
        How many worst-degrading images to show.
    backend, quality
        How folder images are transcoded (see :func:`~pcr_explore.transcode.transcode`).

    Returns
    -------
    AuditReport

    Raises
    ------
    DatasetError
        If the folder holds no image files or the dataset is malformed.
    FileNotFoundError
        If *path* does not exist.
    ValueError
        If an option is out of range.

    Examples
    --------
    >>> report = audit("photos/", sample=64)  # doctest: +SKIP
    >>> report.recommended_scan, len(report.problems)  # doctest: +SKIP
    (5, 3)
    >>> report.to_html("audit.html")  # doctest: +SKIP
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    if sample is not None and int(sample) < 1:
        raise ValueError(f"sample must be a positive number of images, got {sample}")
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    p = Path(path)
    if not p.exists() and "://" not in os.fspath(path):
        raise FileNotFoundError(f"{p}: no such file or folder")
    src: LevelSource
    if "://" in os.fspath(path) or (p.is_dir() and (p / MANIFEST).exists()):
        kind = "pcr"
        ds = open_dataset(os.fspath(path))
        src = ds
        n = len(ds)
        want = n if sample is None else min(int(sample), n)
        bar = tqdm(total=n + want, desc="audit", disable=not progress)
        infos = _pcr_infos(ds, bar)
        class_names = ds.classes
        labels = ds.labels
        problems = [
            {"file": str(s.get("file", "?")), "issue": f"skipped at encode: {s.get('issue', '')}"}
            for s in ds.manifest.get("skipped", [])
        ]
        conversions = [
            {"file": str(c.get("file", "?")), "note": str(c.get("note", ""))}
            for c in ds.manifest.get("conversions", [])
        ]
    else:
        kind = "file" if p.is_file() else "folder"
        if kind == "file":
            if p.suffix.lower() not in IMAGE_SUFFIXES:
                raise ValueError(f"{p}: not an image file ({', '.join(sorted(IMAGE_SUFFIXES))})")
            root, names, labels, class_names = p.parent, [p.name], np.array([-1]), []
        else:
            items, class_names = find_sources(p)
            root, names = p, [it.name for it in items]
            index = {c: i for i, c in enumerate(class_names)}
            labels = np.array([index[it.label] if it.label is not None else -1 for it in items])
        n = len(names)
        want = n if sample is None else min(int(sample), n)
        bar = tqdm(total=n + want, desc="audit", disable=not progress)
        jobs = (_FileJob(i, str(root / nm), nm, backend, quality) for i, nm in enumerate(names))
        infos = run_jobs(_inspect_file, jobs, total=n, workers=workers, progress=bar, desc="audit")
        src = FolderSource(p, backend=backend, quality=quality)
        problems = []
        conversions = [{"file": i.name, "note": i.conversion} for i in infos if i.conversion]

    try:
        for info in infos:
            problems.extend({"file": info.name, "issue": issue} for issue in info.issues)
        by_digest: dict[str, list[str]] = {}
        for info in infos:
            if info.digest:
                by_digest.setdefault(info.digest, []).append(info.name)
        duplicates = [sorted(g) for g in by_digest.values() if len(g) > 1]
        for group in duplicates:
            problems.extend(
                {"file": other, "issue": f"duplicate of {group[0]} (identical bytes)"}
                for other in group[1:]
            )
        ok = [i for i in infos if i.level_bytes is not None]
        ok_index = {i.index for i in ok}
        level_bytes = (
            np.sum([i.level_bytes for i in ok if i.level_bytes is not None], axis=0).astype(
                np.int64
            )
            if ok
            else np.zeros(NUM_LEVELS, np.int64)
        )
        widths = np.array([i.width for i in ok], np.int64)
        heights = np.array([i.height for i in ok], np.int64)

        # Quality on a sample of the readable images, in a seeded random order.
        order = [int(i) for i in np.random.default_rng(seed).permutation(n) if int(i) in ok_index]
        tune_result: TuneResult | None = None
        worst_rows: list[dict[str, Any]] = []
        if ok:
            sampler = Sampler(
                src,
                seed=seed,
                metric=metric,
                luminance=luminance,
                workers=workers,
                progress=bar,
                order=order,
            )
            sampler.grow(want)
            curve = sampler.curve()
            for name, issue in curve.failed:
                problems.append({"file": name, "issue": f"cannot measure quality: {issue}"})
            if curve.sample_size:
                frac = level_bytes / level_bytes[-1]
                tune_result = recommend(curve, target, statistic, seed=seed, bytes_fraction=frac)
                worst_rows = _worst(src, tune_result, worst)
    finally:
        bar.close()

    counts = Counter(labels[i.index] for i in infos)
    classes = {c: int(counts.get(k, 0)) for k, c in enumerate(class_names)}
    if counts.get(-1):
        classes["(no class)"] = int(counts[-1])
    sizes: dict[str, Any] = {
        "width": _summary(widths),
        "height": _summary(heights),
        "megapixels": _summary(widths * heights / 1e6),
        "shorter_side": _shorter_side_buckets(widths, heights),
    }
    problems.sort(key=lambda d: (d["file"], d["issue"]))
    return AuditReport(
        path=os.fspath(path),
        kind=kind,
        images=n,
        readable=len(ok),
        formats=dict(Counter(i.format for i in infos if i.format).most_common()),
        modes=dict(Counter(i.mode for i in infos if i.mode).most_common()),
        sizes=sizes,
        widths=widths,
        heights=heights,
        classes=classes,
        coding=dict(Counter(i.coding for i in infos).most_common()),
        problems=problems,
        duplicates=duplicates,
        conversions=conversions,
        level_bytes=level_bytes,
        source_bytes=int(sum(i.file_bytes for i in ok)),
        tune=tune_result,
        worst=worst_rows,
        options={
            "sample": sample,
            "target": target,
            "metric": metric,
            "statistic": statistic,
            "seed": seed,
            "luminance": luminance,
            "msssim_scales": len(MSSSIM_WEIGHTS),
        },
        seconds=time.perf_counter() - t0,
    )


def _worst(src: LevelSource, result: TuneResult, n: int) -> list[dict[str, Any]]:
    """The *n* sampled images with the lowest metric at the recommended level."""
    rows = []
    for row in result.curve.per_image.worst(result.scan, n):
        entry = {
            "file": row["name"],
            "index": row["index"],
            "value": row["value"],
            "bytes_fraction": row["bytes_fraction"],
        }
        try:
            entry["thumb_level"] = _thumb_uri(src.jpeg_bytes(row["index"], result.scan))
            entry["thumb_full"] = _thumb_uri(src.jpeg_bytes(row["index"]))
        except (PCRError, OSError, ValueError):
            pass  # the report shows the numbers without pictures
        rows.append(entry)
    return rows
