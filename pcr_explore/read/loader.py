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
order). A state written before image ranges (whole records) resumes too.

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
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._public import public
from ..errors import DatasetError, MissingExtraError
from ..jpeg import Size, decoder_name
from . import pipeline
from ._stats import ReadStats
from ._tally import Reporter, WorkerTally
from .reader import PCRDataset, open_dataset
from .schedule import ScanSchedule

# PyTorch is imported where it is needed (_torch), so that importing this module (or
# pcr_explore.read.mix) stays light. The dataset classes cannot subclass torch's
# IterableDataset without importing torch when the class is defined; instead they are
# registered as virtual subclasses of it (it is an ABC) when the first one is made or
# unpickled, which is what DataLoader's isinstance(dataset, IterableDataset) asks (torch's
# IterableDataset has no behaviour of its own that a DataLoader uses). Type checkers see
# the subclass. Pickles name the class by its module, which imports without torch, so
# spawn and forkserver workers find it.
if TYPE_CHECKING:
    from torch.utils.data import IterableDataset

    _Base = IterableDataset[Any]
else:
    _Base = object


def _torch(dataset_class: type | None = None) -> Any:
    """The ``torch`` module, imported on first use; registers *dataset_class* as an IterableDataset.

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed.
    """
    try:
        import torch
        from torch.utils.data import IterableDataset
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            "the PyTorch adapter needs PyTorch: pip install 'pcr-explore[torch]'"
        ) from e
    if dataset_class is not None:
        IterableDataset.register(dataset_class)
    return torch


def _reader(resume: Mapping[str, Any] | None) -> int:
    """Who reads the pass that starts in this process, resuming *resume* (``_READ_...``)."""
    if not _worker_info()[2]:
        return _READ_HERE
    resumed = resume is not None and resume["worker"] is not None
    return _READ_RESUMED if resumed else _READ_IN_WORKERS


def _worker_info() -> tuple[int, int, bool]:
    """``(worker, workers, in_worker)`` of this process: a DataLoader worker's, or ``(0, 1)``."""
    info = _torch().utils.data.get_worker_info()
    if info is None:
        return 0, 1, False
    return int(info.id), int(info.num_workers), True


__all__ = ["record_shard", "batch_counts", "PCRIterableDataset", "torch_dataset"]

# what torch_dataset passes on to open_dataset, in this process and in every worker
_OPEN_OPTIONS = frozenset(
    {"store", "storage_options", "cache_dir", "cache_max_bytes", "timeout", "retries"}
    | {"deadline", "read_ahead"}
)

# 4: a state may be one DataLoader worker's ("worker"), as StatefulDataLoader keeps them;
# 3: bound to the dataset's content ("digest") and the samples' size and mode;
# 2: image-range shards ("whole_records"); 1: whole records only
STATE_VERSION = 4
_MAX_INT = (1 << 63) - 1  # what the shared epoch (an int64) holds
# a resume state naming more DataLoader workers than this is not one a loader wrote
_MAX_WORKERS = 4096
_MISSING: Any = object()
# who read the latest pass (a slot of the shared tensor): this process, DataLoader workers,
# or workers that resumed their own states (StatefulDataLoader)
_READ_HERE, _READ_IN_WORKERS, _READ_RESUMED = 0, 1, 2


def _show(value: Any) -> str:
    """A value in a message: its repr, cut short, and its type."""
    return f"{value!r:.60} ({type(value).__name__})"


def _jsonable(size: Size | None) -> Any:
    """*size* as it reads back from JSON: a list for a tuple, Python ints for numpy's."""
    if size is None:
        return None
    return [int(v) for v in size] if isinstance(size, (tuple, list)) else int(size)


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


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"state_dict: {name} must be an integer, got {_show(value)}")
    if value < minimum:
        raise ValueError(f"state_dict: {name} must be at least {minimum}, got {value}")
    return int(value)


