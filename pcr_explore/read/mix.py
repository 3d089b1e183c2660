"""Several PCR datasets as one stream for PyTorch, each at its own scan level.

``mix([a, b], weights=[3, 1], seed=0)`` draws, for every sample, which
dataset it comes from, with probabilities proportional to *weights*; each
dataset then gives its next sample in its own (seeded, sharded) epoch
order, at its own level. The draws depend only on the seed, the epoch and
the worker's shard, so a run is repeated exactly.

**Epoch length.** An epoch has ``len(mix)`` samples: by default as many as
make the first dataset to run out, at its weight, run out exactly
(``min(len(d) / share(d))``), so no dataset repeats a sample within an
epoch on average; ``samples=N`` sets it. The samples are split evenly
between the ranks, then between each rank's DataLoader workers, and each
worker mixes its own equal slice of every dataset's images (image ranges,
as :func:`~pcr_explore.read.loader.torch_dataset` shards them), so every
worker draws from every dataset that has at least one image per worker.
A worker whose slice of a dataset runs out starts that slice's next pass.

**Resume.** :meth:`MixedDataset.state_dict` and
:meth:`~MixedDataset.load_state_dict` work as the adapter's: under
``torchdata``'s ``StatefulDataLoader`` (``state_dict()`` without arguments,
one state per worker: "worker *k* of *w* has made *n* draws"), or from a
count of batches with a plain ``DataLoader``. With the same worker count,
the resumed epoch gives exactly the samples the uninterrupted one would have
given next, in the same order (the draws and every dataset's position are
replayed from the manifests); with another (counted batches only), the rest
of the epoch has the samples the epoch still owed (``len(mix)`` in all),
none of them one already delivered (within each dataset's pass), drawn
anew. A mix's
state is bound as a dataset's is, to every dataset's content digest, seed,
shuffle, size and mode, and to the mix's seed, shares, epoch length and
sharding; a malformed state, or one of another mix, is refused with a
:class:`~pcr_explore.errors.DatasetError` naming the field. It changes the
epoch, each dataset's level (with a warning naming the levels that
change) and the position in the epoch (one worker's state: of its next pass
only). A state saved by version 1 (no digests) is resumed with a warning.

**Where the time goes.** :attr:`MixedDataset.stats` holds, for each
dataset, what it read in this process and in every DataLoader worker:
bytes, requests, and the seconds of each read stage at its level
(:class:`~pcr_explore.read.ReadStats`).
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._public import public
from ..errors import DatasetError
from ._stats import ReadStats
from .loader import (
    _MAX_WORKERS,
    _MISSING,
    PCRIterableDataset,
    _Base,
    _check_count_args,
    _check_counted,
    _reader,
    _show,
    _StateFields,
    _torch,
    _worker_counts,
    _worker_error,
    _worker_field,
    _worker_info,
    batch_counts,
    torch_dataset,
)

__all__ = ["MixedDataset", "mix"]

# 3: a state may be one DataLoader worker's ("worker"), as StatefulDataLoader keeps them;
# 2: bound to every dataset's content digest, size and mode; 1: to their URLs
MIX_STATE_VERSION = 3


def _split(n: int, parts: int, i: int) -> int:
    """Part *i*'s share when *n* is split into *parts* as evenly as possible."""
    return n // parts + (1 if i < n % parts else 0)


def _draws(
    rng: np.random.Generator, shares: np.ndarray, empty: set[int], count: int
) -> Iterator[int]:
    """Which dataset each of *count* samples comes from; datasets in *empty* are never drawn.

    A draw of an empty dataset is drawn again among the others by their
    shares; with every dataset empty the draws stop.

    Examples
    --------
    >>> list(_draws(np.random.default_rng(0), np.array([0.5, 0.5]), {1}, 3))
    [0, 0, 0]
    """
    choices = rng.choice(len(shares), size=count, p=shares)
    for k in choices:
        k = int(k)
        if k in empty:
            left = [i for i in range(len(shares)) if i not in empty]
            if not left:
                return
            k = int(rng.choice(left, p=shares[left] / shares[left].sum()))
        yield k


