"""Progress bars in a notebook end as text: a saved notebook shows no dead widget."""

from __future__ import annotations

from typing import Any

import pytest

from pcr_explore import _pool as _progress


class _Handle:
    """What ``display(obj, display_id=True)`` returns in a kernel: updates replace the output."""

    def __init__(self, obj: Any) -> None:
        self.shown = [obj]

    def update(self, obj: Any, raw: bool = False) -> None:
        assert raw
        self.shown.append(obj)


@pytest.fixture
def handles(monkeypatch: pytest.MonkeyPatch) -> list[_Handle]:
    made: list[_Handle] = []

    def display(obj: Any, display_id: Any = None) -> _Handle:
        assert display_id is True
        made.append(_Handle(obj))
        return made[-1]

    monkeypatch.setattr("IPython.display.display", display)
    return made


def test_a_finished_bar_leaves_its_last_line_as_text(handles: list[_Handle]) -> None:
    bar_class = _progress._text_when_closed()
    with bar_class(total=4, desc="audit: files", unit="file") as bar:
        bar.update(4)
    (handle,) = handles
    # first the live bar (a widget), then its last line as plain text
    assert "application/vnd.jupyter.widget-view+json" in handle.shown[0]._repr_mimebundle_()
    text = handle.shown[-1]["text/plain"]
    assert text.startswith("audit: files: 100%") and "4/4" in text
    assert list(handle.shown[-1]) == ["text/plain"]
    bar.close()  # closing again changes nothing
    assert len(handle.shown) == 2


def test_a_bar_not_left_leaves_nothing_unless_it_stopped(handles: list[_Handle]) -> None:
    bar_class = _progress._text_when_closed()
    with bar_class(total=3, leave=False) as bar:
        bar.update(3)
    assert handles[0].shown[-1] == {"text/plain": ""}
    with bar_class(total=3, leave=False) as bar:
        bar.update(1)  # stopped early: the count stays
    assert "1/3" in handles[1].shown[-1]["text/plain"]
    with bar_class(total=3, disable=True) as bar:
        bar.update(3)
    assert len(handles) == 2  # a disabled bar shows nothing


def test_outside_a_notebook_it_is_tqdms_text_bar() -> None:
    from tqdm.notebook import tqdm_notebook

    bar = _progress.progress_bar(total=2, disable=True)
    assert not isinstance(bar, tqdm_notebook)
    bar.close()
