"""What every explorer widget shares: error capture and a static fallback picture."""

from __future__ import annotations

import base64
import functools
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as w
from bokeh.models import LayoutDOM
from jupyter_bokeh import BokehModel

__all__ = ["Explorer", "html_table"]

_F = TypeVar("_F", bound=Callable[..., Any])


class Explorer:
    """Base of the explorer widgets: a view, an error pane, a static picture.

    A subclass builds ``self.view`` (an ipywidgets box that ends with
    ``self.errors``) and implements :meth:`snapshot`. Displaying the object
    in a notebook shows the live view; where widgets cannot run (a notebook
    saved and rendered on GitHub) the JPEG from :meth:`snapshot` shows
    instead, because it travels in the same output bundle.
    """

    view: w.Box

    def __init__(self) -> None:
        _load_bokehjs()
        self.errors = w.Output(layout=w.Layout(max_height="12em", overflow="auto"))
        self.last_error: BaseException | None = None
        self._plots: list[tuple[BokehModel, LayoutDOM]] = []

    def _plot(self, figure: LayoutDOM) -> BokehModel:
        """Wrap a Bokeh figure as a widget, refreshed each time the view is displayed."""
        model = BokehModel(figure)
        self._plots.append((model, figure))
        return model

    def _guarded(self, fn: _F) -> _F:
        """Wrap a callback so that an exception shows in :attr:`errors`.

        Widget callbacks run inside the comm handler, where a raised
        exception would go to the kernel log and leave the user staring at a
        frozen widget; here it is written to the error pane instead.
        """

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:  # shown to the user, not swallowed
                self.last_error = exc
                self.errors.append_stderr("".join(traceback.format_exception_only(exc)))
                return None
            if self.errors.outputs:
                self.errors.outputs = ()
            self.last_error = None
            return result

        return run  # type: ignore[return-value]

    def snapshot(self) -> bytes:
        """A JPEG picture of the widget's current state (the static fallback)."""
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # jupyter_bokeh applies data changes only to views that exist; a view
        # created now renders from the bundle, so bring the bundle up to date.
        for model, figure in self._plots:
            model.update_from_model(figure)
        data = dict(self.view._repr_mimebundle_())
        try:
            data["image/jpeg"] = base64.b64encode(self.snapshot()).decode("ascii")
        except Exception as exc:  # the live view must still show if the picture fails
            data["text/plain"] = f"{data.get('text/plain', '')} (no static picture: {exc})"
        return data


_bokehjs_loaded = False


def _load_bokehjs() -> None:
    """Put BokehJS into the notebook page, once per kernel.

    ``jupyter_bokeh`` renders with the page's ``window.Bokeh`` and does not
    load it; without this every plot shows a JavaScript error. Inline
    resources (the core bundle only, ~1.3 MB) keep it working offline.
    """
    global _bokehjs_loaded
    if _bokehjs_loaded:
        return
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
    _bokehjs_loaded = True


def html_table(rows: list[tuple[str, str]]) -> str:
    """A two-column HTML table of label/value readouts."""
    cells = "".join(
        f"<tr><td style='padding:0 1em 0 0;color:#555'>{k}</td><td><b>{v}</b></td></tr>"
        for k, v in rows
    )
    return f"<table style='font-size:13px;line-height:1.5'>{cells}</table>"
