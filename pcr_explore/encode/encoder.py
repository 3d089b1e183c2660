"""Encode a folder of images into a dataset of Progressive Compressed Records.

A dataset is a directory of record files plus ``manifest.json``. The encoder:

* finds the images (labels from class sub-folders, a ``file,label`` CSV, or
  none) and shuffles them with a seed before sharding, as the paper does, so
  every record holds a mix of classes;
* plans the records before transcoding anything: a record closes once its
  sources' bytes reach ``record_size`` (the last, partial record is kept), so
  each record is an independent task (see :mod:`pcr_explore.encode._plan`);
* transcodes in parallel threads or processes, keeping only a bounded window
  of results in memory, or on a Dask cluster (``client=``), one task per
  record; the output is byte-identical either way;
* writes each record whole and atomically, to a folder or to object storage
  (``s3://...``), journals it (in a folder), so an interrupted run resumes,
  and writes the manifest last;
* never writes to the source folder, and skips unreadable files with a
  report in the manifest (``skipped``) unless ``strict``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._checks import check_count
from .._pool import main_is_importable, ordered_map, progress_bar, worker_pool
from .._public import public
from ..errors import DatasetError
from ..jpeg.scan_script import ScanScript, resolve_scan_script, script_from_option, script_option
from ..jpeg.transcode import Backend, check_backend_and_quality, jpegtran_for
from ..records.manifest import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST,
    Manifest,
)
from ..records.summary import count
from ..storage._lock import FolderLock
from ..storage._output import FolderOutput, ObjectOutput, open_output
from ._journal import PLAN, Journal, read_json_object
from ._plan import EncodePlan, make_plan
from ._shard import Transcoded, transcode_batch, transcode_source, write_shard
from ._spool import Spool, spool_file
from ._staging import remove_staging, staging_path
from .inputs import describe, identity, is_staged_input, stage

__all__ = [
    "DEFAULT_RECORD_SIZE",
    "EncodeOptions",
    "EncodeSummary",
    "encode_dataset",
]

# 64 MiB: a level-1 prefix of such a record (~6% of it) is still a ~4 MiB
# sequential read, enough to amortise one request to a remote store; the
# reader holds one record at a time, so memory stays small; and a record holds
# several hundred ImageNet-sized images to shuffle among.
DEFAULT_RECORD_SIZE = 64 * 1024 * 1024


@public("pcr_explore")
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
    lossy: int = 0

    def __str__(self) -> str:
        ratio = self.total_bytes / self.source_bytes if self.source_bytes else float("nan")
        return (
            f"{count(self.images, 'image')} in {count(self.records, 'record')} "
            f"({self.total_bytes:,} bytes, {ratio:.3f} x source), {self.skipped:,} skipped"
            + (
                f", {self.lossy:,} re-encoded with loss (not JPEG, or CMYK: the full level is "
                "that copy; see the manifest's conversions)"
                if self.lossy
                else ""
            )
            + (
                f", {count(self.resumed_records, 'record')} kept from an earlier run"
                if self.resumed_records
                else ""
            )
        )


# What the encoder writes into an output folder, and nothing else: a user's
# own files there (``old-model.pcr``, notes) are never touched.
_WRITTEN = r"record-\d{5}\.pcr|manifest\.json|\.pcr-journal\.jsonl|\.pcr-plan\.json"
_OWN_FILE = re.compile(rf"{_WRITTEN}|\.record-\d{{5}}\.spool")
# atomic_write's temporary names: ".<final name>.<random>.tmp"
_OWN_TEMP = re.compile(rf"\.({_WRITTEN})\..+\.tmp")


def _tidy(out: Path, overwrite: bool) -> None:
    """Remove temporary files a killed run left; with *overwrite*, the encoder's files too."""
    for p in out.iterdir():
        if not p.is_file():
            continue
        if _OWN_TEMP.fullmatch(p.name) or (overwrite and _OWN_FILE.fullmatch(p.name)):
            p.unlink()


