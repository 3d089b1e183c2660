"""The pictures of every scan level, all held in the page: the level slider picks one there.

A level step that waits for the kernel costs a round trip, and then the
picture, its caption and the plot's marker arrive one message at a time.
Here each level has its own slot (caption, picture, companion picture,
its caption) in an ipywidgets ``Tab`` with its tab bar hidden, and the
slider's value is linked to the tab's index in the page (``jsdlink``):
moving the slider (or playing) shows the next picture and its byte counter
at once. The kernel follows with what depends on measurements (the marker
and the readouts).

The kernel draws the slot of the level shown at once and the others a
moment after the controls stop (see :class:`LevelPictures`). A slot drawn
for other settings (another image, view or zoom) is marked stale until it
is drawn again; the page then hides its picture and says it is being
drawn, so a level step never shows a picture of other settings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import ipywidgets as w

__all__ = ["LevelPictures", "Slot", "SlotContent"]

STALE = "pcr-stale"


@dataclass(frozen=True)
class SlotContent:
    """What one level's slot shows: the pictures (JPEG bytes) and their captions."""

    left: bytes
    right: bytes | None
    caption: str
    right_caption: str


class Slot:
    """One level's caption, picture, companion picture and its caption."""

    def __init__(self, picture: dict[str, str]) -> None:
        self.caption = w.HTML()
        self.left = w.Image(format="jpeg", layout=w.Layout(**picture))
        self.right = w.Image(format="jpeg", layout=w.Layout(**picture, display="none"))
        self.right_caption = w.HTML()
        self.box = w.VBox(
            [self.caption, w.HBox([self.left, self.right]), self.right_caption],
            layout=w.Layout(min_width="0"),
        )
        self.box.add_class(STALE)
        self.key: Hashable | None = None  # the settings it was drawn for; None: stale

    def show(self, content: SlotContent, key: Hashable) -> None:
        """Show *content*, drawn for the settings *key*."""
        self.left.value = content.left
        if content.right is None:
            self.right.layout.display = "none"
        else:
            self.right.value = content.right
            self.right.layout.display = None
        self.caption.value = content.caption
        self.right_caption.value = content.right_caption
        self.key = key
        self.box.remove_class(STALE)

    def stale(self) -> None:
        """Mark the slot as drawn for other settings: the page hides it until it is redrawn."""
        if self.key is not None:
            self.key = None
            self.box.add_class(STALE)


class LevelPictures:
    """A slot per level, in the page together; *slider* picks the one shown there.

    Parameters
    ----------
    levels : int
        Number of levels (slots 1..levels).
    slider : ipywidgets.IntSlider
        The level control, with values 1..levels.
    picture : dict
        Layout of every picture (``ipywidgets.Layout`` keywords).
    draw : callable
        ``draw(level)`` returns the :class:`SlotContent` of *level* for the
        settings of now.
    """

    def __init__(
        self,
        levels: int,
        slider: w.IntSlider,
        picture: dict[str, str],
        draw: Callable[[int], SlotContent],
    ) -> None:
        self.slots = [Slot(picture) for _ in range(levels)]
        self._draw = draw
        # tab k shows level k; tab 0 is never shown (levels start at 1)
        self.view = w.Tab(
            [w.HTML(), *(s.box for s in self.slots)],
            selected_index=int(slider.value),
            layout=w.Layout(min_width="0", width="100%"),
        )
        self.view.add_class("pcr-levels")
        self._link = w.jsdlink((slider, "value"), (self.view, "selected_index"))

    def __getitem__(self, level: int) -> Slot:
        return self.slots[level - 1]

    def show(self, level: int, key: Hashable) -> None:
        """Draw *level*'s slot for the settings *key* unless it shows them already.

        The other slots drawn for other settings are marked stale.
        """
        for k, slot in enumerate(self.slots, start=1):
            if k != level and slot.key != key:
                slot.stale()
        slot = self[level]
        if slot.key != key:
            try:
                content = self._draw(level)
            except BaseException:
                slot.stale()  # never left showing other settings as if they were these
                raise
            slot.show(content, key)

    def stale_levels(self, level: int) -> list[int]:
        """The levels still to draw, nearest to *level* first."""
        todo = [k for k, s in enumerate(self.slots, start=1) if s.key is None]
        return sorted(todo, key=lambda k: (abs(k - level), k))

    def fill_one(self, level: int, key: Hashable) -> bool:
        """Draw the stale slot nearest to *level*; return whether any is left."""
        todo = self.stale_levels(level)
        if todo:
            self[todo[0]].show(self._draw(todo[0]), key)
        return len(todo) > 1
