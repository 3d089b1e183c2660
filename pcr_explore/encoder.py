"""Encode a folder of images into a dataset of Progressive Compressed Records.

A dataset is a directory of record files plus ``manifest.json``. The encoder:

* finds the images (labels from class sub-folders, a ``file,label`` CSV, or
  none) and shuffles them with a seed before sharding, as the paper does, so
  every record holds a mix of classes;
* transcodes them in parallel worker processes, keeping only a bounded
  window of results in memory;
* cuts a record when its payload reaches ``record_size`` bytes (the last,
  partial record is kept) and writes it atomically;
* journals each finished record, so an interrupted run resumes where it
  stopped; the manifest is written last;
* never writes to the source folder, and skips unreadable files with a
  report in the manifest (``skipped``) unless ``strict``.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

from ._journal import Journal, plan_digest
from ._lock import FolderLock
from ._pool import main_is_importable, ordered_map, worker_pool
from .discover import display_name, find_sources
from .errors import DatasetError, PCRError
from .format import RecordImage, write_record
from .jpeg import GRAY_LEVELS_IN_COLOR
from .manifest import FORMAT_NAME, FORMAT_VERSION, MANIFEST, NUM_LEVELS, write_json_atomic
from .transcode import Backend, check_backend_and_quality, find_jpegtran, transcode

__all__ = [
    "DEFAULT_RECORD_SIZE",
    "EncodeSummary",
    "encode_dataset",
]

# 64 MiB: a level-1 prefix of such a record (~6% of it) is still a ~4 MiB
# sequential read, enough to amortise one request to a remote store; the
# reader holds one record at a time, so memory stays small; and a record holds
# several hundred ImageNet-sized images to shuffle among.
DEFAULT_RECORD_SIZE = 64 * 1024 * 1024


@dataclass(frozen=True)
class EncodeSummary:
    """What an encode run produced."""

    out: str
    images: int
    records: int
    skipped: int
    source_bytes: int
    total_bytes: int
    resumed_records: int

    def __str__(self) -> str:
        ratio = self.total_bytes / self.source_bytes if self.source_bytes else float("nan")
        return (
            f"{self.images} images in {self.records} records ({self.total_bytes} bytes, "
            f"{ratio:.3f} x source), {self.skipped} skipped"
            + (
                f", {self.resumed_records} records kept from an earlier run"
                if self.resumed_records
                else ""
            )
        )


@dataclass(frozen=True)
class _Done:
    """A worker's answer for one source: the image, or why it was skipped."""

    index: int
    image: RecordImage | None
    source_bytes: int
    backend: str = ""
    note: str = ""
    error: str = ""


def _transcode_task(
    index: int, path: str, name: str, label: int, backend: Backend, quality: int
) -> _Done:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return _Done(
            index,
            None,
            0,
            error=f"{display_name(name)}: file name is not valid UTF-8 (records store names "
            "as UTF-8); rename the file",
        )
    try:
        size = os.path.getsize(path)
        r = transcode(path, backend=backend, quality=quality, name=name)
    except (PCRError, OSError) as exc:
        return _Done(index, None, 0, error=str(exc))
    pj = r.jpeg
    pieces = pj.pieces()
    if pj.num_components == 1:
        slots = [b""] * NUM_LEVELS
        for level, piece in zip(GRAY_LEVELS_IN_COLOR, pieces):
            slots[level - 1] = piece
        pieces = slots
    crcs = [zlib.crc32(p) for p in pieces]  # here, in parallel, not in the writing process
    image = RecordImage(name, label, pj.width, pj.height, pj.num_components, pieces, crcs)
    return _Done(index, image, size, r.backend, r.note)


# What the encoder writes into an output folder, and nothing else: a user's
# own files there (``old-model.pcr``, notes) are never touched.
_OWN_FILE = re.compile(r"record-\d{5}\.pcr|manifest\.json|\.pcr-journal\.jsonl|\.pcr-plan\.json")
# atomic_write's temporary names: ".<final name>.<random>.tmp"
_OWN_TEMP = re.compile(
    r"\.(record-\d{5}\.pcr|manifest\.json|\.pcr-journal\.jsonl|\.pcr-plan\.json)\..+\.tmp"
)


def _tidy(out: Path, overwrite: bool) -> None:
    """Remove temporary files a killed run left; with *overwrite*, the encoder's files too."""
    for p in out.iterdir():
        if not p.is_file():
            continue
        if _OWN_TEMP.fullmatch(p.name) or (overwrite and _OWN_FILE.fullmatch(p.name)):
            p.unlink()