def _check_count_args(
    batches: Any, batch_size: Any, num_workers: Any, made: int | None = None
) -> tuple[int, int, int]:
    """``state_dict``'s arguments, checked: ``(batches, batch_size, workers)``.

    *made* is the batch size a dataset makes in its workers (None: none);
    the DataLoader's batches are then those, so *batch_size* must be it.
    ``num_workers=0`` counts as one worker.

    Raises
    ------
    TypeError
        If one is not an integer.
    ValueError
        If *batches* or *num_workers* is negative, *batch_size* below 1,
        *num_workers* above 4096, or *batch_size* not *made*.
    """
    n = _int_arg("batches", batches, 0)
    size = _int_arg("batch_size", batch_size, 1)
    w = _int_arg("num_workers", num_workers, 0)
    if w > _MAX_WORKERS:
        raise ValueError(f"state_dict: num_workers must be at most {_MAX_WORKERS}, got {w}")
    if made is not None and size != made:
        raise ValueError(
            f"state_dict: this dataset makes batches of {made} in its workers, and the "
            f"DataLoader's batches are those: pass batch_size={made}, not {size}"
        )
    return n, size, max(1, w)


def _check_counted(flag: int, what: str) -> None:
    """A count of batches says nothing of a pass whose workers resumed their own states."""
    if flag == _READ_RESUMED:
        raise ValueError(
            f"{what}: this pass resumed a StatefulDataLoader's states in its workers, so a count "
            "of batches does not say where it stands: take the loader's state_dict()"
        )


class _StateFields:
    """The fields of a resume state, read with one :class:`DatasetError` per problem.

    Every message starts with *where* (``"resume state"``) and names the
    field, what it must be and what it is.
    """

    def __init__(self, state: Any, where: str = "resume state") -> None:
        if not isinstance(state, Mapping):
            raise DatasetError(
                f"{where} must be a dict, as state_dict() returns, got {_show(state)}"
            )
        self.state, self.where = state, where

    def error(self, what: str) -> DatasetError:
        """An error about this state."""
        return DatasetError(f"{self.where}: {what}")

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """Field *key* (*default* where it is missing; without one, missing is an error)."""
        if key in self.state:
            return self.state[key]
        if default is _MISSING:
            raise self.error(f"no {key!r} (state_dict() writes it)")
        return default

    def integer(self, key: str, lo: int = 0, hi: int = _MAX_INT, default: Any = _MISSING) -> int:
        """Field *key*, an integer within *lo*..*hi* (a bool or a float is refused)."""
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{key!r} must be an integer, got {_show(value)}")
        if not lo <= value <= hi:
            raise self.error(f"{key!r} must be within {lo}..{hi}, got {value}")
        return int(value)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        """Field *key*, true or false."""
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise self.error(f"{key!r} must be true or false, got {_show(value)}")
        return value

    def same(self, key: str, mine: Any, what: str) -> None:
        """Field *key* must be *mine* (and of its kind: ``True`` is not ``1``)."""
        value = self.get(key)
        if value != mine or isinstance(value, bool) != isinstance(mine, bool):
            raise self.error(
                f"the state is of another {what}: its {key} is {value!r:.60}, "
                f"this {what}'s {mine!r}"
            )

    def counts(self, sizes: dict[str, int], epoch: int) -> dict[str, int]:
        """``delivered``: this rank's shards (the keys of *sizes*), each within its samples."""
        value = self.get("delivered")
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise self.error(
                f"'delivered' must map shard numbers (as strings) to counts, got {_show(value)}"
            )
        unknown = sorted(set(value) - set(sizes))
        if unknown:
            raise self.error(
                f"'delivered' names shards {unknown!r:.60} that this rank does not have "
                f"(its shards: {sorted(sizes, key=int)})"
            )
        out: dict[str, int] = {}
        for key, n in value.items():
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= sizes[key]:
                raise self.error(
                    f"'delivered' gives shard {key} {_show(n)} samples; it must be an integer "
                    f"within 0..{sizes[key]}, the samples that shard has in epoch {epoch}"
                )
            out[key] = int(n)
        return out


