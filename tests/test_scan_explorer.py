"""ScanExplorer in the kernel: set its traits as the page does, check the state the page draws.

The front end (``static/scan_explorer.js``, on anywidget) holds every level's
picture, byte counter and readouts of the image shown and draws the slider,
the zoom and the split line itself; these tests check that state on the
Python side, with no browser (tests/test_browser*.py drive the page).
Outside a kernel the widget talks to a dummy comm, and no event loop runs:
what waits for the controls to stop (the saved picture, the scan panel) runs
at once.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import traitlets
from PIL import Image

from pcr_explore import encode_dataset, open_dataset
from pcr_explore.jpeg import decode
from pcr_explore.plots import to_db
from pcr_explore.quality import image_quality, quality_curve
from pcr_explore.quality.compare import difference_map
from pcr_explore.quality.compare._views import encode_jpeg, jpeg_size
from pcr_explore.widgets import ScanExplorer

N = 10  # the standard script's levels


def _is_jpeg(data: bytes) -> bool:
    return data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"


def _floats(values: list[float | None]) -> np.ndarray:
    """A list the page gets (None for a gap) as floats (NaN for a gap)."""
    return np.asarray([np.nan if v is None else v for v in values], float)


@pytest.fixture(scope="module")
def photos_256(
    tmp_path_factory: pytest.TempPathFactory,
    encode_jpeg: Callable[..., bytes],
    sk_photo: Callable[..., np.ndarray],
) -> Path:
    """Photos with a shorter side of at least 170 px: MS-SSIM uses all 5 scales."""
    root = tmp_path_factory.mktemp("photos256")
    for cls, names in {"a": ["astronaut", "chelsea"], "b": ["coffee", "camera"]}.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(encode_jpeg(sk_photo(n, 256)))
    return root


@pytest.fixture(scope="module")
def dataset_path(photos_256: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pcr256") / "ds"
    encode_dataset(photos_256, out, record_size=64 * 1024, workers=1, progress=False)
    return out


@pytest.fixture(scope="module")
def scan(dataset_path: Path) -> ScanExplorer:
    return ScanExplorer(str(dataset_path), image=0, level=4, dataset_sample=3, workers=1)


@pytest.fixture
def shown(scan: ScanExplorer) -> Iterator[ScanExplorer]:
    """The module's explorer at image 0, level 4, level view, no zoom; put back afterwards."""

    def reset() -> None:
        scan.image, scan.level, scan.mode, scan.scale = 0, 4, "level", "value"
        scan.zoom, scan.zoom_x, scan.zoom_y = 1.0, 0.5, 0.5
        scan.scan_open = scan.presentation = False
        scan._displays.clear()

    reset()
    yield scan
    reset()


# -- every level of the image shown is in the state ----------------------------------


def test_every_level_is_in_the_state_with_its_own_bytes(shown: ScanExplorer) -> None:
    src, i = shown.source, shown.index
    nbytes, q = src.level_bytes(i), image_quality(src, image=i)
    assert shown.num_scans == N and shown.levels == list(range(1, N + 1))
    assert shown.names == list(src.names)
    assert [len(x) for x in (shown.pictures, shown.captions, shown.readouts)] == [N] * 3
    for k in range(1, N + 1):
        assert shown.pictures[k - 1] == src.jpeg_bytes(i, k)  # small enough: sent as read
        have, full = f"{int(nbytes[k - 1]):,}", f"{int(nbytes[-1]):,}"
        # the byte counter above the picture; the page puts the zoom and split notes in the slot
        assert shown.captions[k - 1].startswith(
            f"<b>scan {k} of {N}</b> &middot; {have} of {full} bytes "
            f"({nbytes[k - 1] / nbytes[-1]:.1%})<!--view-->"
        )
        rows = dict(shown.readouts[k - 1])
        assert rows["bytes at this level"] == f"{have} of {full}"
        assert rows["MS-SSIM vs full"] == f"{q.mssim[k - 1]:.4f}"
        assert "scan level" not in rows  # the counter says it, next to the picture
    assert dict(shown.readouts[-1])["PSNR vs full"] == "identical"
    assert shown.curve["bytes"] == [int(b) for b in nbytes]
    np.testing.assert_allclose(shown.curve["x"], nbytes / nbytes[-1])
    np.testing.assert_allclose(shown.curve["y_value"], q.mssim)
    assert shown.size == list(jpeg_size(src.jpeg_bytes(i)))


