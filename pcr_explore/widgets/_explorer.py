"""What every explorer widget shares: display, error capture, presentation mode, busy state."""

from __future__ import annotations

import base64
import functools
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import ipywidgets as w
from bokeh.core.json_encoder import serialize_json
from bokeh.models import LayoutDOM
from jupyter_bokeh import BokehModel

from ..plots import set_font_size
from ._page import bokehjs_loaded_here, fallback_html

__all__ = ["Explorer", "Debounced", "Plot", "html_table"]

_F = TypeVar("_F", bound=Callable[..., Any])

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class Explorer:
    """Base of the explorer widgets: a view, an error pane, a static picture.

    A subclass builds ``self.view`` (an ipywidgets box that ends with
    ``self.errors``) and implements :meth:`snapshot`. Displaying the object
    in a notebook puts BokehJS into the page (see
    :func:`~pcr_explore.widgets._page.bokehjs_loaded_here`), then two
    outputs: the JPEG from :meth:`snapshot` with the page's style rules, and
    the live view. The live view hides the picture; where it cannot show
    (a saved notebook opened without its kernel, nbconvert's HTML, nbviewer)
    the picture stays and the live view's output is hidden. The picture
    follows the widget: a second after the controls last moved it is drawn
    again, so a notebook saved later keeps the state it was saved in.
    """

    view: w.Box

    def __init__(self) -> None:
        self.errors = w.Output(layout=w.Layout(max_height="12em", overflow="auto"))
        self.last_error: BaseException | None = None
        self._plots: list[tuple[BokehModel, LayoutDOM]] = []
        self.presentation = w.ToggleButton(
            value=False,
            description="presentation",
            icon="tv",
            tooltip="larger text for a projector",
            layout=w.Layout(width="auto"),
        )
        self.presentation.observe(self._guarded(self._on_presentation), names="value")
        self.status = w.HTML(layout=w.Layout(min_height="1.2em"))
        self._displays: list[str] = []  # display ids of the pictures shown
        self._picture_later = Debounced(self._redraw_pictures, 1.0)

    def _plot(self, figure: LayoutDOM, **layout: str) -> BokehModel:
        """Wrap a Bokeh figure as a widget that takes the width its box gives it."""
        model = Plot(
            figure,
            on_change=self._changed,
            layout=w.Layout(min_width="0", flex="1 1 auto", width="100%", **layout),
        )
        self._plots.append((model, figure))
        return model

    def _changed(self) -> None:
        """The view changed: draw the picture again once the changes stop."""
        if self._displays:
            self._picture_later()

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
            self._changed()
            return result

        return run  # type: ignore[return-value]

    # -- presentation and busy state ---------------------------------------------

    def _on_presentation(self, change: Any = None) -> None:
        on = bool(self.presentation.value)
        for _, figure in self._plots:
            for fig in _figures_in(figure):
                set_font_size(fig, "large" if on else "normal", legend=self._legend_size(fig))
        if on:
            self.view.add_class("pcr-present")
        else:
            self.view.remove_class("pcr-present")

    def _legend_size(self, figure: Any) -> str | None:
        """A figure's legend font size in normal mode, when it is not Bokeh's default."""
        return None

    @contextmanager
    def busy(self, message: str) -> Iterator[None]:
        """Show *message* and dim the view while a slow step runs.

        Widget messages leave the kernel as they are set, so the page shows
        the message before the work starts, and clears it when it ends.
        """
        self.status.value = f"<span class='pcr-busy-note'>&#8987; {message}</span>"
        self.view.add_class("pcr-busy")
        try:
            yield
        finally:
            self.view.remove_class("pcr-busy")
            self.status.value = ""

    # -- display ---------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """A JPEG picture of the widget's current state (the static fallback)."""
        raise NotImplementedError

    def _bundle(self, picture: bytes | None) -> dict[str, Any]:
        # jupyter_bokeh applies data changes only to views that exist; a view
        # created now renders from the bundle, so bring the bundle up to date.
        for model, figure in self._plots:
            model.update_from_model(figure)
        data = dict(self.view._repr_mimebundle_())
        if picture is not None:
            data["image/jpeg"] = base64.b64encode(picture).decode("ascii")
        return data

    def _picture(self) -> tuple[bytes | None, str]:
        try:
            return self.snapshot(), ""
        except Exception as exc:  # the live view must still show if the picture fails
            return None, f" (no static picture: {exc})"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        picture, note = self._picture()
        data = self._bundle(picture)
        if note:
            data["text/plain"] = f"{data.get('text/plain', '')}{note}"
        return data

    def _fallback(self, key: str, picture: bytes | None, note: str) -> dict[str, str]:
        name = type(self).__name__
        return {
            "text/html": fallback_html(key, picture),
            "text/plain": f"{name}: saved picture of the widget{note}",
        }

    def _ipython_display_(self) -> None:
        from IPython.display import display

        bokehjs_loaded_here()
        picture, note = self._picture()
        key = f"pcr-fallback-{uuid.uuid4().hex[:12]}"
        display(self._fallback(key, picture, note), raw=True, display_id=key)
        self._displays.append(key)
        live = self._bundle(None)
        live["text/plain"] = (
            f"{type(self).__name__}: the live widget (run the notebook in Jupyter to use it)"
        )
        display(live, raw=True)

    def _redraw_pictures(self) -> None:
        """Draw the picture again in every output that shows it; serialise the figures anew."""
        from IPython.display import update_display

        picture, note = self._picture()
        for key in self._displays:
            update_display(self._fallback(key, picture, note), raw=True, display_id=key)
        for model, _ in self._plots:
            model.serialised()  # ready for a reloaded page, which asks for every widget's state


