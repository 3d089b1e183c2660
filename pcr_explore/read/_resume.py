"""Resumable passes for PyTorch: shards, the DataLoader's turns, and the one resume state.

The PyTorch adapter (:class:`~pcr_explore.read.loader.PCRIterableDataset`)
and the mix (:class:`~pcr_explore.read.mix.MixedDataset`) are one state
machine, :class:`Resumable`, over their *parts*: the adapter is its own one
part, a mix draws from several. Each subclass says what a shard holds and
how it is read; everything about where an epoch stands lives here.

**A pass.** Every epoch, the images are cut into ``world_size *
num_workers`` shards; DataLoader worker *i* of rank *r* reads shard ``r *
num_workers + (i + turn) % num_workers``. A fresh pass has turn 0; a pass
that resumes an epoch with the same sharding takes the turn its state says
is next, so the DataLoader's round robin goes on where it stopped. Where a
pass stands is a count: the samples (a mix: the draws) its shard has
delivered, those it skipped on resuming included.

**The resume state**, JSON-ready, one format for both::

    format       "pcr_explore.resume/1"
    kind         "dataset" or "mix"
    epoch, rank, world_size, num_workers
    worker       the DataLoader worker whose state it is (a StatefulDataLoader
                 keeps one per worker), or null: the whole run's, counted from
                 batches (then batch_size is the DataLoader's)
    delivered    {shard number (a string): samples delivered}; a worker's: its
                 own shard alone, or null in a pass that resumed another
                 sharding (what it skips is then a set, not a count)
    next         whose turn is next
    a dataset's  url, digest, scan, seed, shuffle, size, mode, whole_records
    a mix's      seed, shares, samples, and datasets: one such entry each

A state is bound to what its counts mean: each dataset's content digest
(SHA-256 of its manifest's records), seed, shuffle, size and mode, and the
rank and world size (a mix's: its seed, shares and epoch length too). A
state of another format (one written before this format, with a
``version``; a dict ``state_dict`` did not write), of another dataset or run,
or malformed, raises :class:`~pcr_explore.errors.DatasetError` naming what
was wrong, and changes nothing.
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._pool import end_with
from ..errors import DatasetError
from ..jpeg import Size
from ._tally import Reporter
from .schedule import ScanSchedule

# PyTorch is imported where it is needed (import_torch), so that importing the adapter
# or the mix stays light. Their classes cannot subclass torch's IterableDataset without
# importing torch when the class is defined; instead Resumable is registered as a
# virtual subclass of it (it is an ABC), and with it every subclass, when the first
# one is made or unpickled: that is what DataLoader's isinstance(dataset,
# IterableDataset) asks (torch's IterableDataset has no behaviour of its own that a
# DataLoader uses). Type checkers see the subclass. Pickles name the class by its
# module, which imports without torch, so spawn and forkserver workers find it.
if TYPE_CHECKING:
    from torch.utils.data import IterableDataset

    _Base = IterableDataset[Any]
else:
    _Base = object

FORMAT = "pcr_explore.resume/1"
_CLASSES = {"dataset": "PCRIterableDataset", "mix": "MixedDataset"}
_MAX_INT = (1 << 63) - 1  # what the shared epoch (an int64) holds
# a resume state naming more DataLoader workers than this is not one a loader wrote
_MAX_WORKERS = 4096
# the slots of the shared tensor: the epoch, who read the latest pass, the level
_EPOCH, _READER, SCAN_SLOT = 0, 1, 2
# who read the latest pass: this process, DataLoader workers, or workers that resumed
# their own states (StatefulDataLoader)
_READ_HERE, _READ_IN_WORKERS, _READ_RESUMED = 0, 1, 2


def import_torch() -> Any:
    """The ``torch`` module, imported on first use; registers :class:`Resumable`.

    Without PyTorch, the import raises :class:`~pcr_explore.errors.MissingExtraError`
    naming the ``[torch]`` extra (:mod:`pcr_explore._public`'s finder).
    """
    import torch
    from torch.utils.data import IterableDataset

    IterableDataset.register(Resumable)
    return torch


def worker_info() -> tuple[int, int, bool]:
    """``(worker, workers, in_worker)`` of this process: a DataLoader worker's, or ``(0, 1)``."""
    info = import_torch().utils.data.get_worker_info()
    if info is None:
        return 0, 1, False
    return int(info.id), int(info.num_workers), True


def show(value: Any) -> str:
    """A value in a message: its repr, cut short, and its type."""
    return f"{value!r:.60} ({type(value).__name__})"


def _jsonable(size: Size | None) -> Any:
    """*size* as it reads back from JSON: a list for a tuple, Python ints for numpy's."""
    if size is None:
        return None
    return [int(v) for v in size] if isinstance(size, (tuple, list)) else int(size)


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


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"state_dict: {name} must be an integer, got {show(value)}")
    if value < minimum:
        raise ValueError(f"state_dict: {name} must be at least {minimum}, got {value}")
    return int(value)


