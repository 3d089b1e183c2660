"""Bytes and quality per scan level over a sample: the curve and its per-image table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._checks import check_scan
from .._public import public
from .metrics._names import capped

__all__ = ["STATISTICS_OF_CURVE", "PerImageQuality", "QualityCurve", "summarise"]

STATISTICS_OF_CURVE: tuple[str, ...] = ("mean", "p5", "p50", "p95")


@public("pcr_explore.quality")
@dataclass(frozen=True)
class PerImageQuality:
    """The per-image table behind a :class:`QualityCurve`.

    Attributes
    ----------
    indices : ndarray of int, (n,)
        Image indices in the source, in sample order.
    names : tuple of str
        Image names (relative paths).
    labels : ndarray of int, (n,)
        Class labels (-1: none).
    bytes : ndarray of int, (n, S)
        JPEG bytes of each image at each level.
    values : ndarray of float, (n, S)
        The curve's metric for each image and level.
    metrics : dict of str to ndarray
        Every metric computed, each (n, S).

    Examples
    --------
    >>> t = PerImageQuality(
    ...     indices=np.array([4, 7]),
    ...     names=("a.jpg", "b.jpg"),
    ...     labels=np.array([0, 1]),
    ...     bytes=np.array([[30, 100], [50, 100]]),
    ...     values=np.array([[0.9, 1.0], [0.8, 1.0]]),
    ... )
    >>> [row["name"] for row in t.worst(1)]
    ['b.jpg', 'a.jpg']
    """

    indices: np.ndarray
    names: tuple[str, ...]
    labels: np.ndarray
    bytes: np.ndarray
    values: np.ndarray
    metrics: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __repr__(self) -> str:
        n, s = self.values.shape
        return f"<PerImageQuality {n} images x {s} levels>"

    def __len__(self) -> int:
        return len(self.indices)

    def rows(self, scan: int) -> list[dict[str, Any]]:
        """Return one dict per image at level *scan*.

        Parameters
        ----------
        scan : int
            The level, 1..S.

        Returns
        -------
        list of dict
            Keys ``index``, ``name``, ``label``, ``bytes``, ``bytes_fraction``
            (of the image's full bytes) and ``value``, in sample order.

        Raises
        ------
        ValueError
            If *scan* is not an int in 1..S.
        """
        k = check_scan(scan, self.values.shape[1], where="the per-image table") - 1
        return [
            {
                "index": int(i),
                "name": n,
                "label": int(lab),
                "bytes": int(b[k]),
                "bytes_fraction": float(b[k] / b[-1]),
                "value": float(v[k]),
            }
            for i, n, lab, b, v in zip(
                self.indices, self.names, self.labels, self.bytes, self.values
            )
        ]

    def worst(self, scan: int, *, n: int = 8) -> list[dict[str, Any]]:
        """Return the *n* images with the lowest value at level *scan*, worst first.

        Parameters
        ----------
        scan : int
            The level, 1..S.
        n : int
            Rows wanted.

        Returns
        -------
        list of dict
            As :meth:`rows`; ties keep sample order.

        Raises
        ------
        ValueError
            If *scan* is not an int in 1..S.
        """
        k = check_scan(scan, self.values.shape[1], where="the per-image table")
        order = np.argsort(self.values[:, k - 1], kind="stable")[:n]
        rows = self.rows(k)
        return [rows[int(j)] for j in order]


@public("pcr_explore")
@dataclass(frozen=True)
class QualityCurve:
    """Bytes and quality per scan level over a sample of images.

    The model-free view of the trade-off a Progressive Compressed Record
    offers: how much of an image's quality each prefix of its scans buys,
    against the fraction of the bytes it costs [1]_.

    Attributes
    ----------
    metric : str
        "mssim", "ssim", "psnr" or the name of a custom callable.
    scans : ndarray of int
        1..S.
    bytes_fraction : ndarray of float
        Cumulative bytes at each level over the sample, as a fraction of the
        sample's full bytes.
    mean, p5, p50, p95 : ndarray of float
        The metric's mean and percentiles over the sample at each level (PSNR
        of identical images counted as :data:`~pcr_explore.quality.metrics.PSNR_CAP`).
    per_image : PerImageQuality
        The per-image table.
    indices : ndarray of int
        The sampled image indices (same as ``per_image.indices``).
    population : int
        Images in the source.
    luminance : bool
        Measured on Y only.
    failed : tuple of (name, reason)
        Sampled images that could not be measured (replaced by others).
    notes : tuple of (name, note)
        Images measured with fewer MS-SSIM scales, and why.
    seed : int
        The sampling seed.

    References
    ----------
    .. [1] M. Kuchnik, G. Amvrosiadis and V. Smith, "Progressive Compressed
       Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11),
       2627-2641, 2021.

    Examples
    --------
    >>> values = np.array([[0.5, 0.9, 1.0], [0.7, 0.95, 1.0]])
    >>> nbytes = np.array([[10, 50, 100], [30, 70, 100]])
    >>> c = QualityCurve.from_values(values, nbytes)
    >>> c.mean.tolist(), c.bytes_fraction.tolist()
    ([0.6, 0.925, 1.0], [0.2, 0.6, 1.0])
    """

    metric: str
    scans: np.ndarray
    bytes_fraction: np.ndarray
    mean: np.ndarray
    p5: np.ndarray
    p50: np.ndarray
    p95: np.ndarray
    per_image: PerImageQuality
    indices: np.ndarray
    population: int
    luminance: bool = False
    failed: tuple[tuple[str, str], ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    seed: int = 0

    def __repr__(self) -> str:
        # One line: the arrays are in the notebook table (_repr_html_) and .summary().
        levels = ", ".join(f"{k}: {m:.3f}" for k, m in zip(self.scans.tolist(), self.mean))
        return (
            f"<QualityCurve {self.metric}, {self.sample_size} of {self.population} images; "
            f"mean per level {{{levels}}}>"
        )

    @property
    def sample_size(self) -> int:
        """Images measured."""
        return len(self.indices)

    @property
    def num_scans(self) -> int:
        """Scan levels per image."""
        return len(self.scans)

    def statistic(self, name: str) -> np.ndarray:
        """Return the per-level "mean", "p5", "p50" or "p95".

        Raises
        ------
        ValueError
            If *name* is not one of those.
        """
        if name not in STATISTICS_OF_CURVE:
            raise ValueError(f"unknown statistic {name!r}; choose mean, p5, p50 or p95")
        return getattr(self, name)  # type: ignore[no-any-return]

    @classmethod
    def from_values(
        cls,
        values: np.ndarray,
        level_bytes: np.ndarray,
        *,
        metric: str = "mssim",
        names: Sequence[str] | None = None,
        indices: np.ndarray | None = None,
        population: int | None = None,
        luminance: bool = False,
    ) -> QualityCurve:
        """Build a curve from measurements made elsewhere (an (n, S) matrix of values).

        Parameters
        ----------
        values : (n, S) array
            The metric of each image at each level.
        level_bytes : (n, S) array
            Bytes of each image at each level (cumulative).
        metric : str
            The metric's name.
        names, indices : optional
            Image names and indices (default ``image<i>`` and 0..n-1).
        population : int, optional
            Images in the dataset the sample came from (default n).
        luminance : bool
            Whether the values were measured on luminance.

        Returns
        -------
        QualityCurve

        Raises
        ------
        ValueError
            If the shapes do not match.
        """
        v = np.asarray(values, np.float64)
        b = np.asarray(level_bytes, np.int64)
        if v.ndim != 2 or v.shape != b.shape:
            raise ValueError(f"values {v.shape} and level_bytes {b.shape} must be equal (n, S)")
        n = len(v)
        idx = np.arange(n) if indices is None else np.asarray(indices, np.int64)
        return summarise(
            metric,
            PerImageQuality(
                indices=idx,
                names=tuple(f"image{i}" for i in idx) if names is None else tuple(names),
                labels=np.full(n, -1, np.int32),
                bytes=b,
                values=v,
                metrics={metric: v},
            ),
            population=n if population is None else int(population),
            luminance=luminance,
        )

    def with_metric(self, metric: str) -> QualityCurve:
        """Summarise the same sample for another computed metric (no recomputation).

        Parameters
        ----------
        metric : str
            A key of ``per_image.metrics``.

        Returns
        -------
        QualityCurve

        Raises
        ------
        ValueError
            If *metric* was not computed for this curve.
        """
        if metric not in self.per_image.metrics:
            raise ValueError(
                f"metric {metric!r} was not computed; available: "
                f"{', '.join(self.per_image.metrics)}"
            )
        kept = ("population", "luminance", "failed", "notes", "seed")
        return summarise(metric, self.per_image, **{k: getattr(self, k) for k in kept})

    def levels(self) -> list[dict[str, Any]]:
        """Return one JSON-ready dict per level: scan, bytes_fraction, mean, p5, p50, p95."""
        columns = ("bytes_fraction", *STATISTICS_OF_CURVE)
        return [
            {"scan": int(k), **{c: float(getattr(self, c)[i]) for c in columns}}
            for i, k in enumerate(self.scans)
        ]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready summary (levels, sample, failures)."""
        return {
            "metric": self.metric,
            "luminance": self.luminance,
            "sample_size": self.sample_size,
            "population": self.population,
            "seed": self.seed,
            "levels": self.levels(),
            "failed": [{"file": n, "issue": r} for n, r in self.failed],
        }

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{d['scan']}</td><td>{d['bytes_fraction']:.3f}</td><td>{d['mean']:.4f}</td>"
            f"<td>{d['p5']:.4f}</td><td>{d['p50']:.4f}</td><td>{d['p95']:.4f}</td></tr>"
            for d in self.levels()
        )
        return (
            f"<table><caption>{self.metric} per scan level, {self.sample_size} of "
            f"{self.population} images</caption><tr><th>scan</th><th>bytes</th><th>mean</th>"
            f"<th>p5</th><th>p50</th><th>p95</th></tr>{rows}</table>"
        )


