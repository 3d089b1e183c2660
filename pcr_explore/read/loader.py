"""Feed a PCR dataset to a PyTorch ``DataLoader`` at a chosen scan level.

Image ranges are the unit of work: the images, in the (seeded, shuffled)
record order, are cut into one equal slice per DataLoader worker and
distributed rank, so N workers x M ranks are all busy whatever the number
of records. A slice is one range of images in each record it touches, and
each range reads only its images' bytes (:meth:`PCRDataset.read_span
<pcr_explore.read.reader.PCRDataset.read_span>`): a whole record is one
prefix read; part of one is one range per scan group, or, with a cache,
the record's prefix fetched once into the cache for all its parts.
``whole_records=True`` deals whole records instead (one prefix read each,
but a worker without a record idles). Each worker keeps its next ranges'
requests in flight while it decodes the current one (``read_ahead``), and
opens the dataset once, with the settings it was given (storage options,
retries, deadline, cache), keeping it between passes. Needs the ``[torch]`` extra; this
module is not imported by ``pcr_explore`` itself, so the package stays light
without PyTorch.

Exact resume, the PyTorch way: with ``torchdata``'s ``StatefulDataLoader``
(``pip install 'pcr-explore[torch]'`` brings it), the loader's own
``state_dict()`` holds, for each worker, :meth:`PCRIterableDataset.state_dict`
called without arguments in that worker: "worker *k* of *w* has delivered
*n* samples of its shard in epoch *e* at level *s*". Saved in a checkpoint
(``torch.save``) and given back to a new loader's ``load_state_dict``, each
worker resumes its own shard where it stood, so the rest of the epoch comes
exactly as the uninterrupted run would have given it. ``torchdata`` resumes
a loader only with the worker count it was saved with; a state of another
one is refused with a :class:`~pcr_explore.errors.DatasetError`.

Without ``StatefulDataLoader`` (a plain ``DataLoader``, or to resume with
another worker count), :meth:`PCRIterableDataset.state_dict` counts from the
number of batches the training loop has taken which samples each worker's
shard has delivered (a ``DataLoader`` takes batches from its workers in turn,
skipping those that have run out, so the count fixes the rest, and whose
turn is next), and :meth:`~PCRIterableDataset.load_state_dict` in a new
process makes the next epoch's pass skip exactly those: with the same worker
count (worker *i* then takes the role of the worker whose turn it was, plus
*i*) the samples come in the order the uninterrupted run would have given
them; with another, every sample not yet delivered comes once (in another
order). The state machine, shared with :mod:`.mix`, and the state's format
are :mod:`._resume`'s.

The scan level and the epoch live in a small shared-memory tensor, so
``set_scan`` and ``set_epoch`` reach DataLoader workers that persist between
epochs (``persistent_workers=True``) without rebuilding them. With a
:class:`~pcr_explore.train.ScanSchedule`, ``set_epoch`` also sets the level
the schedule gives that epoch.

:attr:`PCRIterableDataset.stats` is what the dataset has read in this
process and in every DataLoader worker, summed: bytes, requests, and per
level the seconds spent waiting for bytes, decoding and batching
(:class:`~pcr_explore.read.ReadStats`). The workers report theirs through
shared memory (:mod:`pcr_explore.read._tally`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .._public import public
from ..jpeg import Size, decoder_name
from . import pipeline
from ._resume import (
    SCAN_SLOT,
    Fields,
    Pass,
    Resumable,
    batch_counts,
    check_entry,
    entry,
    import_torch,
    worker_info,
)
from ._stats import ReadStats
from ._tally import Reporter, WorkerTally
from .reader import PCRDataset, open_dataset
from .schedule import ScanSchedule

__all__ = ["batch_counts", "PCRIterableDataset", "torch_dataset"]

# what torch_dataset passes on to open_dataset, in this process and in every worker
_OPEN_OPTIONS = frozenset(
    {"store", "storage_options", "cache_dir", "cache_max_bytes", "timeout", "retries"}
    | {"deadline", "read_ahead"}
)


def _content_digest(ds: PCRDataset) -> str:
    """SHA-256 of what fixes a dataset's samples and their order, from its manifest.

    The records in order (file names, image counts, bytes per level, header
    checksums, which cover every image's pieces), the levels and the class
    names: a dataset re-encoded at the same path has another digest, a copy
    of it elsewhere (or the same folder by another path) the same.
    """
    entries = [
        [r.file, r.images, r.header_bytes, list(r.bytes_per_scan), r.checksum] for r in ds.records
    ]
    text = json.dumps([ds.num_scans, list(ds.classes), entries], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _to_chw_tensor(arr: np.ndarray) -> Any:
    t = import_torch().from_numpy(np.ascontiguousarray(arr))
    return t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1)


@public("pcr_explore.read")
class PCRIterableDataset(Resumable):
    """``(image, label)`` pairs of a PCR dataset at one scan level, for PyTorch.

    Build it with :func:`torch_dataset`. ``state_dict`` and ``load_state_dict``
    resume a stopped epoch exactly (see the module docstring).
    """

    KIND = "dataset"
    _LOCAL = ("_position", "_opened")  # workers open their own handle (connections unshared)

    def __init__(
        self,
        url: str,
        scan: int | None,
        size: Size | None,
        shuffle: bool,
        seed: int,
        transform: Callable[[np.ndarray], Any] | None,
        mode: str | None,
        rank: int,
        world_size: int,
        schedule: ScanSchedule | None = None,
        batch_size: int | None = None,
        whole_records: bool = False,
        options: dict[str, Any] | None = None,
        probe: PCRDataset | None = None,
    ) -> None:
        # open_dataset's keywords (storage, retries, deadline, cache, read-ahead): every
        # worker opens the dataset with them, once, and keeps it between passes
        self.options = dict(options or {})
        if probe is None:
            probe = open_dataset(url, **self.options)
        self._opened: tuple[int, PCRDataset] | None = (os.getpid(), probe)
        self.url, self.size, self.mode = url, size, mode
        self._label = url
        self.shuffle, self.seed, self.transform = shuffle, seed, transform
        self.rank, self.world_size = rank, world_size
        self.whole_records = bool(whole_records)
        # the decoder chosen where the dataset is made: a context variable does not
        # reach worker processes started by spawn or forkserver
        self.decoder = decoder_name()
        self.num_records, self.total = len(probe.records), len(probe)
        self.num_scans = probe.num_scans
        # what a resume state is bound to, computed once here (workers get it pickled)
        self.content_digest = _content_digest(probe)
        self._init_resume()  # the shared epoch and level reach persistent workers
        self._record_images = [r.images for r in probe.records]
        self._starts = np.concatenate([[0], np.cumsum(self._record_images)]).astype(np.int64)
        self.schedule = schedule
        self.batch_size = batch_size
        self._tally = WorkerTally(probe.num_scans)  # what DataLoader workers have read
        if schedule is not None:
            schedule.check(probe.num_scans)
            scan = schedule.level(1)
        self.set_scan(scan)

    def dataset(self) -> PCRDataset:
        """The dataset as this process opened it: once per process (and DataLoader worker).

        A forked worker inherits the parent's handle but opens its own, so
        that no connection or thread is shared across processes.
        """
        pid = os.getpid()
        if self._opened is None or self._opened[0] != pid:
            self._opened = (pid, open_dataset(self.url, **self.options))
        return self._opened[1]

    @property
    def stats(self) -> ReadStats:
        """What this dataset has read, here and in its DataLoader workers, summed.

        Bytes and requests, and per level the seconds of each read stage
        (:class:`~pcr_explore.read.ReadStats`): this process's handle's
        (with ``num_workers=0``, or a :class:`PCRDataset` given to
        :func:`torch_dataset`, whose reads it counts) plus every worker's,
        which each worker reports through shared memory while it reads (at
        most 50 ms behind) and when its pass ends. So with *W* workers the
        stage seconds sum *W* workers' time. A copy: reset with
        :meth:`reset_stats`.

        Examples
        --------
        >>> from torch.utils.data import DataLoader
        >>> tds = torch_dataset("photos.pcr", scan=3, size=(64, 64), batch_size=4)
        >>> for images, labels in DataLoader(tds, batch_size=None, num_workers=2):
        ...     pass
        >>> tds.stats.stages[3].images   # both workers' images, summed here
        14
        >>> tds.stats.stages[3].decode > 0
        True
        """
        return self._tally.total(self._own_stats())

    def reset_stats(self) -> None:
        """Zero :attr:`stats`: this process's counts and what the workers reported.

        Call it between passes; workers that persist go on counting from zero.
        """
        self._tally.reset(self._own_stats())

    def _own_stats(self) -> ReadStats | None:
        opened = self._opened
        return opened[1].stats if opened is not None and opened[0] == os.getpid() else None

    def _reporter(self) -> Reporter | None:
        """In a DataLoader worker, what reports this pass's counts to :attr:`stats`."""
        worker, _, in_worker = worker_info()
        return Reporter(self._tally, self.dataset().stats, worker) if in_worker else None

    @property
    def scan(self) -> int:
        """The scan level the next iteration reads."""
        return int(self._shared[SCAN_SLOT])

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for epoch *epoch* (same order on every worker and rank).

        Persistent DataLoader workers see the new epoch at their next
        iteration. With a schedule, the level becomes the one it gives
        epoch *epoch* (counted from 0 here, as ``DistributedSampler`` counts:
        ``set_epoch(0)`` is the schedule's epoch 1).
        """
        super().set_epoch(epoch)
        if self.schedule is not None:
            self.set_scan(self.schedule.level(int(epoch) + 1))

    def set_scan(self, scan: int | None) -> None:
        """Read level *scan* (None: full quality) from the next iteration on.

        Takes effect in persistent DataLoader workers too: call it between
        epochs, before ``iter(loader)``. Workers already running an epoch
        finish it at the level they started with.

        Raises
        ------
        ValueError
            If *scan* is outside ``1..num_scans``.
        """
        self._shared[SCAN_SLOT] = self.dataset()._check_scan(scan)

    def __len__(self) -> int:
        return self.total

    def _namer(self, r: int) -> Callable[[int], str]:
        """How errors name an image of record *r*."""
        return lambda i: f"{self.url} record {r}"

    # -- the plan of a pass -------------------------------------------------------
    def spans(
        self, epoch: int, shard: int, num_shards: int, whole_records: bool | None = None
    ) -> list[pipeline.Span]:
        """The image ranges ``(record, start, stop)`` shard *shard* of *num_shards* reads, in order.

        Computed from the manifest alone. *whole_records* (default: this
        dataset's choice) deals whole records instead of equal slices.
        """
        whole = self.whole_records if whole_records is None else whole_records
        # the same record order on every shard, so that shards never overlap
        rng = np.random.default_rng(self.seed + epoch) if self.shuffle else None
        order = pipeline.record_order(self.num_records, rng)
        if whole:
            records = pipeline.shard(order, shard, num_shards)
            return [(r, 0, self._record_images[r]) for r in records]
        return pipeline.image_shard(self._record_images, order, shard, num_shards)

    def _shard_rng(self, epoch: int, shard: int) -> np.random.Generator | None:
        """The generator that orders the images within each range of this shard."""
        if not self.shuffle:
            return None
        return np.random.default_rng(self.seed + epoch + 7919 * shard)

    def sequence(
        self, epoch: int, shard: int, num_shards: int, whole_records: bool | None = None
    ) -> list[int]:
        """The dataset indices shard *shard* of *num_shards* yields in epoch *epoch*, in order.

        Computed from the manifest alone, as :meth:`__iter__` orders them.
        """
        rng = self._shard_rng(epoch, shard)
        out: list[int] = []
        for r, a, b in self.spans(epoch, shard, num_shards, whole_records):
            order = np.arange(b - a) if rng is None else rng.permutation(b - a)
            out += (order + int(self._starts[r]) + a).tolist()
        return out

    # -- resume (the rest is Resumable's) -----------------------------------------
    @property
    def _parts(self) -> Sequence[PCRIterableDataset]:
        return [self]

    @property
    def _made(self) -> int | None:
        return self.batch_size

    def _shard_sizes(self, epoch: int, workers: int, wholes: list[bool]) -> dict[str, int]:
        """Samples each shard of this rank has in epoch *epoch*, by shard number (a string).

        As ``len(self.sequence(...))``, from the spans alone.
        """
        n, first = self.world_size * workers, self.rank * workers
        spans = {s: self.spans(epoch, s, n, wholes[0]) for s in range(first, first + workers)}
        return {str(s): sum(b - a for _, a, b in plan) for s, plan in spans.items()}

    def _taken(
        self, epoch: int, shard: int, nshards: int, done: int, wholes: list[bool]
    ) -> list[int]:
        return [done]

    def _binding(self, levels: list[int]) -> dict[str, Any]:
        return entry(self, levels[0])

    def _check_binding(self, f: Fields) -> tuple[list[int], list[bool]]:
        scan, whole = check_entry(f, self)
        return [scan], [whole]

    def delivered(self, state: dict[str, Any]) -> set[int]:
        """The dataset indices the run *state* describes has delivered this rank, in its epoch.

        Raises
        ------
        DatasetError
            As :meth:`load_state_dict`.
        """
        return self._delivered(self._check_state(state))[0]

    # -- reading ------------------------------------------------------------------
    def _pairs(
        self, epoch: int, scan: int, shard: int, nshards: int, skip: set[int] | int
    ) -> Iterator[tuple[np.ndarray, int]]:
        """One pass of shard *shard* of *nshards*: decoded ``(array, label)``, less *skip*."""
        rng = self._shard_rng(epoch, shard)
        plan = self.spans(epoch, shard, nshards)
        if isinstance(skip, int):  # ranges delivered whole are not read again
            while plan and skip >= plan[0][2] - plan[0][1]:
                _, a, b = plan.pop(0)
                skip -= b - a
                if rng is not None:
                    rng.permutation(b - a)  # the draws the skipped range took
        ds = self.dataset()
        ds.check_cache_fits(scan)
        errors = pipeline.OnError()
        parts = pipeline.fetch(
            lambda s: ds.read_span(s[0], s[1], s[2], scan),
            plan,
            on_error=errors,
            where=lambda s: f"{self.url} record {s[0]} images {s[1]}..{s[2] - 1}",
            cost=lambda s: ds._span_bytes(s, scan),
            read_ahead=ds.read_ahead,
            clock=ds.stats.clock(scan),
        )
        items: Iterator[pipeline.Encoded] = (
            e
            for (r, a, b), part in parts
            for e in pipeline.split(
                part,
                first_index=int(self._starts[r]),
                where=self._namer(r),
                rng=rng,
                images=range(a, b),
            )
        )
        if isinstance(skip, set):
            items = (e for e in items if e.index not in skip)
        elif skip:
            items = itertools.islice(items, skip, None)
        return pipeline.decode(
            items,
            size=self.size,
            mode=self.mode,
            on_error=errors,
            decoder=self.decoder,
            clock=ds.stats.clock(scan),
        )

    def _samples(
        self, epoch: int, scan: int, shard: int, nshards: int, skip: set[int] | int = 0
    ) -> Iterator[tuple[Any, int]]:
        """One pass of a shard as ``(transformed image, label)``, one sample at a time."""
        fn = self.transform or _to_chw_tensor
        return ((fn(arr), label) for arr, label in self._pairs(epoch, scan, shard, nshards, skip))

    def _read(self, pos: Pass) -> Iterator[tuple[Any, int, int]]:
        """The samples (or batches made here) of pass *pos*: ``(item, samples in it, 0)``."""
        skip: set[int] | int = pos.delivered or 0
        if pos.resumes is not None and pos.delivered is None:  # another sharding
            skip = self._delivered(pos.resumes)[0]
        args = (pos.epoch, pos.levels[0], pos.shard, pos.nshards, skip)
        if self.batch_size is None:
            yield from ((sample, 1, 0) for sample in self._samples(*args))
            return
        torch = import_torch()
        clock = self.dataset().stats.clock(pos.levels[0])
        for images, labels in pipeline.batch(self._pairs(*args), self.batch_size, clock=clock):
            # one (B, C, H, W) uint8 tensor per batch: one pickle across processes, not B
            start = time.perf_counter()
            t = torch.from_numpy(images)
            t = (t.unsqueeze(1) if t.ndim == 3 else t.permute(0, 3, 1, 2)).contiguous()
            clock.batched(time.perf_counter() - start, batches=0)  # part of the batch counted
            yield (t, torch.from_numpy(labels)), len(labels), 0


@public("pcr_explore.read")
def torch_dataset(
    source: str | PCRDataset,
    *,
    scan: int | None = None,
    size: Size | None = None,
    shuffle: bool = False,
    seed: int = 0,
    transform: Callable[[np.ndarray], Any] | None = None,
    mode: str | None = "RGB",
    rank: int = 0,
    world_size: int = 1,
    schedule: ScanSchedule | str | None = None,
    batch_size: int | None = None,
    whole_records: bool = False,
    **open_options: Any,
) -> PCRIterableDataset:
    """A ``torch.utils.data.IterableDataset`` of ``(image, label)`` at level *scan*.

    Parameters
    ----------
    source : str or PCRDataset
        Dataset path or URL (each DataLoader worker opens its own handle;
        a PCRDataset's cache is used unless *cache_dir* is given).
    scan : int, optional
        Scan level (None: full quality); change it between epochs with
        ``set_scan``, which persistent DataLoader workers follow.
    size : int or (int, int), optional
        Output size, as for :meth:`PCRDataset.image`.
    shuffle : bool
        Shuffle record order and images within records; call
        ``set_epoch(e)`` to reshuffle each epoch.
    seed : int
        Base shuffle seed.
    transform : callable, optional
        Applied to each uint8 array (default: a CHW ``torch.uint8`` tensor).
        Must be picklable when DataLoader workers use spawn or forkserver.
    mode : {"RGB", "L", None}
        Channels of every image (default RGB, so grayscale and colour images
        batch together); None keeps each image's own.
    rank, world_size : int
        Distributed sharding: the images (in the epoch's record order) are
        cut into ``world_size * num_workers`` equal slices, one per worker
        of every rank.
    schedule : ScanSchedule or str, optional
        A scan-level curriculum (``"ramp:1-10:2-6"``): ``set_epoch(e)`` then
        sets the level of epoch ``e + 1``, in persistent workers too; it
        replaces *scan*.
    batch_size : int, optional
        Make the batches in the workers: each item is then a ``(B, C, H, W)``
        ``uint8`` tensor and its labels, so one object crosses from a worker
        per batch instead of one per image. Use ``DataLoader(ds,
        batch_size=None)``; needs a fixed (*width*, *height*) *size* and no
        *transform*. ``state_dict`` then counts these batches (pass the same
        *batch_size*).
    whole_records : bool
        Deal whole records to the workers and ranks (one prefix read per
        record, but a worker idles when there are fewer records than
        workers) instead of equal image ranges.
    **open_options
        :func:`~pcr_explore.open_dataset`'s keywords (``storage_options``,
        ``cache_dir``, ``cache_max_bytes``, ``timeout``, ``retries``,
        ``deadline``, ``read_ahead``), for this process and every DataLoader
        worker, each of which opens the dataset once and keeps it between
        passes. A *source* given as a PCRDataset brings the keywords it was
        opened with; those given here replace them. With a cache, the parts
        of a record that several workers read are fetched from the store
        once.

    Returns
    -------
    PCRIterableDataset

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).

    Examples
    --------
    >>> from torch.utils.data import DataLoader
    >>> loader = DataLoader(torch_dataset("photos.pcr", scan=3, size=(224, 224)),
    ...                     batch_size=8, num_workers=2)
    >>> images, labels = next(iter(loader))
    >>> images.dtype, images.shape[1:]
    (torch.uint8, torch.Size([3, 224, 224]))

    Switch the level between epochs without restarting the workers:

    >>> ds = torch_dataset("photos.pcr", scan=1, size=(64, 64))
    >>> loader = DataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True)
    >>> for epoch in range(4):
    ...     ds.set_scan(1 if epoch < 2 else 5)
    ...     for images, labels in loader:
    ...         pass

    Resume mid-epoch from a checkpoint, in a new process:

    >>> import torch
    >>> from torchdata.stateful_dataloader import StatefulDataLoader
    >>> loader = StatefulDataLoader(ds, batch_size=4, num_workers=2)
    >>> for step, (images, labels) in enumerate(loader):
    ...     if step == 1:
    ...         torch.save({"loader": loader.state_dict()}, "ckpt.pt")
    ...         break
    >>> loader = StatefulDataLoader(ds, batch_size=4, num_workers=2)  # the new process
    >>> loader.load_state_dict(torch.load("ckpt.pt")["loader"])
    >>> sum(len(labels) for images, labels in loader)  # the 14 images less the 8 read
    6
    """
    import_torch()
    url = source.url if isinstance(source, PCRDataset) else str(source)
    options = dict(source.options) if isinstance(source, PCRDataset) else {}
    unknown = set(open_options) - _OPEN_OPTIONS
    if unknown:
        raise TypeError(
            f"torch_dataset got unexpected keyword(s) {sorted(unknown)}; besides its own it "
            f"takes open_dataset's: {sorted(_OPEN_OPTIONS)}"
        )
    options.update(open_options)  # open_dataset checks them, with this process's handle
    # a PCRDataset opened with the same keywords serves as this process's handle
    probe = source if isinstance(source, PCRDataset) and options == source.options else None
    if isinstance(schedule, str):
        schedule = ScanSchedule.parse(schedule)
    if batch_size is not None:
        if isinstance(batch_size, bool) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        if (
            not (isinstance(size, tuple) and len(size) == 2)
            or transform is not None
            or mode is None
        ):
            raise ValueError(
                "batches made in the workers need one shape: give size=(width, height), a "
                "mode, and no transform"
            )
    return PCRIterableDataset(
        url,
        scan,
        size,
        shuffle,
        seed,
        transform,
        mode,
        rank,
        world_size,
        schedule,
        batch_size,
        bool(whole_records),
        options,
        probe,
    )