def _worker_field(f: _StateFields, present: bool, workers: int) -> int | None:
    """``worker``: the DataLoader worker whose state it is; None for the run's (or an old one's).

    *present*: the state's version writes the field (4 on for a dataset's).
    """
    if not present or f.get("worker") is None:
        return None
    return f.integer("worker", 0, workers - 1)


def _worker_counts(
    f: _StateFields, worker: int | None, sizes: dict[str, int], epoch: int, first: int, turn: int
) -> dict[str, int]:
    """``delivered``: every shard's count (the run's state), or one worker's shard's.

    *sizes* are the samples of the rank's shards, the first numbered
    *first*; worker *worker* reads shard ``first + (worker + turn) % workers``.
    """
    if worker is None:
        return f.counts(sizes, epoch)
    if f.get("delivered") is None:
        raise f.error(
            f"worker {worker} read a pass that resumed a state of another worker count "
            "(state_dict(batches=, ...)): where it stood is not a count, so it cannot be "
            "resumed; resume that epoch from the state it started from, or from a checkpoint "
            "saved in another epoch"
        )
    counts = f.counts(sizes, epoch)
    shard = str(first + (worker + turn) % len(sizes))
    if list(counts) != [shard]:
        raise f.error(
            f"'delivered' of worker {worker} must count its own shard alone ({shard}, with "
            f"'next' {turn}), got shards {sorted(counts, key=int)}"
        )
    return counts


def record_shard(
    num_records: int, shard: int, num_shards: int, epoch_seed: int | None
) -> list[int]:
    """The records shard *shard* of *num_shards* reads whole, in order (``whole_records=True``).

    With *epoch_seed* the record order is shuffled identically on every shard
    before it is dealt out, so shards never overlap and together cover all
    records.
    """
    rng = None if epoch_seed is None else np.random.default_rng(epoch_seed)
    return pipeline.shard(pipeline.record_order(num_records, rng), shard, num_shards)


