"""A growing random sample of a source's images, measured level by level."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from .._pool import check_client, parallel_map
from .._pool import progress_bar as tqdm
from .._public import public
from ..jpeg._decoders import carried
from ..read.sources import LevelSource, open_source
from ._curve import PerImageQuality, QualityCurve, summarise
from ._jobs import Outcome, make_job, measure
from .metrics import METRICS, MetricFn, metric_name
from .runner import default_workers

__all__ = ["WORKER_MODULES", "Sampler", "quality_curve"]

#: What the workers run (``_jobs.measure``), imported once by the server they
#: fork from; the package's facade would import nothing until first use.
WORKER_MODULES = ("pcr_explore.quality._jobs",)

_BAR: dict[str, Any] = dict(desc="quality", unit="img", leave=False)


@public("pcr_explore.quality")
class Sampler:
    """Measure a growing random sample of a source's images.

    Images are taken in the order of one seeded permutation, so a larger
    sample extends a smaller one; images that fail are replaced by the next.
    :func:`quality_curve` measures one sample; the tuner's ``sample="auto"``
    and the audit grow one.

    Parameters
    ----------
    source : LevelSource or path
        A PCR dataset, a folder of images or an image file.
    seed : int
        Seed of the permutation.
    metric : {"mssim", "ssim", "psnr"} or callable
        As for :func:`quality_curve`.
    luminance : bool
        Measure on the Y channel only.
    workers : int, optional
        Worker processes (default: :func:`~pcr_explore.quality.runner.default_workers`).
        A custom callable always runs in this process.
    progress : bool or tqdm bar
        Show a progress bar (or advance this one).
    order : sequence of int, optional
        The order to take images in, instead of the seeded permutation (the
        audit passes the permutation restricted to readable images).
    max_pixels : int, optional
        Measure images larger than this at a reduced size, so that memory
        stays bounded (see :func:`~pcr_explore.quality.level_quality`).
    client : dask.distributed.Client, optional
        Measure on this Dask cluster, as :func:`quality_curve` does.

    Attributes
    ----------
    results : list of Outcome
        The images measured, in sample order.
    failed : list of (name, reason)
        Images that could not be measured.
    seconds : float
        Time spent measuring.

    Raises
    ------
    ValueError
        If *metric* is an unknown name.

    Examples
    --------
    >>> s = Sampler("photos/", seed=0)
    >>> s.grow(4); s.grow(8)  # the first 4 are not measured again
    >>> s.curve().sample_size
    8
    """

    def __init__(
        self,
        source: LevelSource | str | os.PathLike[str],
        *,
        seed: int = 0,
        metric: str | MetricFn = "mssim",
        luminance: bool = False,
        workers: int | None = None,
        progress: bool | Any = False,
        order: Sequence[int] | None = None,
        max_pixels: int | None = None,
        client: Any = None,
    ) -> None:
        check_client(client)
        self.source = open_source(source)
        self.seed = seed
        self.metric = metric
        self.metric_name = metric_name(metric)
        self.luminance = luminance
        self.workers = workers
        self.progress = progress
        self.max_pixels = max_pixels
        self.client = client
        self.order = (
            np.asarray(order, np.int64)
            if order is not None
            else np.random.default_rng(seed).permutation(len(self.source))
        )
        self._names = self.source.names
        self._labels = self.source.labels
        self._next = 0
        self.results: list[Outcome] = []
        self.failed: list[tuple[str, str]] = []
        self.seconds = 0.0

    @property
    def population(self) -> int:
        """Images in the source."""
        return len(self.source)

    @property
    def exhausted(self) -> bool:
        """True when every image in the order has been tried."""
        return self._next >= len(self.order)

    def grow(self, n: int) -> None:
        """Measure images until *n* have succeeded or the source is exhausted.

        Parameters
        ----------
        n : int
            Images wanted in the sample (those already measured count).
        """
        t0 = time.perf_counter()
        custom = None if isinstance(self.metric, str) else self.metric
        task = functools.partial(
            measure, luminance=self.luminance, custom=custom, max_pixels=self.max_pixels
        )
        # a custom metric (any callable, picklable or not) is scored in this process
        client = None if custom is not None else self.client
        given = nullcontext(self.progress) if hasattr(self.progress, "update") else None
        while len(self.results) < n and not self.exhausted:
            take = self.order[self._next : self._next + n - len(self.results)]
            self._next += len(take)
            w = default_workers(len(take)) if self.workers is None else max(1, self.workers)
            jobs = (make_job(self.source, int(i), self._names) for i in take)
            # workers decode with the JPEG decoder in force here (a context variable stays)
            outcomes = parallel_map(
                carried(task),
                jobs,
                workers=1 if custom is not None else w,
                client=client,
                preload=WORKER_MODULES,
                name="pcr-quality",
            )
            with given or tqdm(total=len(take), disable=not self.progress, **_BAR) as bar:
                for o in outcomes:
                    self._keep(o)
                    bar.update(1)
        self.seconds += time.perf_counter() - t0

    def _keep(self, o: Outcome) -> None:
        if o.error:
            self.failed.append((self._names[o.index], o.error))
        else:
            self.results.append(o)

    def add(self, outcomes: Sequence[Outcome]) -> None:
        """Take outcomes measured elsewhere for the next images of the order.

        The audit measures its sampled images in the same worker task that
        inspects them; :meth:`grow` then measures only what is missing.

        Parameters
        ----------
        outcomes : sequence of Outcome
            One per image, for the images that come next in ``order``, in
            that order.

        Raises
        ------
        ValueError
            If an outcome is not for the next image of the order.
        """
        for o in outcomes:
            nxt = int(self.order[self._next]) if not self.exhausted else None
            if o.index != nxt:
                raise ValueError(f"outcome for image {o.index}; the next in the order is {nxt}")
            self._next += 1
            self._keep(o)

    def curve(self, metric: str | None = None) -> QualityCurve:
        """Return the curve over every image measured so far.

        Parameters
        ----------
        metric : str, optional
            The metric summarised (default: the sampler's); built-in metrics
            are all kept in ``per_image.metrics``.

        Returns
        -------
        QualityCurve
        """
        res = [o for o in self.results if o.quality is not None]
        levels = [o.quality for o in res if o.quality is not None]
        s = self.source.num_scans
        idx = np.array([o.index for o in res], np.int64)

        def stacked(rows: list[np.ndarray], dtype: type = np.float64) -> np.ndarray:
            return np.stack(rows) if rows else np.zeros((0, s), dtype)

        if isinstance(self.metric, str):
            metrics = {m: stacked([q.metric(m) for q in levels]) for m in METRICS}
        else:
            metrics = {self.metric_name: stacked([o.custom for o in res if o.custom is not None])}
        table = PerImageQuality(
            indices=idx,
            names=tuple(self._names[i] for i in idx),
            labels=self._labels[idx] if len(idx) else np.zeros(0, np.int32),
            bytes=stacked([q.bytes for q in levels], np.int64),
            values=metrics[self.metric_name],
            metrics=metrics,
        )
        return summarise(
            metric or self.metric_name,
            table,
            population=self.population,
            luminance=self.luminance,
            failed=tuple(self.failed),
            notes=tuple((self._names[o.index], o.note) for o in res if o.note),
            seed=self.seed,
        )


@public("pcr_explore")
def quality_curve(
    source: LevelSource | str | os.PathLike[str],
    *,
    sample: int | None = 64,
    seed: int = 0,
    metric: str | MetricFn = "mssim",
    workers: int | None = None,
    progress: bool = True,
    luminance: bool = False,
    client: Any = None,
) -> QualityCurve:
    """Measure bytes and quality per scan level over a random sample of a source.

    Parameters
    ----------
    source : LevelSource or path
        A PCR dataset, a folder of images (transcoded in memory, nothing
        written) or an image file; see :func:`~pcr_explore.read.sources.open_source`.
    sample : int or None
        Images to measure (None: all). Images that fail to decode are
        replaced by others and listed in ``failed``.
    seed : int
        Seed of the random sample.
    metric : {"mssim", "ssim", "psnr"} or callable
        The metric summarised. Built-in metrics are all computed (they share
        the work), so :meth:`QualityCurve.with_metric` switches for free. A
        callable ``(full_images, level_images) -> float`` is called per image
        and level with one-element lists of decoded arrays; at the full level
        it compares the image with itself.
    workers : int, optional
        Worker processes (default: all cores; small samples run in-process).
        Custom callables always run in-process. Ignored with *client*.
    progress : bool
        Show a progress bar (default; tqdm's notebook bar in Jupyter), one
        step per image measured.
    luminance : bool
        Measure on the Y channel only (default RGB).
    client : dask.distributed.Client, optional
        Measure on this Dask cluster (``pcr-explore[dask]``), one task per
        sampled image; the curve is identical to a local run's. Every worker
        must be able to read *source* at the same path or URL (a folder on a
        shared disk, a dataset on object storage). A custom metric still
        runs in this process.

    Returns
    -------
    QualityCurve

    Raises
    ------
    ValueError
        If *metric* is unknown or *sample* is not positive.
    TypeError
        If *client* is not a Dask client.

    References
    ----------
    .. [1] M. Kuchnik, G. Amvrosiadis and V. Smith, "Progressive Compressed
       Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11),
       2627-2641, 2021.

    Examples
    --------
    >>> curve = quality_curve("photos/", sample=32)  # photos/ has 14: all of them
    >>> print(curve.sample_size, round(curve.bytes_fraction[4], 2), round(curve.mean[4], 2))
    14 0.42 0.98
    """
    if sample is not None and int(sample) < 1:
        raise ValueError(f"sample must be a positive number of images, got {sample}")
    sampler = Sampler(
        source,
        seed=seed,
        metric=metric,
        luminance=luminance,
        workers=workers,
        progress=progress,
        client=client,
    )
    sampler.grow(sampler.population if sample is None else int(sample))
    return sampler.curve()
