"""Explorers drawn by an ES module of their own (anywidget): state in traitlets, one front end.

An explorer built on :class:`ModuleWidget` is one widget whose front end is
a file in ``static/`` (an ES module, with the modules it imports inlined:
:func:`~pcr_explore.widgets._demo.inline_module`) and the shared style
sheet. JupyterLab 4, Notebook 7, VS Code, Colab and marimo load it through
anywidget with no extension and nothing fetched from a network; the
kernel-free demo pages run the same file on a model of their own.
"""

from __future__ import annotations

import functools
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anywidget
import traitlets as t

from ._demo import inline_module, static_text
from ._page import fallback_html

__all__ = ["Debounced", "ModuleWidget", "module_text"]

_F = TypeVar("_F", bound=Callable[..., Any])


class Debounced:
    """Run *fn* once the calls have stopped for *delay* seconds (on the kernel's event loop).

    A drag sends a value every few milliseconds; work that only matters
    once the hand stops (redrawing hundreds of timeline bars) waits for the
    last one. Outside a running event loop (a script, a test) each call
    runs *fn* at once, so results never depend on timing there.
    """

    def __init__(self, fn: Callable[[], None], delay: float = 0.25) -> None:
        self.fn = fn
        self.delay = delay
        self._handle: Any = None

    def __call__(self, *args: Any) -> None:
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.fn()
            return
        self.cancel()
        self._handle = loop.call_later(self.delay, self._fire)

    @property
    def pending(self) -> bool:
        """True while a call waits for the calls to stop."""
        return self._handle is not None

    def _fire(self) -> None:
        self._handle = None
        self.fn()

    def cancel(self) -> None:
        """Forget a waiting call."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def flush(self) -> None:
        """Run a waiting call now."""
        if self._handle is not None:
            self.cancel()
            self.fn()


def module_text(name: str) -> str:
    """The ES module *name* of ``static/`` with what it imports, as one module's text."""
    return inline_module(name)


class ModuleWidget(anywidget.AnyWidget):  # type: ignore[misc]
    """Base of the explorers on anywidget: error line, busy note, presentation mode, picture.

    A subclass sets ``_esm`` (``module_text("its_module.js")``) and
    implements :meth:`snapshot`. Displayed in a notebook it shows two
    outputs: the picture from :meth:`snapshot` and the live widget, which
    hides the picture where it draws; where it cannot (a saved notebook
    opened without its kernel, nbconvert's HTML, GitHub) the picture stays.
    The picture follows the widget a second after its state last changed,
    so a notebook saved later keeps the state it was saved in.
    """

    _css = static_text("explorer.css")
    status = t.Unicode("", help="what a slow step is doing now (empty: nothing)").tag(sync=True)
    error = t.Unicode("", help="the last callback's error, shown under the explorer").tag(sync=True)
    presentation = t.Bool(False, help="larger text for a projector").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.last_error: BaseException | None = None
        self._displays: list[str] = []  # display ids of the pictures shown
        self._picture_later = Debounced(self._redraw_pictures, 1.0)

    def _guarded(self, fn: _F) -> _F:
        """Wrap a callback so that an exception shows in :attr:`error` instead of the kernel log."""

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:  # shown to the user, not swallowed
                self.last_error = exc
                self.error = "".join(traceback.format_exception_only(exc)).strip()
                return None
            self.last_error = None
            self.error = ""
            self._changed()
            return result

        return run  # type: ignore[return-value]

    def _changed(self) -> None:
        """The view changed: draw the picture again once the changes stop."""
        if self._displays:
            self._picture_later()

    @contextmanager
    def busy(self, message: str) -> Iterator[None]:
        """Say *message* and dim the view while a slow step runs (the page shows it at once)."""
        self.status = message
        try:
            yield
        finally:
            self.status = ""

    # -- display ---------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """A JPEG picture of the widget's current state (the static fallback)."""
        raise NotImplementedError

    def _picture(self) -> tuple[bytes | None, str]:
        try:
            return self.snapshot(), ""
        except Exception as exc:  # the live view must still show if the picture fails
            return None, f" (no static picture: {exc})"

    def _fallback(self, key: str, picture: bytes | None, note: str) -> dict[str, str]:
        return {
            "text/html": fallback_html(key, picture),
            "text/plain": f"{type(self).__name__}: saved picture of the widget{note}",
        }

    def _ipython_display_(self) -> None:
        from IPython.display import display

        picture, note = self._picture()
        key = f"pcr-fallback-{uuid.uuid4().hex[:12]}"
        display(self._fallback(key, picture, note), raw=True, display_id=key)
        self._displays.append(key)
        bundle = self._repr_mimebundle_()
        live = dict(bundle[0]) if bundle else {}
        live["text/plain"] = (
            f"{type(self).__name__}: the live widget (run the notebook in Jupyter to use it)"
        )
        display(live, raw=True)

    def _redraw_pictures(self) -> None:
        """Draw the picture again in every output that shows it."""
        from IPython.display import update_display

        picture, note = self._picture()
        for key in self._displays:
            update_display(self._fallback(key, picture, note), raw=True, display_id=key)
