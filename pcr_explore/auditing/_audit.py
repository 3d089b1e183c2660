"""The audit: check the options, inspect every image, flag, measure a sample, report."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from .._pool import check_client
from .._public import public
from ..jpeg._tjtransform import available as tj_available
from ..quality._curve import QualityCurve
from ..quality.metrics import MSSSIM_WEIGHTS
from ..quality.tune import DEFAULT_STATISTIC, Statistic
from ._checks import CHECKS
from ._flags import ImageFindings, find_issues
from ._inspect import FileInfo
from ._measure import SampleQuality, measure_sample, quality_of_curve
from ._options import AuditOptions, Options, check_options
from ._pass import inspect_all
from ._properties import ANALYSIS_SIDE
from ._report import AuditReport
from ._target import Target, class_counts, open_target, size_summary
from ._thumbs import gallery

__all__ = ["audit"]


def _conversions(t: Target, infos: list[FileInfo]) -> list[dict[str, Any]]:
    """Return the sources not transcoded losslessly: as recorded, or as just found."""
    if t.dataset is not None:
        return t.conversions
    return [
        {"file": i.name, "note": i.conversion, "lossless": not i.lossy}
        for i in infos
        if i.conversion
    ]


def _problems(
    t: Target, infos: list[FileInfo], found: ImageFindings, sampled: SampleQuality
) -> list[dict[str, str]]:
    """Return every problem found, sorted by file, then type, then issue."""
    problems = [{"file": p["file"], "type": "bad_file", "issue": p["issue"]} for p in t.problems]
    problems += [
        {"file": i.name, "type": kind, "issue": text} for i in infos for kind, text in i.issues
    ]
    problems += found.problems
    problems += [
        {"file": name, "type": "quality", "issue": f"cannot measure quality: {issue}"}
        for name, issue in sampled.failed
    ]
    return sorted(problems, key=lambda d: (d["file"], d["type"], d["issue"]))


def _t975(df: int) -> float:
    """Student's t 97.5% quantile (Cornish-Fisher, within 1% from 2 degrees of freedom)."""
    if df == 1:
        return 12.706204736174694  # exact: tan(0.475 pi)
    z = 1.959963984540054
    return float(
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * df**4)
    )


class LevelBytes(NamedTuple):
    """The readable images' bytes at each level, how many were measured, and how sure."""

    total: np.ndarray
    measured: int
    interval: np.ndarray | None = None  # (2, levels): 95% bounds of an estimated total


def _level_bytes(ok: list[FileInfo], levels: int) -> LevelBytes:
    """The readable images' bytes at each level: exact, or estimated with a 95% interval.

    Where only some were transcoded (a simple random sample: the start of a
    seeded permutation), the total is the ratio estimate: their bytes at each
    level over their source bytes, times every readable image's source
    bytes. Its interval is the ratio estimator's t interval with the finite
    population correction (Cochran, Sampling Techniques, ch. 6): zero wide
    when every image was measured.
    """
    coded = [i for i in ok if i.level_bytes is not None]
    if not coded:
        return LevelBytes(np.zeros(levels, np.int64), 0)
    y = np.array([i.level_bytes for i in coded], np.float64)
    total = y.sum(axis=0)
    n, big_n = len(coded), len(ok)
    if n == big_n:
        return LevelBytes(total.astype(np.int64), n)
    x = np.array([i.file_bytes for i in coded], np.float64)
    ratio = total / x.sum()
    x_all = float(sum(i.file_bytes for i in ok))
    estimate = np.rint(ratio * x_all).astype(np.int64)
    if n < 2:
        return LevelBytes(estimate, n)
    resid = y - x[:, None] * ratio  # the ratio's errors, per image and level
    se = big_n * np.sqrt((1 - n / big_n) / n * resid.var(axis=0, ddof=1))
    half = _t975(n - 1) * se
    return LevelBytes(estimate, n, np.rint([estimate - half, estimate + half]).astype(np.int64))


def _notes(
    found: ImageFindings, sampled: SampleQuality, o: Options, measured: int, readable: int
) -> list[str]:
    """Say how the numbers were made where it changes how to read them."""
    notes = [
        "image properties and perceptual hashes are measured on one decode per image, "
        f"its longer side at most {ANALYSIS_SIDE} px (DCT scaling for JPEGs)"
    ]
    if measured < readable:
        notes.append(
            f"bytes per level are estimated from the {measured:,} of {readable:,} readable "
            "images transcoded (bytes_sample; None for exact bytes): their bytes at each level "
            "per source byte, times all readable images' source bytes, with a 95% interval; "
            "the other JPEGs had every coefficient read, with libjpeg's warnings as errors, "
            "as the transcode would, in their one decode"
            + ("" if tj_available() else " (not here: libturbojpeg is not installed)")
        )
    curve = sampled.tune.curve if sampled.tune is not None else None
    shrunk = [
        n for n, text in (curve.notes if curve is not None else ()) if "measured at 1/" in text
    ]
    if shrunk:
        why = "memory" if o.measured_pixels == o.max_pixels else "CPU (quality_pixels)"
        notes.append(
            f"{len(shrunk)} sampled image(s) larger than {o.measured_pixels:,} pixels had "
            f"their quality measured at a reduced size, to bound {why} (first: {shrunk[0]})"
        )
    if not found.colour_dataset:
        notes.append("most images are grayscale, so grayscale images are not flagged")
    return notes


