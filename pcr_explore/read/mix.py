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
only). The state machine, shared with the adapter, and the state's format
are :mod:`._resume`'s.

**Where the time goes.** :attr:`MixedDataset.stats` holds, for each
dataset, what it read in this process and in every DataLoader worker:
bytes, requests, and the seconds of each read stage at its level
(:class:`~pcr_explore.read.ReadStats`).
"""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._public import public
from ._resume import Fields, Pass, Resumable, check_entry, entry, show
from ._stats import ReadStats
from .loader import PCRIterableDataset, torch_dataset

__all__ = ["MixedDataset", "mix"]


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


@public("pcr_explore.read")
class MixedDataset(Resumable):
    """Samples drawn from several :class:`PCRIterableDataset` by weight (see :func:`mix`).

    ``state_dict`` and ``load_state_dict`` resume a stopped epoch exactly (see
    the module docstring).
    """

    KIND = "mix"

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
        self._label = "mix"
        self._init_resume()

    def __len__(self) -> int:
        if self.samples is not None:
            return self.samples
        return int(min(len(p) / s for p, s in zip(self.parts, self.shares)))

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass, for the draws and for every dataset's order."""
        super().set_epoch(epoch)
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

    # -- resume (the rest is Resumable's) -----------------------------------------
    @property
    def _parts(self) -> Sequence[PCRIterableDataset]:
        return self.parts

    def _shard_sizes(self, epoch: int, workers: int, wholes: list[bool]) -> dict[str, int]:
        return {str(self.rank * workers + i): self.quota(i, workers) for i in range(workers)}

    def _draws_of(
        self, epoch: int, shard: int, nshards: int, wholes: list[bool], *resumed: int
    ) -> tuple[Iterator[int], list[int]]:
        """The draws of shard *shard* in epoch *epoch*, and each dataset's samples in it.

        Its quota of draws; or, in a pass that resumed another sharding,
        ``resumed = (workers, count)``: *count* draws of their own.
        """
        sizes = [len(p.sequence(epoch, shard, nshards, w)) for p, w in zip(self.parts, wholes)]
        empty = {k for k, n in enumerate(sizes) if n == 0}
        workers = nshards // self.world_size
        count = resumed[-1] if resumed else self.quota(shard - self.rank * workers, workers)
        rng = np.random.default_rng([self.seed, epoch, shard, *resumed[:1]])
        return _draws(rng, self.shares, empty, count), sizes

    def _taken(
        self, epoch: int, shard: int, nshards: int, done: int, wholes: list[bool]
    ) -> list[int]:
        draws, sizes = self._draws_of(epoch, shard, nshards, wholes)
        c = collections.Counter(itertools.islice(draws, done))
        return [c[k] for k in range(len(sizes))]

    def _binding(self, levels: list[int]) -> dict[str, Any]:
        return {
            "seed": int(self.seed),
            "shares": self.shares.tolist(),
            "samples": len(self),
            "datasets": [entry(p, level) for p, level in zip(self.parts, levels)],
        }

    def _check_binding(self, f: Fields) -> tuple[list[int], list[bool]]:
        f.same("seed", self.seed, "mix")
        f.same("samples", len(self), "mix")
        shares = f.get("shares")
        numbers = isinstance(shares, list) and len(shares) == len(self.parts)
        if not numbers or not all(type(x) in (int, float) and math.isfinite(x) for x in shares):
            raise f.error(
                f"'shares' must list one number per dataset ({len(self.parts)}), got {show(shares)}"
            )
        if not np.allclose(shares, self.shares):
            raise f.error(
                f"the state is of another mix: its shares are {shares}, this mix's "
                f"{self.shares.tolist()}"
            )
        entries = f.get("datasets")
        if not isinstance(entries, list) or len(entries) != len(self.parts):
            raise f.error(
                f"'datasets' must list the mix's {len(self.parts)} datasets, got {show(entries)}"
            )
        checked = [
            check_entry(Fields(d, f"{f.where}, dataset {i}"), p)
            for i, (p, d) in enumerate(zip(self.parts, entries))
        ]
        return [scan for scan, _ in checked], [whole for _, whole in checked]

    # -- reading ------------------------------------------------------------------
    def _plan_draws(self, pos: Pass) -> tuple[Iterator[int], list[set[int] | int]]:
        """The draws still to come in pass *pos*, and what each dataset's first pass skips.

        With the same sharding (or none resumed) the draws already made are
        replayed and each dataset resumes where it stood; with another, the
        samples the epoch still owes are drawn anew, none already delivered.
        """
        wholes = [p.whole_records for p in self.parts]
        state = pos.resumes
        if state is None or pos.delivered is not None:
            draws, sizes = self._draws_of(pos.epoch, pos.shard, pos.nshards, wholes)
            taken = collections.Counter(itertools.islice(draws, pos.delivered or 0))
            return draws, [taken[k] % n if n else 0 for k, n in enumerate(sizes)]
        owed = _split(len(self), self.world_size, self.rank) - sum((state.delivered or {}).values())
        count = _split(max(0, owed), pos.workers, pos.worker)
        draws, _ = self._draws_of(pos.epoch, pos.shard, pos.nshards, wholes, pos.workers, count)
        return draws, list(self._delivered(state))

    def _stream(
        self, k: int, epoch: int, scan: int, shard: int, nshards: int, skip: set[int] | int
    ) -> Iterator[tuple[Any, int]]:
        """Dataset *k*'s samples for this shard, pass after pass; the first pass less *skip*."""
        part = self.parts[k]
        while True:
            yield from part._samples(epoch, scan, shard, nshards, skip)
            skip = 0

    def _read(self, pos: Pass) -> Iterator[tuple[tuple[Any, int, int], int, int]]:
        """The samples of pass *pos*: ``((image, label, dataset), 1, dataset)``."""
        draws, skips = self._plan_draws(pos)
        streams = [
            self._stream(k, pos.epoch, pos.levels[k], pos.shard, pos.nshards, s)
            for k, s in enumerate(skips)
        ]
        for k in draws:
            image, label = next(streams[k])
            yield (image, label, k), 1, k


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
