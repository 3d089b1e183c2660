"""The budget's report: its findings, to read in a terminal, a notebook or a saved page."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._public import public
from ..storage._atomic import atomic_write
from ._findings import BudgetFindings
from ._html import render_fragment, render_page
from ._text import render_text

__all__ = ["BudgetReport"]


@public("pcr_explore")
@dataclass(frozen=True, repr=False)
class BudgetReport(BudgetFindings):
    """How many bytes training needs: one row per level and each criterion's choice.

    Attributes
    ----------
    source : str
        What was measured.
    images : int
        Images in the dataset.
    metric : str
        The quality metric ("mssim", ...).
    statistic : str
        The statistic the quality tuner thresholds ("mean" or "p5").
    target : float
        The quality target.
    levels : tuple of BudgetLevel
        Every level, 1..S.
    choices : dict of str to int or None
        Each criterion's level: ``quality`` (the tuner on the curve),
        ``gradient`` (the gradient tuner), ``accuracy`` (the lowest level
        whose proxy training came within ``of_full`` of full quality's); None
        where the criterion was not measured.
    decided : dict of str to bool
        Whether each criterion's measurement separated its level from the
        one below (the sample or batches were enough).
    recommended : int
        The highest of the choices: every criterion measured finds it enough.
    bandwidth : float or None
        Storage bandwidth (bytes/s) the times are given at.
    workers : int
        Cores decoding in parallel, in the time model.
    of_full : float
        The accuracy criterion's share of full quality's best accuracy.
    notes : tuple of str
        What was skipped and why; what each figure is.
    curve, gradient, training, decode
        The measurements themselves, for reuse (``budget(..., curve=...)``).
    disk : int or None
        The disk (or ``cache_max_bytes``) size given, in bytes (None: none
        given, or the source is not a PCR dataset; a note then says so).
    disk_level : int or None
        The highest level whose prefixes of every record fit in ``disk``
        (None: not even level 1 fits, or no disk): passes at that level or
        below fetch each byte once, however many epochs follow.

    ``print(report)`` shows the table, a notebook shows it as HTML,
    :meth:`save_html` writes a page that opens offline, :meth:`to_json` the
    record and :meth:`reprice` the same report at another bandwidth.
    """

    def summary(self) -> str:
        """A terminal table and the recommendation."""
        return render_text(self)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return render_fragment(self)

    def save_html(self, path: str | os.PathLike[str]) -> Path:
        """Write a page that opens offline (no script, no network); return its path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, render_page(self))
        return p
