"""The audit report: the findings, with their text, notebook and standalone renderings."""

from __future__ import annotations

import os
from pathlib import Path

from .._json import displayable
from .._public import public
from ..storage._atomic import atomic_write
from ._findings import AuditFindings
from ._html import render_fragment, render_page
from ._text import render_text

__all__ = ["AuditReport"]


@public("pcr_explore")
class AuditReport(AuditFindings):
    """Everything :func:`~pcr_explore.auditing.audit` found, to read, save and show.

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
        ``{"file": ..., "type": ..., "issue": ...}``, one per problem (a file
        may have several), sorted by file; ``type`` is an issue type of
        :data:`~pcr_explore.auditing.ISSUE_TITLES` ("bad_file",
        "blurry", "label_leak" ...), ``issue`` says what and by how much.
    duplicates : list of list of str
        Groups of files with identical bytes.
    duplicate_sets : list of dict
        Exact and near-duplicate sets: ``kind`` ("exact" or "near"),
        ``files``, their ``classes``, ``max_distance`` (pHash bits) and
        ``label_leak`` (the set spans classes).
    scores : list of dict
        One row per image, in index order: ``file``, ``class``, size, format,
        mode, a score per check of :data:`~pcr_explore.auditing.CHECKS` (lower
        is worse; None where the image could not be decoded),
        ``entropy_bits`` and ``phash``.
    checks : dict
        Per check: what its score measures, the threshold used and the rule.
    examples : dict of str to list of dict
        Per check with flagged images: the worst (``file``, ``score``).
    thumbnails : dict of str to str
        ``data:`` URIs of the images the report shows (not in the JSON).
    notes : list of str
        How the numbers were made where it matters (the analysis size, images
        measured for quality at a reduced size).
    timings : dict of str to float
        Seconds spent on the pass over the files (``files``: the sampled
        images' quality is measured in it), checking (``checks``), finishing
        the sample (``quality_sample``: replacements for unreadable sampled
        images, the curve and the recommendation) and making the report
        (``report``).
    conversions : list of dict
        ``{"file": ..., "note": ...}`` for sources that could not be
        transcoded losslessly (non-JPEG formats, CMYK, EXIF rotations).
    level_bytes : ndarray of int
        Bytes of all readable images at each scan level (cumulative); where
        the bytes sample holds only some (the default on a folder of more
        than 32 images), estimated from the images transcoded (see
        ``bytes_measured``, ``bytes_interval`` and ``notes``).
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
    bytes_measured : int or None
        Readable images whose bytes per level were measured, where the
        bytes sample (``AuditOptions.bytes_sample``) held only some (None: all).
    bytes_interval : ndarray of int or None
        (2, levels): the 95% interval of each estimated ``level_bytes``
        (None when the bytes are exact, or estimated from one image).

    Examples
    --------
    >>> from pcr_explore import audit
    >>> report = audit("photos/", sample=64)
    >>> print(report.summary())
    photos/: folder, 14 images (14 readable), 3 classes, 1 problem (near duplicates 1), ...
    >>> report.flagged("near_duplicate"), report.issue_counts
    (['scenes/motorcycle_right.jpg'], {'near_duplicate': 1})
    >>> df = report.to_frame()  # pandas: re-threshold without re-running
    >>> df[df.blurry < 0.25].file.tolist()
    ['science/cell.jpg']
    >>> json_text = report.to_json("audit.json")
    >>> report.to_html("audit.html")
    PosixPath('audit.html')
    """

    def __repr__(self) -> str:
        # short: the arrays and per-image rows are in the fields, not in the repr
        level = f", level {self.tune.scan} recommended" if self.tune is not None else ""
        return (
            f"<AuditReport {self.path!r}: {self.images:,} images, {self.readable:,} readable, "
            f"{len(self.problems):,} problems{level}>"
        )

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write a standalone HTML report (plots, tables, thumbnails; works offline).

        Bokeh's JavaScript is inlined and thumbnails are ``data:`` URIs, so the
        one file opens anywhere without a network. Written atomically.

        Parameters
        ----------
        path : path
            The file to write; its folder is created.

        Returns
        -------
        Path
            The file written.
        """
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, displayable(render_page(self)))  # a name that is not UTF-8
        return p

    def summary(self) -> str:
        """Return a plain-text summary for a terminal."""
        return render_text(self)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return render_fragment(self)
