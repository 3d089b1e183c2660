"""The audit: open what was given, inspect every file, measure a sample, assemble the report."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..discover import find_sources
from ..manifest import MANIFEST, NUM_LEVELS
from ..metrics import MSSSIM_WEIGHTS, metric_name
from ..quality.runner import run_jobs
from ..reader import PCRDataset, open_dataset
from ..sources import FolderSource, LevelSource
from ..transcode import IMAGE_SUFFIXES
from ..tuner import STATISTICS, Statistic
from ._inspect import TINY_SIDE, FileInfo, FileJob, inspect_dataset, inspect_file
from ._measure import SampleQuality, measure_sample
from ._report import AuditReport

__all__ = ["audit"]


@dataclass
class _Target:
    """What is audited: its images, their classes, and what a dataset's manifest records."""

    kind: str
    source: LevelSource
    names: list[str]
    labels: np.ndarray
    classes: list[str]
    root: Path
    dataset: PCRDataset | None = None
    problems: list[dict[str, str]] = field(default_factory=list)
    conversions: list[dict[str, str]] = field(default_factory=list)


def _check_options(metric: str, statistic: str, sample: int | None) -> None:
    metric_name(metric)
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose mean or p5")
    if sample is not None and int(sample) < 1:
        raise ValueError(f"sample must be a positive number of images, got {sample}")


def _open(path: str | os.PathLike[str], backend: str, quality: int) -> _Target:
    """Return the target: a PCR dataset, one image file or a folder of images."""
    p = Path(path)
    remote = "://" in os.fspath(path)
    if not p.exists() and not remote:
        raise FileNotFoundError(f"{p}: no such file or folder")
    if remote or (p.is_dir() and (p / MANIFEST).exists()):
        ds = open_dataset(os.fspath(path))
        return _Target(
            "pcr",
            ds,
            ds.names,
            ds.labels,
            ds.classes,
            p,
            dataset=ds,
            problems=[
                {
                    "file": str(s.get("file", "?")),
                    "issue": f"skipped at encode: {s.get('issue', '')}",
                }
                for s in ds.manifest.get("skipped", [])
            ],
            conversions=[
                {"file": str(c.get("file", "?")), "note": str(c.get("note", ""))}
                for c in ds.manifest.get("conversions", [])
            ],
        )
    if p.is_file():
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise ValueError(f"{p}: not an image file ({', '.join(sorted(IMAGE_SUFFIXES))})")
        src = FolderSource(p, backend=backend, quality=quality)  # type: ignore[arg-type]
        return _Target("file", src, [p.name], np.array([-1]), [], p.parent)
    items, classes = find_sources(p)
    index = {c: i for i, c in enumerate(classes)}
    labels = np.array([index[it.label] if it.label is not None else -1 for it in items])
    src = FolderSource(p, backend=backend, quality=quality)  # type: ignore[arg-type]
    return _Target("folder", src, [it.name for it in items], labels, classes, p)


def _inspect(
    t: _Target, backend: str, quality: int, workers: int | None, bar: Any
) -> list[FileInfo]:
    """Return every file's facts; a folder's files are read in worker processes."""
    if t.dataset is not None:
        return inspect_dataset(t.dataset, bar)
    jobs = (FileJob(i, str(t.root / nm), nm, backend, quality) for i, nm in enumerate(t.names))
    infos = run_jobs(
        inspect_file,
        jobs,
        total=len(t.names),
        workers=workers,
        progress=bar,
        desc="audit",
        preload=("pcr_explore.audit",),
    )
    return infos


def _conversions(t: _Target, infos: list[FileInfo]) -> list[dict[str, str]]:
    """Return the sources not transcoded losslessly: as recorded, or as just found."""
    if t.dataset is not None:
        return t.conversions
    return [{"file": i.name, "note": i.conversion} for i in infos if i.conversion]


def _duplicates(infos: list[FileInfo]) -> list[list[str]]:
    """Return the groups of files with identical bytes, each sorted."""
    by_digest: dict[str, list[str]] = {}
    for info in infos:
        if info.digest:
            by_digest.setdefault(info.digest, []).append(info.name)
    return [sorted(g) for g in by_digest.values() if len(g) > 1]


