"""Fetch and unpack a dataset archive safely; write a small stand-in archive for tests.

:func:`download` fetches once, with a progress bar, into a ``.part`` file that
is renamed only when complete and its SHA-256 checked. :func:`extract`
unpacks only regular files and folders. :func:`write_stand_in_archive`
writes an archive laid out like TensorFlow's ``flower_photos.tgz`` from
generated patterns, so tests and quick runs exercise the same code offline.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

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
    """Download *url* to *dest* (once), checking its SHA-256.

    The file is written as ``dest.part`` and renamed only once complete and
    checked, so an interrupted or corrupt download never looks cached.

    Parameters
    ----------
    url : str
        An ``http(s)://`` or ``file://`` address.
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
    from .._pool import progress_bar as tqdm

    out = Path(dest)
    if out.exists() and (sha256 is None or sha256_of(out) == sha256.lower()):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, part.open("wb") as f:
            total = resp.headers.get("Content-Length")
            with tqdm(
                total=int(total) if total else None,
                unit="B",
                unit_scale=True,
                desc=out.name,
                disable=not progress,
            ) as bar:
                for block in iter(lambda: resp.read(1 << 20), b""):
                    f.write(block)
                    h.update(block)
                    bar.update(len(block))
    except OSError as exc:  # URLError and HTTPError are OSErrors
        part.unlink(missing_ok=True)
        raise DatasetError(f"{url}: download failed: {exc}") from exc
    got = h.hexdigest()
    if sha256 is not None and got != sha256.lower():
        part.unlink(missing_ok=True)
        raise DatasetError(
            f"{url}: SHA-256 {got} does not match the expected {sha256.lower()}; "
            "the download is damaged or the file has changed"
        )
    os.replace(part, out)
    return out


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


_PATTERNS = ("stripes", "checks", "rings", "dots", "waves")


def _pattern(kind: str, side: int, rng: np.random.Generator) -> np.ndarray:
    y, x = np.mgrid[0:side, 0:side].astype(np.float64) / side
    freq = rng.uniform(4, 9)
    phase = rng.uniform(0, 2 * np.pi)
    angle = rng.uniform(0, np.pi)
    u = x * np.cos(angle) + y * np.sin(angle)
    v = -x * np.sin(angle) + y * np.cos(angle)
    if kind == "stripes":
        t = np.sin(2 * np.pi * freq * u + phase)
    elif kind == "checks":
        t = np.sign(np.sin(2 * np.pi * freq * u / 2)) * np.sign(np.sin(2 * np.pi * freq * v / 2))
    elif kind == "rings":
        cx, cy = rng.uniform(0.3, 0.7, 2)
        t = np.sin(2 * np.pi * freq * np.hypot(x - cx, y - cy) + phase)
    elif kind == "dots":
        t = np.sin(2 * np.pi * freq * u) * np.sin(2 * np.pi * freq * v)
        t = np.where(t > 0.5, 1.0, -1.0)
    else:  # waves
        t = np.sin(2 * np.pi * freq * u + 2.0 * np.sin(2 * np.pi * 1.5 * v + phase))
    a, b = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    img = a + (b - a) * ((t[..., None] + 1) / 2) + rng.normal(0, 8, (side, side, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


@public("pcr_explore.train")
def write_stand_in_archive(
    path: str | os.PathLike[str],
    *,
    per_class: int = 12,
    side: int = 64,
    seed: int = 0,
) -> Path:
    """Write a small archive laid out like ``flower_photos.tgz``, of generated patterns.

    Five classes of textures (stripes, checks, rings, dots, waves) with random
    colours, orientation and frequency, saved as baseline JPEGs under
    ``flower_photos/<class>/``. The bytes depend only on the arguments, so
    the archive's SHA-256 is stable. For tests and quick runs: the download,
    checksum, split and encode code run on it exactly as on the real archive.

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
        for kind in _PATTERNS:
            for k in range(per_class):
                jpg = io.BytesIO()
                Image.fromarray(_pattern(kind, side, rng)).save(jpg, "JPEG", quality=90)
                add(f"flower_photos/{kind}/{kind}_{k:04d}.jpg", jpg.getvalue())
    with out.open("wb") as f, gzip.GzipFile(filename="", fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(buf.getvalue())
    return out
