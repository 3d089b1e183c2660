"""What every explorer widget shares: error capture and a static fallback picture."""

from __future__ import annotations

import base64
import functools
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as w

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
        self.errors = w.Output(layout=w.Layout(max_height="12em", overflow="auto"))
        self.last_error: BaseException | None = None

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
        data = dict(self.view._repr_mimebundle_())
        try:
            data["image/jpeg"] = base64.b64encode(self.snapshot()).decode("ascii")
        except Exception as exc:  # the live view must still show if the picture fails
            data["text/plain"] = f"{data.get('text/plain', '')} (no static picture: {exc})"
        return data


def html_table(rows: list[tuple[str, str]]) -> str:
    """A two-column HTML table of label/value readouts."""
    cells = "".join(
        f"<tr><td style='padding:0 1em 0 0;color:#555'>{k}</td><td><b>{v}</b></td></tr>"
        for k, v in rows
    )
    return f"<table style='font-size:13px;line-height:1.5'>{cells}</table>"