@public("pcr_explore")
@dataclass(frozen=True)
class EncodeOptions:
    """The encoder's rarely changed settings (see :func:`encode_dataset`).

    Parameters
    ----------
    backend : {"auto", "jpegtran", "pillow"}
        Transcoder (see :mod:`pcr_explore.jpeg.transcode`).
    quality : int
        JPEG quality for sources that are not JPEG.
    shuffle : bool
        Shuffle the images with the encode's *seed* before sharding.
    strict : bool
        Stop at the first unreadable source instead of skipping it.
    parallel : {"threads", "processes"}
        How the workers run. Threads (default) need no start-up and no
        ``if __name__ == "__main__":`` guard in a script; processes suit a
        Pillow-heavy encode (non-JPEG sources) where Python-level work
        dominates.
    on_record : callable, optional
        Called with the record index once each record is written (and
        journaled).
    image_column, label_column : str
        For Parquet files and Hugging Face datasets: the columns holding
        each image's bytes and its label (None: no labels).
    """

    backend: Backend = "auto"
    quality: int = 90
    shuffle: bool = True
    strict: bool = False
    parallel: Literal["threads", "processes"] = "threads"
    on_record: Callable[[int], None] | None = None
    image_column: str = "image"
    label_column: str | None = "label"


@public("pcr_explore")
def encode_dataset(
    src: str | os.PathLike[str] | Sequence[str] | Any,
    out: str | os.PathLike[str],
    *,
    scan_script: str | os.PathLike[str] | ScanScript | None = None,
    record_size: int = DEFAULT_RECORD_SIZE,
    labels: str | os.PathLike[str] | None = None,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    overwrite: bool = False,
    client: Any = None,
    storage_options: dict[str, Any] | None = None,
    options: EncodeOptions | None = None,
) -> EncodeSummary:
    """Encode the images under *src* into a PCR dataset in *out*.

    Parameters
    ----------
    src : path, list of paths, pattern or datasets.Dataset
        Folder of source images (see :func:`find_sources`); or WebDataset
        tar shards (paths or URLs, a list or a brace pattern such as
        ``"shards-{000000..000009}.tar"``), Parquet files, or a Hugging Face
        ``datasets.Dataset`` (see :mod:`pcr_explore.encode.inputs`): these are
        unpacked beside *out* first, so the records are byte-identical to
        those of a folder of the same images and labels. With *client*,
        every Dask worker must be able to read the folder at the same path.
    out : path or URL
        Output folder, created if missing, not inside *src*; or an object
        storage prefix such as ``s3://bucket/ds`` (``pcr-explore[s3]``).
    scan_script : str, path or ScanScript, optional
        The scans every image is stored in, one scan level each: ``"standard"``
        (the default, libjpeg's 10-scan progression), another name from
        :data:`pcr_explore.jpeg.scan_script.SCRIPTS`, or a file in jpegtran
        ``-scans`` syntax. Recorded in the manifest and every record header.
    record_size : int
        A record is closed once its sources' bytes reach this size (the
        last one may be smaller). Planned from source file sizes before any
        transcoding, so that every record is an independent task.
    labels : path, optional
        ``file,label`` CSV.
    seed : int
        Shuffle seed.
    workers : int, optional
        Parallel transcodes (default: all cores). 1 runs in this thread.
        Ignored with *client*.
    progress : bool
        Show a progress bar (images done).
    overwrite : bool
        Replace a dataset or an unrelated interrupted encode already in *out*.
    client : dask.distributed.Client, optional
        Run one task per record on this Dask cluster (``pcr-explore[dask]``);
        workers write records straight to *out*. The output is
        byte-identical to a local encode with the same options.
    storage_options : dict, optional
        fsspec options for an *out* URL (credentials, ``client_kwargs``).
    options : EncodeOptions, optional
        The rarely changed settings: transcoder, quality of non-JPEG
        sources, shuffling, strictness, thread or process workers, a
        callback per record.

    Returns
    -------
    EncodeSummary

    Raises
    ------
    DatasetError
        Bad folders, an existing dataset in *out*, or (strict) a bad source.

    Notes
    -----
    A folder output is locked, journaled and resumable. On object storage
    each record and then the manifest is one whole-object PUT, so readers
    never see part of a file and a dataset is there once its manifest is;
    there is no lock or journal, and an interrupted encode starts again.

    Examples
    --------
    >>> print(encode_dataset("photos/", "encoded.pcr", workers=2))
    14 images in 1 record (... bytes, ... x source), 0 skipped

    On a Dask cluster, into object storage (both needed: not run here):

    >>> from dask.distributed import Client
    >>> encode_dataset("/shared/photos", "s3://bucket/ds", client=Client())  # doctest: +SKIP
    """
    o = options or EncodeOptions()
    _check_options(o.backend, o.quality, record_size, workers, o.parallel)
    job = _Job(
        out,
        o,
        resolve_scan_script(scan_script),
        record_size,
        labels,
        seed,
        workers,
        progress,
        overwrite,
        client,
        storage_options,
    )
    if is_staged_input(src):
        return _encode_staged(src, job)
    return _encode(Path(os.fspath(src)).resolve(), job, None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Job:
    """What :func:`encode_dataset` was asked, its options checked."""

    out: str | os.PathLike[str]
    options: EncodeOptions
    script: ScanScript
    record_size: int
    labels: str | os.PathLike[str] | None
    seed: int
    workers: int | None
    progress: bool
    overwrite: bool
    client: Any
    storage_options: dict[str, Any] | None


def _encode_staged(src: Any, job: _Job) -> EncodeSummary:
    """Unpack tar shards, Parquet or a datasets.Dataset into a staging folder, then encode it.

    For an output folder the staging folder lies beside it, found again by a
    re-run (:mod:`pcr_explore.encode._staging`), and the output's lock is
    held throughout; for object storage it is a private temporary folder.
    """
    o, described = job.options, describe(src)
    output = open_output(job.out, job.storage_options)
    if isinstance(output, ObjectOutput):  # no journal to resume from: nothing to keep
        with tempfile.TemporaryDirectory(prefix="pcr-staging-") as tmp:
            folder = stage(src, Path(tmp).resolve(), image=o.image_column, label=o.label_column)
            return _encode(folder, job, described)
    out = output.folder
    _check_folder(out)
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with FolderLock(out):  # before anything is unpacked: another encode may hold it
            if job.overwrite:
                remove_staging(out)
            folder = staging_path(out, identity(src, o.image_column, o.label_column))
            try:
                stage(src, folder, out=out, image=o.image_column, label=o.label_column)
                return _encode(folder, job, described, locked=True)
            except BaseException:
                if not (out / PLAN).exists():  # no journal to resume: the copy is of no use
                    shutil.rmtree(folder, ignore_errors=True)
                raise
    except BaseException:
        if made:
            with contextlib.suppress(OSError):  # empty unless records were written
                out.rmdir()
        raise


def _check_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder; choose another output folder")


def _encode(
    src_p: Path, job: _Job, described: str | None, *, locked: bool = False
) -> EncodeSummary:
    """Encode the folder *src_p* (*described* names the input it was unpacked from).

    *locked*: the caller holds the output folder's lock.
    """
    o = job.options
    output = open_output(job.out, job.storage_options)
    if isinstance(output, FolderOutput):
        out_p = output.folder
        if out_p == src_p or src_p in out_p.parents:
            raise DatasetError(
                f"{out_p}: output folder must not be inside the source folder {src_p}"
            )
        _check_folder(out_p)
    recorded = {  # the settings the manifest and the journal record
        "backend": o.backend,
        "quality": o.quality,
        "record_size": job.record_size,
        "shuffle": o.shuffle,
        "seed": job.seed,
        # the file's name only: a manifest holds no path of the machine it was made on
        "labels": Path(job.labels).name if job.labels else None,
        "scan_script": script_option(job.script),
    }
    if described is not None:
        recorded["input"] = described
    plan = make_plan(src_p, job.labels, o.shuffle, job.seed, job.record_size, recorded)
    run = _Run(plan, output, recorded, o.strict, job.progress, o.on_record)
    if isinstance(output, ObjectOutput):
        run.clear_remote(job.overwrite)
        return run.encode(job.workers, o.parallel, job.client)
    output.folder.mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext() if locked else FolderLock(output.folder):
        _tidy(output.folder, job.overwrite)
        if job.overwrite:  # what killed encodes of other inputs left beside it
            remove_staging(output.folder, keep=src_p)
        done = (
            _finished(output.folder, plan.digest, output.url) if output.exists(MANIFEST) else None
        )
        if not done and output.exists(MANIFEST):
            raise DatasetError(
                f"{output.folder}: already holds a dataset (manifest.json); "
                "use overwrite=True (--overwrite)"
            )
        if not done:  # else: killed after the manifest, before its own clean-up: complete
            run.journal = Journal(output.folder, plan.digest, recorded)
            done = run.encode(job.workers, o.parallel, job.client)
        remove_staging(output.folder)  # this run's, and any a killed run left
        return done


def _summary(typed: Manifest, url: str, resumed: int) -> EncodeSummary:
    return EncodeSummary(
        out=url,
        images=typed.images,
        records=len(typed.records),
        skipped=len(typed.skipped),
        source_bytes=typed.source_bytes,
        total_bytes=sum(r.bytes_per_scan[-1] for r in typed.records),
        resumed_records=resumed,
        lossy=len(typed.lossy_conversions),
    )


def _finished(out: Path, digest: str, url: str) -> EncodeSummary | None:
    """The summary of a complete encode of this very plan whose journal files were left behind.

    The manifest is written last, so a manifest beside a plan file of the same
    digest means every record is done: the run was stopped while cleaning up.
    """
    if read_json_object(out / PLAN).get("digest") != digest:
        return None
    typed = Manifest.from_json(json.loads((out / MANIFEST).read_text("utf-8")), str(out / MANIFEST))
    Journal(out, digest, {}).remove()
    return _summary(typed, url, len(typed.records))


def _check_options(
    backend: str, quality: int, record_size: int, workers: int | None, parallel: str
) -> None:
    """Reject bad options before anything is created on disk."""
    check_backend_and_quality(backend, quality)
    if parallel not in ("threads", "processes"):
        raise ValueError(f"parallel must be 'threads' or 'processes', got {parallel!r}")
    if isinstance(record_size, bool) or not isinstance(record_size, int) or record_size < 1:
        raise ValueError(f"record_size must be a positive number of bytes, got {record_size!r}")
    if workers is not None:
        check_count(workers, "workers")
    jpegtran_for(backend)  # a missing program fails here, not as every source skipped


@dataclass
class _Run:
    """One encode of a plan into an output: the records still to do, and the manifest."""

    plan: EncodePlan
    output: FolderOutput | ObjectOutput
    options: dict[str, Any]
    strict: bool
    progress: bool
    on_record: Callable[[int], None] | None
    journal: Journal | None = None
    entries: dict[int, dict[str, Any]] = field(default_factory=dict)

    def clear_remote(self, overwrite: bool) -> None:
        """Object storage: refuse to replace a dataset unless told to; drop our leftovers.

        The manifest goes first, so that no reader ever sees a manifest whose
        records are being replaced.
        """
        out = self.output
        names = out.names()
        if MANIFEST in names:
            if not overwrite:
                raise DatasetError(
                    f"{out.url}: already holds a dataset (manifest.json); "
                    "use overwrite=True (--overwrite)"
                )
            out.remove(MANIFEST)
        for name in names:
            if name != MANIFEST and _OWN_FILE.fullmatch(name):
                out.remove(name)

    def finished(self, entry: dict[str, Any]) -> None:
        """Record one written record (journal first: it must survive a crash after this)."""
        if self.journal is not None:
            self.journal.append(entry)
        self.entries[entry["slice"]] = entry
        if self.on_record is not None and entry["file"] is not None:
            self.on_record(entry["slice"])

    def encode(self, workers: int | None, parallel: str, client: Any) -> EncodeSummary:
        """Do every record not done yet, then publish the manifest."""
        plan, journal = self.plan, self.journal
        done = journal.load(plan.slices) if journal is not None else {}
        if journal is not None:
            journal.start(done)
        self.entries = dict(done)
        todo = [i for i in range(len(plan.slices)) if i not in done]
        initial = sum(e["end"] - e["start"] for e in done.values())
        bar = progress_bar(
            total=len(plan), initial=initial, unit="img", desc="encode", disable=not self.progress
        )
        try:
            if client is not None:
                from .distributed import run_on_dask

                run_on_dask(
                    client, plan, self.output, todo, self.options, self.strict, self.finished, bar
                )
            else:
                self._run_local(todo, workers, parallel, bar)
        finally:
            bar.close()
            if journal is not None:
                journal.close()
        manifest = _manifest(
            [self.entries[i] for i in sorted(self.entries)], plan.classes, plan.src, self.options
        )
        if isinstance(self.output, FolderOutput):
            _tidy(self.output.folder, False)  # temporary files of workers that died
        self.output.write(MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
        if journal is not None:
            journal.remove()
        typed = Manifest.from_json(manifest, f"{self.output.url}/{MANIFEST}")  # as readers will
        return _summary(typed, self.output.url, len([r for r in done.values() if r["images"]]))

    def _run_local(self, todo: list[int], workers: int | None, parallel: str, bar: Any) -> None:
        """Transcode the sources of the records in *todo* in a pool; write each record in order.

        In a folder, each record's images are spooled as they arrive
        (:mod:`pcr_explore.encode._spool`), so a resumed run transcodes only what
        an interrupt lost.
        """
        plan = self.plan
        script = script_from_option(self.options["scan_script"])
        spools: dict[int, Spool] = {}
        kept: dict[int, list[Transcoded]] = {}
        if self.journal is not None and isinstance(self.output, FolderOutput):
            for p in self.output.folder.glob(".record-*.spool"):
                if p.name not in {spool_file(i) for i in todo}:  # its record is journaled
                    p.unlink()
            for i in todo:
                start, end = plan.slices[i]
                spools[i] = Spool(self.output.folder, i)
                kept[i] = spools[i].load(start, plan.names[start:end], script.num_levels)
            bar.update(sum(len(v) for v in kept.values()))
        tasks = [t for i in todo for t in plan.tasks(i, self.options)[len(kept.get(i, [])) :]]
        stream = _run_tasks(tasks, workers, parallel)
        try:
            for i in todo:
                start, end = plan.slices[i]
                results, spool = list(kept.get(i, [])), spools.get(i)
                for res in results:
                    self._check(res)
                for res in itertools.islice(stream, end - start - len(results)):
                    bar.update(1)
                    self._check(res)
                    results.append(res)
                    if spool is not None:
                        spool.append(res)
                if len(results) < end - start:  # pragma: no cover - fewer results than planned
                    raise RuntimeError("fewer transcode results than planned sources")
                self.finished(write_shard(self.output, i, start, end, results, script))
                if spool is not None:
                    spool.remove()
        finally:
            stream.close()
            for spool in spools.values():
                spool.close()

    def _check(self, res: Transcoded) -> None:
        if res.image is None and self.strict:
            raise DatasetError(res.error)


def _manifest(
    entries: list[dict[str, Any]], classes: tuple[str, ...], src: Path, options: dict[str, Any]
) -> dict[str, Any]:
    kept = [r for r in entries if r["images"]]
    script = script_from_option(options["scan_script"])
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "num_scans": script.num_levels,
        "scan_script": {"name": script.name, "scans": script.text()},
        "images": sum(r["images"] for r in kept),
        "classes": list(classes),
        "source": options.get("input") or src.name,  # portable: no path of this machine
        "source_bytes": sum(r["source_bytes"] for r in entries),
        "options": options,
        "records": [
            {k: r[k] for k in ("file", "images", "header_bytes", "bytes_per_scan", "checksum")}
            for r in kept
        ],
        "skipped": [s for r in entries for s in r["skipped"]],
        "conversions": [n for r in entries for n in r["notes"]],
    }


# Tasks go to workers a few at a time: one round trip through the pool per
# image cost the writing process more CPU than the record writing itself.
_BATCH = 4


def _run_tasks(
    tasks: list[tuple[Any, ...]], workers: int | None, parallel: str
) -> Generator[Transcoded, None, None]:
    """Run transcode tasks in order, with a bounded number in flight."""
    workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if workers == 1 or len(tasks) <= 1 or (parallel == "processes" and not main_is_importable()):
        for t in tasks:
            yield transcode_source(*t)
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
        pool = worker_pool(workers, preload=["pcr_explore.encode._shard"])
    with pool as ex:
        for done in ordered_map(transcode_batch, batches, ex, window):
            yield from done
