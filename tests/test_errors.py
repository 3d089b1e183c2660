"""The exception classes: one module holds them all, and each keeps its place in the hierarchy."""

from __future__ import annotations

from pathlib import Path

import pytest
from _loopback import FileServer

from pcr_explore import errors
from pcr_explore.storage.remote import HTTPStore


def test_too_large_lives_in_errors_and_the_old_import_still_works() -> None:
    from pcr_explore.storage.remote import TooLargeError

    assert (
        TooLargeError is errors.TooLargeError and TooLargeError.__module__ == "pcr_explore.errors"
    )
    assert TooLargeError.__mro__[1:] == (ValueError, Exception, BaseException, object)
    assert "TooLargeError" in errors.__all__


def test_a_body_past_the_limit_raises_too_large(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 5000)
    with FileServer(tmp_path) as srv:
        store = HTTPStore()
        assert store.cat_file(f"{srv.url}/big", limit=5000) == b"x" * 5000
        with pytest.raises(errors.TooLargeError, match=r"/big: longer than 4,999 bytes"):
            store.cat_file(f"{srv.url}/big", limit=4999)


def test_every_class_in_errors_is_listed() -> None:
    classes = {
        n
        for n, v in vars(errors).items()
        if isinstance(v, type) and v.__module__ in ("pcr_explore", "pcr_explore.errors")
    }
    assert classes == set(errors.__all__)