def encode_dataset(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    backend: Backend = "auto",
    quality: int = 90,
    record_size: int = DEFAULT_RECORD_SIZE,
    workers: int | None = None,
    labels: str | os.PathLike[str] | None = None,
    shuffle: bool = True,
    seed: int = 0,
    strict: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    on_record: Callable[[int], None] | None = None,
    parallel: Literal["threads", "processes"] = "threads",
) -> EncodeSummary:
    """Encode the images under *src* into a PCR dataset in *out*.

    Parameters
    ----------
    src : path
        Folder of source images (see :func:`find_sources`).
    out : path
        Output folder; created if missing. Must not be inside *src*.
    backend : {"auto", "jpegtran", "pillow"}
        Transcoder (see :mod:`pcr_explore.transcode`).
    quality : int
        JPEG quality for sources that are not JPEG.
    record_size : int
        Target payload bytes per record; a record is closed once it reaches
        this size, and the last one may be smaller.
    workers : int, optional
        Parallel transcodes (default: all cores). 1 runs in this thread.
    parallel : {"threads", "processes"}
        How the workers run. Threads (default) need no start-up and no
        ``if __name__ == "__main__":`` guard in a script; processes suit a
        Pillow-heavy encode (non-JPEG sources) where Python-level work
        dominates.
    labels : path, optional
        ``file,label`` CSV.
    shuffle : bool
        Shuffle the images with *seed* before sharding.
    seed : int
        Shuffle seed.
    strict : bool
        Stop at the first unreadable source instead of skipping it.
    overwrite : bool
        Replace a dataset or an unrelated interrupted encode already in *out*.
    progress : bool
        Show a progress bar.
    on_record : callable, optional
        Called with the record index once each record is written and journaled.

    Returns
    -------
    EncodeSummary

    Raises
    ------
    DatasetError
        Bad folders, an existing dataset in *out*, or (strict) a bad source.

    Examples
    --------
    >>> encode_dataset("photos/", "photos.pcr", workers=2)  # doctest: +SKIP
    """
    _check_options(backend, quality, record_size, workers, parallel)
    src_p, out_p = Path(src).resolve(), Path(out).resolve()
    if out_p == src_p or src_p in out_p.parents:
        raise DatasetError(f"{out_p}: output folder must not be inside the source folder {src_p}")
    if out_p.exists() and not out_p.is_dir():
        raise DatasetError(f"{out_p}: exists and is not a folder; choose another output folder")
    items, classes = find_sources(src_p, labels)
    order = np.arange(len(items))
    if shuffle:
        order = np.random.default_rng(seed).permutation(len(items))
    options = {
        "backend": backend,
        "quality": quality,
        "record_size": record_size,
        "shuffle": shuffle,
        "seed": seed,
        "labels": str(labels) if labels else None,
    }
    out_p.mkdir(parents=True, exist_ok=True)
    with FolderLock(out_p):
        _tidy(out_p, overwrite)
        if (out_p / MANIFEST).exists():
            raise DatasetError(f"{out_p}: already holds a dataset (manifest.json); use overwrite")
        journal = Journal(out_p, plan_digest(items, src_p, options), options)
        done = journal.load()
        journal.start(done)
        start = done[-1]["end"] if done else 0
        class_index = {c: i for i, c in enumerate(classes)}
        tasks = [
            (
                int(pos),
                str(src_p / items[j].name),
                items[j].name,
                class_index.get(items[j].label or "", -1),
                backend,
                quality,
            )
            for pos, j in enumerate(order)
        ][start:]
        writer = _RecordWriter(out_p, journal, done, start, on_record)
        bar = tqdm(total=len(items), initial=start, unit="img", desc="encode", disable=not progress)
        try:
            for res in _run_tasks(tasks, workers, parallel):
                bar.update(1)
                if res.image is None and strict:
                    raise DatasetError(res.error)
                writer.add(res, items[order[res.index]].name)
                if writer.pending_bytes >= record_size:
                    writer.flush(res.index + 1)
            writer.finish(len(items))
        finally:
            bar.close()
            journal.close()
        manifest = _manifest(writer.entries, classes, src_p, options)
        write_json_atomic(out_p / MANIFEST, manifest)
        journal.remove()
    kept = [r for r in writer.entries if r["images"]]
    return EncodeSummary(
        out=str(out_p),
        images=manifest["images"],
        records=len(kept),
        skipped=len(manifest["skipped"]),
        source_bytes=manifest["source_bytes"],
        total_bytes=sum(r["bytes_per_scan"][-1] for r in kept),
        resumed_records=len([r for r in done if r["images"]]),
    )


def _check_options(
    backend: str, quality: int, record_size: int, workers: int | None, parallel: str
) -> None:
    """Reject bad options before anything is created on disk."""
    check_backend_and_quality(backend, quality)
    if parallel not in ("threads", "processes"):
        raise ValueError(f"parallel must be 'threads' or 'processes', got {parallel!r}")
    if isinstance(record_size, bool) or not isinstance(record_size, int) or record_size < 1:
        raise ValueError(f"record_size must be a positive number of bytes, got {record_size!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be at least 1, got {workers!r}")
    if backend == "jpegtran" and find_jpegtran() is None:
        raise FileNotFoundError(
            "jpegtran not found: install libjpeg-turbo (Debian: libjpeg-turbo-progs) "
            "or use backend='pillow' / 'auto'"
        )


