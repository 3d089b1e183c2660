"""Pages that run without a kernel: one HTML file, BokehJS inlined, every number embedded.

:func:`~pcr_explore.widgets.scan_demo` and :func:`~pcr_explore.widgets.swap_demo`
measure what a slider would ask for, at every position, before the page is
written; in the browser, Bokeh's ``CustomJS`` callbacks only pick among those
values. So the page opens from a file, an e-mail attachment or a course page
with no kernel, no server and no network: the pictures are ``data:`` URIs,
BokehJS is inlined (the parts the page uses), and nothing is fetched.
"""

from __future__ import annotations

import base64
import errno
import html
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._public import public
from .._version import __version__
from ..storage._atomic import atomic_write

__all__ = ["DemoPage", "data_uri", "render_page", "readout_table"]


@public("pcr_explore.widgets")
@dataclass(frozen=True, repr=False)
class DemoPage:
    """One self-contained HTML page of a demo (see :func:`scan_demo`, :func:`swap_demo`).

    Attributes
    ----------
    title : str
        The page title.
    html : str
        The whole document: BokehJS, the controls, the figures and the data.

    Examples
    --------
    >>> page = DemoPage("demo", "<!DOCTYPE html><html></html>")
    >>> page
    <DemoPage 'demo': 28 bytes>
    """

    title: str
    html: str

    @property
    def nbytes(self) -> int:
        """Size of the page in bytes (UTF-8), as it is written."""
        return len(self.html.encode("utf-8"))

    def __repr__(self) -> str:
        n = self.nbytes
        size = f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"
        return f"<DemoPage {self.title!r}: {size}>"

    def save_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the page to *path* atomically (its folder is created); return the path.

        Parameters
        ----------
        path : path
            The file to write, e.g. ``"scans.html"``.

        Returns
        -------
        pathlib.Path

        Raises
        ------
        OSError
            If *path* is a folder or cannot be written (the error names it).
        """
        p = Path(path)
        if p.is_dir():
            raise OSError(errno.EISDIR, "is a folder; give a file name such as demo.html", str(p))
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, self.html)
        return p


def data_uri(jpeg: bytes) -> str:
    r"""A JPEG as a ``data:`` URI, which a page shows without a request.

    >>> data_uri(b"\xff\xd8\xff\xd9")
    'data:image/jpeg;base64,/9j/2Q=='
    """
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def readout_table(rows: list[tuple[str, str]]) -> str:
    """A two-column HTML table of label/value readouts (values are HTML already)."""
    cells = "".join(f"<tr><td>{k}</td><td><b>{v}</b></td></tr>" for k, v in rows)
    return f"<table class='pcr-readout'>{cells}</table>"


_PLAYER = r"""
// The play button of a page: steps a categorical slider to its last value
// every `ms` milliseconds; a second press, or the last value, stops it.
window.pcrPlayer = function (S, stop, ms) {
  return function (slider, button) {
    if (S.timer !== null) { stop(button); return; }
    const cats = slider.categories;
    if (cats.indexOf(slider.value) >= cats.length - 1) slider.value = cats[0];
    button.label = "\u275a\u275a pause";
    S.timer = setInterval(() => {
      const p = cats.indexOf(slider.value);
      if (p >= cats.length - 1) { stop(button); return; }
      slider.value = cats[p + 1];
      if (p + 1 >= cats.length - 1) stop(button);
    }, ms);
  };
};
"""

_CSS = """
:root {color-scheme: light;}
body {font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
  margin: 0; padding: 14px 20px 24px; background: #fff;}
h1 {font-size: 20px; margin: 0 0 2px;}
.pcr-intro {color: #555; margin: 0 0 10px; max-width: 70em;}
.pcr-row {display: flex; flex-wrap: wrap; align-items: flex-end; gap: 4px 14px; margin: 4px 0;}
.pcr-main {display: flex; flex-wrap: wrap; gap: 12px 20px; align-items: flex-start;
  margin-top: 8px;}
.pcr-readout {font-size: 13px; line-height: 1.5; border-collapse: collapse;}
.pcr-readout td:first-child {padding: 0 1em 0 0; color: #555; vertical-align: top;
  white-space: nowrap;}
.pcr-foot {color: #777; font-size: 12px; margin-top: 16px;}
"""


def _json_script(element_id: str, data: Mapping[str, Any]) -> str:
    """*data* as JSON inside a script element the page parses once (``</`` escaped)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f"<script type='application/json' id='{element_id}'>{text}</script>"


def render_page(
    title: str,
    *,
    intro: str,
    body: str,
    roots: Mapping[str, Any],
    data: Mapping[str, Any],
    script: str,
    css: str = "",
) -> str:
    """The HTML document of a demo.

    Parameters
    ----------
    title : str
        Title and heading (plain text).
    intro : str
        The paragraph under the heading (HTML).
    body : str
        The page's own HTML, with ``{name}`` where Bokeh root *name* goes.
    roots : mapping of str to bokeh.models.Model
        The Bokeh models placed in *body*; they share one document, so a
        callback of one may change another.
    data : mapping
        JSON-able values the page script reads from ``#pcr-demo-data``.
    script : str
        The page's JavaScript (runs before the Bokeh roots are embedded).
    css : str
        Style rules added to the shared ones.

    Returns
    -------
    str
        A complete document: only the BokehJS bundles the models need,
        inlined, so that it opens offline.
    """
    from bokeh.embed import components
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.resources import INLINE

    bokeh_script, divs = components(dict(roots))
    bundle = bundle_for_objs_and_resources(list(roots.values()), INLINE)
    resources = "".join(bundle)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title>{resources}<style>{_CSS}{css}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><p class='pcr-intro'>{intro}</p>"
        + body.format(**divs)
        + f"<p class='pcr-foot'>Written by pcr-explore {__version__}: every number on this page "
        "was measured before it was written; it runs in the browser alone, with no kernel "
        "and no network.</p>"
        + _json_script("pcr-demo-data", data)
        + f"<script>{_PLAYER}{script}</script>{bokeh_script}</body></html>\n"
    )