class _Measured(NamedTuple):
    """What the one pass over the files found and measured, with when each part ended."""

    infos: list[FileInfo]
    found: ImageFindings
    ok: list[FileInfo]
    level_bytes: LevelBytes
    sampled: SampleQuality
    t_files: float
    t_checks: float
    t_sample: float


def _inspect_and_measure(
    t: Target, o: Options, curve: QualityCurve | None, progress: bool, client: Any
) -> _Measured:
    """Inspect every file, run the checks, and measure (or take from *curve*) the quality."""
    from .._pool import progress_bar as tqdm

    n = len(t.names)
    with (
        tqdm(total=n, desc="audit: files", unit="file", disable=not progress) as files_bar,
        tqdm(
            total=n if o.sample is None else min(o.sample, n),
            desc=f"audit: quality sample ({t.source.num_scans} levels each)",
            unit="img",
            disable=not progress,
        ) as sample_bar,
    ):
        # With a curve, nothing is measured in the pass: it only inspects.
        p = inspect_all(
            t, o if curve is None else replace(o, sample=0), files_bar, sample_bar, client=client
        )
        t_files = time.perf_counter()
        found = find_issues(p.infos, t.names, [t.class_of(i) for i in range(n)], o.thresholds)
        ok = [i for i in p.infos if not i.broken]
        level_bytes = _level_bytes(ok, t.source.num_scans)
        t_checks = time.perf_counter()
        if curve is None:
            sampled = measure_sample(
                t.source, p, level_bytes=level_bytes.total, o=o, progress=sample_bar, client=client
            )
        else:
            sampled = quality_of_curve(t.source, curve, level_bytes=level_bytes.total, o=o)
    return _Measured(
        p.infos, found, ok, level_bytes, sampled, t_files, t_checks, time.perf_counter()
    )


def _checks_record(o: Options) -> dict[str, dict[str, Any]]:
    """Per check: what its score measures, the threshold used and the rule."""
    return {
        k: {
            "score": c.score,
            "threshold": o.thresholds[k],
            "flagged_when": "score <= threshold" if c.at_most else "score < threshold",
        }
        for k, c in CHECKS.items()
    }


def _options_record(o: Options) -> dict[str, Any]:
    """The settings the report was made with, as its JSON records them."""
    return {
        "sample": o.sample,
        "target": o.target,
        "metric": o.metric,
        "statistic": o.statistic,
        "seed": o.seed,
        "luminance": o.luminance,
        "msssim_scales": len(MSSSIM_WEIGHTS),
        "max_pixels": o.max_pixels,
        "analysis_side": ANALYSIS_SIDE,
        "bytes_sample": o.bytes_sample,
        "quality_pixels": o.quality_pixels,
    }