class _RecordWriter:
    """Collects transcoded images and writes them out one record at a time.

    Each flush writes the record file atomically, then journals it; the
    journal entry (start/end positions in the shuffled source order, the
    sources skipped or converted on the way) is what the manifest is built
    from, for records of this run and of an earlier, interrupted one alike.
    """

    def __init__(
        self,
        out: Path,
        journal: Journal,
        resumed: list[dict[str, Any]],
        start: int,
        on_record: Callable[[int], None] | None,
    ) -> None:
        self.out = out
        self.journal = journal
        self.entries = list(resumed)
        self.on_record = on_record
        self._records = sum(1 for r in resumed if r["images"])
        self._start = start
        self._reset()

    def _reset(self) -> None:
        self.images: list[RecordImage] = []
        self.skipped: list[dict[str, str]] = []
        self.notes: list[dict[str, str]] = []
        self.pending_bytes = 0
        self.source_bytes = 0

    def add(self, res: _Done, name: str) -> None:
        """Add one worker result: an image to store, or a source skipped."""
        if res.image is None:
            self.skipped.append({"file": display_name(name), "issue": res.error})
            return
        self.images.append(res.image)
        self.pending_bytes += sum(len(p) for p in res.image.pieces)
        self.source_bytes += res.source_bytes
        if res.note:
            self.notes.append({"file": res.image.name, "note": res.note})

    def flush(self, end: int) -> None:
        """Write what was added as one record covering sources up to *end*."""
        entry: dict[str, Any] = {
            "start": self._start,
            "end": end,
            "skipped": self.skipped,
            "notes": self.notes,
            "source_bytes": self.source_bytes,
            "images": len(self.images),
            "file": None,
            "header_bytes": 0,
            "bytes_per_scan": [0] * NUM_LEVELS,
            "checksum": None,
        }
        idx: int | None = None
        if self.images:
            idx = self._records
            fname = f"record-{idx:05d}.pcr"
            header = write_record(self.out / fname, self.images, NUM_LEVELS)
            entry.update(
                file=fname,
                header_bytes=header.header_len,
                bytes_per_scan=header.cumulative_bytes(),
                checksum=f"{header.header_crc:08x}",
            )
            self._records += 1
        self.journal.append(entry)
        if self.on_record is not None and idx is not None:
            self.on_record(idx)
        self.entries.append(entry)
        self._start = end
        self._reset()

    def finish(self, total: int) -> None:
        """Flush the last, partial record (kept, never dropped)."""
        if self.images or self.skipped or self._start < total:
            self.flush(total)


def _manifest(
    entries: list[dict[str, Any]], classes: list[str], src: Path, options: dict[str, Any]
) -> dict[str, Any]:
    kept = [r for r in entries if r["images"]]
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "num_scans": NUM_LEVELS,
        "images": sum(r["images"] for r in kept),
        "classes": classes,
        "source": str(src),
        "source_bytes": sum(r["source_bytes"] for r in entries),
        "options": options,
        "records": [
            {k: r[k] for k in ("file", "images", "header_bytes", "bytes_per_scan", "checksum")}
            for r in kept
        ],
        "skipped": [s for r in entries for s in r["skipped"]],
        "conversions": [n for r in entries for n in r["notes"]],
    }


def _transcode_batch(batch: list[tuple[Any, ...]]) -> list[_Done]:
    return [_transcode_task(*t) for t in batch]


# Tasks go to workers a few at a time: one round trip through the pool per
# image cost the writing process more CPU than the record writing itself.
_BATCH = 4


def _run_tasks(tasks: list[tuple[Any, ...]], workers: int | None, parallel: str) -> Iterator[_Done]:
    """Run transcode tasks in order, with a bounded number in flight."""
    workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if workers == 1 or len(tasks) <= 1 or (parallel == "processes" and not main_is_importable()):
        for t in tasks:
            yield _transcode_task(*t)
        return
    window = 4 * workers  # batches in flight: a few MB, lets workers run on during writes
    batches = (tasks[i : i + _BATCH] for i in range(0, len(tasks), _BATCH))
    pool: Any
    if parallel == "threads":
        # jpegtran runs as a child process and Pillow's codecs release the
        # GIL, so threads keep the cores busy without worker start-up, and a
        # script needs no `if __name__ == "__main__":` guard.
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pcr-encode")
    else:
        pool = worker_pool(workers, preload=["pcr_explore.encoder"])
    with pool as ex:
        for done in ordered_map(_transcode_batch, batches, ex, window):
            yield from done
