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
:meth:`~MixedDataset.load_state_dict` work as the adapter's: with the same
worker count, the resumed epoch gives exactly the samples the uninterrupted
one would have given next, in the same order (the draws and every dataset's
position are replayed from the manifests); with another, the rest of the
epoch has the samples the epoch still owed (``len(mix)`` in all), none of
them one already delivered (within each dataset's pass), drawn anew. A mix's
state is bound as a dataset's is, to every dataset's content digest, seed,
shuffle, size and mode, and to the mix's seed, shares, epoch length and
sharding; a malformed state, or one of another mix, is refused with a
:class:`~pcr_explore.errors.DatasetError` naming the field. It changes the
epoch, each dataset's level (with a warning naming the levels that
change) and the position in the epoch. A state saved by version 1 (no
digests) is resumed with a warning.
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._public import public
from .loader import (
    _MAX_WORKERS,
    _MISSING,
    PCRIterableDataset,
    _check_count_args,
    _show,
    _StateFields,
    _worker_shard,
    batch_counts,
    torch,
    torch_dataset,
)

try:
    from torch.utils.data import IterableDataset as _Base
    from torch.utils.data import get_worker_info
except ImportError:  # pragma: no cover - depends on the environment
    _Base = object  # type: ignore[assignment, misc]

__all__ = ["MixedDataset", "mix"]

# 2: bound to every dataset's content digest, size and mode; 1: to their URLs
MIX_STATE_VERSION = 2


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


@public("pcr_explore.read")
class MixedDataset(_Base):  # type: ignore[misc, valid-type]
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
        # the epoch, pickled to workers as a handle to the same memory (persistent workers)
        self._shared = torch.zeros(1, dtype=torch.int64).share_memory_()
        self._resume: dict[str, Any] | None = None

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

    def state_dict(self, *, batches: int, batch_size: int, num_workers: int) -> dict[str, Any]:
        """Where the mixed epoch stands after the loop has taken *batches* batches.

        The arguments are the adapter's
        (:meth:`~pcr_explore.read.loader.PCRIterableDataset.state_dict`). The
        result is JSON-ready: the epoch, the seed, the shares, every
        dataset's content digest, level and settings, the sharding, and the
        samples each worker has delivered; the datasets' positions follow
        from the draws.

        Raises
        ------
        TypeError
            If an argument is not an integer.
        ValueError
            If *batches* or *num_workers* is negative, *batch_size* is below
            1, or *batches* is more than the epoch holds.
        """
        n, size, w = _check_count_args(batches, batch_size, num_workers)
        done, turn = batch_counts([self.quota(i, w) for i in range(w)], n, size)
        delivered = {str(self.rank * w + i): k for i, k in enumerate(done)}
        return self._state(delivered, turn, w, size)

    def _state(
        self, delivered: dict[str, int], turn: int, workers: int, batch_size: int
    ) -> dict[str, Any]:
        """A resume state of the current epoch: *delivered* per worker's shard, *turn* next."""
        return {
            "version": MIX_STATE_VERSION,
            "kind": "mix",
            "epoch": self.epoch,
            "seed": int(self.seed),
            "shares": self.shares.tolist(),
            "samples": len(self),
            "rank": self.rank,
            "world_size": self.world_size,
            "num_workers": workers,
            "batch_size": batch_size,
            "datasets": [
                {k: v for k, v in p._state({}, 0, 1, 1).items() if k in _PER_DATASET}
                for p in self.parts
            ],
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
        batch_size = f.integer("batch_size", 1)
        quotas = {str(self.rank * workers + i): self.quota(i, workers) for i in range(workers)}
        return {
            "version": version,
            "epoch": epoch,
            "num_workers": workers,
            "batch_size": batch_size,
            "datasets": datasets,
            "delivered": f.counts(quotas, epoch),
            "next": turn,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the mixed epoch *state* describes (call it before the DataLoader starts).

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
            the field.
        """
        checked = self._check_state(state)
        if checked["version"] < MIX_STATE_VERSION:
            urls = [d["url"] for d in checked["datasets"]]
            warnings.warn(
                f"this mix's resume state (version {checked['version']}, saved for "
                f"{urls!r:.300}) has no content digests, so it cannot be checked to be of these "
                "datasets; resumed as it says (its counts fit this mix)",
                UserWarning,
                stacklevel=2,
            )
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

    def _plan(
        self, epoch: int, state: dict[str, Any] | None
    ) -> tuple[int, int, Iterator[int], list[set[int] | int]]:
        """The shard of this worker, its draws, and what the first pass of each dataset skips."""
        info = get_worker_info()
        same = self._same_sharding(state, epoch, info.num_workers if info is not None else 1)
        wid, nworkers, shard, nshards = _worker_shard(
            self.rank, self.world_size, state if same else None
        )
        sizes = [len(p.sequence(epoch, shard, nshards)) for p in self.parts]
        empty = {k for k, n in enumerate(sizes) if n == 0}
        quota = self.quota(wid, nworkers)
        rng = np.random.default_rng([self.seed, epoch, shard])
        if state is None or state["epoch"] != epoch:
            return shard, nshards, _draws(rng, self.shares, empty, quota), [0] * len(sizes)
        if same:  # replay the draws already made; each dataset resumes where it stood
            done = state["delivered"].get(str(shard), 0)
            taken = self._consumed(epoch, shard, nshards, quota, done)
            left = _draws(rng, self.shares, empty, quota)
            collections.deque(itertools.islice(left, done), maxlen=0)
            return shard, nshards, left, [t % n if n else 0 for t, n in zip(taken, sizes)]
        # another sharding: the samples still owed, none already delivered
        owed = _split(len(self), self.world_size, self.rank) - sum(state["delivered"].values())
        rng = np.random.default_rng([self.seed, epoch, shard, nworkers])
        left = _draws(rng, self.shares, empty, _split(max(0, owed), nworkers, wid))
        return shard, nshards, left, list(self._delivered(state))

    def _stream(
        self, k: int, epoch: int, shard: int, nshards: int, skip: set[int] | int
    ) -> Iterator[tuple[Any, int]]:
        """Dataset *k*'s samples for this shard, pass after pass; the first pass less *skip*."""
        part, scan = self.parts[k], self.parts[k].scan
        while True:
            yield from part._samples(epoch, scan, shard, nshards, skip)
            skip = 0

    def __iter__(self) -> Iterator[tuple[Any, int, int]]:
        epoch = self.epoch
        state, self._resume = self._resume, None  # one pass only (in this process)
        shard, nshards, chosen, skips = self._plan(epoch, state)
        streams = [self._stream(k, epoch, shard, nshards, s) for k, s in enumerate(skips)]
        for k in chosen:
            image, label = next(streams[k])
            yield image, label, k


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
    >>> m = mix(["photos.pcr", "sketches.pcr"], weights=[3, 1], scans=[3, 10],
    ...         size=(64, 64), shuffle=True)  # doctest: +SKIP
    >>> loader = DataLoader(m, batch_size=32, num_workers=2)  # doctest: +SKIP
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
