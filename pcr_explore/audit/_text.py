"""An audit's findings as a plain-text summary for a terminal."""

from __future__ import annotations

from ._findings import AuditFindings

__all__ = ["render_text"]

_MAX_PROBLEMS = 20


def render_text(r: AuditFindings) -> str:
    """Return a terminal summary: contents, bytes and quality per level, problems."""
    lines = [
        f"{r.path}: {r.kind}, {r.images} images ({r.readable} readable), "
        f"{len(r.classes)} classes, {len(r.problems)} problems, "
        f"{len(r.duplicates)} duplicate groups ({r.seconds:.1f} s)",
        "formats: " + ", ".join(f"{k} {v}" for k, v in r.formats.items()),
        "modes: " + ", ".join(f"{k} {v}" for k, v in r.modes.items()),
        "coding: " + ", ".join(f"{k} {v}" for k, v in r.coding.items()),
    ]
    metric = r.options.get("metric", "")
    lines.append(
        f"{'scan':>4} {'bytes':>14} {'of full':>8} {metric + ' mean':>12} {'p5':>8} "
        f"{'p50':>8} {'p95':>8}"
    )
    for d in r.levels():
        mark = "  <- recommended" if d["scan"] == r.recommended_scan else ""
        q = "".join(
            f" {d[s]:8.4f}" if d[s] is not None else f" {'-':>8}" for s in ("p5", "p50", "p95")
        )
        mean = f"{d['mean']:12.4f}" if d["mean"] is not None else f"{'-':>12}"
        lines.append(f"{d['scan']:>4} {d['bytes']:>14,} {d['bytes_fraction']:8.3f} {mean}{q}{mark}")
    if r.tune is not None:
        lines.append(r.tune.summary())
    else:
        lines.append("no image could be measured: no recommendation")
    for p in r.problems[:_MAX_PROBLEMS]:
        lines.append(f"problem: {p['file']}: {p['issue']}")
    if len(r.problems) > _MAX_PROBLEMS:
        lines.append(f"... and {len(r.problems) - _MAX_PROBLEMS} more problems (see --json)")
    return "\n".join(lines)
