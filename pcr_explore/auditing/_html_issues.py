"""The issue sections of the HTML report: one per issue type, and the duplicate sets.

Each section says what its score measures and the threshold used, shows
thumbnails of the worst flagged images (lowest score first) and lists every
flagged file. Duplicate sets are shown side by side, label leaks first.
"""

from __future__ import annotations

from typing import Any

from ._checks import CHECKS, ISSUE_TITLES
from ._findings import AuditFindings
from ._html_base import MAX_ROWS, esc, more_line, table
from ._thumbs import MAX_SET_MEMBERS_SHOWN, MAX_SETS_SHOWN

__all__ = ["render_issues"]

# Rows listed per issue type; the JSON has them all.
_ROWS_PER_TYPE = 50


def _figure(r: AuditFindings, file: str, caption: str) -> str:
    uri = r.thumbnails.get(file)
    img = f"<img src='{uri}' alt='{esc(file)}' title='{esc(file)}'>" if uri else ""
    return f"<figure>{img}<figcaption>{esc(file)}<br>{esc(caption)}</figcaption></figure>"


def _summary(r: AuditFindings) -> str:
    counts = r.issue_counts
    rows = []
    for kind, n in counts.items():
        check = r.checks.get(kind)
        rule = ""
        if check is not None:
            op = "&le;" if check.get("flagged_when", "").endswith("<= threshold") else "&lt;"
            rule = f"{esc(check['score'])} {op} {check['threshold']:g}"
        rows.append(
            (f"<a href='#issue-{kind}'>{esc(ISSUE_TITLES.get(kind, kind))}</a>", f"{n:,}", rule)
        )
    if not rows:
        return "<h2>Issues</h2><p>None found.</p>"
    return (
        "<h2>Issues</h2><p class='meta'>Files flagged per issue type; each check flags an "
        "image whose score (lower is worse) is under its threshold. Scores of every image "
        "are in the JSON (<code>scores</code>) and <code>report.to_frame()</code>.</p>"
        + table(("issue", "files", "flagged when"), rows, (1,))
    )


def _rows(r: AuditFindings, kind: str) -> str:
    rows = [(esc(p["file"]), esc(p["issue"])) for p in r.problems if p.get("type") == kind]
    return table(("file", "issue"), rows, limit=_ROWS_PER_TYPE, more=" (see JSON)")


def _section(r: AuditFindings, kind: str, n: int) -> str:
    out = [
        f"<div class='issue' id='issue-{kind}'><h2>{esc(ISSUE_TITLES.get(kind, kind))} ({n:,})</h2>"
    ]
    check = r.checks.get(kind)
    if check is not None and kind in CHECKS:
        op = "at most" if CHECKS[kind].at_most else "under"
        out.append(
            f"<p class='rule'>Score: {esc(check['score'])}; flagged when {op} "
            f"{check['threshold']:g}.</p>"
        )
    examples = r.examples.get(kind, [])
    if examples:
        figs = "".join(_figure(r, e["file"], f"score {e['score']:.3f}") for e in examples)
        out.append(f"<p class='meta'>Worst {len(examples)}, lowest score first:</p>")
        out.append(f"<div class='strip'>{figs}</div>")
    out.append(_rows(r, kind))
    out.append("</div>")
    return "".join(out)


def _set_block(r: AuditFindings, s: dict[str, Any]) -> str:
    files = s["files"]
    figs = "".join(
        _figure(r, f, c or "(no class)")
        for f, c in zip(files[:MAX_SET_MEMBERS_SHOWN], s["classes"][:MAX_SET_MEMBERS_SHOWN])
    )
    rest = ": " + esc(", ".join(files[MAX_SET_MEMBERS_SHOWN:]))
    more = more_line(len(files), MAX_SET_MEMBERS_SHOWN, rest)
    what = (
        "exact duplicates (identical bytes)"
        if s["kind"] == "exact"
        else f"near duplicates (pHash distance up to {s['max_distance']} bits)"
    )
    leak = " &mdash; <b>label leak</b>: one image under several classes" if s["label_leak"] else ""
    cls = "dupset leak" if s["label_leak"] else "dupset"
    return (
        f"<div class='{cls}'><div class='meta'>{len(files)} {what}{leak}</div>"
        f"<div class='strip'>{figs}</div>{more}</div>"
    )


def _sets(r: AuditFindings) -> str:
    if not r.duplicate_sets:
        return ""
    ordered = sorted(r.duplicate_sets, key=lambda s: not s["label_leak"])
    shown = ordered[:MAX_SETS_SHOWN]
    out = [
        "<div class='issue' id='duplicate-sets'>",
        f"<h2>Duplicate sets ({len(r.duplicate_sets):,})</h2>",
        "<p class='meta'>Each set side by side, label leaks first.</p>",
        *(_set_block(r, s) for s in shown),
    ]
    rest = ordered[MAX_SETS_SHOWN:MAX_ROWS]
    if rest:
        out.append("<ul>")
        out.extend(
            f"<li>{esc(s['kind'])}: {esc(', '.join(s['files']))}"
            f"{' (label leak)' if s['label_leak'] else ''}</li>"
            for s in rest
        )
        out.append("</ul>")
    out.append("</div>")
    return "".join(out)


def render_issues(r: AuditFindings) -> str:
    """Return the issues summary, a section per issue type, and the duplicate sets."""
    counts = r.issue_counts
    parts = [_summary(r), _sets(r)]
    parts += [_section(r, kind, n) for kind, n in counts.items()]
    if r.notes:
        parts.append(
            "<h3>Notes</h3><ul>" + "".join(f"<li>{esc(n)}</li>" for n in r.notes) + "</ul>"
        )
    return "".join(parts)