def test_a_level_change_sends_the_level_alone(shown: ScanExplorer) -> None:
    """The page holds every level: moving the slider changes no other state."""
    src, i = shown.source, shown.index
    nbytes, q = src.level_bytes(i), image_quality(src, image=i)
    before = {k: v for k, v in shown.get_state().items() if k != "level"}
    changed: list[str] = []

    def seen(change: Any) -> None:
        changed.append(change["name"])

    shown.observe(seen, names=traitlets.All)
    try:
        for k in (3, 1, N):
            shown.level = k
            assert shown.last_error is None and shown.error == ""
            rows = dict(shown.readout_rows())
            assert rows["image"] == src.names[i] and rows["scan level"] == f"{k} / {N}"
            assert rows["bytes at this level"] == f"{int(nbytes[k - 1]):,} of {int(nbytes[-1]):,}"
            assert rows["MS-SSIM vs full"] == f"{q.mssim[k - 1]:.4f}"
    finally:
        shown.unobserve(seen, names=traitlets.All)
    assert set(changed) == {"level"}
    assert {k: v for k, v in shown.get_state().items() if k != "level"} == before


def test_the_picker_and_step_change_the_image_and_its_curve(shown: ScanExplorer) -> None:
    src = shown.source
    shown.level = 2
    shown.image = 1
    shown.step(1)
    assert shown.index == shown.image == 2
    shown.step(-1)
    shown.step(-1)
    assert shown.index == 0
    shown.step(-1)  # wraps round
    assert shown.index == len(src) - 1
    i = shown.index
    nbytes, q = src.level_bytes(i), image_quality(src, image=i)
    assert shown.level == 2
    assert shown.pictures == [src.jpeg_bytes(i, k) for k in range(1, N + 1)]
    assert shown.captions[1].startswith(f"<b>scan 2 of {N}</b> &middot; {int(nbytes[1]):,} of ")
    assert shown.curve["bytes"] == [int(b) for b in nbytes]
    np.testing.assert_allclose(shown.curve["x"], nbytes / nbytes[-1])
    np.testing.assert_allclose(shown.curve["y_value"], q.mssim)
    assert dict(shown.readout_rows())["image"] == src.names[i]
    assert shown.status == "" and shown.last_error is None


def test_side_by_side_and_difference_pictures(shown: ScanExplorer) -> None:
    src = shown.source
    shown.mode = "side"
    assert shown.pictures[-1] == src.jpeg_bytes(0)  # the full image, next to the level
    assert shown.diffs == []  # drawn only for the difference view
    shown.mode = "diff"
    full = decode(src.jpeg_bytes(0))
    assert shown.diffs == [
        encode_jpeg(difference_map(decode(src.jpeg_bytes(0, k)), full, gain=shown.gain))
        for k in range(1, N + 1)
    ]
    assert "x 4</b>" in shown.diff_caption and "0 <span" in shown.diff_caption
    assert "64+ of 255" in shown.diff_caption
    shown.image = 2  # still the difference view: the new image's maps
    full = decode(src.jpeg_bytes(2))
    assert shown.diffs[2] == encode_jpeg(
        difference_map(decode(src.jpeg_bytes(2, 3)), full, gain=shown.gain)
    )
    shown.mode = "level"
    shown.image = 1  # another view: none drawn
    assert shown.diffs == []
    # zoom and split are drawn in the page: the pictures sent stay the levels themselves
    shown.mode, shown.zoom, shown.zoom_x, shown.zoom_y = "split", 4.0, 0.25, 0.75
    assert shown.pictures == [src.jpeg_bytes(1, k) for k in range(1, N + 1)]
    assert shown.split_note == "left of the line: this level, right: full image"
    assert shown.last_error is None


