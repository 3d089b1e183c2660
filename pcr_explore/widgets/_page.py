"""What an explorer puts into the notebook page besides itself: BokehJS and a style sheet."""

from __future__ import annotations

import base64

__all__ = ["bokehjs_loaded_here", "page_style"]


def bokehjs_loaded_here() -> None:
    """Put BokehJS into the notebook page now; a no-op outside a kernel.

    ``jupyter_bokeh`` renders with the page's ``window.Bokeh`` and does not
    load it. Loading it once per kernel is not enough: a reloaded page, or
    the notebook opened again while the kernel runs, has no BokehJS and its
    plots fail with "Could not create a view". So it is loaded with every
    display, inline (the core bundle only, about 1.3 MB) so that it works
    offline; a page that has it already keeps the copy it has.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipywidgets depends on IPython
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return  # plain Python or a terminal IPython: no page to load into
    from bokeh.io import output_notebook
    from bokeh.resources import Resources

    output_notebook(Resources(mode="inline", components=["bokeh"]), hide_banner=True)


# JupyterLab's widget renderer has no data-mime-type (rendered outputs have one),
# and holds a .widget-box once the live view is there.
_WIDGET_OUTPUT = (
    ".jp-OutputArea-child:has(.{key}) + .jp-OutputArea-child > "
    ".jp-OutputArea-output:not([data-mime-type]):not(:has(.widget-box))"
)

# Global rules, the same in every copy: presentation mode and the busy state.
_SHARED = """
.pcr-present .widget-label, .pcr-present .widget-readout, .pcr-present .widget-html-content,
.pcr-present .widget-html-content table, .pcr-present .widget-dropdown select,
.pcr-present .jupyter-button, .pcr-present .widget-checkbox label,
.pcr-present .widget-inline-hbox .widget-label {font-size: 18px !important;}
.pcr-present .widget-html-content table {line-height: 1.45 !important;}
.pcr-present .widget-label, .pcr-present .widget-readout, .pcr-present .widget-checkbox,
.pcr-present .widget-checkbox label {width: auto !important; max-width: none !important;
  overflow: visible !important; text-overflow: clip !important;}
.pcr-present .widget-readout {min-width: max-content !important;}
.pcr-busy .pcr-dim {opacity: 0.45; transition: opacity 0.15s;}
.pcr-busy-note {color: #9a6700; font-weight: bold;}
"""


def page_style(key: str, picture: bytes | None, size: tuple[int, int] | None) -> str:
    """The HTML of the style output displayed just before an explorer's own output.

    It hides itself and the BokehJS loader's empty output, holds the rules
    of presentation mode and the busy state, and, where JupyterLab cannot
    render the widget output that follows (a saved notebook opened without
    its kernel: "Error displaying widget: model not found"), shows the
    saved picture there instead, with a line saying what it is. Other
    renderers drop ``<style>`` or do not match JupyterLab's classes, and
    show the widget output's own ``image/jpeg``.

    Parameters
    ----------
    key : str
        A class name unique to this display.
    picture : bytes or None
        The JPEG to show without a kernel.
    size : (int, int) or None
        The picture's width and height in pixels.
    """
    # JupyterLab renders the loader as application/javascript or with jupyter_bokeh's type
    loader = ", ".join(
        f'> [data-mime-type="{m}"]'
        for m in ("application/javascript", "application/vnd.bokehjs_load.v0+json")
    )
    rules = [
        f".jp-OutputArea-child:has(.{key}), .jp-OutputArea-child:has({loader})"
        f":has(+ .jp-OutputArea-child .{key}) {{display: none;}}",
        _SHARED,
    ]
    if picture is not None and size is not None:
        data = base64.b64encode(picture).decode("ascii")
        target = _WIDGET_OUTPUT.format(key=key)
        width, height = size
        rules.append(
            f"{target} {{font-size: 0; color: transparent; padding-top: 22px; "
            f"width: 100%; max-width: {width}px; aspect-ratio: {width} / {height}; "
            f'background: url("data:image/jpeg;base64,{data}") left 22px / contain no-repeat;}}\n'
            f'{target}::before {{content: "Saved picture of the widget: run the cell for the '
            f'live one."; font-size: 12px; color: #666; display: block; margin-top: -20px;}}'
        )
    return f"<style>{''.join(rules)}</style><div class='{key}'></div>"
