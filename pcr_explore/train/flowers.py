"""A small labelled photo set to train on: TensorFlow's flower photos, as PCR datasets.

:func:`load_flowers` downloads ``flower_photos.tgz`` (3,670 CC-BY photos in
five classes, 229 MB) on first use with a progress bar, checks its SHA-256,
caches it under ``data/``, splits it into training and validation images by
a hash of each file name (the same split on every machine, and a file's side
never changes when others are added), and encodes both halves to PCR
datasets. ``PCR_FLOWERS_DIR`` (or the *path* argument) points it at a local
copy instead: an extracted folder of class sub-folders, a folder already
split into ``train/`` and ``val/``, or the archive itself.

:func:`prepare_split` does the split and encode for any labelled folder;
:func:`~pcr_explore.train.write_stand_in_archive` writes a small archive with
the same layout (generated patterns, not photographs) for tests and quick
runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .._public import public
from ..encode.discover import find_sources
from ..encode.encoder import encode_dataset
from ..errors import DatasetError
from ..read.reader import open_dataset
from ..records.manifest import MANIFEST
from ..storage._atomic import atomic_write
from .archive import download, extract, failure_reason, sha256_of, write_stand_in_archive

__all__ = [
    "FLOWERS_URL",
    "FLOWERS_SHA256",
    "FLOWERS_ENV",
    "SplitDatasets",
    "split_folder",
    "prepare_split",
    "load_flowers",
]

#: Where TensorFlow's image-classification tutorial downloads the photos from.
FLOWERS_URL = (
    "https://storage.googleapis.com/download.tensorflow.org/example_images/flower_photos.tgz"
)
#: SHA-256 of that archive (228,813,984 bytes), as TensorFlow Datasets records it.
FLOWERS_SHA256 = "4c54ace7911aaffe13a365c34f650e71dd5bf1be0a58b464e5a7183e3e595d9c"
#: Environment variable naming a local copy (folder or archive).
FLOWERS_ENV = "PCR_FLOWERS_DIR"

_SPLIT_VERSION = 1


@public("pcr_explore.train")
@dataclass(frozen=True)
class SplitDatasets:
    """A labelled image folder split in two and encoded.

    Attributes
    ----------
    train, val : pathlib.Path
        The PCR datasets.
    classes : tuple of str
    train_images, val_images : int
    images : pathlib.Path
        The folder holding ``train/<class>/`` and ``val/<class>/``.
    note : str
        What to know about the data (a stand-in for the photos, and why);
        empty for the photos themselves.
    """

    train: Path
    val: Path
    classes: tuple[str, ...]
    train_images: int
    val_images: int
    images: Path
    note: str = ""

    def _counts(self) -> str:
        return (
            f"{self.train_images} training and {self.val_images} validation images in "
            f"{len(self.classes)} classes ({', '.join(self.classes)})"
        )

    def __str__(self) -> str:
        text = f"{self._counts()}: {self.train}, {self.val}"
        return f"{text}\nnote: {self.note}" if self.note else text

    def _repr_html_(self) -> str:
        # paragraphs wrap between words, where a long plain-text line may break inside one
        out = f"<p>{html.escape(self._counts())}: <code>{html.escape(str(self.train))}</code>, "
        out += f"<code>{html.escape(str(self.val))}</code></p>"
        return out + (f"<p><b>Note:</b> {html.escape(self.note)}</p>" if self.note else "")


def _is_split(folder: Path) -> bool:
    return (folder / "train").is_dir() and (folder / "val").is_dir()


def _by_class(root: Path, per_class: int | None, seed: int) -> dict[str | None, list[str]]:
    """The images of each class of *root* (None: at the top), at most *per_class*, in hash order.

    The order is a hash of each name and *seed*: the same on every machine.
    """
    items, _ = find_sources(root)
    by_class: dict[str | None, list[str]] = {}
    for item in items:
        by_class.setdefault(item.label, []).append(item.name)

    def key(name: str) -> str:
        return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()

    return {c: sorted(names, key=key)[:per_class] for c, names in by_class.items()}


@public("pcr_explore.train")
def split_folder(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    val_fraction: float = 0.2,
    per_class: int | None = None,
    seed: int = 0,
) -> tuple[Path, Path]:
    """Split a folder of class sub-folders into ``out/train`` and ``out/val``.

    Within each class, images are ordered by a hash of their name and *seed*;
    the first ``round(n * val_fraction)`` go to validation. The split depends
    only on the names, so it is the same on every machine. Files are hard
    links where the file system allows (copies otherwise); the sources are
    never modified.

    Parameters
    ----------
    src : path
        Folder with one sub-folder per class.
    out : path
        Where ``train/`` and ``val/`` are made (replaced if present).
    val_fraction : float
        Share of each class kept for validation, in (0, 1).
    per_class : int, optional
        Use at most this many images per class (the first in hash order).
    seed : int
        Changes the split.

    Returns
    -------
    train, val : pathlib.Path

    Raises
    ------
    DatasetError
        If *src* has no class sub-folders, or a class would get no image on
        one side.
    ValueError
        If *val_fraction* or *per_class* is out of range.

    Examples
    --------
    >>> split_folder("photos/", "photos-split", val_fraction=0.2)
    (PosixPath('photos-split/train'), PosixPath('photos-split/val'))
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    if per_class is not None and per_class < 2:
        raise ValueError(f"per_class must be at least 2, got {per_class}")
    root, dst = Path(src), Path(out)
    by_class = _by_class(root, per_class, seed)
    if not by_class or None in by_class:
        raise DatasetError(f"{root}: every image must sit in a class sub-folder")
    for side in ("train", "val"):
        shutil.rmtree(dst / side, ignore_errors=True)
    for cls, names in by_class.items():
        n_val = int(round(len(names) * val_fraction))
        if n_val < 1 or n_val >= len(names):
            raise DatasetError(
                f"{root / str(cls)}: {len(names)} images cannot give both sides of a "
                f"{val_fraction:.0%} validation split"
            )
        for k, name in enumerate(names):
            _link(root / name, dst / ("val" if k < n_val else "train") / name)
    return dst / "train", dst / "val"


