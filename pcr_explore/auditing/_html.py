"""An audit's findings as HTML: a standalone page and a notebook fragment.

The page inlines Bokeh's JavaScript and CSS and carries its thumbnails as
``data:`` URIs, so the one file opens anywhere without a network. The
fragment is the same without the plots (no JavaScript), for ``_repr_html_``.
"""

from __future__ import annotations

from .._version import __version__
from ._findings import AuditFindings, lossy_note
from ._html_base import CSS, esc, fmt, page, table
from ._html_issues import render_issues

__all__ = ["render_fragment", "render_page"]


def _counts_table(title: str, counts: dict[str, int]) -> str:
    if not counts:
        return ""
    rows = [(esc(k), f"{v:,}") for k, v in counts.items()]
    return f"<div><h3>{esc(title)}</h3>{table(('', 'images'), rows, (1,))}</div>"


def _header(r: AuditFindings) -> str:
    return (
        f"<h1>Dataset audit: {esc(r.path)}</h1>"
        f"<p class='meta'>{esc(r.kind)}; {r.images:,} images, {r.readable:,} readable, "
        f"{esc(r.problems_line)}; audited in {r.seconds:.1f} s by pcr-explore "
        f"{esc(__version__)}</p>"
    )


def _recommendation(r: AuditFindings) -> str:
    t = r.tune
    if t is None:
        return "<div class='card unclear'>No image could be measured: no recommendation.</div>"
    cls = "clear" if t.decided else "unclear"
    lo, hi = t.ci
    return (
        f"<div class='card {cls}'><b>Recommended scan level: {t.scan} of "
        f"{t.curve.num_scans}</b> &mdash; {t.statistic} {esc(t.metric)} {t.value:.4f} "
        f"({t.confidence:.0%} interval {lo:.4f} to {hi:.4f}) for a target of {t.target:g}; "
        f"reads {t.bytes_fraction:.1%} of the bytes, saving {t.bandwidth_saving:.1%}.<br>"
        f"Sample: {t.sample_size:,} of {t.population:,} images; {esc(t.explanation)}.</div>"
    )


def _levels(r: AuditFindings) -> str:
    rec = r.recommended_scan
    metric = r.options.get("metric", "")
    rows = []
    for d in r.levels():
        rows.append(
            (
                str(d["scan"]),
                f"{d['bytes']:,}"
                + (f" ({d['bytes_low']:,} to {d['bytes_high']:,})" if "bytes_low" in d else ""),
                f"{d['bytes_fraction']:.1%}",
                fmt(d["mean"]),
                fmt(d["p5"]),
                fmt(d["p50"]),
                fmt(d["p95"]),
            )
        )
    levels = table(
        (
            "scan",
            "bytes"
            if r.bytes_measured is None
            else "bytes (estimated" + (", 95% interval)" if r.bytes_interval is not None else ")"),
            "of full",
            f"{metric} mean",
            "p5",
            "median",
            "p95",
        ),
        rows,
        (1, 2, 3, 4, 5, 6),
        highlight=None if rec is None else rec - 1,
    )
    bytes_from = (
        "all readable images"
        if r.bytes_measured is None
        else f"all readable images, estimated from the {r.bytes_measured:,} transcoded"
        + (" (ratio estimate; its t interval)" if r.bytes_interval is not None else "")
    )
    return (
        f"<h2>Bytes and quality per scan level</h2><p class='meta'>Bytes: {bytes_from}; "
        "quality: the sample, each level against the same image in full.</p>" + levels
    )


def _worst(r: AuditFindings) -> str:
    if not r.worst or r.tune is None:
        return ""
    k = r.tune.scan
    figs = []
    for w in r.worst:
        pair = ""
        if "thumb_full" in w and "thumb_level" in w:
            pair = (
                f"<div class='pair'><img src='{w['thumb_full']}' alt='full' title='full'>"
                f"<img src='{w['thumb_level']}' alt='scan {k}' title='scan {k}'></div>"
            )
        figs.append(
            f"<figure>{pair}<figcaption>{esc(w['file'])}<br>full | scan {k}: "
            f"{esc(r.tune.metric)} {w['value']:.4f}, {w['bytes_fraction']:.1%} of its bytes"
            "</figcaption></figure>"
        )
    return (
        f"<h2>Worst images at scan {k}</h2><p class='meta'>The sampled images that lose the "
        f"most at the recommended level: full version left, scan {k} right.</p>"
        f"<div class='strip'>{''.join(figs)}</div>"
    )


