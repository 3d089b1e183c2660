"""Pieces shared by the HTML renderings: styles, escaping, number formats, tables."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["CSS", "MAX_ROWS", "esc", "fmt", "more_line", "page", "table"]

MAX_ROWS = 500

_REC = " class='rec'"  # the recommended row

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto;
       max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.meta { color: #666; font-size: 0.9em; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.8em 1em; margin: 1em 0; }
.clear { border-left: 5px solid #1a7f37; } .unclear { border-left: 5px solid #9a6700; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border-bottom: 1px solid #eee; padding: 0.25em 0.7em; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.rec td { background: #fff3f3; font-weight: 600; }
.strip { display: flex; flex-wrap: wrap; gap: 1em; }
.strip figure { margin: 0; border: 1px solid #ddd; border-radius: 4px; padding: 0.4em; }
.strip .pair { display: flex; gap: 0.3em; }
.strip img { display: block; max-height: 160px; }
.strip figcaption { font-size: 0.8em; max-width: 330px; word-break: break-all; }
.cols { display: flex; flex-wrap: wrap; gap: 2em; }
.dupset { border: 1px solid #ddd; border-radius: 6px; padding: 0.5em; margin: 0.6em 0; }
.dupset.leak { border-left: 5px solid #cf222e; }
.dupset .strip figure { border: none; padding: 0; }
.issue h2 { margin-bottom: 0.2em; }
.rule { color: #555; font-size: 0.85em; }
"""


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return esc(v)


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    numeric: Iterable[int] = (),
    *,
    highlight: int | None = None,
    limit: int = MAX_ROWS,
    more: str = "",
    cls: str = "",
) -> str:
    """An HTML table of cells already escaped: *numeric* columns right-aligned.

    Row *highlight* (from 0) is marked as the recommended one; rows past
    *limit* are left out, a line saying how many (and *more*) under the table.
    """
    num = set(numeric)
    body = "".join(
        f"<tr{_REC if k == highlight else ''}>{_cells('td', r, num)}</tr>"
        for k, r in enumerate(rows[:limit])
    )
    attr = f" class='{cls}'" if cls else ""
    html_table = f"<table{attr}><tr>{_cells('th', map(esc, header), num)}</tr>{body}</table>"
    return html_table + more_line(len(rows), limit, more)


def _cells(tag: str, values: Iterable[Any], numeric: set[int]) -> str:
    return "".join(
        f"<{tag} class='num'>{v}</{tag}>" if i in numeric else f"<{tag}>{v}</{tag}>"
        for i, v in enumerate(values)
    )


def more_line(total: int, shown: int, more: str = "") -> str:
    """The "and N more" line under a list cut at *shown* of *total* items ("" if none is cut)."""
    return f"<p class='meta'>and {total - shown:,} more{more}</p>" if total > shown else ""


def page(title: str, body: str, *, css: str = "", head: str = "") -> str:
    """A whole HTML document: the shared styles and *css*, then *head* (scripts), then *body*."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title><style>{CSS}{css}</style>{head}</head>"
        f"<body>{body}</body></html>\n"
    )