def _link(src: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, target)
    except OSError:  # another file system, or no hard links: copy
        shutil.copyfile(src, target)


def _link_subset(src: Path, dst: Path, per_class: int | None, seed: int) -> Path:
    """At most *per_class* images of each class of *src* (hash order), linked into *dst*."""
    shutil.rmtree(dst, ignore_errors=True)
    for names in _by_class(src, per_class, seed).values():
        for name in names:
            _link(src / name, dst / name)
    return dst


@public("pcr_explore.train")
def prepare_split(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    val_fraction: float = 0.2,
    per_class: int | None = None,
    seed: int = 0,
    record_size: int = 8 * 2**20,
    workers: int | None = None,
    progress: bool = True,
) -> SplitDatasets:
    """Split a labelled folder (unless already split) and encode both halves.

    A folder that already has ``train/`` and ``val/`` (like ``flowers5``) keeps
    its split (with *per_class*, each side keeps that many images per class).
    The result is cached in *out*: a second call with the same source and
    parameters only opens it.

    Parameters
    ----------
    src : path
        Folder of class sub-folders, or one with ``train/`` and ``val/``.
    out : path
        Folder for ``images/`` (the split) and ``train.pcr``, ``val.pcr``.
    val_fraction, per_class, seed
        As for :func:`split_folder`.
    record_size : int
        Bytes per record (several records per dataset keep the shuffle honest).
    workers : int, optional
        Encoder processes (1: in this process).
    progress : bool
        Show progress bars.

    Returns
    -------
    SplitDatasets

    Raises
    ------
    DatasetError
        As for :func:`split_folder` and :func:`~pcr_explore.encode_dataset`.

    Examples
    --------
    >>> data = prepare_split("photos/", "photos-split")
    >>> print(data)
    11 training and 3 validation images in 3 classes (scenes, science, textures):
    photos-split/train.pcr, photos-split/val.pcr
    >>> data.train, data.val
    (PosixPath('photos-split/train.pcr'), PosixPath('photos-split/val.pcr'))
    """
    root, dst = Path(src), Path(out)
    stamp = {
        "version": _SPLIT_VERSION,
        "source": str(root.resolve()),
        "val_fraction": val_fraction,
        "per_class": per_class,
        "seed": seed,
    }
    stamp_file = dst / "split.json"
    train_pcr, val_pcr = dst / "train.pcr", dst / "val.pcr"
    done = (
        _read_stamp(stamp_file) == stamp
        and (train_pcr / MANIFEST).exists()
        and (val_pcr / MANIFEST).exists()
    )
    # a folder already split is used as it is, unless a subset of it is wanted
    images = root if _is_split(root) and per_class is None else dst / "images"
    if not done:
        dst.mkdir(parents=True, exist_ok=True)
        stamp_file.unlink(missing_ok=True)
        if _is_split(root) and per_class is None:
            train_dir, val_dir = root / "train", root / "val"
        elif _is_split(root):
            train_dir, val_dir = (
                _link_subset(root / side, images / side, per_class, seed)
                for side in ("train", "val")
            )
        else:
            train_dir, val_dir = split_folder(
                root, images, val_fraction=val_fraction, per_class=per_class, seed=seed
            )
        for d, pcr in ((train_dir, train_pcr), (val_dir, val_pcr)):
            encode_dataset(
                d,
                pcr,
                record_size=record_size,
                workers=workers,
                progress=progress,
                seed=seed,
                overwrite=True,
            )
        atomic_write(stamp_file, json.dumps(stamp, indent=1))
    tr, va = open_dataset(str(train_pcr)), open_dataset(str(val_pcr))
    if tr.classes != va.classes:
        raise DatasetError(
            f"{root}: training and validation classes differ: {tr.classes} vs {va.classes}"
        )
    return SplitDatasets(train_pcr, val_pcr, tuple(tr.classes), len(tr), len(va), images)