@public("pcr_explore")
def audit(
    source: str | os.PathLike[str],
    *,
    sample: int | None = 32,
    target: float | None = None,
    metric: str | None = None,
    statistic: Statistic = DEFAULT_STATISTIC,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    luminance: bool = False,
    curve: QualityCurve | None = None,
    options: AuditOptions | None = None,
    client: Any = None,
) -> AuditReport:
    """Audit a folder of images, one image file, or a PCR dataset.

    Every option is checked before any file is opened. Then every image is
    read once, in worker processes: its content hash, format, colour mode,
    size and JPEG coding; one small decode (DCT scaling) on which
    brightness, information, sharpness, colour and a perceptual hash are
    measured; and its bytes at each scan level after the progressive
    transcode, from the scan offsets. Only a random sample is decoded at
    every level to measure quality, in the same pass and the same task as
    its inspection (one read and one transcode per image, one worker pool),
    and :func:`~pcr_explore.quality.tune.recommend` picks the level from it. The
    checks of :data:`CHECKS` flag images against their thresholds, and
    duplicates are grouped into sets (a set across classes is a label leak).
    Broken files never stop the audit: each becomes a problem with its
    reason.

    Parameters
    ----------
    source : path
        A folder of images (class sub-folders give classes), an image file,
        or a PCR dataset folder (one holding ``manifest.json``).
    sample : int or None
        Images decoded at every level to measure quality (None: all). The
        default, 32, with each image measured at about 131,072 pixels at
        most (``AuditOptions.quality_pixels``), bounds the sample's CPU to
        about what the checks of 250 photos cost; the recommendation's
        interval says when more images are needed.
    target : float, optional
        Quality target for the recommended level; default per metric
        (:data:`DEFAULT_TARGETS`: 0.95 for MS-SSIM and SSIM, 35 dB for PSNR).
    metric : {"mssim", "ssim", "psnr"}, optional
        The metric the target refers to; default ``"mssim"`` (a curve's own).
    statistic : {"p5", "mean"}
        The 5th percentile over images (nearly every image good enough; the
        default) or their mean.
    seed : int
        Seed of the quality sample.
    workers : int, optional
        Worker processes (default: all cores). Ignored with *client*.
    progress : bool
        Show progress: one bar over the files (fast), one over the quality
        sample (slow: every level of each image).
    luminance : bool
        Measure quality on the Y channel only (default RGB).
    curve : QualityCurve, optional
        Quality already measured on *source* by
        :func:`~pcr_explore.quality_curve`: the audit recommends from it and
        decodes no image at every level again (*sample* and *luminance* are
        the curve's).
    options : AuditOptions, optional
        The rarely changed settings: images shown per issue, transcoding,
        thresholds, the memory bound and the bytes sample.
    client : dask.distributed.Client, optional
        Run the pass over the files (a few dozen images per task) and the
        quality sample (one image per task) on this Dask cluster
        (``pcr-explore[dask]``); the checks, the duplicates and the report
        are made here. The findings and numbers are identical to a local
        audit's. Every worker must be able to read *source* at the same
        path or URL; workers write nothing.

    Returns
    -------
    AuditReport

    Raises
    ------
    ValueError
        If an option is out of range (checked before any work).
    TypeError
        If *client* is not a Dask client.
    FileNotFoundError
        If *path* does not exist.
    DatasetError
        If the folder holds no image files or the dataset is malformed.

    Examples
    --------
    >>> report = audit("photos/", sample=64)
    >>> report.recommended_scan, report.issue_counts
    (5, {'near_duplicate': 1})
    >>> report.to_html("audit.html")
    PosixPath('audit.html')
    """
    o = check_options(
        options or AuditOptions(),
        sample=sample,
        target=target,
        metric=metric,
        statistic=statistic,
        seed=seed,
        workers=workers,
        luminance=luminance,
        curve=curve,
    )
    check_client(client)
    t0 = time.perf_counter()
    t = open_target(source, o.backend, o.quality)
    n = len(t.names)
    if curve is not None and curve.population != n:
        raise ValueError(
            f"{os.fspath(source)}: the curve was measured on {curve.population} images, "
            f"this source holds {n}"
        )
    m = _inspect_and_measure(t, o, curve, progress, client)
    infos, found, ok, sampled = m.infos, m.found, m.ok, m.sampled
    measured = m.level_bytes.measured
    problems = _problems(t, infos, found, sampled)
    examples, thumbs = gallery(problems, found.scores, found.duplicate_sets, t.load, o.worst)
    widths = np.array([i.width for i in ok], np.int64)
    heights = np.array([i.height for i in ok], np.int64)
    end = time.perf_counter()
    return AuditReport(
        path=os.fspath(source),
        kind=t.kind,
        images=len(t.names),
        readable=len(ok),
        formats=dict(Counter(i.format for i in infos if i.format).most_common()),
        modes=dict(Counter(i.mode for i in infos if i.mode).most_common()),
        sizes=size_summary(widths, heights),
        widths=widths,
        heights=heights,
        classes=class_counts(t, infos),
        coding=dict(Counter(i.coding for i in infos).most_common()),
        problems=problems,
        duplicates=found.exact,
        conversions=_conversions(t, infos),
        level_bytes=m.level_bytes.total,
        source_bytes=int(sum(i.file_bytes for i in ok)),
        tune=sampled.tune,
        worst=sampled.worst,
        options=_options_record(o),
        seconds=end - t0,
        scores=found.scores,
        duplicate_sets=found.duplicate_sets,
        checks=_checks_record(o),
        examples=examples,
        thumbnails=thumbs,
        notes=_notes(found, sampled, o, measured, len(ok)),
        timings={
            "files": m.t_files - t0,
            "checks": m.t_checks - m.t_files,
            "quality_sample": m.t_sample - m.t_checks,
            "report": end - m.t_sample,
        },
        bytes_measured=None if measured == len(ok) else measured,
        bytes_interval=m.level_bytes.interval,
    )