def batch_counts(sizes: list[int], batches: int, batch_size: int) -> tuple[list[int], int]:
    """What each worker has delivered once a DataLoader has taken *batches* batches.

    A DataLoader takes batches from its workers in turn, skipping those that
    have run out; worker *i* makes ``ceil(sizes[i] / batch_size)`` batches.

    Returns
    -------
    list of int, int
        The samples each worker has delivered, and the worker whose turn is
        next.

    Raises
    ------
    ValueError
        If *batches* is more than the workers make together.

    Examples
    --------
    >>> batch_counts([5, 2], 3, 2)
    ([4, 2], 1)
    """
    w = len(sizes)
    left = [-(-n // batch_size) for n in sizes]
    taken = [0] * w
    k, n = 0, int(batches)
    while n > 0 and any(taken[i] < left[i] for i in range(w)):
        if taken[k] < left[k]:
            taken[k] += 1
            n -= 1
        k = (k + 1) % w
    if n > 0:
        raise ValueError(f"{batches} batches is more than this epoch holds")
    return [min(t * batch_size, size) for t, size in zip(taken, sizes)], k


def _to_chw_tensor(arr: np.ndarray) -> Any:
    t = _torch().from_numpy(np.ascontiguousarray(arr))
    return t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1)


def _worker_error(where: str, state: Mapping[str, Any], worker: int, workers: int) -> DatasetError:
    """The error for one worker's *state* loaded in worker *worker* of *workers* (not its own)."""
    k, n = state["worker"], state["num_workers"]
    return DatasetError(
        f"{where}: this is the state of DataLoader worker {k} of {n} (a StatefulDataLoader "
        f"keeps one per worker); it resumes in worker {k} of a StatefulDataLoader with "
        f"num_workers={n if n > 1 else '0 or 1'}, and this process is worker {worker} of "
        f"{workers}. torchdata resumes a loader only with the worker count it was saved with; "
        "to resume with another, count the batches (state_dict(batches=, batch_size=, "
        "num_workers=)) and use a plain DataLoader"
    )


@dataclass
class _Pass:
    """One pass of one process over its shard: what it reads, and how far it has come.

    A DataLoader starts a pass with its worker 0; a pass that resumes an
    epoch of the same sharding gives worker *i* the role worker
    ``(i + turn) % workers`` had, so the turns go on where they stopped.
    *delivered* counts the samples of the shard delivered so far, those the
    pass skipped included; None when the pass resumed another sharding (what
    it skips is then a set of samples, not a count).
    """

    epoch: int
    scan: int
    worker: int
    workers: int
    turn: int
    shard: int
    nshards: int
    skip: set[int] | int
    delivered: int | None


@public("pcr_explore.read")
class PCRIterableDataset(_Base):
    """``(image, label)`` pairs of a PCR dataset at one scan level, for PyTorch.

    Build it with :func:`torch_dataset`.
    """

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
        # [epoch, scan, read in workers]: pickled to workers as a handle to the same memory.
        torch = _torch(PCRIterableDataset)
        self._shared = torch.zeros(3, dtype=torch.int64).share_memory_()
        self._resume: dict[str, Any] | None = None
        self._base: dict[str, Any] | None = None  # the state this epoch resumed from
        self._position: _Pass | None = None  # this process's latest pass
        self._record_images = [r.images for r in probe.records]
        self._starts = np.concatenate([[0], np.cumsum(self._record_images)]).astype(np.int64)
        self.schedule = schedule
        self.batch_size = batch_size
        self._tally = WorkerTally(probe.num_scans)  # what DataLoader workers have read
        if schedule is not None:
            schedule.check(probe.num_scans)
            scan = schedule.level(1)
        self.set_scan(scan)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_opened"] = None  # workers open their own handle (its connections are not shared)
        state["_position"] = None  # a pass is this process's
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        _torch(PCRIterableDataset)  # an IterableDataset in the process that unpickles it too
        self.__dict__.update(state)

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
        opened = self._opened
        own = opened[1].stats if opened is not None and opened[0] == os.getpid() else None
        return self._tally.total(own)

    def reset_stats(self) -> None:
        """Zero :attr:`stats`: this process's counts and what the workers reported.

        Call it between passes; workers that persist go on counting from zero.
        """
        opened = self._opened
        own = opened[1].stats if opened is not None and opened[0] == os.getpid() else None
        self._tally.reset(own)

    def _reporter(self) -> Reporter | None:
        """In a DataLoader worker, what reports this pass's counts to :attr:`stats`."""
        worker, _, in_worker = _worker_info()
        return Reporter(self._tally, self.dataset().stats, worker) if in_worker else None

    @property
    def epoch(self) -> int:
        """The epoch whose shuffle order the next iteration uses."""
        return int(self._shared[0])

    @property
    def scan(self) -> int:
        """The scan level the next iteration reads."""
        return int(self._shared[1])

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for epoch *epoch* (same order on every worker and rank).

        Persistent DataLoader workers see the new epoch at their next
        iteration. With a schedule, the level becomes the one it gives
        epoch *epoch* (counted from 0 here, as ``DistributedSampler`` counts:
        ``set_epoch(0)`` is the schedule's epoch 1).
        """
        if self._base is not None and self._base["epoch"] != int(epoch):
            self._base = None
        self._shared[0] = int(epoch)
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
        self._shared[1] = self.dataset()._check_scan(scan)

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
        epoch_seed = self.seed + epoch if self.shuffle else None
        if whole:
            records = record_shard(self.num_records, shard, num_shards, epoch_seed)
            return [(r, 0, self._record_images[r]) for r in records]
        rng = None if epoch_seed is None else np.random.default_rng(epoch_seed)
        order = pipeline.record_order(self.num_records, rng)
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

    # -- resume -------------------------------------------------------------------
    def _shard_sizes(self, epoch: int, rank: int, workers: int, whole: bool) -> dict[str, int]:
        """Samples each shard of rank *rank* has in epoch *epoch*, by shard number (a string).

        As ``len(self.sequence(...))``, without listing the samples.
        """
        nshards = self.world_size * workers
        shards = [rank * workers + k for k in range(workers)]
        if not whole:  # equal slices of the images (pipeline.image_shard)
            t = self.total
            return {str(s): (s + 1) * t // nshards - s * t // nshards for s in shards}
        epoch_seed = self.seed + epoch if self.shuffle else None
        rng = None if epoch_seed is None else np.random.default_rng(epoch_seed)
        order = pipeline.record_order(self.num_records, rng)
        images = self._record_images
        return {str(s): sum(images[r] for r in order[s::nshards]) for s in shards}

    def state_dict(
        self,
        *,
        batches: int | None = None,
        batch_size: int | None = None,
        num_workers: int | None = None,
    ) -> dict[str, Any]:
        """Where the current epoch stands: this process's pass, or after *batches* batches.

        Without arguments (as ``torchdata``'s ``StatefulDataLoader`` calls it
        in each worker, or in this process with ``num_workers=0``): the
        position of the pass this process is reading, "worker *k* of *w* has
        delivered *n* samples of its shard". The loader keeps one per
        worker in its own ``state_dict()``, and gives each back to its
        worker's copy of the dataset through :meth:`load_state_dict`.

        With the three counts (a plain ``DataLoader``, or to resume with
        another worker count): where the whole epoch stands once the loop
        has taken *batches* batches.

        Parameters
        ----------
        batches : int, optional
            Batches the training loop has received from the ``DataLoader``
            in this pass. In a pass that resumed the epoch
            (:meth:`load_state_dict`), they are added to what the state it
            resumed from had delivered, so a run stopped again is resumed
            exactly again.
        batch_size, num_workers : int, optional
            The ``DataLoader``'s (``num_workers=0`` counts as one worker).
            With batches made in the workers (``torch_dataset(...,
            batch_size=)``), *batch_size* is theirs.

        Returns
        -------
        dict
            JSON-ready: the epoch, the level, the samples each shard (or
            this worker's shard) has delivered, and what they are counted
            in: the dataset's content digest, the seed, the shuffle, the
            size and mode, the sharding.

        Raises
        ------
        TypeError
            If an argument is not an integer.
        ValueError
            If *batches* or *num_workers* is negative, *batch_size* is below
            1, *batches* is more than the epoch holds, or this pass resumed
            the epoch with another worker count (what it delivered is then
            not a count per shard) or its workers resumed their own states
            (StatefulDataLoader); without arguments, in a process whose
            passes DataLoader workers read (the position is theirs).
        """
        if batches is None and batch_size is None and num_workers is None:
            return self._pass_state(self._current_pass())
        n, size, w = _check_count_args(batches, batch_size, num_workers, self.batch_size)
        _check_counted(int(self._shared[2]), self.url)
        shards = self._shard_sizes(self.epoch, self.rank, w, self.whole_records)
        done, turn = self._counts(list(shards.values()), w, n, size)
        return self._state(dict(zip(shards, done)), turn, w, size)

    def _current_pass(self) -> _Pass:
        """The latest pass of this process (before its first: the one the next would read)."""
        _, _, in_worker = _worker_info()
        if not in_worker and int(self._shared[2]):
            raise ValueError(
                f"{self.url}: DataLoader workers read this dataset's passes, so this process "
                "does not know where the epoch stands: use torchdata's StatefulDataLoader and "
                "its state_dict(), or count the batches the loop has taken: "
                "state_dict(batches=, batch_size=, num_workers=)"
            )
        return self._position or self._plan()

    def _pass_state(self, pos: _Pass) -> dict[str, Any]:
        """The resume state of one worker's pass *pos* (version 4 on)."""
        delivered = None if pos.delivered is None else {str(pos.shard): pos.delivered}
        return self._state(
            delivered, pos.turn, pos.workers, None, pos.epoch, pos.scan, worker=pos.worker
        )

    def _state(
        self,
        delivered: dict[str, int] | None,
        turn: int,
        workers: int,
        batch_size: int | None,
        epoch: int | None = None,
        scan: int | None = None,
        worker: int | None = None,
    ) -> dict[str, Any]:
        """A resume state: *delivered* per shard, *turn* next; one *worker*'s, or the run's.

        *epoch* and *scan* default to this dataset's current ones.
        """
        return {
            "version": STATE_VERSION,
            "kind": "dataset",
            "url": self.url,  # for people reading it; a state is bound to the digest
            "digest": self.content_digest,
            "epoch": self.epoch if epoch is None else epoch,
            "scan": self.scan if scan is None else scan,
            "seed": int(self.seed),
            "shuffle": self.shuffle,
            "size": _jsonable(self.size),
            "mode": self.mode,
            "rank": self.rank,
            "world_size": self.world_size,
            "whole_records": self.whole_records,
            "num_workers": workers,
            "worker": worker,
            "batch_size": batch_size,
            "delivered": delivered,
            "next": turn,
        }

    def _counts(
        self, sizes: list[int], w: int, batches: int, batch_size: int
    ) -> tuple[list[int], int]:
        """Samples each shard has delivered this epoch, and whose turn is next.

        In a pass that resumed this epoch, worker *i* played shard
        ``(i + next) % w`` from where it had stopped, so the batches of this
        pass are counted on what was left, in that turn order, and added to
        what the earlier passes delivered.
        """
        base = self._base
        if base is None or base["epoch"] != self.epoch:
            return batch_counts(sizes, batches, batch_size)
        if base["num_workers"] != w or base["whole_records"] != self.whole_records:
            raise ValueError(
                f"{self.url}: this pass resumed epoch {self.epoch} with another sharding "
                f"({base['num_workers']} workers before, {w} now), so where it stands cannot be "
                "counted from batches; finish the epoch, or resume it with "
                f"{base['num_workers']} workers"
            )
        before = [base["delivered"].get(str(self.rank * w + k), 0) for k in range(w)]
        first = base["next"]
        role = [(i + first) % w for i in range(w)]  # the shard worker i played
        left = [sizes[r] - before[r] for r in role]
        taken, turn = batch_counts(left, batches, batch_size)
        done = list(before)
        for i, r in enumerate(role):
            done[r] += taken[i]
        return done, role[turn]

    def _check_binding(self, f: _StateFields, bound: bool) -> None:
        """What the samples and their order depend on, besides the sharding, must be this dataset's.

        *bound*: the state has a content digest, size and mode (version 3 on);
        without them only the seed and the shuffle can be compared.
        """
        digest = f.get("digest") if bound else None
        if bound and digest != self.content_digest:
            if not isinstance(digest, str):
                raise f.error(f"'digest' must be a string, got {_show(digest)}")
            raise f.error(
                f"saved for another dataset (content digest {digest[:12]}... vs "
                f"{self.content_digest[:12]}... of {self.url}): its records are not these "
                "(re-encoded since, or another dataset)"
            )
        f.same("seed", self.seed, "run")
        f.same("shuffle", self.shuffle, "run")
        if bound:
            f.same("size", _jsonable(self.size), "run")
            f.same("mode", self.mode, "run")

    def _check_state(self, state: Any) -> dict[str, Any]:
        """*state*, checked against this dataset, with every field present.

        The one place a resume state is read: :meth:`load_state_dict` and
        :meth:`delivered` take what it returns (and so may a ``state_dict``
        that counts for itself). The fields an older version did not write
        are filled in as it meant them.

        Raises
        ------
        DatasetError
            Naming the first field that is missing, malformed, out of range,
            or of another dataset or run.
        """
        f = _StateFields(state)
        kind = f.get("kind", "dataset")
        if kind == "mix":
            raise f.error(
                "this is a mix's state (MixedDataset.state_dict): load it into the mix that "
                "saved it, not into one of its datasets"
            )
        if kind != "dataset":
            raise f.error(f"'kind' must be 'dataset', got {_show(kind)}")
        version = f.integer("version", 1, STATE_VERSION)
        self._check_binding(f, bound=version >= 3)
        f.same("rank", self.rank, "run")
        f.same("world_size", self.world_size, "run")
        epoch = f.integer("epoch")
        scan = f.integer("scan", 1, self.num_scans)
        workers = f.integer("num_workers", 1, _MAX_WORKERS)
        old = version == 1  # whole records only, and no turn
        whole = f.flag("whole_records", True if old else _MISSING)
        turn = f.integer("next", 0, workers - 1, 0 if old else _MISSING)
        worker = _worker_field(f, version >= 4, workers)
        batch_size = None
        if worker is None:
            batch_size = f.integer("batch_size", 1, default=1 if old else _MISSING)
        sizes = self._shard_sizes(epoch, self.rank, workers, whole)
        delivered = _worker_counts(f, worker, sizes, epoch, self.rank * workers, turn)
        return {
            "version": version,
            "url": f.get("url", self.url),
            "epoch": epoch,
            "scan": scan,
            "whole_records": whole,
            "num_workers": workers,
            "worker": worker,
            "batch_size": batch_size,
            "delivered": delivered,
            "next": turn,
        }

    def _level_of(self, epoch: int) -> int:
        """The level this dataset reads in epoch *epoch* (its schedule's, or its current one)."""
        return self.scan if self.schedule is None else self.schedule.level(epoch + 1)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the epoch *state* describes: its next pass skips what was delivered.

        A state of the whole run (``state_dict(batches=, ...)``): call it
        before the ``DataLoader`` starts its workers (in a new process:
        after a kernel restart). One worker's state (``state_dict()``, as
        ``StatefulDataLoader`` gathers them): ``StatefulDataLoader`` calls it
        in that worker; its epoch and level are the next pass's, in this
        process only. The pass after that one is a normal epoch again.

        A state changes the epoch, the scan level and the position in the
        epoch, nothing else. The level is the one the epoch was saved at, so
        that the resumed samples are the ones the run would have given; a
        :class:`UserWarning` names both levels when this dataset would read
        another. A state saved by an earlier version (no content digest) is
        resumed with a warning that it cannot be checked to be of this
        dataset (its counts are still checked against it).

        Raises
        ------
        DatasetError
            If *state* is of another dataset (content digest), seed,
            shuffle, size, mode or sharding, of a mix, or malformed: the
            message names the field; if it is one worker's state loaded in
            another worker, or with another worker count.
        """
        checked = self._check_state(state)
        epoch, scan = checked["epoch"], checked["scan"]
        if checked["worker"] is not None:
            worker, workers, _ = _worker_info()
            if (checked["worker"], checked["num_workers"]) != (worker, workers):
                raise _worker_error("resume state", checked, worker, workers)
            if checked["whole_records"] != self.whole_records:
                deals = "whole records" if self.whole_records else "image ranges"
                raise DatasetError(
                    f"resume state: saved with whole_records={checked['whole_records']}, "
                    f"and this dataset deals {deals}"
                )
        if checked["version"] < 3:  # no digest
            warnings.warn(
                f"{self.url}: this resume state (version {checked['version']}, saved for "
                f"{str(checked['url']):.200}) has no content digest, so it cannot be checked "
                "to be of this dataset; resumed as it says (its counts fit this dataset)",
                UserWarning,
                stacklevel=2,
            )
        level = self._level_of(epoch)
        if scan != level:
            warnings.warn(
                f"{self.url}: the resume state was saved at scan level {scan}; epoch {epoch} "
                f"resumes at level {scan}, not at level {level} this dataset would read",
                UserWarning,
                stacklevel=2,
            )
        self._resume = checked
        if checked["worker"] is None:  # the run's: this dataset's epoch and level from now on
            self._shared[0] = epoch
            self.set_scan(scan)
            self._base = checked

    def delivered(self, state: dict[str, Any]) -> set[int]:
        """The dataset indices the run *state* describes has delivered this rank, in its epoch.

        Raises
        ------
        DatasetError
            As :meth:`load_state_dict`.
        """
        return self._delivered(self._check_state(state))

    def _delivered(self, state: dict[str, Any]) -> set[int]:
        """:meth:`delivered` of a state :meth:`_check_state` returned."""
        epoch, whole = state["epoch"], state["whole_records"]
        nshards = state["num_workers"] * self.world_size
        done: set[int] = set()
        for s, count in state["delivered"].items():
            done.update(self.sequence(epoch, int(s), nshards, whole)[:count])
        return done

    def _plan(self) -> _Pass:
        """The pass this process reads next: its epoch, level, shard and what it skips.

        One worker's state loaded in this process sets the epoch and level
        of that pass; else they are the shared ones, and a state of the run
        is resumed when it is of that epoch.
        """
        worker, workers, _ = _worker_info()
        state = self._resume
        if state is not None and state["worker"] is not None:
            epoch, scan = state["epoch"], state["scan"]
        else:
            epoch, scan = (int(v) for v in self._shared[:2].tolist())
            if state is not None and state["epoch"] != epoch:
                state = None
        same = (
            state is not None
            and state["num_workers"] == workers
            and state["whole_records"] == self.whole_records
        )
        turn = int(state["next"]) if same and state is not None else 0
        shard = self.rank * workers + (worker + turn) % workers
        skip: set[int] | int = 0
        if state is not None:  # a count (same sharding) or a set of indices (another)
            skip = int(state["delivered"].get(str(shard), 0)) if same else self._delivered(state)
        delivered = skip if isinstance(skip, int) else None
        nshards = self.world_size * workers
        return _Pass(epoch, scan, worker, workers, turn, shard, nshards, skip, delivered)

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

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        # the pass is fixed here, not at the first sample: a StatefulDataLoader asks for
        # state_dict() between iter() and the first next()
        pos = self._plan()
        self._shared[2] = _reader(self._resume)
        self._resume = None  # one pass only (in this process)
        self._position = pos
        return self._read(pos)

    def _read(self, pos: _Pass) -> Iterator[tuple[Any, Any]]:
        """The samples (or batches) of pass *pos*; a worker reports its counts as it goes."""
        reporter = self._reporter()
        try:
            for item in self._made(pos):
                if reporter is not None:
                    reporter.tick()
                yield item
        finally:
            if reporter is not None:
                reporter.flush()

    def _made(self, pos: _Pass) -> Iterator[tuple[Any, Any]]:
        """The samples (or batches) of pass *pos*, counted in it as they are yielded."""
        if self.batch_size is None:
            for sample in self._samples(pos.epoch, pos.scan, pos.shard, pos.nshards, pos.skip):
                if pos.delivered is not None:
                    pos.delivered += 1
                yield sample
            return
        torch = _torch()
        clock = self.dataset().stats.clock(pos.scan)
        pairs = self._pairs(pos.epoch, pos.scan, pos.shard, pos.nshards, pos.skip)
        for images, labels in pipeline.batch(pairs, self.batch_size, clock=clock):
            # one (B, C, H, W) uint8 tensor per batch: one pickle across processes, not B
            start = time.perf_counter()
            t = torch.from_numpy(images)
            t = (t.unsqueeze(1) if t.ndim == 3 else t.permute(0, 3, 1, 2)).contiguous()
            clock.batched(time.perf_counter() - start, batches=0)  # part of the batch counted
            if pos.delivered is not None:
                pos.delivered += len(labels)
            yield t, torch.from_numpy(labels)


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
    _torch()
    url = source.url if isinstance(source, PCRDataset) else str(source)
    options = dict(source.options) if isinstance(source, PCRDataset) else {}
    unknown = set(open_options) - _OPEN_OPTIONS
    if unknown:
        raise TypeError(
            f"torch_dataset got unexpected keyword(s) {sorted(unknown)}; besides its own it "
            f"takes open_dataset's: {sorted(_OPEN_OPTIONS)}"
        )
    options.update(open_options)
    if options.get("cache_max_bytes") is not None and options.get("cache_dir") is None:
        raise ValueError(f"{url}: cache_max_bytes needs a cache_dir")
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