def _read_stamp(path: Path) -> object:
    """What a split's ``split.json`` says; None when missing or unreadable (then it is redone).

    An earlier version wrote it in place, so a run stopped then may have left it torn.
    """
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


@public("pcr_explore.train")
def load_flowers(
    path: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] = "data",
    url: str = FLOWERS_URL,
    sha256: str | None = FLOWERS_SHA256,
    val_fraction: float = 0.2,
    per_class: int | None = None,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    offline: Literal["raise", "stand-in"] = "raise",
) -> SplitDatasets:
    """TensorFlow's flower photos as training and validation PCR datasets.

    Parameters
    ----------
    path : path, optional
        A local copy: the archive, its extracted folder, or a folder already
        split into ``train/`` and ``val/``. Default: ``$PCR_FLOWERS_DIR``, and
        without it the archive is downloaded from *url*.
    cache_dir : path
        Where the archive, the unpacked photos and the datasets are kept.
    url : str
        Address of the archive.
    sha256 : str or None
        Expected SHA-256 of a downloaded archive (None: not checked; a local
        archive given as *path* is not checked either).
    val_fraction, per_class, seed
        The split (see :func:`split_folder`); *per_class* makes a quick subset.
    workers : int, optional
        Encoder processes.
    progress : bool
        Show progress bars (download and encode).

    offline : {"raise", "stand-in"}
        When the download fails (no network in the room): raise, or build a
        generated stand-in of five shape classes instead (no download),
        whose ``note`` says in plain words what it is, why, and how to get
        the photos.

    Returns
    -------
    SplitDatasets

    Raises
    ------
    DatasetError
        If the download fails or does not match *sha256*, the archive is
        unsafe or unreadable, or the folder has no class sub-folders.

    Examples
    --------
    The first call downloads 229 MB (not run here):

    >>> from pcr_explore.train import load_flowers
    >>> flowers = load_flowers(cache_dir="data")  # doctest: +SKIP
    >>> print(flowers)  # doctest: +SKIP
    2936 training and 734 validation images in 5 classes (daisy, dandelion, ...)
    """
    cache = Path(cache_dir)
    local = path if path is not None else os.environ.get(FLOWERS_ENV) or None
    p = Path(local) if local is not None else None
    note = ""
    if p is not None and p.is_dir():
        images = p
        tag = f"local-{hashlib.sha256(str(p.resolve()).encode()).hexdigest()[:10]}"
    elif p is not None and not p.is_file():
        raise DatasetError(f"{p}: no such folder or archive (from {FLOWERS_ENV} or path)")
    else:
        if p is not None:  # a local archive
            archive, digest = p, sha256_of(p)
        else:
            try:
                archive = download(url, cache / Path(url).name, sha256=sha256, progress=progress)
                digest = sha256.lower() if sha256 else sha256_of(archive)
            except DatasetError as exc:
                if offline != "stand-in":
                    raise
                note = STAND_IN_NOTE.format(why=_why(exc))
                archive = write_stand_in_archive(
                    cache / "stand_in_flowers.tgz",
                    per_class=_STAND_IN_PER_CLASS,
                    side=_STAND_IN_SIDE,
                )
                # named by its bytes, so a changed generator never reuses an older split
                digest, per_class = sha256_of(archive), None
        tag = f"{'stand-in' if note else 'archive'}-{digest[:10]}"
        images = extract(archive, cache / f"unpacked-{tag.removeprefix('archive-')}")
    name = f"{tag}-v{val_fraction:g}-n{per_class or 'all'}-s{seed}"
    data = prepare_split(
        images,
        cache / "flowers" / name,
        val_fraction=val_fraction,
        per_class=per_class,
        seed=seed,
        workers=workers,
        progress=progress,
    )
    return dataclasses.replace(data, note=note)


STAND_IN_NOTE = (
    "The flower photos could not be downloaded ({why}), so this is a generated stand-in: "
    "five classes of shapes (band, column, cross, disc, frame) in random colours under fine "
    "texture, not photographs. For the real photos, run `make flowers` before class (it "
    "downloads 229 MB into data/), or set FLOWERS_DIR in the notebook (or PCR_FLOWERS_DIR "
    "before starting JupyterLab) to a copy."
)
_STAND_IN_PER_CLASS = 100
_STAND_IN_SIDE = 96


def _why(exc: Exception) -> str:
    """Why a download failed, in words: the reason, not the exception's own text.

    requests' message for a refused connection runs to several lines of
    wrapped errors; a reader needs only the last part.
    """
    cause = exc.__cause__
    if isinstance(cause, ValueError):  # pooch's hash check
        return "the download did not match its checksum"
    if isinstance(cause, OSError):
        reason = failure_reason(cause)
        return reason if getattr(cause, "response", None) is not None else f"no network: {reason}"
    return str(cause or exc)
