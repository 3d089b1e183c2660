"""Feed a PCR dataset to a PyTorch ``DataLoader`` at a chosen scan level.

Records are the unit of work: each DataLoader worker (and each distributed
rank) reads whole records, so every read stays one sequential prefix read.
Needs the ``[torch]`` extra; this module is not imported by ``pcr_explore``
itself, so the package stays light without PyTorch.

Exact resume: :meth:`PCRIterableDataset.state_dict` says, from the number
of batches the training loop has taken, which samples each worker's shard
has delivered (a ``DataLoader`` takes batches from its workers in turn,
skipping those that have run out, so the count fixes the rest), and
:meth:`~PCRIterableDataset.load_state_dict` in a new process makes the next
epoch's pass skip exactly those: with the same worker count the samples
come in the order the uninterrupted run would have given them; with another,
every sample not yet delivered comes once (in another order).

The scan level and the epoch live in a small shared-memory tensor, so
``set_scan`` and ``set_epoch`` reach DataLoader workers that persist between
epochs (``persistent_workers=True``) without rebuilding them. With a
:class:`~pcr_explore.train.ScanSchedule`, ``set_epoch`` also sets the level
the schedule gives that epoch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._public import public
from ..errors import MissingExtraError
from ..jpeg import Size
from . import pipeline
from .reader import PCRDataset, open_dataset
from .schedule import ScanSchedule

try:  # the dataset class must live at module level so DataLoader workers can pickle it
    import torch
    from torch.utils.data import IterableDataset as _Base
    from torch.utils.data import get_worker_info
except ImportError:  # pragma: no cover - depends on the environment
    torch = None  # type: ignore[assignment]
    _Base = object  # type: ignore[assignment, misc]

__all__ = ["record_shard", "PCRIterableDataset", "torch_dataset"]


def record_shard(
    num_records: int, shard: int, num_shards: int, epoch_seed: int | None
) -> list[int]:
    """The records shard *shard* of *num_shards* reads, in order.

    With *epoch_seed* the record order is shuffled identically on every shard
    before it is dealt out, so shards never overlap and together cover all
    records.
    """
    rng = None if epoch_seed is None else np.random.default_rng(epoch_seed)
    return pipeline.shard(pipeline.record_order(num_records, rng), shard, num_shards)


def _to_chw_tensor(arr: np.ndarray) -> Any:
    t = torch.from_numpy(np.ascontiguousarray(arr))
    return t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1)


@public("pcr_explore.read")
class PCRIterableDataset(_Base):  # type: ignore[misc, valid-type]
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
    ) -> None:
        probe = open_dataset(url)
        self._probe = probe
        self.url, self.size, self.mode = url, size, mode
        self.shuffle, self.seed, self.transform = shuffle, seed, transform
        self.rank, self.world_size = rank, world_size
        self.num_records, self.total = len(probe.records), len(probe)
        self.num_scans = probe.num_scans
        # [epoch, scan]: pickled to workers as a handle to the same memory.
        self._shared = torch.zeros(2, dtype=torch.int64).share_memory_()
        self._resume: dict[str, Any] | None = None
        self._record_images = [r.images for r in probe.records]
        self._starts = np.concatenate([[0], np.cumsum(self._record_images)]).astype(np.int64)
        self.schedule = schedule
        self.batch_size = batch_size
        if schedule is not None:
            schedule.check(probe.num_scans)
            scan = schedule.level(1)
        self.set_scan(scan)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_probe", None)  # workers open their own handle
        return state

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
        probe = getattr(self, "_probe", None) or open_dataset(self.url)
        self._shared[1] = probe._check_scan(scan)

    def __len__(self) -> int:
        return self.total

    def _namer(self, r: int) -> Callable[[int], str]:
        """How errors name an image of record *r*."""
        return lambda i: f"{self.url} record {r}"

    # -- resume -------------------------------------------------------------------
    def sequence(self, epoch: int, shard: int, num_shards: int) -> list[int]:
        """The dataset indices shard *shard* of *num_shards* yields in epoch *epoch*, in order.

        Computed from the manifest alone, as :meth:`__iter__` orders them.
        """
        epoch_seed = self.seed + epoch if self.shuffle else None
        rng = np.random.default_rng(None if epoch_seed is None else epoch_seed + 7919 * shard)
        out: list[int] = []
        for r in record_shard(self.num_records, shard, num_shards, epoch_seed):
            n = self._record_images[r]
            order = rng.permutation(n) if self.shuffle else range(n)
            out += [int(self._starts[r] + j) for j in order]
        return out

    def state_dict(self, *, batches: int, batch_size: int, num_workers: int) -> dict[str, Any]:
        """Where the current epoch stands after the loop has taken *batches* batches.

        Parameters
        ----------
        batches : int
            Batches the training loop has received from the ``DataLoader``
            this epoch.
        batch_size, num_workers : int
            The ``DataLoader``'s (``num_workers=0`` counts as one worker).

        Returns
        -------
        dict
            JSON-ready: the epoch, the level, the seed, the sharding, and the
            samples each shard has delivered.
        """
        w = max(1, int(num_workers))
        shards = [self.rank * w + k for k in range(w)]
        sizes = [len(self.sequence(self.epoch, s, self.world_size * w)) for s in shards]
        left = [-(-n // batch_size) for n in sizes]  # batches per worker
        taken = [0] * w
        k, n = 0, int(batches)
        while n > 0 and any(taken[i] < left[i] for i in range(w)):
            if taken[k] < left[k]:  # a DataLoader skips the workers that have run out
                taken[k] += 1
                n -= 1
            k = (k + 1) % w
        if n > 0:
            raise ValueError(f"{batches} batches is more than this epoch holds")
        delivered = {str(s): min(t * batch_size, n) for s, t, n in zip(shards, taken, sizes)}
        return {
            "version": 1,
            "url": self.url,
            "epoch": self.epoch,
            "scan": self.scan,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "rank": self.rank,
            "world_size": self.world_size,
            "num_workers": w,
            "batch_size": int(batch_size),
            "delivered": delivered,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the epoch *state* describes: its next pass skips what was delivered.

        Call it before the ``DataLoader`` starts its workers (in a new
        process: after a kernel restart). The pass after that one is a
        normal epoch again.

        Raises
        ------
        ValueError
            If *state* is of another dataset, seed, shuffle or sharding.
        """
        for key in ("url", "seed", "shuffle", "rank", "world_size"):
            if state.get(key) != getattr(self, key):
                raise ValueError(
                    f"the state is of another run: its {key} is {state.get(key)!r}, this "
                    f"dataset's {getattr(self, key)!r}"
                )
        self._shared[0] = int(state["epoch"])
        self.set_scan(int(state["scan"]))
        self._resume = dict(state)

    def _skip(self, epoch: int, shard: int, num_shards: int, nworkers: int) -> set[int] | int:
        """What this pass leaves out: a count (same workers) or a set of indices (others)."""
        state = self._resume
        if state is None or int(state["epoch"]) != epoch:
            return 0
        if int(state["num_workers"]) == nworkers:
            return int(state["delivered"].get(str(shard), 0))
        old = int(state["num_workers"]) * self.world_size
        done: set[int] = set()
        for s, count in state["delivered"].items():
            done.update(self.sequence(epoch, int(s), old)[: int(count)])
        return done

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        info = get_worker_info()
        wid, nworkers = (info.id, info.num_workers) if info is not None else (0, 1)
        shard, nshards = self.rank * nworkers + wid, self.world_size * nworkers
        epoch, scan = (int(v) for v in self._shared.tolist())  # once: fixed for this pass
        skip = self._skip(epoch, shard, nshards, nworkers)
        self._resume = None  # one pass only (in this process)
        epoch_seed = self.seed + epoch if self.shuffle else None
        rng = np.random.default_rng(None if epoch_seed is None else epoch_seed + 7919 * shard)
        ds = open_dataset(self.url)
        fn = self.transform or _to_chw_tensor
        errors = pipeline.OnError()
        records = pipeline.fetch(
            lambda r: ds.read_record(r, scan),
            record_shard(self.num_records, shard, nshards, epoch_seed),
            on_error=errors,
            where=lambda r: f"{self.url} record {r}",
        )
        items: Iterator[pipeline.Encoded] = (
            e
            for r, prefix in records
            for e in pipeline.split(
                prefix,
                first_index=int(self._starts[r]),
                where=self._namer(r),
                rng=rng if self.shuffle else None,
            )
        )
        if isinstance(skip, set):
            items = (e for e in items if e.index not in skip)
        elif skip:
            items = itertools.islice(items, skip, None)
        pairs = pipeline.decode(items, size=self.size, mode=self.mode, on_error=errors)
        if self.batch_size is None:
            for arr, label in pairs:
                yield fn(arr), label
            return
        for images, labels in pipeline.batch(pairs, self.batch_size):
            # one (B, C, H, W) uint8 tensor per batch: one pickle across processes, not B
            t = torch.from_numpy(images)
            t = t.unsqueeze(1) if t.ndim == 3 else t.permute(0, 3, 1, 2)
            yield t.contiguous(), torch.from_numpy(labels)


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
) -> PCRIterableDataset:
    """A ``torch.utils.data.IterableDataset`` of ``(image, label)`` at level *scan*.

    Parameters
    ----------
    source : str or PCRDataset
        Dataset path or URL (each DataLoader worker opens its own handle).
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
        Distributed sharding: rank *r* reads every *world_size*-th record.
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

    Returns
    -------
    PCRIterableDataset

    Raises
    ------
    MissingExtraError
        If PyTorch is not installed (``pip install 'pcr-explore[torch]'``).

    Examples
    --------
    >>> from torch.utils.data import DataLoader  # doctest: +SKIP
    >>> loader = DataLoader(torch_dataset("data/sample/pcr", scan=3, size=(224, 224)),
    ...                     batch_size=8, num_workers=2)  # doctest: +SKIP

    Switch the level between epochs without restarting the workers:

    >>> ds = torch_dataset("data/sample/pcr", scan=1, size=(64, 64))  # doctest: +SKIP
    >>> loader = DataLoader(ds, batch_size=8, num_workers=2,
    ...                     persistent_workers=True)  # doctest: +SKIP
    >>> for epoch in range(4):  # doctest: +SKIP
    ...     ds.set_scan(1 if epoch < 2 else 5)
    ...     for images, labels in loader:
    ...         pass
    """
    if torch is None:
        raise MissingExtraError("torch_dataset needs PyTorch: pip install 'pcr-explore[torch]'")
    url = source.url if isinstance(source, PCRDataset) else str(source)
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
        url, scan, size, shuffle, seed, transform, mode, rank, world_size, schedule, batch_size
    )
