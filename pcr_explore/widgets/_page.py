"""What an explorer puts into the notebook page besides itself (its picture); show() for Bokeh."""

from __future__ import annotations

import base64
from typing import Any

from .._public import public

__all__ = ["bokehjs_loaded_here", "fallback_html", "show"]

# Per kernel: (cell id, request id) of the display that last carried BokehJS.
_CARRIER: dict[int, tuple[str, str]] = {}


def _request(kernel: Any) -> tuple[str | None, str]:
    """The notebook cell running now (None where the front end does not say) and its request."""
    try:
        parent = kernel.get_parent("shell")
    except TypeError:  # pragma: no cover - ipykernel before 6 takes no channel
        parent = kernel.get_parent()
    cell = (parent.get("metadata") or {}).get("cellId")
    return (str(cell) if cell else None), str((parent.get("header") or {}).get("msg_id", ""))


def bokehjs_loaded_here() -> None:
    """Put BokehJS into the notebook page, once; a no-op outside a kernel.

    A figure shown with :func:`show` renders with the page's ``window.Bokeh``,
    and a reloaded page (or the notebook opened again while the kernel runs)
    has it only from the loader outputs the notebook holds: a page runs them
    again as it renders them. So the loader (inline, the core bundle only, so
    that it works offline) goes into the output of the first cell that shows
    a figure with this kernel, and again only when that same cell runs again
    (running a cell clears its outputs). A front end
    that does not say which cell runs (nbclient, ``jupyter nbconvert
    --execute``: each cell runs once, in order) gets it once per kernel.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipywidgets depends on IPython
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return  # plain Python or a terminal IPython: no page to load into
    cell, request = _request(shell.kernel)
    carrier = _CARRIER.get(id(shell.kernel))
    if carrier is not None and (cell is None or carrier[0] != cell or carrier[1] == request):
        return  # in the page already: another cell's output, or this run's
    _CARRIER[id(shell.kernel)] = (cell or "", request)
    from bokeh.io import output_notebook
    from bokeh.resources import Resources

    output_notebook(Resources(mode="inline", components=["bokeh"]), hide_banner=True)


@public("pcr_explore.widgets")
def show(figure: Any) -> None:
    """Show a Bokeh figure or layout in the notebook, with the page's one copy of BokehJS.

    Like ``bokeh.io.output_notebook(); bokeh.io.show(figure)``, but the
    notebook carries BokehJS once, shared by every figure shown (about 2.5 MB
    saved, where Bokeh's ``INLINE`` loader adds about 8 MB per call), and a
    page reloaded with the same kernel still draws the figure. The copy
    carried is Bokeh's core bundle: figures and layouts, not Bokeh's own
    widgets or tables. Outside a notebook it does what ``bokeh.io.show``
    does.

    Parameters
    ----------
    figure : bokeh.models.LayoutDOM
        A figure or a layout, e.g. from :func:`pcr_explore.plots.reading_figure`.
    """
    from bokeh.io import show as bokeh_show

    bokehjs_loaded_here()
    bokeh_show(figure)


_CHILD = ".jp-OutputArea-child"
_OUT = ".jp-OutputArea-output"


def fallback_html(key: str, picture: bytes | None) -> str:
    """The HTML of the output displayed just before an explorer's live view.

    It holds the widget's picture with a line saying what it is. Where the
    live view shows (JupyterLab with the kernel: loading, then running) it
    hides itself. Where the live view
    cannot show (JupyterLab without the kernel: "Error displaying widget:
    model not found") it hides that message and the picture stays. Where
    widgets are not rendered at all (nbconvert's HTML, nbviewer), the live
    view's output is a line of text, hidden too: one picture, nothing else.

    Parameters
    ----------
    key : str
        A class name unique to this display.
    picture : bytes or None
        The JPEG to show without a kernel.
    """
    this, after = f"{_CHILD}:has(.{key})", f"{_CHILD}:has(.{key}) + {_CHILD}"
    rules = [
        # this output while the live view is there
        f"{this}:has(+ {_CHILD} > {_OUT}:not([data-mime-type]):not(.jupyter-widgets)) "
        "{display: none;}",
        # the live view's output where it failed ("model not found": JupyterLab marks the
        # output itself, a live view marks its children) or is text
        f"{after}:has(> {_OUT}.jupyter-widgets), "
        f'{after}:has(> {_OUT}[data-mime-type="text/plain"]) {{display: none;}}',
        f".{key} img {{display: block; max-width: 100%; height: auto;}}",
    ]
    body = ""
    if picture is not None:
        data = base64.b64encode(picture).decode("ascii")
        body = (
            "<div style='font-size:12px;color:#666'>Saved picture of the widget: "
            "run the cell for the live one.</div>"
            f"<img src='data:image/jpeg;base64,{data}' alt='saved picture of the widget'>"
        )
    return f"<style>{''.join(rules)}</style><div class='{key}'>{body}</div>"
