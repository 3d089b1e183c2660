"""JPEG decoders that give Pillow's exact pixels, faster where a faster one is installed.

Pillow decodes JPEGs with libjpeg-turbo: the accurate integer IDCT ("islow"),
fancy chroma upsampling, and in ``Image.draft`` a DCT-domain scale of 1/2, 1/4
or 1/8. simplejpeg (which bundles libjpeg-turbo) runs the same library with the
same settings through the TurboJPEG API, with less work per call. A backend
decodes an image only where it gives Pillow's result to the pixel:

* only JPEG data (SOI first) with one component or YCbCr, under Pillow's
  decompression-bomb limit; anything else goes to Pillow;
* the DCT scale is the one ``Image.draft`` picks, and the colour conversions
  (Y only for a DCT-scaled ``L`` decode, Pillow's own RGB-to-L otherwise) and the
  final BILINEAR resize are Pillow's;
* any libjpeg warning (corrupt or truncated data) hands the image to Pillow, so
  damaged data fails, or decodes to garbage, exactly as it does with Pillow.

The automatic choice is the fastest installed backend that gave Pillow's pixels
in ``bench/bench_decoders.py``, checked once per process on a small generated
image (a Pillow built on another libjpeg would differ); Pillow otherwise.

The choice is a context variable, so two threads (or two tasks) may decode with
different backends at once: :func:`use_decoder` for a ``with`` block,
:func:`set_decoder` for the rest of the current thread (a script's main
thread, a notebook's cells), ``decoder=`` where a function takes it. Where
nothing is chosen, the ``PCR_DECODER`` environment variable
(``pillow|simplejpeg|auto``) is the process default; the package only reads it.
Work the package hands to its own threads and processes (``iter(workers=)``,
the quality and audit workers, the gradient tuner) decodes with the choice in
force where it was asked for: :func:`carried` takes it along. A new thread of
your own starts with the process default, as with :mod:`decimal`'s context.

A backend through PyTurboJPEG (the system's libturbojpeg) was removed: on
Debian's libjpeg-turbo 2.1 it did not give Pillow's pixels for partial
progressive levels, PyTurboJPEG 2 needs libjpeg-turbo 3, and it reported
damaged data through Python warnings, whose filter is process-wide (not safe
with threads decoding at once). simplejpeg runs the same library.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import numpy as np
from PIL import Image

from .._public import public
from ..errors import MissingExtraError
from ._eighth import at_eighth as eighth_rewrite

ENV_VAR = "PCR_DECODER"
SKIP_SCANS_VAR = "PCR_SKIP_SCANS"
NAMES = ("pillow", "simplejpeg")
# Fastest first (bench/bench_decoders.py); only backends that matched Pillow in
# every measured case belong here.
_PREFERENCE = ("simplejpeg",)
_PACKAGES = {"simplejpeg": "simplejpeg"}

# The decoder chosen in this context ("pillow", "simplejpeg" or "auto"); None:
# none chosen here, so PCR_DECODER's (the process default) holds.
_CHOICE: ContextVar[str | None] = ContextVar("pcr_explore.jpeg.decoder", default=None)

# (stored width, stored height) -> output (width, height), or None for stored size
TargetFor = Callable[[int, int], "tuple[int, int] | None"]


class _Backend(Protocol):
    name: str

    def header(self, data: bytes) -> tuple[int, int, bool] | None:
        """(width, height, grayscale) of a 1- or 3-component YCbCr JPEG, else None."""

    def decode(
        self, data: bytes, width: int, height: int, scale: int, gray: bool
    ) -> np.ndarray | None:
        """(h, w, 1 or 3) pixels at 1/scale, or None on any error or warning."""


def _scaled(n: int, num: int, denom: int) -> int:
    return (n * num + denom - 1) // denom


class _SimpleJPEG:
    name = "simplejpeg"

    def __init__(self) -> None:
        import simplejpeg

        self._sj = simplejpeg

    def header(self, data: bytes) -> tuple[int, int, bool] | None:
        try:
            h, w, space, _ = self._sj.decode_jpeg_header(data, strict=True)
        except ValueError:
            return None
        if space not in ("Gray", "YCbCr"):
            return None
        return w, h, space == "Gray"

    def decode(
        self, data: bytes, width: int, height: int, scale: int, gray: bool
    ) -> np.ndarray | None:
        mw = mh = 0
        if scale > 1:
            mw, mh = _scaled(width, 1, scale), _scaled(height, 1, scale)
            # simplejpeg takes the smallest of libjpeg-turbo's n/8 factors whose
            # output is at least (mw, mh); on tiny images a smaller one than
            # 1/scale can reach it, and decodes differently.
            if any(
                _scaled(width, n, 8) >= mw and _scaled(height, n, 8) >= mh
                for n in range(1, 8 // scale)
            ):
                return None
        try:
            return self._sj.decode_jpeg(
                data, "GRAY" if gray else "RGB", min_height=mh, min_width=mw, strict=True
            )
        except ValueError:
            return None


_FACTORIES: dict[str, Callable[[], _Backend]] = {
    "simplejpeg": _SimpleJPEG,
}

# The backend loaded for each name, "auto" probed once (a pixel check against
# Pillow): a cache shared by every thread, not a setting (that is _CHOICE).
_resolved: dict[str, _Backend | None] = {}
_resolving = threading.Lock()


def draft_scale(width: int, height: int, target: tuple[int, int] | None) -> int:
    """The DCT scale denominator Pillow's decode uses for *target*: 1, 2, 4 or 8.

    DCT scaling is used only when the target is at most half the stored size in
    both dimensions; ``Image.draft`` then picks the largest denominator whose
    output is still at least the target in both.

    Examples
    --------
    >>> draft_scale(768, 512, (96, 64)), draft_scale(768, 512, (400, 256))
    (8, 1)
    """
    if target is None or 2 * target[0] > width or 2 * target[1] > height:
        return 1
    fit = min(width // target[0], height // target[1])
    return next(s for s in (8, 4, 2) if fit >= s)


def pillow_decode(data: bytes, target_for: TargetFor, mode: str | None) -> np.ndarray:
    """Decode any image Pillow reads; Pillow's exceptions pass through."""
    src = Image.open(io.BytesIO(data))
    want = mode or ("L" if src.mode == "L" else "RGB")
    target = target_for(src.width, src.height)
    if draft_scale(src.width, src.height, target) > 1:
        src.draft(want, target)  # libjpeg scales (and converts) while decoding
    im = src if src.mode == want else src.convert(want)
    if target is not None and im.size != target:
        im = im.resize(target, Image.Resampling.BILINEAR)
    return np.array(im)  # writable: callers may edit or hand it to torch


