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

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._pool import main_is_importable, ordered_map, worker_pool
from ..jpeg._decoders import carried
from ..quality._jobs import Outcome
from ..quality.runner import default_workers
from ..read.sources import scan_script_of
from ._inspect import FileInfo, FileJob, SampleSpec, inspect_file
from ._options import Options
from ._target import Target

__all__ = ["WORKER_MODULES", "Pass", "inspect_all"]

#: What the workers run (this module's inspect_files and all it imports),
#: imported once by the server they fork from, so that no worker imports it
#: again. A package's facade would not do: it imports its modules lazily, at
#: first use. imagehash's phash imports scipy.fftpack at its first call.
WORKER_MODULES = (__name__, "scipy.fftpack")

# Tasks in flight per worker: results are taken in order, so a slow task
# holds back at most this many finished ones before its worker is idle.
_WINDOW = 4
# Images per task, at most: one message each way per task instead of per
# image. Sampled images, ten times longer, go one per task.
_CHUNK = 8


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


def _jobs(t: Target, o: Options, first: list[int], coded: set[int] | None) -> Iterator[FileJob]:
    """One job per image, the sampled images first: a folder's file, or a dataset's JPEG.

    *coded* holds the folder files to transcode for their bytes per level
    (None: every file).
    """
    script = scan_script_of(t.source)
    spec = SampleSpec(
        t.source.num_scans,
        script,
        luminance=o.luminance,
        max_pixels=o.max_pixels,
    )
    sampled = set(first)
    if t.dataset is None:
        for i in [*first, *(i for i in range(len(t.names)) if i not in sampled)]:
            yield FileJob(
                i,
                t.names[i],
                path=str(t.root / t.names[i]),
                backend=o.backend,
                quality=o.quality,
                sample=spec if i in sampled else None,
                transcode=coded is None or i in coded,
            )
        return
    ds = t.dataset
    for i in first:
        yield FileJob(i, t.names[i], data=ds.jpeg_bytes(i), sample=spec, script=script)
    for idx, data, _label in ds.iter_jpeg(None):  # the rest a record at a time
        if idx not in sampled:
            yield FileJob(idx, t.names[idx], data=data, script=script)


def inspect_files(jobs: list[FileJob]) -> list[FileInfo]:
    """Inspect a few images in one worker task."""
    return [inspect_file(j) for j in jobs]


def _chunks(jobs: Iterator[FileJob], size: int) -> Iterator[list[FileJob]]:
    """Jobs in lists of *size*; a sampled image's job alone."""
    chunk: list[FileJob] = []
    for job in jobs:
        if job.sample is not None:
            yield [job]
            continue
        chunk.append(job)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _run(jobs: Iterator[FileJob], total: int, workers: int | None) -> Iterator[FileInfo]:
    """Inspect every job, in job order: in worker processes when it pays."""
    w = default_workers(total) if workers is None else workers
    if w == 1 or not main_is_importable():
        yield from map(inspect_file, jobs)
        return
    size = max(1, min(_CHUNK, total // (16 * w)))  # a small audit still spreads evenly
    task = carried(inspect_files)  # workers decode with the JPEG decoder in force here
    with worker_pool(w, preload=WORKER_MODULES) as pool:
        for infos in ordered_map(task, _chunks(jobs, size), pool, window=_WINDOW * w):
            yield from infos


def inspect_all(t: Target, o: Options, files_bar: Any, sample_bar: Any) -> Pass:
    """Inspect every image and measure the first of the quality sample, in one pass.

    Parameters
    ----------
    t : Target
        What is audited.
    o : Options
        The checked options (sample size, seed, workers, how to measure).
    files_bar, sample_bar : tqdm bars
        Advanced by one per image inspected, and per sampled image measured.

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
    for info in _run(_jobs(t, o, perm[:want], coded), n, o.workers):
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