# what a mix's state keeps of each dataset's
_PER_DATASET = ("url", "digest", "scan", "seed", "shuffle", "size", "mode", "whole_records")


@dataclass
class _MixPass:
    """One pass of one process over its shard of the mix (see the adapter's ``_Pass``).

    *draws* are the datasets of the samples still to come; *skips* what each
    dataset's first pass leaves out; *delivered* the draws made so far, the
    skipped ones included (None when the pass resumed another sharding).
    """

    epoch: int
    scans: list[int]
    worker: int
    workers: int
    turn: int
    shard: int
    nshards: int
    draws: Iterator[int]
    skips: list[set[int] | int]
    delivered: int | None


@public("pcr_explore.read")
class MixedDataset(_Base):
    """Samples drawn from several :class:`PCRIterableDataset` by weight (see :func:`mix`)."""

    def __init__(
        self,
        parts: Sequence[PCRIterableDataset],
        weights: Sequence[float],
        seed: int,
        samples: int | None,
    ) -> None:
        self.parts = list(parts)
        sharding = {(p.rank, p.world_size) for p in self.parts}
        if len(sharding) != 1:
            raise ValueError(
                f"the datasets of a mix must share one rank and world_size, got {sorted(sharding)}"
            )
        self.rank, self.world_size = sharding.pop()
        w = np.asarray(weights, np.float64)
        self.shares = w / w.sum()
        self.seed = seed
        self.samples = samples
        # [epoch, read in workers], pickled to workers as a handle to the same memory
        torch = _torch(MixedDataset)
        self._shared = torch.zeros(2, dtype=torch.int64).share_memory_()
        self._resume: dict[str, Any] | None = None
        self._position: _MixPass | None = None  # this process's latest pass

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_position"] = None  # a pass is this process's
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        _torch(MixedDataset)  # an IterableDataset in the process that unpickles it too
        self.__dict__.update(state)

    def __len__(self) -> int:
        if self.samples is not None:
            return self.samples
        return int(min(len(p) / s for p, s in zip(self.parts, self.shares)))

    @property
    def epoch(self) -> int:
        """The epoch of the next pass."""
        return int(self._shared[0])

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass, for the draws and for every dataset's order."""
        self._shared[0] = int(epoch)
        for p in self.parts:
            p.set_epoch(epoch)

    @property
    def stats(self) -> tuple[ReadStats, ...]:
        """What each dataset has read, here and in the DataLoader workers (in ``parts`` order).

        Each is its dataset's :attr:`PCRIterableDataset.stats
        <pcr_explore.read.loader.PCRIterableDataset.stats>`: bytes,
        requests, and the seconds of each read stage at its level, summed
        over the workers. Copies: reset with :meth:`reset_stats`.
        """
        return tuple(p.stats for p in self.parts)

    def reset_stats(self) -> None:
        """Zero every dataset's :attr:`stats` (call it between passes)."""
        for p in self.parts:
            p.reset_stats()

    def quota(self, worker: int, workers: int) -> int:
        """Samples worker *worker* of *workers* of this rank gives per epoch."""
        return _split(_split(len(self), self.world_size, self.rank), workers, worker)

    # -- resume -------------------------------------------------------------------
    def _consumed(self, epoch: int, shard: int, nshards: int, quota: int, done: int) -> list[int]:
        """Samples of each dataset shard *shard* has taken after its first *done* draws."""
        sizes = [len(p.sequence(epoch, shard, nshards)) for p in self.parts]
        rng = np.random.default_rng([self.seed, epoch, shard])
        taken = [0] * len(self.parts)
        empty = {k for k, n in enumerate(sizes) if n == 0}
        for k in itertools.islice(_draws(rng, self.shares, empty, quota), done):
            taken[k] += 1
        return taken

    def state_dict(
        self,
        *,
        batches: int | None = None,
        batch_size: int | None = None,
        num_workers: int | None = None,
    ) -> dict[str, Any]:
        """Where the mixed epoch stands: this process's pass, or after *batches* batches.

        The arguments are the adapter's
        (:meth:`~pcr_explore.read.loader.PCRIterableDataset.state_dict`):
        none, as ``StatefulDataLoader`` calls it in each worker (this
        worker's draws so far), or the three counts of a plain
        ``DataLoader``. The result is JSON-ready: the epoch, the seed, the
        shares, every dataset's content digest, level and settings, the
        sharding, and the samples each worker (or this one) has delivered;
        the datasets' positions follow from the draws.

        Raises
        ------
        TypeError
            If an argument is not an integer.
        ValueError
            If *batches* or *num_workers* is negative, *batch_size* is below
            1, *batches* is more than the epoch holds, or this pass's
            workers resumed their own states (StatefulDataLoader); without
            arguments, in a process whose passes DataLoader workers read.
        """
        if batches is None and batch_size is None and num_workers is None:
            pos = self._current_pass()
            delivered = None if pos.delivered is None else {str(pos.shard): pos.delivered}
            return self._state(
                delivered, pos.turn, pos.workers, None, pos.epoch, pos.scans, pos.worker
            )
        n, size, w = _check_count_args(batches, batch_size, num_workers)
        _check_counted(int(self._shared[1]), "mix")
        done, turn = batch_counts([self.quota(i, w) for i in range(w)], n, size)
        delivered = {str(self.rank * w + i): k for i, k in enumerate(done)}
        return self._state(delivered, turn, w, size)

    def _current_pass(self) -> _MixPass:
        """The latest pass of this process (before its first: the one the next would read)."""
        _, _, in_worker = _worker_info()
        if not in_worker and int(self._shared[1]):
            raise ValueError(
                "DataLoader workers read this mix's passes, so this process does not know "
                "where the epoch stands: use torchdata's StatefulDataLoader and its "
                "state_dict(), or count the batches the loop has taken: "
                "state_dict(batches=, batch_size=, num_workers=)"
            )
        return self._position or self._plan()

    def _state(
        self,
        delivered: dict[str, int] | None,
        turn: int,
        workers: int,
        batch_size: int | None,
        epoch: int | None = None,
        scans: list[int] | None = None,
        worker: int | None = None,
    ) -> dict[str, Any]:
        """A resume state: *delivered* per worker's shard, *turn* next; one *worker*'s or the run's.

        *epoch* and *scans* (each dataset's level) default to the current ones.
        """
        datasets = [
            {k: v for k, v in p._state({}, 0, 1, 1).items() if k in _PER_DATASET}
            for p in self.parts
        ]
        for d, scan in zip(datasets, scans or []):
            d["scan"] = scan
        return {
            "version": MIX_STATE_VERSION,
            "kind": "mix",
            "epoch": self.epoch if epoch is None else epoch,
            "seed": int(self.seed),
            "shares": self.shares.tolist(),
            "samples": len(self),
            "rank": self.rank,
            "world_size": self.world_size,
            "num_workers": workers,
            "worker": worker,
            "batch_size": batch_size,
            "datasets": datasets,
            "delivered": delivered,
            "next": turn,
        }

    def _check_state(self, state: Any) -> dict[str, Any]:
        """*state*, checked against this mix, with every field present.

        The one place a mix's resume state is read (see
        :meth:`PCRIterableDataset._check_state
        <pcr_explore.read.loader.PCRIterableDataset._check_state>`).

        Raises
        ------
        DatasetError
            Naming the first field that is missing, malformed, out of range,
            or of another mix.
        """
        f = _StateFields(state)
        kind = f.get("kind", None)
        if kind != "mix":
            if kind in (None, "dataset"):
                raise f.error(
                    "this is a dataset's state (PCRIterableDataset.state_dict), not a mix's: "
                    "load it into the dataset that saved it"
                )
            raise f.error(f"'kind' must be 'mix', got {_show(kind)}")
        version = f.integer("version", 1, MIX_STATE_VERSION)
        f.same("seed", self.seed, "mix")
        f.same("samples", len(self), "mix")
        f.same("rank", self.rank, "mix")
        f.same("world_size", self.world_size, "mix")
        shares = f.get("shares")
        if (
            not isinstance(shares, list)
            or len(shares) != len(self.parts)
            or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in shares
            )
        ):
            raise f.error(
                f"'shares' must list one number per dataset ({len(self.parts)}), "
                f"got {_show(shares)}"
            )
        if not np.allclose(shares, self.shares):
            raise f.error(
                f"the state is of another mix: its shares are {shares}, this mix's "
                f"{self.shares.tolist()}"
            )
        entries = f.get("datasets")
        if not isinstance(entries, list) or len(entries) != len(self.parts):
            raise f.error(
                f"'datasets' must list the mix's {len(self.parts)} datasets, got {_show(entries)}"
            )
        datasets = []
        for i, (p, d) in enumerate(zip(self.parts, entries)):
            df = _StateFields(d, f"{f.where}, dataset {i}")
            p._check_binding(df, bound=version >= 2)
            datasets.append(
                {
                    "url": df.get("url", p.url),
                    "scan": df.integer("scan", 1, p.num_scans),
                    "whole_records": df.flag("whole_records"),
                }
            )
        epoch = f.integer("epoch")
        workers = f.integer("num_workers", 1, _MAX_WORKERS)
        turn = f.integer("next", 0, workers - 1, 0 if version == 1 else _MISSING)
        worker = _worker_field(f, version >= 3, workers)
        batch_size = f.integer("batch_size", 1) if worker is None else None
        first = self.rank * workers
        quotas = {str(first + i): self.quota(i, workers) for i in range(workers)}
        return {
            "version": version,
            "epoch": epoch,
            "num_workers": workers,
            "worker": worker,
            "batch_size": batch_size,
            "datasets": datasets,
            "delivered": _worker_counts(f, worker, quotas, epoch, first, turn),
            "next": turn,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the mixed epoch *state* describes.

        A state of the whole run: call it before the DataLoader starts. One
        worker's state: ``StatefulDataLoader`` calls it in that worker; its
        epoch and levels are then the next pass's, in this process only.

        A state changes the epoch, each dataset's level (the one the epoch
        was saved at; a :class:`UserWarning` names the levels that change)
        and the position in the epoch, nothing else. A version 1 state (no
        content digests) is resumed with a warning.

        Raises
        ------
        DatasetError
            If *state* is of another mix: other datasets (content digests),
            seeds, shuffles, sizes, modes, weights, epoch length or
            sharding; of a single dataset; or malformed. The message names
            the field. One worker's state loaded in another worker, or with
            another worker count.
        """
        checked = self._check_state(state)
        per_worker = checked["worker"] is not None
        if per_worker:
            worker, workers, _ = _worker_info()
            if (checked["worker"], checked["num_workers"]) != (worker, workers):
                raise _worker_error("mix resume state", checked, worker, workers)
            if any(
                d["whole_records"] != p.whole_records
                for p, d in zip(self.parts, checked["datasets"])
            ):
                raise DatasetError(
                    "mix resume state: its datasets were dealt with other whole_records settings"
                )
        if checked["version"] < 2:  # no digests
            urls = [d["url"] for d in checked["datasets"]]
            warnings.warn(
                f"this mix's resume state (version {checked['version']}, saved for "
                f"{urls!r:.300}) has no content digests, so it cannot be checked to be of these "
                "datasets; resumed as it says (its counts fit this mix)",
                UserWarning,
                stacklevel=2,
            )
        if not per_worker:
            self.set_epoch(checked["epoch"])
        changed = [
            f"dataset {i} ({p.url}) level {d['scan']}, not {p.scan}"
            for i, (p, d) in enumerate(zip(self.parts, checked["datasets"]))
            if d["scan"] != p.scan
        ]
        if changed:
            warnings.warn(
                f"the mix's resume state was saved at other levels: epoch {checked['epoch']} "
                f"resumes {'; '.join(changed)}",
                UserWarning,
                stacklevel=2,
            )
        if not per_worker:  # the run's: the levels from now on
            for p, d in zip(self.parts, checked["datasets"]):
                p.set_scan(d["scan"])
        self._resume = checked

    def _delivered(self, state: dict[str, Any]) -> list[set[int]]:
        """Per dataset, the indices the run *state* (checked) has delivered this rank."""
        epoch, w = state["epoch"], state["num_workers"]
        out: list[set[int]] = [set() for _ in self.parts]
        for i in range(w):
            shard, nshards = self.rank * w + i, self.world_size * w
            done = state["delivered"].get(str(shard), 0)
            taken = self._consumed(epoch, shard, nshards, self.quota(i, w), done)
            for k, (p, d) in enumerate(zip(self.parts, state["datasets"])):
                seq = p.sequence(epoch, shard, nshards, d["whole_records"])
                out[k].update(itertools.islice(itertools.cycle(seq), taken[k]) if seq else ())
        return out

    # -- reading ------------------------------------------------------------------
    def _same_sharding(self, state: dict[str, Any] | None, epoch: int, nworkers: int) -> bool:
        """Whether *state* is of this epoch, with this worker count and every dataset's sharding."""
        if state is None or state["epoch"] != epoch:
            return False
        return state["num_workers"] == nworkers and all(
            d["whole_records"] == p.whole_records for p, d in zip(self.parts, state["datasets"])
        )

    def _plan(self) -> _MixPass:
        """The pass this process reads next: its shard, its draws, what each dataset skips.

        One worker's state loaded in this process sets the epoch and levels
        of that pass; else they are the current ones, and a state of the run
        is resumed when it is of that epoch.
        """
        worker, workers, _ = _worker_info()
        state = self._resume
        if state is not None and state["worker"] is not None:
            epoch, scans = state["epoch"], [d["scan"] for d in state["datasets"]]
        else:
            epoch, scans = self.epoch, [p.scan for p in self.parts]
        same = self._same_sharding(state, epoch, workers)
        turn = int(state["next"]) if same and state is not None else 0
        k = (worker + turn) % workers
        shard, nshards = self.rank * workers + k, self.world_size * workers
        sizes = [len(p.sequence(epoch, shard, nshards)) for p in self.parts]
        empty = {i for i, n in enumerate(sizes) if n == 0}
        quota = self.quota(k, workers)
        rng = np.random.default_rng([self.seed, epoch, shard])

        def plan(draws: Iterator[int], skips: list[set[int] | int], done: int | None) -> _MixPass:
            return _MixPass(epoch, scans, worker, workers, turn, shard, nshards, draws, skips, done)

        if state is None or state["epoch"] != epoch:
            return plan(_draws(rng, self.shares, empty, quota), [0] * len(sizes), 0)
        if same:  # replay the draws already made; each dataset resumes where it stood
            done = state["delivered"].get(str(shard), 0)
            taken = self._consumed(epoch, shard, nshards, quota, done)
            left = _draws(rng, self.shares, empty, quota)
            collections.deque(itertools.islice(left, done), maxlen=0)
            return plan(left, [t % n if n else 0 for t, n in zip(taken, sizes)], done)
        # another sharding: the samples still owed, none already delivered
        owed = _split(len(self), self.world_size, self.rank) - sum(state["delivered"].values())
        rng = np.random.default_rng([self.seed, epoch, shard, workers])
        left = _draws(rng, self.shares, empty, _split(max(0, owed), workers, worker))
        return plan(left, list(self._delivered(state)), None)

    def _stream(
        self, k: int, epoch: int, scan: int, shard: int, nshards: int, skip: set[int] | int
    ) -> Iterator[tuple[Any, int]]:
        """Dataset *k*'s samples for this shard, pass after pass; the first pass less *skip*."""
        part = self.parts[k]
        while True:
            yield from part._samples(epoch, scan, shard, nshards, skip)
            skip = 0

    def __iter__(self) -> Iterator[tuple[Any, int, int]]:
        # the pass is fixed here, not at the first sample: a StatefulDataLoader asks for
        # state_dict() between iter() and the first next()
        pos = self._plan()
        self._shared[1] = _reader(self._resume)
        self._resume = None  # one pass only (in this process)
        self._position = pos
        return self._read(pos)

    def _read(self, pos: _MixPass) -> Iterator[tuple[Any, int, int]]:
        """The samples of pass *pos*, counted in it as they are yielded."""
        streams = [
            self._stream(k, pos.epoch, pos.scans[k], pos.shard, pos.nshards, s)
            for k, s in enumerate(pos.skips)
        ]
        reporters = [p._reporter() for p in self.parts]  # in a DataLoader worker
        try:
            for k in pos.draws:
                image, label = next(streams[k])
                if pos.delivered is not None:
                    pos.delivered += 1
                reporter = reporters[k]
                if reporter is not None:
                    reporter.tick()
                yield image, label, k
        finally:
            for reporter in reporters:
                if reporter is not None:
                    reporter.flush()


