"""Turn any source image into a progressive JPEG with a dataset's scan script.

Two backends:

``jpegtran``
    libjpeg-turbo's ``jpegtran -copy none -optimize -progressive`` (``-scans``
    for a script other than the standard one). For JPEG
    sources this is a *lossless* transcode: the DCT coefficients are kept, so
    decoding all scans gives exactly the source's pixels.
    Where libjpeg-turbo's TurboJPEG library is installed, the common case
    (standard script, no rotation) runs in-process through ``tjTransform``,
    which writes the same bytes (:mod:`pcr_explore.jpeg._tjtransform`).
``pillow``
    Always available. JPEG sources are re-encoded with their own quantisation
    tables and chroma subsampling (``quality="keep"``); other formats are
    encoded at the ``quality`` the caller sets. Pillow writes only the
    standard script; another script is then applied by ``jpegtran``
    (losslessly, from Pillow's output), so it needs the program.

``auto`` picks ``jpegtran`` when the program is on ``PATH``. Sources that
cannot go through ``jpegtran`` losslessly (CMYK, non-JPEG formats) take the
Pillow path; the result says which. A JPEG's EXIF orientation is applied by
``jpegtran -perfect`` when the rotation is aligned to the JPEG's blocks;
otherwise the coefficients are kept as they are and the orientation is
returned (:attr:`TranscodeResult.orientation`) for the reader to apply after
decoding, so every JPEG source stays bit-exact.
Every result is checked against the scan script (see
:mod:`pcr_explore.jpeg.scan_script`; the standard one has 10 scans for colour, 6 for
grayscale) before it is returned.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from PIL import Image, ImageOps, JpegImagePlugin, UnidentifiedImageError

from .._public import public
from ..errors import JPEGError, ScanScriptError, SourceImageError
from ..storage._atomic import atomic_write
from ._progressive import ProgressiveJPEG, split_scans
from ._tjtransform import progressive
from .scan_script import ScanScript, resolve_scan_script

__all__ = ["Backend", "TranscodeResult", "transcode", "find_jpegtran", "IMAGE_SUFFIXES"]

Backend = Literal["auto", "jpegtran", "pillow"]

IMAGE_SUFFIXES = frozenset(
    {".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif"}
)

# EXIF orientation -> jpegtran transform.
_JPEGTRAN_ORIENT = {
    2: ["-flip", "horizontal"],
    3: ["-rotate", "180"],
    4: ["-flip", "vertical"],
    5: ["-transpose"],
    6: ["-rotate", "90"],
    7: ["-transverse"],
    8: ["-rotate", "270"],
}

# Decompression-bomb guard: refuse sources above this many pixels.
MAX_PIXELS = 178_956_970
# A source file is read whole: refuse anything larger than any photo would be.
MAX_SOURCE_BYTES = 1 << 30

# Above this many pixels a Pillow encode is written baseline and made
# progressive by jpegtran in its own process: Pillow's progressive encoder
# keeps every DCT coefficient of the image beside its pixels (1.2 GB for a
# 13,000 x 13,000 RGB image), a baseline encode streams them.
STREAM_PIXELS = 1 << 24

# File signatures of the formats in IMAGE_SUFFIXES, checked before a file is
# read whole, so a large junk file named ``.jpg`` costs one 16-byte read.
_SIGNATURES = (
    b"\xff\xd8\xff",  # JPEG
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",  # TIFF, little-endian
    b"MM\x00*",  # TIFF, big-endian
)


def _looks_like_image(head: bytes) -> bool:
    return head.startswith(_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def check_backend_and_quality(backend: str, quality: int) -> None:
    """Validate transcode options (before any work is started).

    Raises
    ------
    ValueError
        If *backend* is not one of auto, jpegtran, pillow or *quality* is
        outside 1..100.
    """
    if backend not in ("auto", "jpegtran", "pillow"):
        raise ValueError(f"unknown backend {backend!r}; choose auto, jpegtran or pillow")
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
        raise ValueError(f"quality must be an integer in 1..100, got {quality!r}")


def _read_source(source: str | os.PathLike[str], label: str) -> bytes:
    """Read a source file, after checking it is a regular file that looks like an image."""
    try:
        # O_NONBLOCK: opening a FIFO named like an image must not wait for a writer
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SourceImageError(f"{label}: not a regular file")
            if st.st_size == 0:
                raise SourceImageError(f"{label}: empty file")
            if st.st_size > MAX_SOURCE_BYTES:
                raise SourceImageError(
                    f"{label}: {st.st_size:,} bytes is larger than any image source allowed "
                    f"({MAX_SOURCE_BYTES:,})"
                )
            head = f.read(16)
            if not _looks_like_image(head):
                raise SourceImageError(
                    f"{label}: not a recognised image format (no JPEG, PNG, WebP, BMP, TIFF "
                    "or GIF signature at the start)"
                )
            return head + f.read()
    except OSError as exc:
        raise SourceImageError(f"{label}: cannot read file: {exc.strerror or exc}") from exc


@dataclass(frozen=True)
class TranscodeResult:
    """A source image turned into a standard progressive JPEG.

    Attributes
    ----------
    jpeg : ProgressiveJPEG
        The split result.
    backend : str
        ``"jpegtran"`` or ``"pillow"``: what produced the bytes.
    lossless : bool
        True when the DCT coefficients of a JPEG source were kept.
    source_format : str
        Pillow's name for the source format ("JPEG", "PNG", ...).
    source_mode : str
        The source's Pillow mode before conversion ("RGB", "CMYK", "I;16" ...).
    note : str
        Why a conversion happened, or "".
    orientation : int
        EXIF orientation (1-8) still to apply after decoding; 1 when the
        JPEG is stored upright.
    """

    jpeg: ProgressiveJPEG
    backend: str
    lossless: bool
    source_format: str
    source_mode: str
    note: str = ""
    orientation: int = 1


@public("pcr_explore")
def find_jpegtran() -> str | None:
    """Path of libjpeg-turbo's ``jpegtran`` (``$PCR_JPEGTRAN`` overrides), or None."""
    env = os.environ.get("PCR_JPEGTRAN")
    if env:
        return env if os.path.isfile(env) else None
    return _which_jpegtran(os.environ.get("PATH"))