def _overview(r: AuditFindings) -> str:
    sizes = r.sizes
    size_rows = [
        (name, fmt(s.get("min"), d), fmt(s.get("median"), d), fmt(s.get("max"), d))
        for name, s, d in (
            ("width (px)", sizes.get("width", {}), 0),
            ("height (px)", sizes.get("height", {}), 0),
            ("megapixels", sizes.get("megapixels", {}), 3),
        )
    ]
    size_table = (
        "<div><h3>Sizes</h3>" + table(("", "min", "median", "max"), size_rows, (1, 2, 3)) + "</div>"
    )
    return (
        "<h2>Contents</h2><div class='cols'>"
        + _counts_table("Formats", r.formats)
        + _counts_table("Colour modes", r.modes)
        + _counts_table("JPEG coding of the sources", r.coding)
        + size_table
        + _counts_table("Shorter side (px)", r.sizes.get("shorter_side", {}))
        + _counts_table("Classes", r.classes)
        + "</div>"
    )


def _problems(r: AuditFindings) -> str:
    out = [render_issues(r)]
    if r.conversions:
        lossy = sum(not c["lossless"] for c in r.conversions)
        rows = [
            (esc(c["file"]), "yes" if c["lossless"] else "<b>no</b>", esc(c["note"]))
            for c in r.conversions
        ]
        out.append(
            f"<h3>Conversions at encode ({len(r.conversions):,}, {lossy:,} with loss)</h3>"
            + (f"<p>{esc(lossy_note(lossy))}</p>" if lossy else "")
            + table(("file", "lossless", "note"), rows)
        )
    return "".join(out)


def _plots(r: AuditFindings) -> tuple[str, str]:
    """Return (script, div) of the Bokeh plots."""
    from bokeh.embed import components
    from bokeh.layouts import column

    # Bokeh takes half a second to import: only a page with plots pays for it.
    from ..plots import bytes_figure, quality_figure

    items = []
    if r.tune is not None:
        qf = quality_figure(
            r.tune.curve,
            target=r.tune.target,
            recommended=r.tune.scan,
            statistic=r.tune.statistic,
            title=f"{r.tune.metric} per scan level ({r.tune.sample_size} sampled images)",
            width=900,
        )
        # bytes on the x axis: the whole dataset's, like the recommendation
        data = dict(qf.source.data)
        data["bytes_fraction"] = r.bytes_fraction
        qf.source.data = data
        rec = dict(qf.recommended.data)
        if rec["bytes_fraction"]:
            rec["bytes_fraction"] = [float(r.bytes_fraction[r.tune.scan - 1])]
            qf.recommended.data = rec
        items.append(qf.figure)
    items.append(bytes_figure(r.level_bytes, width=900).figure)
    script, div = components(column(*items))
    return script, div


def render_page(r: AuditFindings) -> str:
    """Return the standalone HTML page: Bokeh's JS and CSS inlined, no external URL.

    Parameters
    ----------
    r : AuditFindings
        The audit's findings (an :class:`~pcr_explore.auditing.AuditReport`).

    Returns
    -------
    str
        A complete HTML document.
    """
    from bokeh.resources import INLINE

    script, div = _plots(r)
    plots = f"<h2>Quality against bytes</h2>{div}"
    return page(f"Audit: {r.path}", _body(r, plots), head=INLINE.render() + script)


def render_fragment(r: AuditFindings) -> str:
    """Return a notebook fragment: the page without the plots (no JavaScript).

    Parameters
    ----------
    r : AuditFindings
        The audit's findings.

    Returns
    -------
    str
        A ``<div>`` with its own styles.
    """
    return f"<div><style>{CSS}</style>{_body(r)}</div>"


def _body(r: AuditFindings, plots: str = "") -> str:
    """Every section of the report, the plots (if any) after the recommendation."""
    return (
        _header(r)
        + _recommendation(r)
        + plots
        + _levels(r)
        + _worst(r)
        + _overview(r)
        + _problems(r)
    )
