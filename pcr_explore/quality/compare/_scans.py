"""What one scan adds to one image: its coefficients, its bytes, and its pixels."""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

import numpy as np

from ..._checks import check_scan
from ..._public import public
from ...jpeg import Size, split_scans
from ...jpeg._coverage import ScanCoverage, scan_coverage
from ...jpeg._orient import decode_upright
from ...read.sources import LevelSource, orientation_of, scan_script_of, source_name
from ._levels import level_note
from ._views import difference_map

__all__ = ["ScanStep", "scan_step", "image_coverage", "auto_gain"]

# What a decoder shows before any coefficient arrives: every block's DC is 0,
# which is mid-grey after the level shift.
_NOTHING = 128


@public("pcr_explore.quality.compare")
@dataclass(frozen=True, eq=False)
class ScanStep:
    """What level *level* of one image adds to level ``level - 1``.

    Attributes
    ----------
    image, level : int
        Image index and level (1..num_scans of the source).
    coverage : ScanCoverage
        The image's coefficients known at this level; its ``added`` marks
        what this level's scan sends (none where the level adds no scan to
        this image, e.g. a colour scan of a grayscale image).
    adds_scan : bool
        Whether this level holds one more of the image's scans.
    level_bytes : ndarray of int
        The image's cumulative bytes at levels 1..num_scans.
    pixels : ndarray of uint8
        The image at this level, decoded upright at the requested size.
    difference : ndarray of uint8, shape (H, W)
        ``|level - previous level| x gain`` (:func:`difference_map`); level
        1 is compared with the flat mid-grey a decoder shows before any data.
    change : ndarray of uint8, shape (H, W)
        The same difference, not amplified.
    gain : float
        The amplification of :attr:`difference`.
    note : str
        What the level adds, in words (:func:`level_note`).
    """

    image: int
    level: int
    coverage: ScanCoverage
    adds_scan: bool
    level_bytes: np.ndarray
    pixels: np.ndarray
    difference: np.ndarray
    change: np.ndarray
    gain: float
    note: str

    @property
    def added_bytes(self) -> int:
        """Bytes this level adds to the image."""
        b = self.level_bytes
        return int(b[self.level - 1] - (b[self.level - 2] if self.level > 1 else 0))

    @property
    def share(self) -> float:
        """The added bytes as a share of the whole image."""
        return self.added_bytes / float(self.level_bytes[-1])

    @property
    def label(self) -> str:
        """What the scan sends, or why this level adds nothing to the image."""
        if self.adds_scan:
            return self.coverage.label()
        return "no scan of this image at this level"

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) readouts, HTML-escaped."""
        cov = self.coverage
        if self.adds_scan and cov.scan is not None:
            s = cov.scan
            coded = ", ".join(cov.component_names[c] for c in s.components)
            band = "DC (coefficient 0)" if s.ss == 0 else f"AC coefficients {s.ss}-{s.se}"
            bits = self.label.partition(", ")[2]
        else:
            coded = band = bits = "-"
        change = self.change
        return [
            ("scan in the file", f"{cov.level} of {len(cov.scans)}"),
            ("components coded", coded),
            ("frequency band", band),
            ("bits", html.escape(bits)),
            (
                "bytes it adds",
                f"{self.added_bytes:,} ({self.share:.1%} of {int(self.level_bytes[-1]):,})",
            ),
            (
                "pixels it changes",
                f"mean {float(change.mean()):.2f}, max {int(change.max())} of 255",
            ),
        ]


def auto_gain(change: np.ndarray, *, percentile: float = 99.5, most: int = 64) -> float:
    """The power of two that takes the strong end of *change* (0-255) closest to 255.

    Examples
    --------
    >>> auto_gain(np.array([0, 3, 5, 9])), auto_gain(np.array([0, 200])), auto_gain(np.zeros(4))
    (16.0, 1.0, 64.0)
    """
    top = float(np.percentile(change, percentile)) if change.size else 0.0
    if top <= 255.0 / most:
        return float(most)
    return float(2 ** max(0, int(np.floor(np.log2(255.0 / top)))))


@public("pcr_explore.quality.compare")
def image_coverage(source: LevelSource, *, image: int = 0, level: int) -> ScanCoverage:
    """The coefficients image *image* of *source* holds at level *level* of the source.

    The image's own scans are read from its file, so this holds for any
    script, for a grayscale image in a colour dataset (whose level counts
    only the luminance scans) and for files with per-image scripts.

    Parameters
    ----------
    source : LevelSource
        A dataset, folder or image file.
    image : int
        Image index.
    level : int
        The source's level, 1..num_scans.

    Returns
    -------
    ScanCoverage
        After the image's scans up to this level; ``added`` marks the scan
        this level adds (none if it adds none to this image).

    Raises
    ------
    ValueError
        If *level* is not an int in 1..num_scans.
    """
    level = check_scan(level, int(source.num_scans), where=source_name(source))
    pj = split_scans(source.jpeg_bytes(image), source=source.names[image])
    ends = np.asarray(pj.scan_ends, np.int64) + 2  # each level ends with an EOI marker
    lb = np.asarray(source.level_bytes(image), np.int64)
    here = int(np.searchsorted(ends, lb[level - 1], side="right"))
    before = int(np.searchsorted(ends, lb[level - 2], side="right")) if level > 1 else 0
    cov = scan_coverage(pj, level=here)
    if here == before:
        cov = replace(cov, added=np.zeros_like(cov.added))
    return cov


@public("pcr_explore.quality.compare")
def scan_step(
    source: LevelSource,
    *,
    image: int = 0,
    level: int,
    gain: float | None = None,
    size: Size = 384,
) -> ScanStep:
    """What level *level* of one image adds: coefficients, bytes and an amplified difference.

    Parameters
    ----------
    source : LevelSource
        A dataset, folder or image file (see
        :func:`~pcr_explore.read.sources.open_source`).
    image : int
        Image index.
    level : int
        The level, 1..num_scans.
    gain : float, optional
        Amplification of the difference picture. Default: the power of two
        (1 to 64) that brings this step's strongest changes (99.5th
        percentile) closest to white without going past it, so the first
        scans do not saturate and the last bits still show; the picture's
        caption should say it (:attr:`ScanStep.gain`).
    size : int or (int, int)
        Decode size of the pictures (longer side), as for
        :func:`~pcr_explore.jpeg.decode`.

    Returns
    -------
    ScanStep

    Raises
    ------
    ValueError
        If *level* is not an int in 1..num_scans or *gain* is not positive.

    Examples
    --------
    >>> from pcr_explore import open_source
    >>> step = scan_step(open_source("photos.pcr"), level=2)
    >>> step.label, step.added_bytes
    ('Y AC 1-5, bits >=2 (Al=2)', ...)
    """
    cov = image_coverage(source, image=image, level=level)
    o = orientation_of(source, image)
    where = source.names[image]
    now = decode_upright(source.jpeg_bytes(image, level), size, o, source=where)
    if level > 1:
        before = decode_upright(source.jpeg_bytes(image, level - 1), size, o, source=where)
    else:
        before = np.full_like(now, _NOTHING)
    lb = np.asarray(source.level_bytes(image), np.int64)
    change = difference_map(now, before, gain=1.0)
    g = auto_gain(change) if gain is None else gain
    return ScanStep(
        image=image,
        level=level,
        coverage=cov,
        adds_scan=bool(cov.added.any()),
        level_bytes=lb,
        pixels=now,
        difference=difference_map(now, before, gain=g),
        change=change,
        gain=g,
        note=level_note(lb, level, scan_script_of(source)),
    )