def test_the_dataset_curve_is_the_samples(shown: ScanExplorer) -> None:
    curve = quality_curve(shown.source, sample=3, seed=0, metric="mssim", workers=1)
    ds = shown.dataset
    np.testing.assert_allclose(ds["x"], curve.bytes_fraction)
    np.testing.assert_allclose(_floats(ds["mean_value"]), curve.mean)
    np.testing.assert_allclose(_floats(ds["lo_value"]), curve.p5)
    np.testing.assert_allclose(_floats(ds["hi_value"]), curve.p95)
    np.testing.assert_allclose(_floats(ds["mean_db"])[:-1], to_db(curve.mean[:-1]))


def test_large_images_are_shrunk_before_they_are_sent(dataset_path: Path) -> None:
    ex = ScanExplorer(str(dataset_path), level=5, dataset_sample=0, max_side=100, workers=1)
    assert ex.pictures[4] != ex.source.jpeg_bytes(0, 5)
    assert all(max(jpeg_size(p)) == 100 for p in ex.pictures)
    assert max(ex.size) == 100 and ex.size == list(jpeg_size(ex.pictures[-1]))
    assert ex.dataset == {}  # no sample, no dataset curve


def test_without_caches_the_quality_still_shows(dataset_path: Path) -> None:
    ex = ScanExplorer(str(dataset_path), level=3, dataset_sample=0, cache_size=0, workers=1)
    q = image_quality(ex.source, image=0)
    ex.level = 2
    assert dict(ex.readouts[1])["MS-SSIM vs full"] == f"{q.mssim[1]:.4f}"
    assert ex.curve["y_value"][1] == pytest.approx(q.mssim[1])
    assert len(ex.cache._jpeg) == 0


def test_without_caches_the_saved_picture_still_shows_quality(dataset_path: Path) -> None:
    ex = ScanExplorer(str(dataset_path), level=2, dataset_sample=0, cache_size=0, workers=1)
    q = image_quality(ex.source, image=0)
    assert dict(ex.readout_rows())["MS-SSIM vs full"] == f"{q.mssim[1]:.4f}"


def test_a_folder_and_one_file(photos_256: Path) -> None:
    ex = ScanExplorer(photos_256, dataset_sample=0, workers=1)
    ex.level = 3
    assert ex.pictures[2] == ex.source.jpeg_bytes(ex.index, 3)
    one = ScanExplorer(photos_256 / "a" / "chelsea.jpg", dataset_sample=0, level=1)
    assert one.names == ["chelsea.jpg"] and one.num_scans == N
    assert one.pictures[0] == one.source.jpeg_bytes(0, 1)
    one.step(1)  # one image: wraps round to itself
    assert one.index == 0 and one.last_error is None


# -- errors ----------------------------------------------------------------------------


def test_a_callback_error_shows_under_the_explorer_and_clears(shown: ScanExplorer) -> None:
    real = shown.cache.display
    shown.cache.display = lambda i, k=None: (_ for _ in ()).throw(OSError("disk gone"))  # type: ignore[method-assign, assignment]
    try:
        shown.image = 1  # another image: its pictures must be drawn
        assert isinstance(shown.last_error, OSError)
        assert shown.error == "OSError: disk gone"
        assert shown.status == ""  # not left saying it is busy
    finally:
        shown.cache.display = real  # type: ignore[method-assign, assignment]
    shown.image = 2
    assert shown.last_error is None and shown.error == ""
    assert shown.pictures[6] == shown.source.jpeg_bytes(2, 7)


