"""A budget report as a terminal table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._findings import format_bandwidth, format_size, quality_label

if TYPE_CHECKING:
    from ._findings import BudgetFindings as BudgetReport

__all__ = ["render_text", "columns", "choices_line", "disk_line"]


def _ci(ci: tuple[float, float] | None) -> str:
    if ci is None or ci[0] != ci[0] or abs(ci[0]) == float("inf"):
        return ""
    if ci[0] == ci[1]:
        return ""  # exact: every image measured
    return f" [{ci[0]:.3f},{ci[1]:.3f}]"


def columns(r: BudgetReport) -> list[tuple[str, list[str]]]:
    """The table's columns as (header, cells), shared by the text and HTML views."""
    q = quality_label(r.metric)
    rows = r.levels
    cols = [
        ("scan", [str(x.scan) for x in rows]),
        ("bytes", [f"{x.bytes:,}" for x in rows]),
        ("of full", [f"{x.bytes_fraction:.1%}" for x in rows]),
        (f"{q} mean", [f"{x.quality_mean:.4f}{_ci(x.quality_mean_ci)}" for x in rows]),
        (f"{q} p5", [f"{x.quality_p5:.4f}{_ci(x.quality_p5_ci)}" for x in rows]),
    ]
    if any(x.gradient is not None for x in rows):
        cols.append(
            (
                "gradient cos",
                [
                    "-" if x.gradient is None else f"{x.gradient:.3f}{_ci(x.gradient_ci)}"
                    for x in rows
                ],
            )
        )
    if any(x.accuracy is not None for x in rows):
        cols.append(("val acc", ["-" if x.accuracy is None else f"{x.accuracy:.3f}" for x in rows]))
    if r.disk is not None:
        fit = r.disk_level or 0
        fits = ["yes" if x.scan <= fit else "no" for x in rows]
        cols.append((f"fits {format_size(r.disk)}", fits))
    cols.append(("decode ms/img", [f"{1e3 * x.decode_seconds:.2f}" for x in rows]))
    cols.append(("read-bound below", [format_bandwidth(r.crossover(x.scan)) for x in rows]))
    if r.bandwidth is not None:
        head = f"epoch s at {format_bandwidth(r.bandwidth)}"
        cols.append((head, [f"{r.epoch_seconds(x.scan):.3g}" for x in rows]))
    return cols


def choices_line(r: BudgetReport) -> str:
    """Each criterion's level, side by side."""
    names = {
        "quality": f"{r.statistic} quality >= {r.target:g}",
        "gradient": "gradients",
        "accuracy": f"accuracy within {r.of_full:.0%} of full",
    }
    parts = []
    for key, scan in r.choices.items():
        if scan is None:
            continue
        unsure = "" if r.decided.get(key, True) else " (undecided)"
        parts.append(f"{names[key]} -> {scan}{unsure}")
    return "choices: " + ", ".join(parts)


def disk_line(r: BudgetReport) -> str | None:
    """What a disk of the size given holds for good, and what the recommendation then costs."""
    if r.disk is None:
        return None
    head = f"disk {format_size(r.disk)} ({r.disk:,} bytes): "
    k, rec = r.disk_level, r.level(r.recommended)
    if k is None:
        return head + f"holds no level of every record (level 1 takes {r.level(1).bytes:,} bytes)"
    head += f"holds up to level {k} of every record ({r.level(k).bytes:,} bytes)"
    if k >= rec.scan:
        return head + (
            ", the recommended level included: it is fetched from storage once, however many epochs"
        )
    return head + (
        f"; the recommended level {rec.scan} takes {rec.bytes:,}, so each epoch at it fetches "
        f"at least {rec.bytes - r.disk:,} bytes again"
    )


def render_text(r: BudgetReport) -> str:
    """The table, the choices, the recommendation and the notes."""
    cols = columns(r)
    widths = [max(len(h), *(len(c) for c in cells)) for h, cells in cols]
    lines = [f"{r.source}: {r.images:,} images, {r.num_scans} levels"]
    lines.append("  ".join(h.rjust(w) for (h, _), w in zip(cols, widths)))
    for i in range(r.num_scans):
        mark = "  <- recommended" if i + 1 == r.recommended else ""
        lines.append("  ".join(c[i].rjust(w) for (_, c), w in zip(cols, widths)) + mark)
    lines.append(choices_line(r))
    disk = disk_line(r)
    if disk is not None:
        lines.append(disk)
    lines.append(f"recommendation: {r.sentence}")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)