class Plot(BokehModel):
    """A Bokeh figure as a widget whose state is the figure as it is now.

    ``jupyter_bokeh`` sends each change of the figure to the views that
    exist as a patch, and keeps the render bundle it was built with as the
    widget's state. A view made later (the page reloaded with the same
    kernel, the notebook opened again in another tab) asks the kernel for
    that state, and would draw the figure as it first was. Here the state
    is the figure serialised as it is now: nothing more is sent while the
    controls move, and a new view draws what the kernel holds. The
    serialised figure is kept until the figure changes, and
    :meth:`serialised` makes it ahead of time (the explorers call it once
    the controls stop), so a reloaded page asking for every widget's state
    does not wait for Bokeh to serialise each figure (about 50 ms of CPU for
    one of the explorers' figures). *on_change* is called after every change
    sent.
    """

    def __init__(
        self, model: LayoutDOM, *, on_change: Callable[[], None] | None = None, **kwargs: Any
    ) -> None:
        self._on_change = on_change
        self._serialised: str | None = None
        super().__init__(model, **kwargs)

    def serialised(self) -> str:
        """The figure as it is now, as the JSON of a render bundle (kept until it changes)."""
        if self._serialised is None:
            self._serialised = serialize_json(self._model_to_traits(self._model))
        return self._serialised

    def update_from_model(self, model: Any) -> None:
        super().update_from_model(model)
        self._serialised = serialize_json(self.render_bundle)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        keys = self.keys if key is None else [key] if isinstance(key, str) else list(key)
        bundle = "render_bundle" in keys
        others = [k for k in keys if k != "render_bundle"]
        state = super().get_state(key=others, drop_defaults=drop_defaults) if others else {}
        if bundle:
            state["render_bundle"] = self.serialised()
        return state

    def _sync_model(self, _model: Any, content: dict[str, Any], _buffers: list[Any]) -> None:
        # The page sends each stream it receives back to the kernel, which applied it
        # already: applying it again would double the rows. The explorers' figures never
        # stream from the page, so a stream from there is always that echo.
        if content.get("event") == "jsevent" and content.get("kind") == "ColumnsStreamed":
            return
        super()._sync_model(_model, content, _buffers)

    def _document_patched(self, event: Any) -> None:
        self._serialised = None  # a change from the page too: those come with setter self
        super()._document_patched(event)
        if self._on_change is not None:
            self._on_change()


def _figures_in(item: Any) -> list[Any]:
    """The Bokeh figures in a figure or a layout of figures."""
    children = getattr(item, "children", None)
    if children is None:
        return [item]
    out: list[Any] = []
    for child in children:
        out += _figures_in(child[0] if isinstance(child, tuple) else child)
    return out


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


def html_table(rows: list[tuple[str, str]]) -> str:
    """A two-column HTML table of label/value readouts."""
    cells = "".join(
        f"<tr><td style='padding:0 1em 0 0;color:#555;vertical-align:top;white-space:nowrap'>"
        f"{k}</td>"
        f"<td><b>{v}</b></td></tr>"
        for k, v in rows
    )
    return f"<table class='pcr-readout' style='font-size:13px;line-height:1.5'>{cells}</table>"