def backend_decode(
    backend: _Backend, data: bytes, target_for: TargetFor, mode: str | None
) -> np.ndarray | None:
    """Pillow's pixels through *backend*, or None where only Pillow can say."""
    if data[:2] != b"\xff\xd8":
        return None
    head = backend.header(data)
    if head is None:
        return None
    width, height, stored_gray = head
    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and width * height > limit:
        return None  # Pillow warns or refuses: let it
    want = mode or ("L" if stored_gray else "RGB")
    target = target_for(width, height)
    scale = draft_scale(width, height, target)
    # Pillow's draft makes libjpeg emit Y only for L; without draft it converts RGB
    gray = want == "L" and (stored_gray or scale > 1)
    arr = backend.decode(data, width, height, scale, gray)
    if arr is None or arr.shape[:2] != (_scaled(height, 1, scale), _scaled(width, 1, scale)):
        return None
    # a grey JPEG decoded to RGB repeats Y in libjpeg as in Pillow's convert
    arr = arr.reshape(arr.shape[0], arr.shape[1]) if gray else arr
    if want == "L" and not gray:
        arr = np.array(Image.fromarray(arr).convert("L"))
    if target is not None and (arr.shape[1], arr.shape[0]) != target:
        arr = np.array(Image.fromarray(arr).resize(target, Image.Resampling.BILINEAR))
    return arr