def test_a_failed_image_change_leaves_no_picture_of_the_image_before(shown: ScanExplorer) -> None:
    before = list(shown.pictures)
    real = shown.cache.display
    shown.cache.display = lambda i, k=None: (_ for _ in ()).throw(OSError("disk gone"))  # type: ignore[method-assign, assignment]
    try:
        shown.image = 1
        assert shown.error == "OSError: disk gone"
        assert not set(shown.pictures) & set(before)
    finally:
        shown.cache.display = real  # type: ignore[method-assign, assignment]
    shown.level = 7  # a good change: the error clears, and what is shown is image 1
    assert shown.error == ""
    assert shown.pictures[6] == shown.source.jpeg_bytes(1, 7)


def test_bad_values_are_refused_with_the_source_named(
    shown: ScanExplorer, dataset_path: Path
) -> None:
    where = re.escape(str(dataset_path))
    for bad in (0, N + 1, -1):
        with pytest.raises(ValueError, match=rf"{where}: scan level {bad} is outside 1\.\.{N}$"):
            shown.level = bad
    with pytest.raises(ValueError, match=r"scan level must be an int in 1\.\.10, got True"):
        shown.level = True
    with pytest.raises(traitlets.TraitError, match=rf"{where}: no image 4; it holds 0\.\.3"):
        shown.image = 4
    with pytest.raises(traitlets.TraitError, match="no image -1"):
        shown.image = -1
    for name, value in (("mode", "zoomed"), ("scale", "log"), ("zoom", 9.0), ("zoom_x", 1.5)):
        with pytest.raises(traitlets.TraitError):
            setattr(shown, name, value)
    assert (shown.level, shown.image, shown.mode, shown.zoom) == (4, 0, "level", 1.0)
    assert shown.last_error is None
    with pytest.raises(ValueError, match=rf"{where}: scan level 11 is outside 1\.\.10"):
        ScanExplorer(dataset_path, level=11, dataset_sample=0)
    with pytest.raises(ValueError, match=rf"{where}: no image 9; it holds 0\.\.3"):
        ScanExplorer(dataset_path, image=9, dataset_sample=0)
    with pytest.raises(ValueError, match="metric must be one of"):
        ScanExplorer(dataset_path, metric="nope")
    curve = quality_curve(dataset_path, sample=1, metric="psnr", workers=1, progress=False)
    with pytest.raises(ValueError, match="measured with 'psnr', not 'mssim'"):
        ScanExplorer(dataset_path, curve=curve)


def test_the_level_trait_follows_the_one_rule_for_a_level(shown: ScanExplorer) -> None:
    shown.level = np.int64(3)
    assert shown.level == 3 and type(shown.level) is int
    with pytest.raises(ValueError, match=r"scan level must be an int in 1\.\.10, got 2\.7"):
        shown.level = 2.7  # type: ignore[assignment]


# -- what the page draws -----------------------------------------------------------------


def test_db_scale_spreads_the_upper_levels(shown: ScanExplorer) -> None:
    q = image_quality(shown.source, image=0)
    value = shown.snapshot()
    shown.scale = "db"
    y = _floats(shown.curve["y_db"])
    np.testing.assert_allclose(y[:-1], to_db(q.mssim[:-1]))
    assert shown.curve["y_db"][-1] is None  # identical to the full image: not drawn
    assert shown.labels["y_db"].startswith("MS-SSIM in dB") and shown.labels["db"] is True
    assert np.nanmax(_floats(shown.dataset["mean_db"])) > 10  # dB, not a similarity
    assert shown.snapshot() != value  # the saved picture draws the scale chosen


def test_the_counter_says_why_a_grayscale_level_looks_the_same(shown: ScanExplorer) -> None:
    shown.image = next(i for i, n in enumerate(shown.source.names) if "camera" in n)
    assert "adds no bytes to this image" in shown.captions[2]
    assert "grayscale" in shown.captions[2]
    assert "adds no bytes" not in shown.captions[4]


