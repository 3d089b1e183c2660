"""From every image's facts to the audit's findings: scores, flags, duplicate sets, leaks.

The per-image checks need the whole dataset in two places: an odd size is
odd against the median size, and grayscale is only an issue where most
images are in colour (in a grayscale dataset it is the norm). Duplicates
are found across all images at once (:mod:`._duplicates`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._checks import CHECKS
from ._duplicates import HASH_BITS, exact_groups, near_duplicates
from ._inspect import FileInfo

__all__ = ["ImageFindings", "find_issues"]

# The checks scored by a property of one image; the other two compare it with the rest.
_PROPERTY_CHECKS = tuple(k for k in CHECKS if k not in ("near_duplicate", "odd_size"))


@dataclass
class ImageFindings:
    """Problems, per-image scores and duplicate sets of a dataset's images."""

    problems: list[dict[str, str]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    duplicate_sets: list[dict[str, Any]] = field(default_factory=list)
    exact: list[list[str]] = field(default_factory=list)
    colour_dataset: bool = True


def _odd_size_scores(infos: list[FileInfo]) -> tuple[np.ndarray, float]:
    """Per image min(r, 1/r) of its linear size r against the median; and the median."""
    side = np.array(
        [math.sqrt(i.width * i.height) if i.props is not None else np.nan for i in infos]
    )
    ok = side[np.isfinite(side) & (side > 0)]
    if not len(ok):
        return np.full(len(infos), np.nan), float("nan")
    med = float(np.median(ok))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = side / med
        return np.minimum(r, 1.0 / r), med


def _message(kind: str, info: FileInfo, score: float, t: float, median: float) -> str:
    p = info.props
    assert p is not None  # for mypy: only measured images are flagged
    rule = f"{score:.3f} < {t:g}"
    if kind == "dark":
        return f"dark: the brightest 1% of pixels reach only {score:.2f} brightness ({rule})"
    if kind == "light":
        return f"light: 99% of pixels are brighter than {1 - score:.2f} ({rule})"
    if kind == "low_information":
        return f"low information: grey-level entropy {p.entropy_bits:.2f} bits ({rule})"
    if kind == "blurry":
        return f"blurry: little fine detail for its contrast (sharpness {rule})"
    if kind == "grayscale":
        if p.one_channel:
            return f"grayscale: stored with one channel (mode {info.mode}) in a colour dataset"
        return f"grayscale content stored as {info.mode}: all channels equal ({rule})"
    if kind == "odd_aspect_ratio":
        return f"odd aspect ratio {info.width}x{info.height} ({rule})"
    factor = math.sqrt(info.width * info.height) / median
    what = f"{factor:.1f}x" if factor >= 1 else f"1/{1 / factor:.1f}"
    return (
        f"odd size {info.width}x{info.height}: linear size {what} the median "
        f"{median:.0f} px ({rule})"
    )


def _duplicate_findings(
    infos: list[FileInfo],
    names: list[str],
    classes_of: list[str],
    t_near: float,
    out: ImageFindings,
) -> np.ndarray:
    """Add the duplicate sets, their problems and label leaks; return nearest distances."""
    groups = exact_groups([i.digest if i.props is not None else "" for i in infos])
    hashes = [i.props.phash if i.props is not None else None for i in infos]
    near = near_duplicates(hashes, groups, int(t_near))
    out.exact = [[names[j] for j in g] for g in groups]
    sets = [("exact", g, 0) for g in groups]
    sets += [("near", g, d) for g, d in zip(near.sets, near.max_distance)]
    sets.sort(key=lambda s: (s[1][0], s[0]))
    for kind, g, dist in sets:
        classes = sorted({classes_of[j] for j in g if classes_of[j]})
        leak = len(classes) > 1
        out.duplicate_sets.append(
            {
                "kind": kind,
                "files": [names[j] for j in g],
                "classes": [classes_of[j] for j in g],
                "max_distance": dist,
                "label_leak": leak,
            }
        )
        first = names[g[0]]
        for j in g[1:]:
            if kind == "exact":
                text = f"exact duplicate of {first} (identical bytes)"
            else:
                d = hamming_of(hashes[g[0]], hashes[j])
                text = f"near duplicate of {first} (pHash distance {d} of {HASH_BITS} bits)"
            out.problems.append({"file": names[j], "type": f"{kind}_duplicate", "issue": text})
        if leak:
            for j in g:
                others = ", ".join(names[k] for k in g if k != j and classes_of[k] != classes_of[j])
                out.problems.append(
                    {
                        "file": names[j],
                        "type": "label_leak",
                        "issue": f"label leak: {kind} duplicate filed under "
                        f"{classes_of[j] or '(no class)'}, also under another class as {others}",
                    }
                )
    return near.nearest


def hamming_of(a: int | None, b: int | None) -> int:
    """Bits that differ between two hashes (0 when either is missing)."""
    return bin((a or 0) ^ (b or 0)).count("1")


def find_issues(
    infos: list[FileInfo],
    names: list[str],
    classes_of: list[str],
    thresholds: dict[str, float],
) -> ImageFindings:
    """Score and flag every image, and find the duplicate sets.

    Parameters
    ----------
    infos : list of FileInfo
        One per image, in index order.
    names : list of str
        Image names, by index.
    classes_of : list of str
        Each image's class ("" for none), by index.
    thresholds : dict of str to float
        Every check's threshold (:func:`~pcr_explore.auditing._checks.check_thresholds`).

    Returns
    -------
    ImageFindings
        Problems of the checks and duplicates (not the files' own issues),
        one scores row per image, and the duplicate sets.
    """
    out = ImageFindings()
    nearest = _duplicate_findings(infos, names, classes_of, thresholds["near_duplicate"], out)
    size_scores, median = _odd_size_scores(infos)
    measured = [i for i in infos if i.props is not None]
    gray = sum(
        1 for i in measured if i.props is not None and i.props.grayscale < thresholds["grayscale"]
    )
    out.colour_dataset = gray * 2 < len(measured)
    for info, near_bits, odd in zip(infos, nearest, size_scores):
        row: dict[str, Any] = {
            "file": info.name,
            "class": classes_of[info.index],
            "width": info.width,
            "height": info.height,
            "format": info.format,
            "mode": info.mode,
        }
        p = info.props
        if p is None:
            row.update({k: None for k in CHECKS})
            row.update(entropy_bits=None, phash=None)
            out.scores.append(row)
            continue
        values = {k: float(getattr(p, k)) for k in _PROPERTY_CHECKS}
        values["odd_size"] = float(odd)
        values["near_duplicate"] = float(near_bits)
        row.update({k: values[k] for k in CHECKS})
        row.update(entropy_bits=p.entropy_bits, phash=f"{p.phash:016x}")
        out.scores.append(row)
        low_info = CHECKS["low_information"].flags(
            values["low_information"], threshold=thresholds["low_information"]
        )
        for kind in (*_PROPERTY_CHECKS, "odd_size"):
            if not CHECKS[kind].flags(values[kind], threshold=thresholds[kind]):
                continue
            if kind == "blurry" and low_info:
                continue  # a flat image has nothing to be sharp about: it is low information
            if kind == "grayscale" and not out.colour_dataset:
                continue  # grayscale is the norm here
            text = _message(kind, info, values[kind], thresholds[kind], median)
            out.problems.append({"file": info.name, "type": kind, "issue": text})
    return out
