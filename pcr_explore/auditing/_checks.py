"""The image checks: what each score means, its threshold, and the issue it raises.

Every check has a per-image score where lower is worse, and flags an image
whose score is under the threshold (at most the threshold, for the
near-duplicate distance). Scores are kept for every image, so a user can
re-threshold without re-running the audit (``report.to_frame()``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .._public import public

__all__ = [
    "CHECKS",
    "ISSUE_TITLES",
    "Check",
    "check_thresholds",
]


@public("pcr_explore.auditing")
@dataclass(frozen=True)
class Check:
    """One image check.

    Attributes
    ----------
    issue : str
        The issue type it raises (the ``type`` of a problem).
    score : str
        What the per-image score measures.
    threshold : float
        The default threshold.
    at_most : bool
        Flag when the score is at most the threshold (a distance) instead of
        under it.
    """

    issue: str
    score: str
    threshold: float
    at_most: bool = False

    def flags(self, score: float, *, threshold: float | None = None) -> bool:
        """Whether *score* is an issue at *threshold* (default: this check's own).

        Examples
        --------
        >>> CHECKS["dark"].flags(0.2), CHECKS["dark"].flags(0.5)
        (True, False)
        >>> CHECKS["near_duplicate"].flags(4), CHECKS["near_duplicate"].flags(5)
        (True, False)
        """
        t = self.threshold if threshold is None else threshold
        if score is None or math.isnan(score):
            return False
        return score <= t if self.at_most else score < t

    @property
    def rule(self) -> str:
        """The flag rule in words, e.g. ``"< 0.32"``."""
        return f"{'<=' if self.at_most else '<'} {self.threshold:g}"


CHECKS: dict[str, Check] = {
    c.issue: c
    for c in (
        Check(
            "near_duplicate",
            "perceptual-hash (pHash, 64 bits) distance in bits to the nearest other image, "
            "searched up to 8 bits or the threshold if higher (inf: none that close)",
            4,
            at_most=True,
        ),
        Check("blurry", "Laplacian std over grey-level std at 256 px, capped at 1", 0.12),
        Check("dark", "99th percentile of pixel brightness (0-1)", 0.32),
        Check("light", "1 - the 1st percentile of pixel brightness", 0.32),
        Check("low_information", "grey-level entropy in bits / 8", 0.25),
        Check("grayscale", "99th percentile of the max-min channel spread (0: one channel)", 0.02),
        Check("odd_aspect_ratio", "shorter side / longer side", 0.35),
        Check("odd_size", "linear size sqrt(w*h) against the median, min(r, 1/r)", 0.4),
    )
}

# Every problem type, in report order, with its heading.
ISSUE_TITLES: dict[str, str] = {
    "bad_file": "Unreadable files",
    "misnamed": "Format and name disagree",
    "exact_duplicate": "Exact duplicates",
    "near_duplicate": "Near duplicates",
    "label_leak": "Label leaks (duplicates across classes)",
    "blurry": "Blurry",
    "dark": "Dark",
    "light": "Light",
    "low_information": "Low information",
    "grayscale": "Grayscale",
    "odd_aspect_ratio": "Odd aspect ratio",
    "odd_size": "Odd size",
    "tiny": "Tiny",
    "cmyk": "CMYK",
    "coding": "Unusual JPEG coding",
    "quality": "Quality not measurable",
}


def check_thresholds(overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Return every check's threshold, with *overrides* applied and validated.

    Parameters
    ----------
    overrides : mapping of str to float, optional
        Issue type to threshold.

    Returns
    -------
    dict of str to float

    Raises
    ------
    ValueError
        If an issue type has no threshold, or a value is not a finite number
        at least 0.

    Examples
    --------
    >>> check_thresholds({"dark": 0.25})["dark"]
    0.25
    >>> check_thresholds({"fuzzy": 1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: no threshold for 'fuzzy'; checks with one: near_duplicate, blurry, dark, ...
    """
    out = {k: c.threshold for k, c in CHECKS.items()}
    for k, v in (overrides or {}).items():
        if k not in CHECKS:
            raise ValueError(f"no threshold for {k!r}; checks with one: {', '.join(CHECKS)}")
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok or not math.isfinite(v) or v < 0:
            raise ValueError(f"threshold for {k} must be a finite number >= 0, got {v!r}")
        out[k] = float(v)
    return out
