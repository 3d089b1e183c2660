"""One pass over every image, in one worker pool, with the quality sample measured in it.

The quality sample is the start of a seeded permutation, known before any
file is read. So each sampled image is inspected and measured at every level
in one task (one read, one transcode, no second pool), and these tasks, ten
times longer than the others, are handed out first: the short ones then
fill both workers to the end instead of a few long ones finishing last. A
sampled image that turns out unreadable is replaced afterwards by the next
readable one of the permutation, as :class:`~pcr_explore.quality.Sampler`
does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._pool import cluster_threads, parallel_map
from ..jpeg._decoders import carried
from ..jpeg.scan_script import ScanScript
from ..quality._jobs import Outcome
from ..quality.runner import default_workers
from ..read.pipeline import split
from ..read.reader import PCRDataset, open_dataset
from ..read.sources import scan_script_of
from ._inspect import FileInfo, FileJob, SampleSpec, inspect_file
from ._options import Options
from ._target import Target

__all__ = ["WORKER_MODULES", "Pass", "RecordJob", "inspect_all", "inspect_files", "inspect_record"]

#: What the workers run (this module's inspect_files and all it imports),
#: imported once by the server they fork from, so that no worker imports it
#: again. A package's facade would not do: it imports its modules lazily, at
#: first use.
WORKER_MODULES = (__name__,)

# Images per task, at most: one message each way per task instead of per
# image. Sampled images, ten times longer, go one per task. A Dask task costs
# the scheduler a few milliseconds, so tasks there hold more images.
_CHUNK = 8
_DASK_CHUNK = 32


@dataclass(frozen=True)
class Pass:
    """What the pass found: every image's facts, and the sample's order and outcomes.

    ``order`` is the seeded permutation restricted to readable images, the
    order the sample is taken in; ``measured`` holds the outcomes of its
    first images, those measured in the pass, in that order.
    """

    infos: list[FileInfo]
    order: list[int]
    want: int
    measured: list[Outcome]


@dataclass(frozen=True)
class RecordJob:
    """A dataset record to inspect where it is read: the dataset's location, not its bytes.

    ``skip`` holds the record's images inspected in a task of their own
    (those of the quality sample).
    """

    url: str
    options: dict[str, Any]
    record: int
    first: int  # the dataset index of the record's first image
    skip: frozenset[int]
    script: ScanScript


def _record_jobs(ds: PCRDataset, sampled: set[int], script: ScanScript) -> Iterator[RecordJob]:
    """One job per record of *ds*, for workers that open the dataset themselves."""
    url = ds.url if "://" in ds.url else os.path.abspath(ds.url)
    # opened without a prefix cache: a worker writes nothing
    options = {**ds.options, "cache_dir": None, "cache_max_bytes": None}
    first = 0
    for r, rec in enumerate(ds.records):
        skip = frozenset(i for i in range(first, first + rec.images) if i in sampled)
        yield RecordJob(url, options, r, first, skip, script)
        first += rec.images


def _jobs(
    t: Target, o: Options, first: list[int], coded: set[int] | None, by_record: bool
) -> Iterator[FileJob | RecordJob]:
    """One job per image, the sampled images first: a folder's file, or a dataset's JPEG.

    *coded* holds the folder files to transcode for their bytes per level
    (None: every file). With *by_record*, a dataset's images outside the
    sample are one :class:`RecordJob` per record.
    """
    script = scan_script_of(t.source)
    spec = SampleSpec(
        t.source.num_scans,
        script,
        luminance=o.luminance,
        max_pixels=o.measured_pixels,
    )
    sampled = set(first)
    if t.dataset is None:
        root = os.path.abspath(t.root)  # workers may run in another folder
        for i in [*first, *(i for i in range(len(t.names)) if i not in sampled)]:
            yield FileJob(
                i,
                t.names[i],
                path=os.path.join(root, t.names[i]),
                backend=o.backend,
                quality=o.quality,
                sample=spec if i in sampled else None,
                transcode=coded is None or i in coded,
            )
        return
    ds = t.dataset
    for i in first:
        yield FileJob(i, t.names[i], data=ds.jpeg_bytes(i), sample=spec, script=script)
    if by_record:
        yield from _record_jobs(ds, sampled, script)
        return
    for idx, data, _label in ds.iter_jpeg(None):  # the rest a record at a time
        if idx not in sampled:
            yield FileJob(idx, t.names[idx], data=data, script=script)


def inspect_record(job: RecordJob) -> list[FileInfo]:
    """Open the dataset, read one record whole, and inspect its images (but ``skip``).

    Raises
    ------
    PCRError
        If the dataset or the record cannot be read (as a local audit's read would).
    """
    ds = open_dataset(job.url, **job.options)
    prefix = ds.read_record(job.record)
    names = prefix.header.names
    return [
        inspect_file(FileJob(e.index, names[e.index - job.first], data=e.data, script=job.script))
        for e in split(prefix, first_index=job.first, where=lambda i: f"{job.url} image {i}")
        if e.index not in job.skip
    ]


def inspect_files(jobs: list[FileJob | RecordJob]) -> list[FileInfo]:
    """Inspect a few images, or a record's, in one worker task."""
    out: list[FileInfo] = []
    for j in jobs:
        if isinstance(j, RecordJob):
            out += inspect_record(j)
        else:
            out.append(inspect_file(j))
    return out


def _chunks(jobs: Iterator[FileJob | RecordJob], size: int) -> Iterator[list[FileJob | RecordJob]]:
    """Jobs in lists of *size*; a sampled image's job, or a record's, alone."""
    chunk: list[FileJob | RecordJob] = []
    for job in jobs:
        if isinstance(job, RecordJob) or job.sample is not None:
            yield [job]
            continue
        chunk.append(job)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _run(
    jobs: Iterator[FileJob | RecordJob], total: int, workers: int | None, client: Any
) -> Iterator[FileInfo]:
    """Inspect every job, in job order: in worker processes or on Dask when it pays."""
    if client is not None:
        w, most = cluster_threads(client), _DASK_CHUNK
    else:
        w, most = (default_workers(total) if workers is None else workers), _CHUNK
        if w == 1:
            for job in jobs:
                yield from inspect_files([job])
            return
    size = max(1, min(most, total // (16 * w)))  # a small audit still spreads evenly
    task = carried(inspect_files)  # workers decode with the JPEG decoder in force here
    for infos in parallel_map(
        task,
        _chunks(jobs, size),
        workers=w,
        client=client,
        preload=WORKER_MODULES,
        name="pcr-audit",
    ):
        yield from infos


def inspect_all(
    t: Target, o: Options, files_bar: Any, sample_bar: Any, *, client: Any = None
) -> Pass:
    """Inspect every image and measure the first of the quality sample, in one pass.

    Parameters
    ----------
    t : Target
        What is audited.
    o : Options
        The checked options (sample size, seed, workers, how to measure).
    files_bar, sample_bar : tqdm bars
        Advanced by one per image inspected, and per sampled image measured.
    client : dask.distributed.Client, optional
        Inspect on this Dask cluster, a few dozen images per task.

    Returns
    -------
    Pass
    """
    n = len(t.names)
    want = n if o.sample is None else min(o.sample, n)
    perm = [int(i) for i in np.random.default_rng(o.seed).permutation(n)]
    # the bytes sample starts the same permutation, so it holds the quality sample
    coded = None if o.bytes_sample is None else set(perm[: max(want, o.bytes_sample)])
    infos: list[FileInfo] = []
    jobs = _jobs(t, o, perm[:want], coded, by_record=client is not None)
    for info in _run(jobs, n, o.workers, client):
        infos.append(info)
        files_bar.update(1)
        if info.measured is not None:
            sample_bar.update(1)
    infos.sort(key=lambda i: i.index)
    if t.dataset is not None:  # bytes per level from the record index, not a transcode
        ds = t.dataset
        infos = [i if i.broken else replace(i, level_bytes=ds.level_bytes(i.index)) for i in infos]
    readable = {i.index for i in infos if not i.broken}
    order = [i for i in perm if i in readable]
    measured = [m for i in order if (m := infos[i].measured) is not None]
    return Pass(infos, order, want, measured)