def jpegtran_for(backend: str) -> str | None:
    """The ``jpegtran`` a transcode with *backend* may run (None: none is installed).

    Raises
    ------
    FileNotFoundError
        If *backend* is ``"jpegtran"`` and the program is not installed.
    """
    exe = find_jpegtran()
    if backend == "jpegtran" and exe is None:
        raise FileNotFoundError(
            "jpegtran not found: install libjpeg-turbo (Debian: libjpeg-turbo-progs, "
            "conda-forge: libjpeg-turbo) or use backend='pillow' / 'auto'"
        )
    return exe


@lru_cache(maxsize=8)
def _which_jpegtran(path: str | None) -> str | None:
    # a search of $PATH per image cost 0.2 ms; a changed $PATH searches again
    return shutil.which("jpegtran", path=path)


def _script_file(text: str) -> str:
    """A file holding *text* for ``jpegtran -scans`` (one per script, reused by the process)."""
    path = os.path.join(
        tempfile.gettempdir(), f"pcr-explore-scans-{zlib.crc32(text.encode()):08x}.txt"
    )
    try:
        with open(path, encoding="ascii") as f:
            if f.read() == text:
                return path
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write(path, text)
    return path


def _scan_flags(script: ScanScript, gray: bool) -> list[str]:
    if script.is_standard:
        return ["-progressive"]
    return ["-scans", _script_file(script.text(gray=gray))]