def test_presentation_mode_is_a_trait_the_page_follows(shown: ScanExplorer) -> None:
    assert shown.get_state("presentation") == {"presentation": False}
    shown.presentation = True
    assert shown.get_state("presentation") == {"presentation": True}
    # the page toggles the class on the explorer; the style sheet sizes it up
    assert 'classList.toggle("pcr-present", get("presentation"))' in shown._esm
    assert ".pcr-present" in shown._css


def test_the_module_is_one_file_and_no_script_goes_elsewhere(shown: ScanExplorer) -> None:
    state = shown.get_state()
    esm = state["_esm"]
    assert "export default" in esm
    assert not re.search(r"^\s*import\s", esm, re.M)  # chart.js inlined: nothing to fetch
    assert not re.search(r"\bimport\s*\(|\bfetch\s*\(", esm)
    assert set(re.findall(r"https?://[^\s\"'`]*", esm)) <= {"http://www.w3.org/2000/svg"}
    shown.scan_open = True  # the panel's captions too
    rest = {k: v for k, v in shown.get_state().items() if k not in ("_esm", "_css")}
    texts = json.dumps(rest, default=lambda picture: "")  # the pictures are bytes
    assert not re.search(r"<script|javascript:|\son\w+\s*=", texts, re.I)


def test_every_key_the_module_reads_is_a_synced_trait(shown: ScanExplorer) -> None:
    esm = shown._esm
    read = set(re.findall(r"\bget\(\"(\w+)\"\)", esm))
    written = set(re.findall(r"(?:save|model\.set)\(\"(\w+)\"", esm))
    watched = {
        k
        for group in re.findall(r"\bon\(\[([^\]]*)\]", esm)
        for k in re.findall(r"\"(\w+)\"", group)
    }
    assert {"level", "pictures", "levels", "scan_panel"} <= read
    assert {"level", "image", "mode", "zoom", "scan_open", "presentation"} <= written
    # a key only the kernel-free page sets, read as `=== false`: absent here, the panel shows
    assert 'get("has_panel") === false' in esm
    missing = (read | written | watched) - set(shown.keys) - {"has_panel"}
    assert missing == set()


def test_the_state_crosses_as_json_with_the_pictures_as_buffers(shown: ScanExplorer) -> None:
    from ipywidgets.widgets.widget import _put_buffers, _remove_buffers

    shown.mode, shown.scan_open = "diff", True
    state = shown.get_state()
    rest, paths, buffers = _remove_buffers(state)
    want = [["pictures", k] for k in range(N)] + [["diffs", k] for k in range(N)]
    want += [["scan_panel", "picture"], ["scan_panel", "added"]]
    assert sorted(paths) == sorted(want)
    by_path = {json.dumps(p): bytes(b) for p, b in zip(paths, buffers, strict=True)}
    assert by_path['["pictures", 3]'] == shown.pictures[3]
    assert by_path['["scan_panel", "added"]'] == shown.scan_panel["added"]
    text = json.dumps(rest)  # the rest is plain JSON: no bytes left in it
    encoded = [base64.b64encode(p).decode("ascii")[:40] for p in shown.pictures + shown.diffs]
    assert not any(e in text for e in encoded)
    assert len(text.encode()) < sum(map(len, shown.pictures)) + len(state["_esm"])
    _put_buffers(rest, paths, buffers)
    assert rest == state


# -- the static picture and display ------------------------------------------------------


def _open(picture: bytes) -> Image.Image:
    assert _is_jpeg(picture)
    return Image.open(io.BytesIO(picture))


def test_the_static_picture_follows_level_view_and_panel(shown: ScanExplorer) -> None:
    first = shown.snapshot()
    with _open(first) as im:
        assert im.width >= 300 and im.height >= 200
        size = im.size
    shown.level = 9
    level9 = shown.snapshot()
    assert level9 != first and _open(level9).size == size
    shown.mode = "side"
    assert shown.snapshot() not in (first, level9)
    shown.mode = "level"
    assert shown.snapshot() == level9  # the same state, the same picture
    shown.scan_open = True
    assert _open(shown.snapshot()).height > size[1]  # the panel, below the rest


