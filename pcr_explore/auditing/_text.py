"""An audit's findings as a plain-text summary for a terminal."""

from __future__ import annotations

from collections.abc import Iterable

from ._checks import CHECKS, ISSUE_TITLES
from ._findings import AuditFindings, lossy_note

__all__ = ["render_text"]

_MAX_PROBLEMS = 20
_MAX_SETS = 10


def _levels(r: AuditFindings) -> list[str]:
    metric = r.options.get("metric", "")
    head = "bytes" if r.bytes_measured is None else "bytes (est.)"  # from a bytes sample
    ci = r.bytes_interval is not None  # the estimate's 95% interval, as +- a share of it
    lines = [
        f"{'scan':>4} {head:>14}{'95% interval' if ci else '':>14} {'of full':>8} "
        f"{metric + ' mean':>12} {'p5':>8} {'p50':>8} {'p95':>8}"
    ]
    for d in r.levels():
        half = (d["bytes_high"] - d["bytes_low"]) / 2 / max(d["bytes"], 1) if ci else 0.0
        pm = f"{'+-':>7}{half:7.1%}" if ci else ""
        mark = "  <- recommended" if d["scan"] == r.recommended_scan else ""
        q = "".join(
            f" {d[s]:8.4f}" if d[s] is not None else f" {'-':>8}" for s in ("p5", "p50", "p95")
        )
        mean = f"{d['mean']:12.4f}" if d["mean"] is not None else f"{'-':>12}"
        lines.append(
            f"{d['scan']:>4} {d['bytes']:>14,}{pm} {d['bytes_fraction']:8.3f} {mean}{q}{mark}"
        )
    lines.append(
        "bytes: the images' JPEG bytes at each level (a PCR dataset's records add their "
        "headers: pcr-explore inspect)"
    )
    return lines


def _issues(r: AuditFindings) -> list[str]:
    counts = r.issue_counts
    if not counts:
        return ["issues: none found"]
    lines = ["issues (files):"]
    for kind, n in counts.items():
        check = r.checks.get(kind)
        rule = ""
        if check is not None and kind in CHECKS:
            op = "<=" if CHECKS[kind].at_most else "<"
            rule = f"  [{kind} score {op} {check['threshold']:g}]"
        lines.append(f"  {ISSUE_TITLES.get(kind, kind):<40} {n:>6}{rule}")
    return lines


def _sets(r: AuditFindings) -> list[str]:
    lines = []
    for s in r.duplicate_sets[:_MAX_SETS]:
        leak = "  LABEL LEAK" if s["label_leak"] else ""
        dist = f" (pHash distance <= {s['max_distance']})" if s["kind"] == "near" else ""
        lines.append(f"{s['kind']} duplicates{dist}: {', '.join(s['files'])}{leak}")
    if len(r.duplicate_sets) > _MAX_SETS:
        lines.append(f"... and {len(r.duplicate_sets) - _MAX_SETS} more duplicate sets")
    return lines


def _few(names: Iterable[str], n: int = 5) -> str:
    names = list(names)
    more = f" and {len(names) - n:,} more" if len(names) > n else ""
    return ", ".join(names[:n]) + more


def render_text(r: AuditFindings) -> str:
    """Return a terminal summary: contents, issues, duplicate sets, bytes and quality per level."""
    lines = [
        f"{r.path}: {r.kind}, {r.images} images ({r.readable} readable), "
        f"{len(r.classes)} classes, {r.problems_line}, "
        f"{len(r.duplicate_sets)} duplicate sets ({r.seconds:.1f} s)",
        "formats: " + ", ".join(f"{k} {v}" for k, v in r.formats.items()),
        "modes: " + ", ".join(f"{k} {v}" for k, v in r.modes.items()),
        "coding: " + ", ".join(f"{k} {v}" for k, v in r.coding.items()),
        *_levels(r),
    ]
    if r.tune is not None:
        lines.append(r.tune.summary())
    else:
        lines.append("no image could be measured: no recommendation")
    lines += _issues(r)
    lines += _sets(r)
    for p in r.problems[:_MAX_PROBLEMS]:
        lines.append(f"problem: {p['file']}: {p['issue']}")
    if len(r.problems) > _MAX_PROBLEMS:
        lines.append(f"... and {len(r.problems) - _MAX_PROBLEMS} more problems (see --json)")
    lossy = [c for c in r.conversions if not c["lossless"]]
    if lossy:
        lines.append(f"note: {lossy_note(len(lossy))}: {_few(c['file'] for c in lossy)}")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)