def _run_jpegtran(exe: str, data: bytes, path: str | None, extra: list[str], source: str) -> bytes:
    cmd = [exe, "-copy", "none", "-optimize", *extra]
    if path is None:
        proc = subprocess.run(cmd, input=data, capture_output=True, check=False)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    else:
        # jpegtran reads the file itself, and its output is read in one go:
        # subprocess's select loop over 4 KiB stdin writes and 32 KiB reads
        # cost ~2 ms of CPU per image. Its stderr is a line or two at most.
        with subprocess.Popen(
            [*cmd, path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as p:
            assert p.stdout is not None and p.stderr is not None  # for mypy: pipes were asked for
            out = p.stdout.read()
            err = p.stderr.read()
            rc = p.wait()
    if rc != 0 or not out:
        msg = err.decode("utf-8", "replace").strip().splitlines()
        raise JPEGError(f"{source}: jpegtran failed: {msg[-1] if msg else rc}")
    return out


def _to_8bit(im: Image.Image) -> Image.Image:
    """Normalise any Pillow mode to L or RGB, alpha composited on white."""
    mode = im.mode
    if mode in ("L", "RGB"):
        return im
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        arr = np.asarray(im)
        if mode == "F":
            lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
            arr8 = (
                np.zeros(arr.shape, np.uint8)
                if hi <= lo
                else (np.clip((arr - lo) / (hi - lo) * 255.0 + 0.5, 0, 255).astype(np.uint8))
            )
        else:
            # 16-bit samples: keep the top 8 bits (a straight clip would saturate).
            maxval = 65535 if mode.startswith("I;16") or int(arr.max(initial=0)) > 255 else 255
            arr8 = (arr.astype(np.uint32) * 255 // maxval).astype(np.uint8)
        return Image.fromarray(arr8, "L")
    if mode == "1":
        return im.convert("L")
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        mode = im.mode
    if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        out = Image.alpha_composite(white, rgba)
        return out.convert("L" if mode in ("LA", "La") else "RGB")
    return im.convert("RGB")  # CMYK, YCbCr, LAB, HSV, RGBX ...


def _pillow_encode(
    im: Image.Image, quality: int, src_jpeg: Image.Image | None, progressive: bool = True
) -> bytes:
    out = io.BytesIO()
    # Pillow buffers the whole image to optimise or write progressive; a
    # baseline encode (that jpegtran then optimises) streams
    kwargs: dict[str, object] = {"progressive": progressive, "optimize": progressive}
    if src_jpeg is not None and src_jpeg.mode in ("L", "RGB"):
        # Keep the source's quantisation and subsampling (Pillow's quality="keep"
        # only works on the unmodified source object, so pass them explicitly).
        kwargs["qtables"] = src_jpeg.quantization  # type: ignore[attr-defined]
        if src_jpeg.mode == "RGB":
            kwargs["subsampling"] = JpegImagePlugin.get_sampling(src_jpeg)
    else:
        kwargs["quality"] = quality
    im.save(out, "JPEG", **kwargs)
    return out.getvalue()


def transcode(
    source: str | os.PathLike[str] | bytes,
    *,
    backend: Backend = "auto",
    quality: int = 90,
    name: str | None = None,
    scan_script: str | ScanScript | None = None,
) -> TranscodeResult:
    """Transcode one source image into a progressive JPEG with the given scan script.

    Parameters
    ----------
    source : path or bytes
        A JPEG, PNG, WebP, BMP, TIFF or GIF (first frame) file.
    backend : {"auto", "jpegtran", "pillow"}
        See the module docstring.
    quality : int
        JPEG quality (1-95) for sources that are not JPEG, or that must be
        converted (CMYK).
    name : str, optional
        Name used in error messages (defaults to the path).
    scan_script : str or ScanScript, optional
        A name from :data:`pcr_explore.jpeg.scan_script.SCRIPTS`, a script file, or
        a :class:`~pcr_explore.jpeg.scan_script.ScanScript`; default: the standard
        script.

    Returns
    -------
    TranscodeResult

    Raises
    ------
    SourceImageError
        If the source cannot be read or decoded.
    ScanScriptError
        If the script is invalid, or needs ``jpegtran`` and it is not
        installed, or the result does not follow it.
    FileNotFoundError
        If ``backend="jpegtran"`` and the program is not installed.

    Examples
    --------
    >>> r = transcode("photo.jpg")
    >>> r.jpeg.num_scans, r.lossless
    (10, True)
    """
    check_backend_and_quality(backend, quality)
    script = resolve_scan_script(scan_script)
    path: str | None = None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        label = name or "<bytes>"
    else:
        label = name or os.fspath(source)
        path = os.path.abspath(source)  # absolute: a name starting with '-' is not an option
        data = _read_source(source, label)
    exe = jpegtran_for(backend)
    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format or "?"
            mode = im.mode
            if im.width * im.height > MAX_PIXELS:
                raise SourceImageError(
                    f"{label}: {im.width}x{im.height} pixels is more than the {MAX_PIXELS} allowed"
                )
            orientation = (
                im.getexif().get(0x0112, 1) if fmt in ("JPEG", "MPO", "TIFF", "WEBP", "PNG") else 1
            )
            lossless_ok = backend != "pillow" and fmt in ("JPEG", "MPO") and mode in ("L", "RGB")
            frames = int(getattr(im, "n_frames", 1) or 1)
            note = f"{fmt} with {frames} frames: the first kept" if frames > 1 else ""
            scans = _scan_flags(script, mode == "L")
            if lossless_ok and exe is not None:
                out, turned, orientation = _lossless(exe, data, path, scans, orientation, label)
                note = _join(note, turned)
                return _finish(out, "jpegtran", True, fmt, mode, note, label, script, orientation)
            if fmt in ("JPEG", "MPO") and mode == "CMYK":
                note = _join(
                    note, "CMYK converted to RGB (its 18-scan progression would not share levels)"
                )
            im.seek(0)
            # exif_transpose copies an image it does not turn: for a 13,000 x 13,000
            # source that copy alone is 500 MB, so only call it to turn
            upright = (ImageOps.exif_transpose(im) or im) if orientation in _JPEGTRAN_ORIENT else im
            src_jpeg = im if fmt in ("JPEG", "MPO") and mode in ("L", "RGB") else None
            # jpegtran makes it progressive when it can: always for another
            # script, and for a large image, whose pixels are then freed first
            stream = exe is not None and (
                not script.is_standard or upright.width * upright.height > STREAM_PIXELS
            )
            out = _pillow_encode(_to_8bit(upright), int(quality), src_jpeg, not stream)
            how = "with its own quantisation" if src_jpeg is not None else f"at quality {quality}"
            note = _join(
                note,
                f"{fmt} {mode} source re-encoded as JPEG {how}: lossy, and the full level "
                "is this copy, not the original file",
            )
            del upright, src_jpeg
    except UnidentifiedImageError as exc:
        # The file's own bytes are never quoted: a reason lands in manifests and reports.
        what = "empty" if not data else "not a recognised image format"
        raise SourceImageError(f"{label}: {what}") from exc
    except (OSError, SyntaxError, Image.DecompressionBombError, EOFError, ValueError) as exc:
        if isinstance(exc, (SourceImageError, JPEGError)):
            raise
        raise SourceImageError(f"{label}: cannot decode image: {exc}") from exc
    if stream or not script.is_standard:  # the image is closed: only the JPEG is held
        out = _rescan(exe, out, script, label)
    return _finish(out, "pillow", False, fmt, mode, note, label, script)


def _lossless(
    jt: str, data: bytes, path: str | None, scans: list[str], orientation: int, label: str
) -> tuple[bytes, str, int]:
    """A JPEG's coefficients rewritten in *scans*, turned upright where it can be.

    Returns the JPEG, a note on its orientation, and the orientation still
    to apply after decoding.
    """
    if orientation in _JPEGTRAN_ORIENT:
        flags = [*scans, *_JPEGTRAN_ORIENT[orientation], "-perfect"]
        try:
            out = _run_jpegtran(jt, data, path, flags, label)
        except JPEGError:
            # not block-aligned: keep the coefficients, turn after decoding
            why = "EXIF rotation not block-aligned: orientation stored for the reader"
            return _run_jpegtran(jt, data, path, scans, label), why, orientation
        return out, "EXIF orientation applied losslessly", 1
    # the standard script (-progressive): the program's bytes, without a process per image
    got = progressive(data, label) if scans == ["-progressive"] else None
    return got if got is not None else _run_jpegtran(jt, data, path, scans, label), "", 1


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _rescan(exe: str | None, jpeg: bytes, script: ScanScript, label: str) -> bytes:
    """Rewrite a Pillow JPEG (baseline or progressive) in *script*'s scans, losslessly."""
    if exe is None:
        raise ScanScriptError(
            f"{label}: the {script.name} scan script needs jpegtran (Pillow writes only the "
            "standard script): install libjpeg-turbo (Debian: libjpeg-turbo-progs) or use "
            "the standard script"
        )
    gray = split_scans(jpeg, source=label).num_components == 1
    return _run_jpegtran(exe, jpeg, None, _scan_flags(script, gray), label)


def _finish(
    out: bytes,
    backend: str,
    lossless: bool,
    fmt: str,
    mode: str,
    note: str,
    label: str,
    script: ScanScript,
    orientation: int = 1,
) -> TranscodeResult:
    pj = split_scans(out, source=label)
    script.check(pj, source=label)
    return TranscodeResult(pj, backend, lossless, fmt, mode, note, orientation)