def _problems(
    t: _Target, infos: list[FileInfo], duplicates: list[list[str]], sampled: SampleQuality
) -> list[dict[str, str]]:
    """Return every problem found, sorted by file then issue."""
    problems = list(t.problems)
    problems += [{"file": i.name, "issue": issue} for i in infos for issue in i.issues]
    problems += [
        {"file": other, "issue": f"duplicate of {group[0]} (identical bytes)"}
        for group in duplicates
        for other in group[1:]
    ]
    problems += [
        {"file": name, "issue": f"cannot measure quality: {issue}"}
        for name, issue in sampled.failed
    ]
    return sorted(problems, key=lambda d: (d["file"], d["issue"]))


def _classes(t: _Target, infos: list[FileInfo]) -> dict[str, int]:
    counts = Counter(t.labels[i.index] for i in infos)
    classes = {c: int(counts.get(k, 0)) for k, c in enumerate(t.classes)}
    if counts.get(-1):
        classes["(no class)"] = int(counts[-1])
    return classes


def _summary(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {}
    lo, med, hi = np.percentile(values, [0, 50, 100])
    return {"min": float(lo), "median": float(med), "max": float(hi)}


def _shorter_side_buckets(widths: np.ndarray, heights: np.ndarray) -> dict[str, int]:
    edges = [0, TINY_SIDE, 128, 256, 512, 1024, 2048]
    side = np.minimum(widths, heights)
    out = {}
    for lo, hi in zip(edges, [*edges[1:], None]):
        label = f"{lo}-{hi - 1}" if hi is not None else f"{lo}+"
        out[label] = int(np.count_nonzero((side >= lo) & ((side < hi) if hi else True)))
    return out


def _sizes(widths: np.ndarray, heights: np.ndarray) -> dict[str, Any]:
    return {
        "width": _summary(widths),
        "height": _summary(heights),
        "megapixels": _summary(widths * heights / 1e6),
        "shorter_side": _shorter_side_buckets(widths, heights),
    }


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

    Every file is read once (in worker processes): its content hash, format,
    colour mode, size, how its JPEG is coded, and its bytes at each scan
    level after the progressive transcode, from the scan offsets, without
    decoding. Only a random sample is decoded at every level to measure
    quality, from which :func:`~pcr_explore.tuner.recommend` picks the
    level. Broken files never stop the audit: each becomes a problem.

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
    _check_options(metric, statistic, sample)
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    t = _open(path, backend, quality)
    n = len(t.names)
    want = n if sample is None else min(int(sample), n)
    bar = tqdm(total=n + want, desc="audit", disable=not progress)
    try:
        infos = _inspect(t, backend, quality, workers, bar)
        ok = [i for i in infos if i.level_bytes is not None]
        per_file = [i.level_bytes for i in ok if i.level_bytes is not None]
        level_bytes = np.zeros(NUM_LEVELS, np.int64)
        if per_file:
            level_bytes = np.sum(per_file, axis=0, dtype=np.int64)
        sampled = SampleQuality()
        if ok:
            readable = {i.index for i in ok}
            perm = np.random.default_rng(seed).permutation(n)
            sampled = measure_sample(
                t.source,
                [int(i) for i in perm if int(i) in readable],
                want,
                level_bytes=level_bytes,
                target=target,
                metric=metric,
                statistic=statistic,
                seed=seed,
                luminance=luminance,
                worst=worst,
                workers=workers,
                progress=bar,
            )
    finally:
        bar.close()
    widths = np.array([i.width for i in ok], np.int64)
    heights = np.array([i.height for i in ok], np.int64)
    duplicates = _duplicates(infos)
    return AuditReport(
        path=os.fspath(path),
        kind=t.kind,
        images=n,
        readable=len(ok),
        formats=dict(Counter(i.format for i in infos if i.format).most_common()),
        modes=dict(Counter(i.mode for i in infos if i.mode).most_common()),
        sizes=_sizes(widths, heights),
        widths=widths,
        heights=heights,
        classes=_classes(t, infos),
        coding=dict(Counter(i.coding for i in infos).most_common()),
        problems=_problems(t, infos, duplicates, sampled),
        duplicates=duplicates,
        conversions=_conversions(t, infos),
        level_bytes=level_bytes,
        source_bytes=int(sum(i.file_bytes for i in ok)),
        tune=sampled.tune,
        worst=sampled.worst,
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