def _count_args(
    batches: Any, batch_size: Any, num_workers: Any, made: int | None
) -> tuple[int, int, int]:
    """``state_dict``'s arguments, checked: ``(batches, batch_size, workers)``.

    *made* is the batch size a dataset makes in its workers (None: none);
    the DataLoader's batches are then those, so *batch_size* must be it.
    ``num_workers=0`` counts as one worker.
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


class Fields:
    """The fields of a resume state, read with one :class:`DatasetError` per problem.

    Every message starts with *where* (``"resume state"``) and names the
    field, what it must be and what it is.
    """

    def __init__(self, state: Any, where: str = "resume state") -> None:
        if not isinstance(state, Mapping):
            raise DatasetError(
                f"{where} must be a dict, as state_dict() returns, got {show(state)}"
            )
        self.state, self.where = state, where

    def error(self, what: str) -> DatasetError:
        """An error about this state."""
        return DatasetError(f"{self.where}: {what}")

    def get(self, key: str) -> Any:
        """Field *key*; a missing one is an error."""
        if key not in self.state:
            raise self.error(f"no {key!r} (state_dict() writes it)")
        return self.state[key]

    def integer(self, key: str, lo: int = 0, hi: int = _MAX_INT) -> int:
        """Field *key*, an integer within *lo*..*hi* (a bool or a float is refused)."""
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{key!r} must be an integer, got {show(value)}")
        if not lo <= value <= hi:
            raise self.error(f"{key!r} must be within {lo}..{hi}, got {value}")
        return int(value)

    def flag(self, key: str) -> bool:
        """Field *key*, true or false."""
        value = self.get(key)
        if not isinstance(value, bool):
            raise self.error(f"{key!r} must be true or false, got {show(value)}")
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
        """``delivered``: shards of this rank (the keys of *sizes*), each within its samples."""
        value = self.get("delivered")
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise self.error(
                f"'delivered' must map shard numbers (as strings) to counts, got {show(value)}"
            )
        unknown = sorted(set(value) - set(sizes))
        if unknown:
            raise self.error(
                f"'delivered' names shards {unknown!r:.60} that this rank does not have "
                f"(its shards: {sorted(sizes, key=int)})"
            )
        for key, n in value.items():
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= sizes[key]:
                raise self.error(
                    f"'delivered' gives shard {key} {show(n)} samples; it must be an integer "
                    f"within 0..{sizes[key]}, the samples that shard has in epoch {epoch}"
                )
        return {key: int(n) for key, n in value.items()}

    def worker_counts(
        self, worker: int | None, sizes: dict[str, int], epoch: int, turn: int
    ) -> dict[str, int]:
        """``delivered``: every shard's count (the run's state), or one worker's own shard's.

        Worker *worker* reads the shard ``(worker + turn) % workers`` places
        into *sizes* (this rank's shards, in order).
        """
        if worker is None:
            return self.counts(sizes, epoch)
        if self.get("delivered") is None:
            raise self.error(
                f"worker {worker} read a pass that resumed a state of another worker count "
                "(state_dict(batches=, ...)): where it stood is not a count, so it cannot be "
                "resumed; resume that epoch from the state it started from, or from a "
                "checkpoint saved in another epoch"
            )
        counts = self.counts(sizes, epoch)
        shard = list(sizes)[(worker + turn) % len(sizes)]
        if list(counts) != [shard]:
            raise self.error(
                f"'delivered' of worker {worker} must count its own shard alone ({shard}, with "
                f"'next' {turn}), got shards {sorted(counts, key=int)}"
            )
        return counts


class Part(Protocol):
    """What a resume state records of one dataset (a :class:`PCRIterableDataset`)."""

    url: str
    content_digest: str
    seed: int
    shuffle: bool
    size: Size | None
    mode: str | None
    whole_records: bool
    num_scans: int
    schedule: ScanSchedule | None

    @property
    def scan(self) -> int: ...

    def set_scan(self, scan: int | None) -> None: ...

    def _reporter(self) -> Reporter | None: ...

    def sequence(
        self, epoch: int, shard: int, num_shards: int, whole_records: bool | None = None
    ) -> list[int]: ...


def entry(part: Part, scan: int) -> dict[str, Any]:
    """What a state keeps of *part*, read at level *scan*."""
    return {
        "url": part.url,  # for people reading it; a state is bound to the digest
        "digest": part.content_digest,
        "scan": scan,
        "seed": int(part.seed),
        "shuffle": part.shuffle,
        "size": _jsonable(part.size),
        "mode": part.mode,
        "whole_records": part.whole_records,
    }


def check_entry(f: Fields, part: Part) -> tuple[int, bool]:
    """*part*'s entry in a state, checked: its level and its ``whole_records``."""
    digest = f.get("digest")
    if digest != part.content_digest:
        if not isinstance(digest, str):
            raise f.error(f"'digest' must be a string, got {show(digest)}")
        raise f.error(
            f"saved for another dataset (content digest {digest[:12]}... vs "
            f"{part.content_digest[:12]}... of {part.url}): its records are not these "
            "(re-encoded since, or another dataset)"
        )
    f.same("seed", part.seed, "run")
    f.same("shuffle", part.shuffle, "run")
    f.same("size", _jsonable(part.size), "run")
    f.same("mode", part.mode, "run")
    return f.integer("scan", 1, part.num_scans), f.flag("whole_records")


def _level_of(part: Part, epoch: int) -> int:
    """The level *part* reads in epoch *epoch* (its schedule's, or its current one)."""
    return part.scan if part.schedule is None else part.schedule.level(epoch + 1)


@dataclass(frozen=True)
class Resumed:
    """A resume state, checked: per part its level and dealing, and where the epoch stood."""

    epoch: int
    levels: list[int]
    wholes: list[bool]
    workers: int
    worker: int | None  # None: the whole run's state
    delivered: dict[str, int] | None
    turn: int


@dataclass
class Pass:
    """One pass of one process over its shard: what it reads, and how far it has come.

    *resumes* is the state of this epoch it resumes (None: a fresh pass);
    *delivered* counts the shard's samples delivered so far, those the pass
    skipped included, or is None when it resumed another sharding (what it
    skips is then a set of samples, not a count).
    """

    epoch: int
    levels: list[int]
    worker: int
    workers: int
    turn: int
    shard: int
    nshards: int
    resumes: Resumed | None
    delivered: int | None

    def count(self, n: int) -> None:
        """*n* more samples delivered."""
        if self.delivered is not None:
            self.delivered += n


class Resumable(_Base):
    """The state machine of a resumable ``IterableDataset`` (see the module docstring).

    A subclass sets :attr:`KIND`, ``rank``, ``world_size`` and a label for
    messages, calls :meth:`_init_resume`, and gives :attr:`_parts`,
    :meth:`_shard_sizes`, :meth:`_taken`, :meth:`_binding`,
    :meth:`_check_binding` and :meth:`_read`.
    """

    KIND = ""
    _LOCAL: tuple[str, ...] = ("_position",)  # this process's, not pickled to workers
    rank: int
    world_size: int
    _label: str

    def _init_resume(self) -> None:
        # [epoch, reader, scan]: pickled to workers as a handle to the same memory
        torch = import_torch()
        self._shared = torch.zeros(3, dtype=torch.int64).share_memory_()
        self._resume: Resumed | None = None  # the state the next pass resumes
        self._base: Resumed | None = None  # the run's state this epoch resumed from
        self._position: Pass | None = None  # this process's latest pass

    def __getstate__(self) -> dict[str, Any]:
        state = {k: None if k in self._LOCAL else v for k, v in self.__dict__.items()}
        state["_home"] = os.getpid()  # the process that hands the dataset to its workers
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import_torch()  # an IterableDataset in the process that unpickles it too
        self.__dict__.update(state)

    # -- what a subclass gives ----------------------------------------------------
    @property
    def _parts(self) -> Sequence[Part]:
        raise NotImplementedError

    @property
    def _made(self) -> int | None:
        """The batch size the workers make (None: they yield samples)."""
        return None

    def _shard_sizes(self, epoch: int, workers: int, wholes: list[bool]) -> dict[str, int]:
        """Samples each shard of this rank gives in epoch *epoch*, by shard number (a string)."""
        raise NotImplementedError

    def _taken(
        self, epoch: int, shard: int, nshards: int, done: int, wholes: list[bool]
    ) -> list[int]:
        """Samples of each part shard *shard* has taken in its first *done*."""
        raise NotImplementedError

    def _binding(self, levels: list[int]) -> dict[str, Any]:
        """The fields that bind a state to this dataset or mix, its parts at *levels*."""
        raise NotImplementedError

    def _check_binding(self, f: Fields) -> tuple[list[int], list[bool]]:
        """:meth:`_binding`'s fields, checked: each part's level and ``whole_records``."""
        raise NotImplementedError

    def _read(self, pos: Pass) -> Iterator[tuple[Any, int, int]]:
        """Pass *pos*: each item, the samples in it, and the part they come from."""
        raise NotImplementedError

    # -- the epoch ----------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The epoch of the next pass."""
        return int(self._shared[_EPOCH])

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass (its order, and its draws in a mix)."""
        if self._base is not None and self._base.epoch != int(epoch):
            self._base = None
        self._shared[_EPOCH] = int(epoch)

    # -- states -------------------------------------------------------------------
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
        delivered *n* samples of its shard" (a mix: made *n* draws). The
        loader keeps one per worker in its own ``state_dict()``, and gives
        each back to its worker's copy through :meth:`load_state_dict`.

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
            JSON-ready (docs/API.md, "Resume states", lists its fields):
            the epoch, the levels, the samples each shard
            (or this worker's shard) has delivered, and what they are counted
            in: content digests, seeds, shuffles, sizes and modes, the
            sharding.

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
            pos = self._current_pass()
            epoch, levels, worker, workers = pos.epoch, pos.levels, pos.worker, pos.workers
            turn, size = pos.turn, None
            delivered = None if pos.delivered is None else {str(pos.shard): pos.delivered}
        else:
            n, size, workers = _count_args(batches, batch_size, num_workers, self._made)
            if int(self._shared[_READER]) == _READ_RESUMED:
                raise ValueError(
                    f"{self._label}: this pass resumed a StatefulDataLoader's states in its "
                    "workers, so a count of batches does not say where it stands: take the "
                    "loader's state_dict()"
                )
            epoch, levels, worker = self.epoch, [p.scan for p in self._parts], None
            sizes = self._shard_sizes(epoch, workers, [p.whole_records for p in self._parts])
            done, turn = self._counts(list(sizes.values()), workers, n, size)
            delivered = dict(zip(sizes, done))
        return {
            "format": FORMAT,
            "kind": self.KIND,
            **self._binding(levels),
            "epoch": epoch,
            "rank": self.rank,
            "world_size": self.world_size,
            "num_workers": workers,
            "worker": worker,
            "batch_size": size,
            "delivered": delivered,
            "next": turn,
        }

    def _current_pass(self) -> Pass:
        """The latest pass of this process (before its first: the one the next would read)."""
        _, _, in_worker = worker_info()
        if not in_worker and int(self._shared[_READER]):
            raise ValueError(
                f"{self._label}: DataLoader workers read this {self.KIND}'s passes, so this "
                "process does not know where the epoch stands: use torchdata's "
                "StatefulDataLoader and its state_dict(), or count the batches the loop has "
                "taken: state_dict(batches=, batch_size=, num_workers=)"
            )
        return self._position or self._plan()

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
        if base is None or base.epoch != self.epoch:
            return batch_counts(sizes, batches, batch_size)
        if base.workers != w or base.wholes != [p.whole_records for p in self._parts]:
            raise ValueError(
                f"{self._label}: this pass resumed epoch {self.epoch} with another sharding "
                f"({base.workers} workers before, {w} now), so where it stands cannot be "
                f"counted from batches; finish the epoch, or resume it with {base.workers} "
                "workers"
            )
        delivered = base.delivered or {}
        before = [delivered.get(str(self.rank * w + k), 0) for k in range(w)]
        role = [(i + base.turn) % w for i in range(w)]  # the shard worker i played
        taken, turn = batch_counts([sizes[r] - before[r] for r in role], batches, batch_size)
        done = list(before)
        for i, r in enumerate(role):
            done[r] += taken[i]
        return done, role[turn]

    def _check_state(self, state: Any) -> Resumed:
        """*state*, checked against this dataset or mix: the one place a state is read.

        Raises
        ------
        DatasetError
            Naming the first field that is missing, malformed, out of range,
            or of another format, dataset, mix or run.
        """
        f = Fields(state)
        if "format" not in f.state:
            if "version" in f.state:
                raise f.error(
                    f"written in an earlier format ('version' {f.state['version']!r:.20}, no "
                    "'format'), which this version of pcr_explore does not read; save a new "
                    "state with state_dict()"
                )
            raise f.error(
                f"no 'format': not a state that state_dict() wrote (its keys: "
                f"{sorted(map(str, f.state))!r:.120})"
            )
        if f.state["format"] != FORMAT:
            raise f.error(f"'format' must be {FORMAT!r}, got {show(f.state['format'])}")
        kind = f.get("kind")
        if kind != self.KIND:
            if kind in _CLASSES:
                raise f.error(
                    f"this is a {kind}'s state ({_CLASSES[kind]}.state_dict), not a "
                    f"{self.KIND}'s: load it into the {kind} that saved it"
                )
            raise f.error(f"'kind' must be {self.KIND!r}, got {show(kind)}")
        levels, wholes = self._check_binding(f)
        what = "run" if self.KIND == "dataset" else self.KIND
        f.same("rank", self.rank, what)
        f.same("world_size", self.world_size, what)
        epoch = f.integer("epoch")
        workers = f.integer("num_workers", 1, _MAX_WORKERS)
        turn = f.integer("next", 0, workers - 1)
        worker = None if f.get("worker") is None else f.integer("worker", 0, workers - 1)
        if worker is None:
            f.integer("batch_size", 1)
        sizes = self._shard_sizes(epoch, workers, wholes)
        delivered = f.worker_counts(worker, sizes, epoch, turn)
        return Resumed(epoch, levels, wholes, workers, worker, delivered, turn)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the epoch *state* describes: its next pass skips what was delivered.

        A state of the whole run (``state_dict(batches=, ...)``): call it
        before the ``DataLoader`` starts its workers (in a new process:
        after a kernel restart). One worker's state (``state_dict()``, as
        ``StatefulDataLoader`` gathers them): ``StatefulDataLoader`` calls it
        in that worker; its epoch and levels are the next pass's, in this
        process only. The pass after that one is a normal epoch again.

        A state changes the epoch, the scan levels and the position in the
        epoch, nothing else. The levels are the ones the epoch was saved at,
        so that the resumed samples are the ones the run would have given; a
        :class:`UserWarning` names them when a dataset would read another.

        Raises
        ------
        DatasetError
            If *state* is of another format, dataset (content digest), seed,
            shuffle, size, mode or sharding, of a mix given to a dataset (or
            the reverse), of another mix (weights, epoch length), or
            malformed: the message names the field; if it is one worker's
            state loaded in another worker, or with another worker count.
        """
        checked = self._check_state(state)
        wholes = [p.whole_records for p in self._parts]
        if checked.worker is not None:
            worker, workers, _ = worker_info()
            if (checked.worker, checked.workers) != (worker, workers):
                raise self._worker_error(checked, worker, workers)
            if checked.wholes != wholes:
                raise DatasetError(
                    f"resume state: saved with whole_records={checked.wholes}, and this "
                    f"{self.KIND} deals whole_records={wholes}"
                )
        self._warn_levels(checked)
        if checked.worker is None:  # the run's: the epoch and levels from now on
            self.set_epoch(checked.epoch)
            for p, level in zip(self._parts, checked.levels):
                p.set_scan(level)
            self._base = checked
        self._resume = checked

    def _worker_error(self, state: Resumed, worker: int, workers: int) -> DatasetError:
        """The error for one worker's *state* loaded in worker *worker* of *workers*."""
        k, n = state.worker, state.workers
        return DatasetError(
            f"resume state: this is the state of DataLoader worker {k} of {n} (a "
            f"StatefulDataLoader keeps one per worker); it resumes in worker {k} of a "
            f"StatefulDataLoader with num_workers={n if n > 1 else '0 or 1'}, and this "
            f"process is worker {worker} of {workers}. torchdata resumes a loader only with "
            "the worker count it was saved with; to resume with another, count the batches "
            "(state_dict(batches=, batch_size=, num_workers=)) and use a plain DataLoader"
        )

    def _warn_levels(self, state: Resumed) -> None:
        """A :class:`UserWarning` where *state* resumes a part at another level than it reads."""
        e = state.epoch
        changed = [
            (i, p, s, _level_of(p, e))
            for i, (p, s) in enumerate(zip(self._parts, state.levels))
            if s != _level_of(p, e)
        ]
        if not changed:
            return
        if self.KIND == "dataset":
            _, p, s, level = changed[0]
            text = (
                f"{p.url}: the resume state was saved at scan level {s}; epoch {e} resumes at "
                f"level {s}, not at level {level} this dataset would read"
            )
        else:
            text = f"the mix's resume state was saved at other levels: epoch {e} resumes " + (
                "; ".join(f"dataset {i} ({p.url}) level {s}, not {lv}" for i, p, s, lv in changed)
            )
        warnings.warn(text, UserWarning, stacklevel=3)

    def _delivered(self, state: Resumed) -> list[set[int]]:
        """Per part, the indices the run *state* (checked) has delivered this rank."""
        nshards = self.world_size * state.workers
        out: list[set[int]] = [set() for _ in self._parts]
        for s, done in (state.delivered or {}).items():
            taken = self._taken(state.epoch, int(s), nshards, done, state.wholes)
            for k, (p, whole) in enumerate(zip(self._parts, state.wholes)):
                seq = p.sequence(state.epoch, int(s), nshards, whole)
                out[k].update(itertools.islice(itertools.cycle(seq), taken[k]) if seq else ())
        return out

    # -- passes -------------------------------------------------------------------
    def _plan(self) -> Pass:
        """The pass this process reads next: its epoch, levels, shard and what it resumes.

        One worker's state loaded in this process sets the epoch and levels
        of that pass; else they are the shared ones, and a state of the run
        is resumed when it is of that epoch.
        """
        worker, workers, _ = worker_info()
        state = self._resume
        if state is not None and state.worker is not None:
            epoch, levels = state.epoch, state.levels
        else:
            epoch, levels = self.epoch, [p.scan for p in self._parts]
            if state is not None and state.epoch != epoch:
                state = None
        same = (
            state is not None
            and state.workers == workers
            and state.wholes == [p.whole_records for p in self._parts]
        )
        turn = state.turn if same and state is not None else 0
        shard = self.rank * workers + (worker + turn) % workers
        delivered: int | None = 0
        if state is not None:  # a count (same sharding), or a set to skip (another)
            delivered = (state.delivered or {}).get(str(shard), 0) if same else None
        nshards = self.world_size * workers
        return Pass(epoch, levels, worker, workers, turn, shard, nshards, state, delivered)

    def __iter__(self) -> Iterator[Any]:
        # the pass is fixed here, not at the first sample: a StatefulDataLoader asks for
        # state_dict() between iter() and the first next()
        pos = self._plan()
        _, _, in_worker = worker_info()
        if in_worker:
            end_with(self.__dict__.get("_home") or os.getppid())
        resumed = self._resume is not None and self._resume.worker is not None
        reader = _READ_HERE if not in_worker else _READ_RESUMED if resumed else _READ_IN_WORKERS
        self._shared[_READER] = reader
        self._resume = None  # one pass only (in this process)
        self._position = pos
        return self._counted(pos)

    def _counted(self, pos: Pass) -> Iterator[Any]:
        """The items of pass *pos*, counted in it as they are yielded.

        In a DataLoader worker, each part's reads are reported to its
        ``stats`` as they go.
        """
        reporters = [p._reporter() for p in self._parts]
        try:
            for item, n, k in self._read(pos):
                pos.count(n)
                reporter = reporters[k]
                if reporter is not None:
                    reporter.tick()
                yield item
        finally:
            for reporter in reporters:
                if reporter is not None:
                    reporter.flush()
