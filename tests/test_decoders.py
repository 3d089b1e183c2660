"""The JPEG decoder choice: Pillow's pixels through a faster backend, or Pillow itself."""

from __future__ import annotations

import contextvars
import io
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from pcr_explore.errors import JPEGError, MissingExtraError
from pcr_explore.jpeg import (
    _decoders,
    decode,
    decoder_name,
    set_decoder,
    split_scans,
    use_decoder,
)
from pcr_explore.jpeg._progressive import target_size


def _backend(name: str) -> _decoders._Backend:
    try:
        return _decoders._FACTORIES[name]()
    except ImportError as exc:
        pytest.skip(f"{name} not installed: {exc}")


# the backends the automatic choice may pick: they must match Pillow everywhere
IDENTICAL = [pytest.param(n, id=n) for n in _decoders._PREFERENCE]


@pytest.fixture(autouse=True)
def _fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(_decoders.ENV_VAR, raising=False)
    set_decoder(None)  # the automatic choice, probed afresh
    yield
    set_decoder(None)


def _target_for(size: int | tuple[int, int] | None) -> Callable[[int, int], object]:
    return lambda w, h: None if size is None else target_size(w, h, size)


def _sizes(w: int, h: int) -> list[int | tuple[int, int] | None]:
    # full, DCT 1/2, 1/4, 1/8, DCT 1/2 then resize, resize only
    side = max(w, h)
    return [None, side // 2, side // 4, side // 8, (w // 3, h // 3), (w * 3 // 5, h * 3 // 5)]


def _progressive(encode_jpeg, sk_photo, name: str, subsampling: int, side: int = 150) -> bytes:
    arr = sk_photo(name, side)
    return encode_jpeg(arr, progressive=True, subsampling=subsampling, quality=85)


PHOTOS = [
    pytest.param("astronaut", 2, id="astronaut-420"),
    pytest.param("coffee", 1, id="coffee-422"),
    pytest.param("chelsea", 0, id="chelsea-444"),
    pytest.param("camera", 2, id="camera-grey"),
]


@pytest.mark.parametrize("name", IDENTICAL)
@pytest.mark.parametrize(("photo", "subsampling"), PHOTOS)
def test_backend_gives_pillows_pixels_at_every_level_scale_and_mode(
    name: str, photo: str, subsampling: int, encode_jpeg, sk_photo
) -> None:
    backend = _backend(name)
    pj = split_scans(_progressive(encode_jpeg, sk_photo, photo, subsampling))
    assert pj.width % 16 and pj.height % 16  # odd sizes: partial MCUs at both edges
    for k in range(1, pj.num_scans + 1):
        level = pj.level(k)
        for size in _sizes(pj.width, pj.height):
            for mode in (None, "L", "RGB"):
                want = _decoders.pillow_decode(level, _target_for(size), mode)
                got = _decoders.backend_decode(backend, level, _target_for(size), mode)
                assert got is not None, (k, size, mode)  # the backend did decode it
                assert got.shape == want.shape and got.dtype == np.uint8
                np.testing.assert_array_equal(got, want, err_msg=f"level {k} {size} {mode}")


@pytest.mark.parametrize("name", IDENTICAL)
def test_baseline_and_tiny_images_match_pillow(name: str, encode_jpeg, sk_photo) -> None:
    set_decoder(name)
    images = [sk_photo("rocket", 97), sk_photo("coins", 61)]
    images += [np.full((h, w, 3), (200, 40, 90), np.uint8) for w, h in [(1, 1), (3, 5), (9, 2)]]
    for arr in images:
        data = encode_jpeg(arr)
        h, w = arr.shape[:2]
        for size in [None, 1, 2, (1, 1), *(_sizes(w, h)[1:] if min(w, h) >= 8 else [])]:
            for mode in (None, "L", "RGB"):
                got = decode(data, size=size, mode=mode)
                want = _decoders.pillow_decode(data, _target_for(size), mode)
                np.testing.assert_array_equal(got, want, err_msg=f"{w}x{h} {size} {mode}")


def test_draft_scale_is_pillows(encode_jpeg) -> None:
    data = encode_jpeg(np.zeros((75, 203, 3), np.uint8))
    for target in [(203, 75), (101, 37), (100, 37), (50, 18), (25, 9), (13, 5), (1, 1), (60, 10)]:
        im = Image.open(io.BytesIO(data))
        scale = _decoders.draft_scale(203, 75, target)
        if scale > 1:
            im.draft("RGB", target)
        assert im.size == (-(-203 // scale), -(-75 // scale)), target


@pytest.mark.parametrize("name", IDENTICAL)
def test_results_are_writable(name: str, encode_jpeg, sk_photo) -> None:
    set_decoder(name)
    data = encode_jpeg(sk_photo("camera", 64))
    for mode in (None, "L", "RGB"):
        for size in (None, 16):
            arr = decode(data, size=size, mode=mode)
            arr[0, 0] = 7  # callers may edit it or hand it to torch
            assert arr.flags.writeable and arr.flags.c_contiguous


@pytest.mark.parametrize("name", IDENTICAL)
def test_cmyk_and_non_jpeg_go_to_pillow(name: str, sk_photo) -> None:
    set_decoder(name)
    arr = sk_photo("chelsea", 60)
    buf = io.BytesIO()
    Image.fromarray(arr).convert("CMYK").save(buf, "JPEG")
    png = io.BytesIO()
    Image.fromarray(arr).save(png, "PNG")
    for data in (buf.getvalue(), png.getvalue()):
        assert _decoders.backend_decode(_backend(name), data, _target_for(30), None) is None
        want = _decoders.pillow_decode(data, _target_for(30), None)
        np.testing.assert_array_equal(decode(data, size=30), want)


def test_env_var_forces_pillow(monkeypatch: pytest.MonkeyPatch, encode_jpeg) -> None:
    monkeypatch.setenv(_decoders.ENV_VAR, "Pillow")

    def refuse(*args: object) -> None:
        raise AssertionError("a backend was used although Pillow was forced")

    monkeypatch.setattr(_decoders, "backend_decode", refuse)
    assert decoder_name() == "pillow"
    assert decode(encode_jpeg(np.zeros((20, 30, 3), np.uint8)), size=10).shape == (7, 10, 3)


@pytest.mark.parametrize("name", IDENTICAL)
def test_set_decoder_holds_in_this_thread_and_writes_no_environment(name: str) -> None:
    _backend(name)
    assert decoder_name() == name  # the automatic choice
    set_decoder("pillow")
    assert decoder_name() == "pillow" and _decoders.backend_named(None) is None
    assert _decoders.ENV_VAR not in os.environ  # no process-wide state is written
    seen: list[str] = []
    other = threading.Thread(target=lambda: seen.append(decoder_name()))
    other.start()
    other.join()
    assert seen == [name]  # another thread keeps the process default
    set_decoder(None)
    assert decoder_name() == name


def _default_name() -> str:
    # the process default, as a fresh context (a new thread) sees it
    return contextvars.Context().run(decoder_name)


def test_unknown_or_missing_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown JPEG decoder 'fastest'"):
        set_decoder("fastest")
    # the PyTurboJPEG backend was removed (see the module's docstring)
    with pytest.raises(
        ValueError, match=r"'turbojpeg'; expected one of \('pillow', 'simplejpeg'\)"
    ):
        set_decoder("turbojpeg")
    with pytest.raises(TypeError, match="named by a str"):
        set_decoder(1)  # type: ignore[arg-type]

    monkeypatch.setitem(sys.modules, "simplejpeg", None)  # as if not installed
    with pytest.raises(MissingExtraError, match="needs simplejpeg"):
        set_decoder("simplejpeg")
    monkeypatch.setenv(_decoders.ENV_VAR, "simplejpeg")
    with pytest.raises(MissingExtraError, match="PCR_DECODER=simplejpeg"):
        decoder_name()


def test_automatic_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _decoders._PREFERENCE:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    set_decoder(None)
    assert decoder_name() == "pillow"  # nothing installed: Pillow


@pytest.mark.parametrize("name", IDENTICAL)
def test_automatic_choice_checks_pixels(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _backend(name)
    assert decoder_name() == name  # installed and matching: the fastest is chosen
    monkeypatch.setattr(_decoders, "_agrees_with_pillow", lambda backend: False)
    with use_decoder(None) as name:  # probed again
        assert name == "pillow"  # a Pillow on another libjpeg: not used


def test_self_check_catches_a_different_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    class OffByOne:
        name = "off-by-one"

        def header(self, data: bytes) -> tuple[int, int, bool]:
            im = Image.open(io.BytesIO(data))
            return im.width, im.height, im.mode == "L"

        def decode(self, data: bytes, w: int, h: int, scale: int, gray: bool) -> np.ndarray:
            im = Image.open(io.BytesIO(data))
            arr = np.array(im.convert("L" if gray else "RGB"))
            arr = arr.reshape(*arr.shape[:2], -1)
            return arr ^ (np.arange(arr.size).reshape(arr.shape) == 5000).astype(np.uint8)

    assert not _decoders._agrees_with_pillow(OffByOne())


@pytest.mark.parametrize("name", IDENTICAL)
def test_decoder_argument_decodes_this_call_only(
    name: str, monkeypatch: pytest.MonkeyPatch, encode_jpeg
) -> None:
    _backend(name)
    calls = _spy(monkeypatch)
    data = encode_jpeg(np.full((40, 60, 3), 90, np.uint8))
    a = decode(data, size=20, decoder="pillow")
    b = decode(data, size=20, decoder=name)
    assert [c for _, c in calls] == ["pillow", name]
    np.testing.assert_array_equal(a, b)
    assert decoder_name() == name  # the choice in force is untouched
    with pytest.raises(ValueError, match="decoder=: unknown JPEG decoder 'fast'"):
        decode(data, decoder="fast")


@pytest.fixture(scope="module")
def damage_base(encode_jpeg, sk_photo) -> bytes:
    return _progressive(encode_jpeg, sk_photo, "astronaut", 2, side=48)


def _outcome(data: bytes, size: int | None) -> np.ndarray | str:
    try:
        return decode(data, size=size, source="img-7")
    except JPEGError as exc:
        assert "img-7" in str(exc)
        return "error"


@pytest.mark.parametrize("name", IDENTICAL)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # each example resets
@given(cut=st.floats(0.0, 1.0), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255))))
def test_damaged_data_fails_or_decodes_as_with_pillow(
    name: str, damage_base: bytes, cut: float, flips: list[tuple[float, int]]
) -> None:
    data = bytearray(damage_base[: max(2, int(len(damage_base) * cut))])
    for where, xor in flips:
        data[int(where * (len(data) - 1))] ^= xor
    for size in (None, 12):
        set_decoder(name)
        fast = _outcome(bytes(data), size)
        set_decoder("pillow")
        slow = _outcome(bytes(data), size)
        if isinstance(slow, str) or isinstance(fast, str):
            assert fast == slow
        else:
            np.testing.assert_array_equal(fast, slow)
    set_decoder(None)


@pytest.mark.parametrize("name", IDENTICAL)
def test_truncated_and_garbage_raise_jpeg_error(name: str, damage_base: bytes) -> None:
    set_decoder(name)
    for data in (damage_base[: len(damage_base) // 2], b"\xff\xd8\xff", b"\xff\xd8" + b"\0" * 40):
        with pytest.raises(JPEGError, match="img-3: cannot decode image"):
            decode(data, source="img-3")


@pytest.mark.parametrize("name", IDENTICAL)
def test_decompression_bomb_is_pillows_error(
    name: str, monkeypatch: pytest.MonkeyPatch, encode_jpeg
) -> None:
    set_decoder(name)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(JPEGError, match="decompression bomb"):
        decode(encode_jpeg(np.zeros((20, 30, 3), np.uint8)), source="big")


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(thread name, decoder) of every decode from now on: Pillow's path or a backend's."""
    calls: list[tuple[str, str]] = []
    pillow, backend = _decoders.pillow_decode, _decoders.backend_decode

    def pillow_spy(*args: object) -> np.ndarray:
        calls.append((threading.current_thread().name, "pillow"))
        return pillow(*args)  # type: ignore[arg-type]

    def backend_spy(b: _decoders._Backend, *args: object) -> np.ndarray | None:
        calls.append((threading.current_thread().name, b.name))
        return backend(b, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_decoders, "pillow_decode", pillow_spy)
    monkeypatch.setattr(_decoders, "backend_decode", backend_spy)
    return calls


@pytest.mark.parametrize("name", IDENTICAL)
def test_two_threads_decode_at_once_with_their_own_decoder(
    name: str, monkeypatch: pytest.MonkeyPatch, encode_jpeg
) -> None:
    _backend(name)
    calls = _spy(monkeypatch)
    data = encode_jpeg(np.full((40, 60, 3), 90, np.uint8))
    both_in = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []

    def run(choice: str) -> None:
        try:
            with use_decoder(choice):
                decode(data, size=20)
                both_in.wait()  # the other thread is inside its block too
                for _ in range(5):
                    decode(data, size=20)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,), name=c) for c in ("pillow", name)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # every decode ran through its own thread's choice, none through the other's
    assert sorted(set(calls)) == sorted({("pillow", "pillow"), (name, name)})
    assert len(calls) == 12
    assert decoder_name() == name  # this thread's choice: the automatic one, untouched


def test_use_decoder_holds_for_its_block_only(monkeypatch: pytest.MonkeyPatch) -> None:
    auto = decoder_name()  # nothing chosen, PCR_DECODER unset: the automatic choice
    set_decoder("pillow")
    with use_decoder("auto") as name:
        assert name == decoder_name() == auto
        with use_decoder("pillow"):
            assert decoder_name() == "pillow"
        assert decoder_name() == auto
    assert decoder_name() == "pillow"
    set_decoder(None)
    with pytest.raises(RuntimeError, match="boom"), use_decoder("pillow"):
        raise RuntimeError("boom")
    assert decoder_name() == auto  # left by an exception: restored too
    with pytest.raises(ValueError, match="unknown JPEG decoder"), use_decoder("fastest"):
        pass
    assert decoder_name() == auto  # a refused choice changes nothing
    assert _decoders.ENV_VAR not in os.environ
    # PCR_DECODER is the default where nothing is chosen; a choice overrides it
    monkeypatch.setenv(_decoders.ENV_VAR, "pillow")
    assert decoder_name() == "pillow"
    with use_decoder("auto") as name:
        assert name == auto


def test_carried_work_decodes_with_the_callers_choice_elsewhere() -> None:
    with use_decoder("pillow"):
        work = _decoders.carried(decoder_name)
    # a process gets it pickled; a pool's thread runs it in a context of its own
    again = pickle.loads(pickle.dumps(work))
    assert contextvars.Context().run(again) == "pillow"
    assert contextvars.Context().run(work) == "pillow"
    assert decoder_name() == _default_name()  # and it leaves the caller's choice alone
    with pytest.raises(ValueError, match="unknown JPEG decoder"):
        _decoders.carried(decoder_name, "fastest")