@public("pcr_explore.read")
def mix(
    sources: Sequence[PCRIterableDataset | str],
    *,
    weights: Sequence[float] | None = None,
    seed: int = 0,
    samples: int | None = None,
    scans: Sequence[int | None] | None = None,
    **dataset_options: Any,
) -> MixedDataset:
    """One stream of ``(image, label, source)`` from several datasets, by weight.

    Parameters
    ----------
    sources : sequence of PCRIterableDataset or str
        Datasets made by :func:`~pcr_explore.read.loader.torch_dataset`, or
        their paths or URLs (then made here with *dataset_options* and the
        level from *scans*).
    weights : sequence of float, optional
        Relative share of each (default: equal).
    seed : int
        Seed of the draws (and of the order of the sources given as paths).
    samples : int, optional
        Samples per epoch (default: see the module docstring).
    scans : sequence of int or None, optional
        The level of each source given as a path.
    **dataset_options
        :func:`~pcr_explore.read.loader.torch_dataset`'s keywords for the
        sources given as paths (``size``, ``shuffle``, ...), open_dataset's
        settings among them (``storage_options``, ``retries``, ``deadline``,
        ``cache_dir``, ``read_ahead``, ...): every DataLoader worker opens
        each dataset with them.

    Returns
    -------
    MixedDataset

    Raises
    ------
    ValueError
        If the weights do not match the sources or are not positive.

    Examples
    --------
    >>> from torch.utils.data import DataLoader
    >>> m = mix(["photos.pcr", "sketches.pcr"], weights=[3, 1], scans=[3, 10],
    ...         size=(64, 64), shuffle=True)
    >>> loader = DataLoader(m, batch_size=32, num_workers=2)
    >>> for images, labels, sources in loader:
    ...     pass  # sources: 0 for a photo, 1 for a sketch
    """
    if not sources:
        raise ValueError("mix needs at least one dataset")
    w = [1.0] * len(sources) if weights is None else [float(x) for x in weights]
    if len(w) != len(sources) or not all(x > 0 for x in w):
        raise ValueError(f"need one positive weight per dataset, got {list(w)}")
    levels = list(scans) if scans is not None else [None] * len(sources)
    if len(levels) != len(sources):
        raise ValueError(f"need one level per dataset, got {len(levels)} for {len(sources)}")
    parts = [
        s
        if isinstance(s, PCRIterableDataset)
        else torch_dataset(s, scan=k, seed=seed, **dataset_options)
        for s, k in zip(sources, levels)
    ]
    if samples is not None and samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    return MixedDataset(parts, w, seed, samples)