def decode(
    data: bytes, target_for: TargetFor, mode: str | None, backend: _Backend | None
) -> np.ndarray:
    """Decode with *backend* (from :func:`backend_named`), falling back to Pillow.

    Pillow's errors pass through. A progressive JPEG decoded at 1/8 scale
    leaves out the scans that cannot change its pixels
    (:mod:`pcr_explore.jpeg._eighth`); ``PCR_SKIP_SCANS=0`` turns that off.
    """
    if os.environ.get(SKIP_SCANS_VAR, "1") != "0":

        def at_eighth(width: int, height: int) -> bool:
            return draft_scale(width, height, target_for(width, height)) == 8

        lean = eighth_rewrite(data, at_eighth)
        if lean is not None:
            try:
                return _decode(backend, lean, target_for, mode)
            except (OSError, SyntaxError, ValueError, EOFError):
                pass  # the whole file decides
    return _decode(backend, data, target_for, mode)


def _decode(
    backend: _Backend | None, data: bytes, target_for: TargetFor, mode: str | None
) -> np.ndarray:
    if backend is not None:
        arr = backend_decode(backend, data, target_for, mode)
        if arr is not None:
            return arr
    return pillow_decode(data, target_for, mode)


def _partial(data: bytes, scans: int) -> bytes:
    # the first *scans* scans of a progressive JPEG (and the next scan's
    # tables), closed by EOI; FF DA only occurs as an SOS marker
    pos = 0
    for _ in range(scans + 1):
        pos = data.index(b"\xff\xda", pos + 1)
    return data[:pos] + b"\xff\xd9"


def _agrees_with_pillow(backend: _Backend) -> bool:
    # Odd-sized colour (4:2:0) and grey images, a partial and a full progressive
    # level (libjpeg's smoothing of missing coefficients differs between
    # versions), every DCT scale, each output mode.
    yy, xx = np.mgrid[0:61, 0:83]
    noise = np.random.default_rng(0).integers(0, 40, (61, 83, 3))
    rgb = (np.stack([xx * 3, yy * 4, (xx * yy) % 256], axis=2) + noise).clip(0, 255)
    colour = Image.fromarray(rgb.astype(np.uint8))
    for im in (colour, colour.convert("L")):
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=90, progressive=True)
        for data in (_partial(buf.getvalue(), 2), buf.getvalue()):
            for side in (83, 41, 20, 10):

                def target_for(w: int, h: int, side: int = side) -> tuple[int, int]:
                    return (side, round(h * side / w))

                for mode in (None, "L", "RGB"):
                    got = backend_decode(backend, data, target_for, mode)
                    want = pillow_decode(data, target_for, mode)
                    if got is None or got.shape != want.shape or not np.array_equal(got, want):
                        return False
    return True


