"""A budget report as HTML: a notebook fragment, and a page that opens offline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._version import __version__
from ..auditing._html_base import esc, page, table
from ._chart import CHART_CSS, render_chart
from ._text import choices_line, columns, disk_line

if TYPE_CHECKING:
    from ._findings import BudgetFindings as BudgetReport

__all__ = ["render_details", "render_fragment", "render_page", "render_verdict"]

_CSS = "table.budget td { white-space: nowrap; }" + CHART_CSS


def _table(r: BudgetReport) -> str:
    cols = columns(r)
    rows = [[esc(cells[i]) for _, cells in cols] for i in range(r.num_scans)]
    every = range(len(cols))
    return table([h for h, _ in cols], rows, every, highlight=r.recommended - 1, cls="budget")


def render_verdict(r: BudgetReport) -> str:
    """The recommendation in one sentence, with each criterion's level under it."""
    decided = all(r.decided.values())
    disk = disk_line(r)
    return (
        f"<div class='card {'clear' if decided else 'unclear'}'>"
        f"<b>Level {r.recommended} of {r.num_scans}</b>: {esc(r.sentence)}"
        f"<div class='meta'>{esc(choices_line(r))}</div>"
        + (f"<div class='meta'>{esc(disk)}</div>" if disk is not None else "")
        + "</div>"
    )


def render_details(r: BudgetReport) -> str:
    """The table and the notes: what a view that states the verdict itself shows under it."""
    notes = "".join(f"<li>{esc(n)}</li>" for n in r.notes)
    return _table(r) + (f"<ul class='meta'>{notes}</ul>" if notes else "")


def render_fragment(r: BudgetReport) -> str:
    """The recommendation, the chart, the table and the notes."""
    parts = (render_verdict(r), render_chart(r), render_details(r))
    return f"<div><style>{_CSS}</style>{''.join(parts)}</div>"


def render_page(r: BudgetReport) -> str:
    """A whole page: no script and no link outside it, so it opens from a file offline."""
    body = (
        "<h1>How many bytes does training need?</h1>"
        f"<p class='meta'>{esc(r.source)}: {r.images:,} images; pcr-explore {esc(__version__)}"
        "</p>" + render_verdict(r) + render_chart(r) + render_details(r)
    )
    return page(f"Byte budget: {r.source}", body, css=_CSS)
