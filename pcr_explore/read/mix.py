"""Several PCR datasets as one stream for PyTorch, each at its own scan level.

``mix([a, b], weights=[3, 1], seed=0)`` draws, for every sample, which
dataset it comes from, with probabilities proportional to *weights*; each
dataset then gives its next sample in its own (seeded, sharded) epoch
order, at its own level. The draws depend only on the seed, the epoch and
the worker, so a run is repeated exactly.

**Epoch length.** An epoch has ``len(mix)`` samples: by default as many as
make the first dataset to run out, at its weight, run out exactly
(``min(len(d) / share(d))``), so no dataset repeats a sample within an
epoch; ``samples=N`` sets it, and a dataset that runs out before starts its
next pass. With *N* DataLoader workers, each worker mixes its own shard of
every dataset (records are dealt to workers); a worker whose shard of a
small dataset is empty draws among the others by their weights.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._public import public
from .loader import PCRIterableDataset, torch_dataset

try:
    from torch.utils.data import IterableDataset as _Base
    from torch.utils.data import get_worker_info
except ImportError:  # pragma: no cover - depends on the environment
    _Base = object  # type: ignore[assignment, misc]

__all__ = ["MixedDataset", "mix"]


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
        w = np.asarray(weights, np.float64)
        self.shares = w / w.sum()
        self.seed = seed
        self.samples = samples
        self.epoch = 0

    def __len__(self) -> int:
        if self.samples is not None:
            return self.samples
        return int(min(len(p) / s for p, s in zip(self.parts, self.shares)))

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass, for the draws and for every dataset's order."""
        self.epoch = int(epoch)
        for p in self.parts:
            p.set_epoch(epoch)

    def __iter__(self) -> Iterator[tuple[Any, int, int]]:
        info = get_worker_info()
        wid, nworkers = (info.id, info.num_workers) if info is not None else (0, 1)
        total = len(self)
        mine = total // nworkers + (1 if wid < total % nworkers else 0)
        rng = np.random.default_rng([self.seed, self.epoch, wid])
        choices = rng.choice(len(self.parts), size=mine, p=self.shares)
        streams = [iter(p) for p in self.parts]
        empty: set[int] = set()  # sources this worker's shard has nothing of
        for k in choices:
            k = int(k)
            while True:
                if k in empty:
                    if len(empty) == len(self.parts):
                        return
                    left = [i for i in range(len(self.parts)) if i not in empty]
                    share = self.shares[left] / self.shares[left].sum()
                    k = int(rng.choice(left, p=share))
                try:
                    image, label = next(streams[k])
                    break
                except StopIteration:  # this dataset's shard ran out: its next pass
                    streams[k] = iter(self.parts[k])
                    try:
                        image, label = next(streams[k])
                        break
                    except StopIteration:
                        empty.add(k)
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