def summarise(
    metric: str,
    table: PerImageQuality,
    *,
    population: int,
    luminance: bool = False,
    failed: tuple[tuple[str, str], ...] = (),
    notes: tuple[tuple[str, str], ...] = (),
    seed: int = 0,
) -> QualityCurve:
    """Return the curve of *metric* over the images of *table*.

    *table*'s ``values`` are replaced by ``metrics[metric]``; statistics count
    infinite values at the PSNR cap (:func:`~pcr_explore.quality.metrics.capped`).
    An empty table gives NaN statistics.
    """
    values = table.metrics[metric]
    nbytes = table.bytes
    s = nbytes.shape[1] if nbytes.ndim == 2 else 0
    if len(values):
        v = capped(values)
        mean = v.mean(axis=0)
        p5, p50, p95 = np.percentile(v, [5, 50, 95], axis=0)
        total = nbytes.sum(axis=0).astype(np.float64)
        frac = total / total[-1]
    else:
        mean = p5 = p50 = p95 = frac = np.full(s, np.nan)
    per_image = replace(table, values=values, metrics=dict(table.metrics))
    return QualityCurve(
        metric=metric,
        scans=np.arange(1, s + 1),
        bytes_fraction=frac,
        mean=mean,
        p5=p5,
        p50=p50,
        p95=p95,
        per_image=per_image,
        indices=table.indices,
        population=population,
        luminance=luminance,
        failed=failed,
        notes=notes,
        seed=seed,
    )
