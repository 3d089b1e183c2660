"""Pages that run without a kernel: one HTML file, every number embedded.

:func:`~pcr_explore.widgets.scan_demo` and :func:`~pcr_explore.widgets.swap_demo`
measure what a slider would ask for, at every position, before the page is
written; in the browser, the explorer's own module runs on a page model that
only picks among those values. So the page opens from a file, an e-mail
attachment or a course page with no kernel, no server and no network: the
pictures are ``data:`` URIs, the scripts are inlined, and nothing is fetched.

A page's script, style sheet and body are files of the ``static`` folder
(its scripts are ES modules, inlined as one module), read as package data.
"""

from __future__ import annotations

import base64
import errno
import html
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._public import public
from .._version import __version__
from ..storage._atomic import atomic_write

__all__ = [
    "DemoPage",
    "data_uri",
    "inline_module",
    "render_module_page",
    "static_text",
]


@public("pcr_explore.widgets")
@dataclass(frozen=True, repr=False)
class DemoPage:
    """One self-contained HTML page of a demo (see :func:`scan_demo`, :func:`swap_demo`).

    Attributes
    ----------
    title : str
        The page title.
    html : str
        The whole document: the explorer's modules, its style sheets and the data.

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


_IMPORT = re.compile(r'^import \{[^}]*\}\s*from "\./([\w.]+)";\n', re.M)


def static_text(name: str) -> str:
    """A file of the ``static`` folder beside this module (a script, style sheet or template)."""
    folder = resources.files("pcr_explore.widgets") / "static"
    return (folder / name).read_text(encoding="utf-8")


def inline_module(name: str, seen: set[str] | None = None) -> str:
    """The ES module *name* of the ``static`` folder as one inline module's text.

    A page opened from a file may not import the modules beside it, so each
    module it imports comes first, once, and its ``import`` line goes (their
    top-level names do not clash).
    """
    seen = {name} if seen is None else seen
    text, first = static_text(name), []
    for dep in _IMPORT.findall(text):
        if dep not in seen:
            seen.add(dep)
            first.append(inline_module(dep, seen))
    return "".join(first) + _IMPORT.sub("", text)


def _json_script(element_id: str, data: Mapping[str, Any]) -> str:
    """*data* as JSON inside a script element the page parses once (``</`` escaped)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f"<script type='application/json' id='{element_id}'>{text}</script>"


def render_module_page(
    title: str, *, intro: str, module: str, data: Mapping[str, Any], start: str
) -> str:
    """The HTML document of a page that runs an explorer's own module (no Bokeh).

    Parameters
    ----------
    title : str
        Title and heading (plain text).
    intro : str
        The paragraph under the heading (HTML).
    module : str
        The page's ES module in the ``static`` folder; it imports the
        explorer's module, and both are inlined with the explorers' style sheet.
    data : mapping
        JSON-able values; the page's script reads them as ``data``.
    start : str
        The statement that starts the page with ``data`` and ``host`` (the
        element the explorer is drawn into).
    """
    script = (
        inline_module(module)
        + 'const data = JSON.parse(document.getElementById("pcr-demo-data").textContent);\n'
        + 'const host = document.getElementById("pcr-explorer");\n'
        + start
    )
    return static_text("module_page.html").format(
        title=html.escape(title),
        css=static_text("demo.css") + static_text("explorer.css"),
        intro=intro,
        version=__version__,
        data=_json_script("pcr-demo-data", data),
        script=script,
    )
