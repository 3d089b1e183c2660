"""Fetch and unpack a dataset archive safely; write a small stand-in archive for tests.

:func:`download` fetches once through pooch, with a progress bar, into a
temporary file moved into place only when complete and its SHA-256 checked. :func:`extract`
unpacks only regular files and folders. :func:`write_stand_in_archive`
writes an archive laid out like TensorFlow's ``flower_photos.tgz`` from
generated shapes, so tests and runs without a network exercise the same code.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .._public import public
from ..errors import DatasetError

__all__ = ["sha256_of", "download", "extract", "write_stand_in_archive"]


def sha256_of(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks.

    Parameters
    ----------
    path : path
        The file.

    Returns
    -------
    str
        64 lowercase hex digits.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = f.write_bytes(b"abc")
    >>> sha256_of(f)[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(
    url: str,
    dest: str | os.PathLike[str],
    *,
    sha256: str | None = None,
    progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Download *url* to *dest* (once), checking its SHA-256, with pooch.

    pooch writes a temporary file beside *dest* and moves it into place only
    once complete and checked, so an interrupted or corrupt download never
    looks cached; a *dest* that exists and matches is kept without a request.

    Parameters
    ----------
    url : str
        An ``http(s)://`` or ``ftp://`` address.
    dest : path
        Where the file goes; kept and reused when it exists and matches.
    sha256 : str, optional
        Expected hex digest (None: not checked).
    progress : bool
        Show a progress bar in bytes.
    timeout : float
        Seconds to wait on the connection.

    Returns
    -------
    pathlib.Path
        *dest*.

    Raises
    ------
    DatasetError
        If the download fails or its SHA-256 does not match.

    Examples
    --------
    TensorFlow's flower photos (229 MB from the network: not run here):

    >>> from pcr_explore.train.flowers import FLOWERS_SHA256, FLOWERS_URL
    >>> download(FLOWERS_URL, "data/flower_photos.tgz", sha256=FLOWERS_SHA256)  # doctest: +SKIP
    """
    import pooch

    from .._pool import progress_bar as tqdm

    out = Path(dest)
    if out.exists() and (sha256 is None or sha256_of(out) == sha256.lower()):
        return out  # pooch would say so too, but after the bar below was drawn
    with tqdm(unit="B", unit_scale=True, desc=out.name, disable=not progress) as bar:
        fetch = pooch.HTTPDownloader(progressbar=_Bar(bar), timeout=timeout)
        level = pooch.get_logger().level
        pooch.get_logger().setLevel("WARNING")  # its "Downloading ..." lines: the bar says it
        try:
            known = f"sha256:{sha256.lower()}" if sha256 else None
            pooch.retrieve(url, known, fname=out.name, path=out.parent, downloader=fetch)
        except ValueError as exc:  # pooch's hash check
            raise DatasetError(
                f"{url}: SHA-256 of the download does not match the expected {sha256}; "
                "the download is damaged or the file has changed"
            ) from exc
        except OSError as exc:  # requests' errors are OSErrors
            raise DatasetError(f"{url}: download failed: {failure_reason(exc)}") from exc
        finally:
            pooch.get_logger().setLevel(level)
    return out


class _Bar:
    """A tqdm bar as pooch drives it, true to the bytes and the rate.

    pooch counts whole chunks (the last one is shorter), then resets the bar
    and fills it at once before closing: here no step passes the length and
    the reset is left out, so the rate shown at the end is the download's.
    """

    bar: Any

    def __init__(self, bar: Any) -> None:
        self.__dict__["bar"] = bar  # past __setattr__, which pooch's writes go through

    def __bool__(self) -> bool:  # pooch draws only a bar that tests true
        return True

    def __setattr__(self, name: str, total: Any) -> None:  # pooch sets only the length
        self.bar.total = total or None

    def update(self, n: int) -> None:
        self.bar.update(min(n, self.bar.total - self.bar.n) if self.bar.total else n)

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.bar.close()


def failure_reason(exc: BaseException) -> str:
    """Why a request failed, in words: its HTTP status, else the innermost system error's text.

    requests wraps a refused connection in three exceptions (its
    ConnectionError, urllib3's MaxRetryError and NewConnectionError) around
    the socket's own error, whose text is all a reader needs.
    """
    response = getattr(exc, "response", None)
    if response is not None:
        return f"the server answered {response.status_code} {response.reason}"
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror.lower()
        seen = seen.__cause__ or seen.__context__
    return str(exc)