def _key(name: str | None, origin: str) -> str:
    """The choice *name* stands for: ``"pillow"``, a backend's name or ``"auto"``."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{origin}: a JPEG decoder is named by a str, got {name!r}")
    key = "auto" if name is None else name.strip().lower() or "auto"
    if key != "auto" and key not in NAMES:
        raise ValueError(f"{origin}: unknown JPEG decoder {name!r}; expected one of {NAMES}")
    return key


def _resolve(key: str, origin: str) -> _Backend | None:
    if key == "pillow":
        return None
    if key != "auto":  # a name _key has checked
        try:
            return _FACTORIES[key]()
        except ImportError as exc:
            raise MissingExtraError(
                f"{origin}: JPEG decoder {key!r} needs {_PACKAGES[key]}: {exc}"
            ) from exc
    for candidate in _PREFERENCE:
        try:
            backend = _FACTORIES[candidate]()
        except ImportError:
            continue
        if _agrees_with_pillow(backend):
            return backend
    return None


def _backend_for(key: str, origin: str, *, fresh: bool = False) -> _Backend | None:
    """The backend for *key*, loaded (and for "auto" probed) once per process unless *fresh*."""
    if not fresh:
        with contextlib.suppress(KeyError):  # the hot path: no lock
            return _resolved[key]
    with _resolving:
        if fresh or key not in _resolved:
            _resolved[key] = _resolve(key, origin)
        return _resolved[key]


def backend_named(decoder: str | None) -> _Backend | None:
    """The backend *decoder* names; None stands for Pillow.

    *decoder* None: the one in force here, this context's choice, else
    ``PCR_DECODER``'s.
    """
    if decoder is not None:
        return _backend_for(_key(decoder, "decoder="), "decoder=")
    key = _CHOICE.get()
    if key is not None:
        return _backend_for(key, "use_decoder")
    env = os.environ.get(ENV_VAR)
    origin = f"{ENV_VAR}={env}"
    return _backend_for(_key(env, origin), origin)


@public("pcr_explore.jpeg")
def decoder_name() -> str:
    """Name of the JPEG decoder in use here: ``"pillow"`` or ``"simplejpeg"``.

    The one chosen in this context (:func:`use_decoder`, :func:`set_decoder`),
    else the ``PCR_DECODER`` environment variable's, else the automatic one.

    Raises
    ------
    ValueError
        If ``PCR_DECODER`` names no known decoder.
    MissingExtraError
        If the decoder it names is not installed.

    Examples
    --------
    >>> decoder_name() in ("pillow", "simplejpeg")
    True
    """
    backend = backend_named(None)
    return "pillow" if backend is None else backend.name


def _choose(name: str | None, origin: str) -> str | None:
    """The value :data:`_CHOICE` takes for *name*, its backend loaded (errors raised here)."""
    if name is None:
        with _resolving:  # the process default is loaded (and probed) again at its next use
            _resolved.clear()
        return None
    key = _key(name, origin)
    _backend_for(key, origin, fresh=True)  # fails here, not at the first decode
    return key


@public("pcr_explore.jpeg")
def set_decoder(name: str | None) -> None:
    """Choose the JPEG decoder for the rest of this thread (or task), or go back to the default.

    The choice is a context variable: it holds in the current thread (a
    script's main thread, a notebook's cells) and in the threads and
    processes the package starts from it (``iter(workers=)``, the quality
    and audit workers); other threads keep theirs. :func:`use_decoder` does
    the same for a ``with`` block only.

    Parameters
    ----------
    name : {"pillow", "simplejpeg", "auto"} or None
        ``"auto"``: the fastest installed backend that gives Pillow's pixels,
        else Pillow. None: no choice here, so the ``PCR_DECODER`` environment
        variable's holds (the process default; unset: automatic). After None
        or "auto" the installed backends are probed again.

    Raises
    ------
    ValueError
        If *name* is not a known decoder.
    MissingExtraError
        If the named decoder's package is not installed.

    Examples
    --------
    >>> set_decoder("pillow"); decoder_name()
    'pillow'
    >>> set_decoder(None)
    """
    _CHOICE.set(_choose(name, "set_decoder"))


@public("pcr_explore.jpeg")
@contextlib.contextmanager
def use_decoder(name: str | None) -> Iterator[str]:
    """Decode with *name* inside a ``with`` block; the choice before it holds again after.

    Only the current thread (or task) sees the choice, so threads may decode
    with different backends at once; the package's own worker threads and
    processes started inside the block take it along (see :func:`set_decoder`).

    Parameters
    ----------
    name : {"pillow", "simplejpeg", "auto"} or None
        As for :func:`set_decoder`.

    Yields
    ------
    str
        The name of the decoder in use in the block.

    Raises
    ------
    ValueError
        If *name* is not a known decoder (nothing changes).
    MissingExtraError
        If the named decoder's package is not installed (nothing changes).

    Examples
    --------
    >>> with use_decoder("pillow") as name:
    ...     name
    'pillow'
    """
    token = _CHOICE.set(_choose(name, "use_decoder"))
    try:
        yield decoder_name()
    finally:
        _CHOICE.reset(token)


_R = TypeVar("_R")


def carried(fn: Callable[..., _R], decoder: str | None = None) -> Callable[..., _R]:
    """*fn* run with *decoder* (default: the one in force here) in any thread or process.

    A context variable does not cross into a pool's threads (they keep their
    own context) nor into worker processes: work handed to them goes wrapped.
    The wrapper pickles where *fn* does.
    """
    backend = backend_named(decoder)  # a bad name fails here, at the call
    return functools.partial(_run_with, "pillow" if backend is None else backend.name, fn)


def _run_with(name: str, fn: Callable[..., _R], *args: Any, **kwargs: Any) -> _R:
    token = _CHOICE.set(_key(name, "decoder="))
    try:
        return fn(*args, **kwargs)
    finally:
        _CHOICE.reset(token)
