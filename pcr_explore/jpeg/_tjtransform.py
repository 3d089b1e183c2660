"""The lossless progressive transcode in-process, through libjpeg-turbo's TurboJPEG library.

``jpegtran -copy none -optimize -progressive`` run as a program costs a
process start per image. TurboJPEG's ``tjTransform`` with the progressive and
copy-none options runs the same libjpeg code in this process and writes the
same bytes (progressive mode always optimises the Huffman tables); the
calls release Python's lock, so encoder threads run it in parallel. It
covers the common case only: the standard scan script, no rotation. Every
other case, and machines without ``libturbojpeg.so.0`` (Debian:
``libturbojpeg0``), use the ``jpegtran`` program. ``PCR_TJTRANSFORM=0``
turns it off.
"""

from __future__ import annotations

import ctypes
import os
import threading
from functools import cache
from typing import Any

import numpy as np

from ..errors import JPEGError

__all__ = ["progressive", "read_check", "decode_checked"]

_TJXOPT_NOOUTPUT = 16
_TJXOPT_PROGRESSIVE = 32
_TJXOPT_COPYNONE = 64
_TJFLAG_STOPONWARNING = 8192  # a warning (corrupt data) fails, as jpegtran's exit status does


class _Transform(ctypes.Structure):
    _fields_ = [
        ("r", ctypes.c_int * 4),  # the crop region (x, y, w, h): none
        ("op", ctypes.c_int),
        ("options", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("customFilter", ctypes.c_void_p),
    ]


@cache
def _library() -> Any:
    """``libturbojpeg`` with the signatures used here, or None when it is not installed."""
    try:
        lib: Any = ctypes.CDLL("libturbojpeg.so.0")  # signatures declared below
    except OSError:
        return None
    lib.tjInitTransform.restype = ctypes.c_void_p
    lib.tjInitTransform.argtypes = []
    lib.tjTransform.restype = ctypes.c_int
    lib.tjTransform.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_int,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte)),
        ctypes.POINTER(ctypes.c_ulong),
        ctypes.POINTER(_Transform),
        ctypes.c_int,
    ]
    lib.tjFree.restype = None
    lib.tjFree.argtypes = [ctypes.c_void_p]
    lib.tjGetErrorStr2.restype = ctypes.c_char_p
    lib.tjGetErrorStr2.argtypes = [ctypes.c_void_p]
    lib.tjDecompressHeader3.restype = ctypes.c_int
    lib.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong] + [
        ctypes.POINTER(ctypes.c_int)
    ] * 4
    lib.tjDecompress2.restype = ctypes.c_int
    lib.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong]
    lib.tjDecompress2.argtypes += [ctypes.c_void_p] + [ctypes.c_int] * 5
    return lib


_local = threading.local()  # a TurboJPEG handle is not safe to share between threads


def _handle(lib: Any) -> int:
    h = getattr(_local, "handle", None)
    if h is None:
        h = lib.tjInitTransform()
        if not h:
            raise MemoryError("tjInitTransform failed")
        _local.handle = h
    return int(h)


def available() -> bool:
    """True when the in-process transcode will be used."""
    return os.environ.get("PCR_TJTRANSFORM", "1") != "0" and _library() is not None


def progressive(data: bytes, source: str) -> bytes | None:
    """*data* (a JPEG) rewritten as a standard progressive JPEG, losslessly; None if unavailable.

    Raises
    ------
    JPEGError
        Naming *source*, if libjpeg reports an error or a warning.
    """
    return _transform(data, _TJXOPT_PROGRESSIVE | _TJXOPT_COPYNONE, source)


def read_check(data: bytes, source: str) -> bool:
    """Read every coefficient of *data* as the transcode does, writing nothing.

    About a ninth of the transcode's time: the same Huffman decoding, so the
    same errors and warnings, without the progressive encode.

    Returns
    -------
    bool
        True when read; False when the in-process library is unavailable.

    Raises
    ------
    JPEGError
        Naming *source*, if libjpeg reports an error or a warning (the
        transcode would fail the same way).
    """
    return _transform(data, _TJXOPT_NOOUTPUT | _TJXOPT_COPYNONE, source) is not None


def decode_checked(
    data: bytes, stored: tuple[int, int], out: tuple[int, int], gray: bool
) -> np.ndarray | None:
    """*data* decoded to *out* (width, height; a DCT scale of it), any libjpeg warning failing.

    Every coefficient is read with warnings as errors, as the transcode
    reads them, so the decode checks the data too. TurboJPEG picks the DCT
    scale that Pillow's ``draft`` picks for the same size, with the same IDCT
    and colour conversion: the same pixels. None where the library is
    missing, the stored size is not *stored*, or libjpeg complains (a caller
    decoding with Pillow then gets its message, naming the problem).
    """
    lib = _library() if available() else None
    if lib is None:
        return None
    handle = _handle(lib)
    dims = [ctypes.c_int() for _ in range(4)]
    if lib.tjDecompressHeader3(handle, data, len(data), *map(ctypes.byref, dims)) != 0:
        return None
    if (dims[0].value, dims[1].value) != stored:
        return None
    w, h = out
    pixels = np.empty((h, w) if gray else (h, w, 3), np.uint8)
    pixel_format = 6 if gray else 0  # TJPF_GRAY, TJPF_RGB
    flags = _TJFLAG_STOPONWARNING
    rc = lib.tjDecompress2(
        handle, data, len(data), pixels.ctypes.data, w, 0, h, pixel_format, flags
    )
    return pixels if rc == 0 else None


def _transform(data: bytes, options: int, source: str) -> bytes | None:
    """Run ``tjTransform`` with *options*: its output (b"" for none), or None if unavailable."""
    if not available():
        return None
    lib = _library()
    handle = _handle(lib)
    xform = _Transform()
    xform.options = options
    buf = ctypes.POINTER(ctypes.c_ubyte)()
    size = ctypes.c_ulong(0)
    rc = lib.tjTransform(
        handle,
        data,
        len(data),
        1,
        ctypes.byref(buf),
        ctypes.byref(size),
        ctypes.byref(xform),
        _TJFLAG_STOPONWARNING,
    )
    try:
        if rc != 0:
            msg = (lib.tjGetErrorStr2(handle) or b"").decode("utf-8", "replace")
            raise JPEGError(f"{source}: lossless transcode failed: {msg or rc}")
        return ctypes.string_at(buf, size.value) if buf else b""
    finally:
        if buf:
            lib.tjFree(buf)