@public("pcr_explore.train")
def extract(archive: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Unpack a tar archive (``.tgz``, ``.tar.gz``, ``.tar``) into *out*, safely.

    Only regular files and folders are unpacked; a member with an absolute
    path, a ``..`` component, a link or a device is refused. Unpacking goes
    to a temporary folder renamed into place, so *out* is complete or absent.

    Parameters
    ----------
    archive : path
        The archive file.
    out : path
        Folder to create (an existing one is returned as it is).

    Returns
    -------
    pathlib.Path
        The folder holding the images: the archive's single top-level folder
        when it has one (``flower_photos/``), else *out*.

    Raises
    ------
    DatasetError
        If the archive cannot be read or holds an unsafe member.

    Examples
    --------
    >>> import tarfile
    >>> with tarfile.open("photos.tgz", "w:gz", dereference=True) as tar:
    ...     tar.add("photos")
    >>> extract("photos.tgz", "unpacked")
    PosixPath('unpacked/photos')
    """
    dst = Path(out)
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", dir=dst.parent))
        try:
            with tarfile.open(archive) as tar:
                for m in tar.getmembers():
                    parts = Path(m.name).parts
                    if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                        raise DatasetError(f"{archive}: refusing unsafe member {m.name!r}")
                    if m.isdir():
                        (tmp / m.name).mkdir(parents=True, exist_ok=True)
                        continue
                    target = tmp / m.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tar.extractfile(m)
                    if src is None:  # pragma: no cover - regular files always have data
                        continue
                    with src, target.open("wb") as f:
                        shutil.copyfileobj(src, f)
            os.replace(tmp, dst)
        except (tarfile.TarError, OSError, EOFError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise DatasetError(f"{archive}: cannot unpack: {exc}") from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    entries = [p for p in dst.iterdir() if not p.name.startswith(".")]
    # flower_photos.tgz holds one top-level folder; the classes are inside it.
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else dst


#: The stand-in's classes: shapes told apart by their coarse layout alone.
STAND_IN_CLASSES = ("band", "column", "cross", "disc", "frame")


def _shape_mask(kind: str, side: int, rng: np.random.Generator) -> np.ndarray:
    """Where the shape of class *kind* lies, jittered in place and size (bool, side x side).

    Each shape spans at least a quarter of the image in one direction, so it
    survives 8x8 block averaging (scan 1) even at 64 px; the horizontal
    flips of training keep every class what it is.
    """
    y, x = (np.mgrid[0:side, 0:side].astype(np.float64) + 0.5) / side
    cy, cx = rng.uniform(0.38, 0.62, 2)
    if kind == "band":
        return np.abs(y - cy) < rng.uniform(0.12, 0.18)
    if kind == "column":
        return np.abs(x - cx) < rng.uniform(0.12, 0.18)
    if kind == "cross":
        half = rng.uniform(0.08, 0.12)
        return (np.abs(y - cy) < half) | (np.abs(x - cx) < half)
    if kind == "disc":
        return np.hypot(x - cx, y - cy) < rng.uniform(0.22, 0.3)
    if kind == "frame":
        edge = rng.uniform(0.14, 0.2)
        return (np.minimum(x, 1 - x) < edge) | (np.minimum(y, 1 - y) < edge)
    raise ValueError(f"unknown stand-in class {kind!r}; choose from {STAND_IN_CLASSES}")


def _pattern(kind: str, side: int, rng: np.random.Generator) -> np.ndarray:
    """One stand-in image: a shape of class *kind* on a background, under fine texture.

    The two colours are random with a luminance gap of at least 60 levels,
    either one the lighter, so only the layout tells the class. The texture
    (stripes of a 2-3 px period at a random angle, and noise) is the same
    for every class: it carries no label, but it is most of what the later
    scans encode, so a low level is a small share of the bytes. It is finer
    than a training size of half the side keeps, as much detail in photos is.
    """
    y, x = np.mgrid[0:side, 0:side].astype(np.float64)
    lum = rng.uniform(40, 215, 2)
    while abs(lum[0] - lum[1]) < 60:
        lum = rng.uniform(40, 215, 2)
    fg, bg = (np.clip(v + rng.uniform(-35, 35, 3), 0, 255) for v in lum)
    img = np.where(_shape_mask(kind, side, rng)[..., None], fg, bg)
    angle = rng.uniform(0, np.pi)
    period = rng.uniform(2.0, 3.0)
    stripes = np.sin(2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / period)
    img = img + rng.uniform(10, 20) * stripes[..., None] + rng.normal(0, 6, (side, side, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


@public("pcr_explore.train")
def write_stand_in_archive(
    path: str | os.PathLike[str],
    *,
    per_class: int = 12,
    side: int = 64,
    seed: int = 0,
) -> Path:
    """Write a small archive laid out like ``flower_photos.tgz``, of generated shapes.

    Five classes (``STAND_IN_CLASSES``: a horizontal band, a vertical
    column, a cross, a disc, a frame), each drawn in two random colours,
    jittered in place and size, under fine stripes and noise common to
    every class, saved as baseline JPEGs under ``flower_photos/<class>/``.
    Only the coarse layout tells the classes apart, and it survives 8x8
    block averaging: a small CNN learns them within a few epochs, at scan
    1 nearly as well as at full quality, from a fraction of the bytes. The
    bytes depend only on the arguments, so the archive's SHA-256 is stable.
    For tests and runs without a network: the download, checksum, split and
    encode code run on it exactly as on the real archive.

    Parameters
    ----------
    path : path
        Archive file to write (gzip-compressed tar).
    per_class : int
        Images per class.
    side : int
        Image side in pixels.
    seed : int
        Seed of the patterns.

    Returns
    -------
    pathlib.Path
        *path*.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> archive = write_stand_in_archive(tmp / "flower_photos.tgz", per_class=2, side=16)
    >>> archive.stat().st_size > 0
    True
    """
    import gzip

    rng = np.random.default_rng(seed)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))

        add("flower_photos/LICENSE.txt", b"Generated patterns, no licence needed.\n")
        for kind in STAND_IN_CLASSES:
            for k in range(per_class):
                jpg = io.BytesIO()
                Image.fromarray(_pattern(kind, side, rng)).save(jpg, "JPEG", quality=90)
                add(f"flower_photos/{kind}/{kind}_{k:04d}.jpg", jpg.getvalue())
    with out.open("wb") as f, gzip.GzipFile(filename="", fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(buf.getvalue())
    return out
