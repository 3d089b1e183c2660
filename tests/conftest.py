"""Shared fixtures: small real photographs and folders built from them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _budget
import _procs
import numpy as np
import pytest
from _photos import jpeg_bytes, photo
from hypothesis import settings

from pcr_explore.jpeg.transcode import find_jpegtran

# Property tests: a short search by default; HYPOTHESIS_PROFILE=long for a
# deeper one (about 50x the examples) before a release or after a format change.
settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.hookimpl(optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """pytest-timeout starts a test's timer: the waits of the test take their limit from it."""
    _budget.start(settings.timeout)


@pytest.hookimpl(optionalhook=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    _budget.stop()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked ``jpegtran`` where the command is missing."""
    if item.get_closest_marker("jpegtran") and find_jpegtran() is None:
        pytest.skip("jpegtran not installed (Debian: libjpeg-turbo-progs)")


@pytest.fixture(scope="session")
def encode_jpeg() -> Callable[..., bytes]:
    """``encode_jpeg(array_or_image, **save_kw)``: a baseline JPEG (quality 90 by default)."""
    return jpeg_bytes


@pytest.fixture(scope="session")
def sk_photo() -> Callable[..., np.ndarray]:
    """``sk_photo(name, size=None)``: a scikit-image photo, longer side shrunk to *size*."""
    return photo


@pytest.fixture(scope="session")
def photo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two class folders of small JPEG photos, colour and grayscale."""
    root = tmp_path_factory.mktemp("photos")
    layout = {
        "animals": ["chelsea", "coffee", "astronaut"],
        "things": ["rocket", "camera", "coins", "immunohistochemistry"],
    }
    for cls, names in layout.items():
        (root / cls).mkdir()
        for n in names:
            (root / cls / f"{n}.jpg").write_bytes(jpeg_bytes(photo(n, 160)))
    return root


@pytest.fixture
def photo_copy(photo_folder: Path, tmp_path: Path) -> Path:
    """A private, writable copy of ``photo_folder``."""
    dst = tmp_path / "src"
    shutil.copytree(photo_folder, dst)
    return dst


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright, one per test module (skips without it).

    Ended with its module however its tests went: the browser is closed, Playwright's
    driver stopped, and any of their processes still running then is ended.
    """
    from _lab import CHROMIUM_ARGS, chromium_path

    path = chromium_path()
    if path is None:
        pytest.skip("no chromium binary (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    before = set(_procs.children(os.getpid()))
    started = _procs.Started()
    try:
        with sync_playwright() as pw:
            driver = [pid for pid in _procs.children(os.getpid()) if pid not in before]
            b = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, timeout=_budget.ms())
            try:
                yield b
            finally:
                for pid in driver:  # Playwright's driver, the browser and its helpers
                    started.add(pid)
                b.close()
    finally:
        ended = started.end()
        if ended:
            print(f"ended what the browser left running: {ended}")