@pytest.fixture
def display_pub() -> Iterator[Any]:
    """An IPython shell whose display publisher keeps what is displayed (the real one prints)."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    had = InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    real, shell.display_pub = shell.display_pub, CapturingDisplayPublisher()
    try:
        yield shell.display_pub
    finally:
        shell.display_pub = real
        if not had:
            InteractiveShell.clear_instance()


def _picture_in(html: str) -> bytes:
    return base64.b64decode(html.split("data:image/jpeg;base64,")[1].split("'")[0])


def test_display_puts_the_picture_before_the_live_view(
    shown: ScanExplorer, display_pub: Any
) -> None:
    from IPython.display import display

    display(shown)
    picture, live = display_pub.outputs
    key = picture["transient"]["display_id"]
    html = picture["data"]["text/html"]
    assert key.startswith("pcr-fallback-") and f"<div class='{key}'>" in html
    assert _picture_in(html) == shown.snapshot()
    assert "saved picture" in picture["data"]["text/plain"]
    # the live view's output carries no second picture, and says what it is as text
    assert set(live["data"]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    assert live["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == shown.model_id
    assert "live widget" in live["data"]["text/plain"] and not live["transient"]
    # hidden while a live view is there; the failed or plain-text live view hidden instead
    assert ":not(.jupyter-widgets)) {display: none;}" in html
    assert '[data-mime-type="text/plain"]' in html


def test_the_saved_picture_follows_the_state(shown: ScanExplorer, display_pub: Any) -> None:
    from IPython.display import display

    shown.level = 2
    display(shown)
    key = display_pub.outputs[0]["transient"]["display_id"]
    first = _picture_in(display_pub.outputs[0]["data"]["text/html"])
    for change in ({"level": 9}, {"mode": "side"}, {"scan_open": True}):
        del display_pub.outputs[:]
        shown.set_trait(*next(iter(change.items())))  # no event loop: drawn again at once
        updates = [o for o in display_pub.outputs if o["update"]]
        assert updates and all(o["transient"]["display_id"] == key for o in updates)
        now = _picture_in(updates[-1]["data"]["text/html"])
        assert now != first and now == shown.snapshot(), change
        first = now


# -- reading ---------------------------------------------------------------------------


def test_a_pcr_dataset_is_read_as_the_images_are_shown(dataset_path: Path) -> None:
    ds = open_dataset(str(dataset_path))
    ex = ScanExplorer(ds, level=1, dataset_sample=0, workers=1)
    assert ex.pictures[1] == ds.jpeg_bytes(0, 2)
    before = ds.stats.bytes_read
    for k in (2, 5, N):
        ex.level = k  # in the page already: nothing read
    assert ds.stats.bytes_read == before
    ex.image = 1  # image 1's pieces fetched when it is shown
    assert ds.stats.bytes_read > before
    seen = ds.stats.bytes_read
    ex.image = 0  # cached
    assert ds.stats.bytes_read == seen


def test_showing_an_image_reads_each_level_once(dataset_path: Path) -> None:
    # the pictures and the quality are made from the same level bytes, read once each
    ds = open_dataset(str(dataset_path))
    ex = ScanExplorer(ds, image=1, dataset_sample=0, workers=1)
    read = ds.stats.bytes_read - ds.stats.metadata_bytes
    assert ex.pictures[-1] == ds.jpeg_bytes(1)
    levels = sum(len(ds.jpeg_bytes(1, k)) for k in range(1, ex.num_scans + 1))
    assert 0.95 * levels <= read <= 1.05 * levels  # each prefix once (headers aside)
    assert ex.readouts[4][-3][0] == "MS-SSIM vs full"  # and the quality was measured
