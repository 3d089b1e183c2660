"""The in-process lossless transcode writes exactly what the jpegtran program writes."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from pcr_explore.errors import JPEGError, PCRError
from pcr_explore.jpeg import _tjtransform
from pcr_explore.jpeg.transcode import find_jpegtran, transcode

pytestmark = [
    pytest.mark.jpegtran,
    pytest.mark.skipif(_tjtransform._library() is None, reason="libturbojpeg0 not installed"),
]


def _jpegtran(data: bytes) -> bytes:
    exe = find_jpegtran()
    assert exe is not None
    cmd = [exe, "-copy", "none", "-optimize", "-progressive"]
    return subprocess.run(cmd, input=data, capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def sources(sk_photo: Callable[..., np.ndarray], encode_jpeg: Callable[..., bytes]) -> list[bytes]:
    exif = Image.Exif()
    exif[0x010F] = "camera"  # metadata that copy-none drops
    return [
        encode_jpeg(sk_photo("chelsea", 150)),  # 4:2:0
        encode_jpeg(sk_photo("coffee", 130), subsampling=0, quality=95),  # 4:4:4
        encode_jpeg(sk_photo("camera", 120)),  # grayscale
        encode_jpeg(sk_photo("astronaut", 97), exif=exif.tobytes(), progressive=True),
        encode_jpeg(sk_photo("rocket", 111), subsampling=1, optimize=True),  # 4:2:2
    ]


def test_the_same_bytes_as_the_jpegtran_program(sources: list[bytes]) -> None:
    for data in sources:
        assert _tjtransform.progressive(data, "x.jpg") == _jpegtran(data)


def test_transcode_uses_it_and_can_be_turned_off(
    sources: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = _tjtransform.progressive

    def spy(data: bytes, source: str) -> bytes | None:
        calls.append(source)
        return real(data, source)

    monkeypatch.setattr("pcr_explore.jpeg.transcode.progressive", spy)
    on = transcode(sources[0], name="a.jpg")
    assert calls == ["a.jpg"] and on.backend == "jpegtran" and on.lossless
    monkeypatch.setenv("PCR_TJTRANSFORM", "0")
    assert _tjtransform.progressive(sources[0], "a.jpg") is None
    assert transcode(sources[0], name="a.jpg").jpeg.data == on.jpeg.data
    assert transcode(sources[0], scan_script="lean").jpeg.num_scans == 9  # the program's job


def test_damaged_data_fails_naming_the_file(sources: list[bytes]) -> None:
    with pytest.raises(JPEGError, match="cut.jpg: lossless transcode failed"):
        _tjtransform.progressive(sources[0][:1500], "cut.jpg")
    with pytest.raises(PCRError, match="cut.jpg"):
        transcode(sources[0][:1500], name="cut.jpg")


def test_threads_each_get_their_own_handle(sources: list[bytes]) -> None:
    want = [_jpegtran(d) for d in sources]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda d: _tjtransform.progressive(d, "t.jpg"), sources * 8))
    assert got == want * 8
    assert Image.open(io.BytesIO(got[0])).info.get("progressive") == 1
