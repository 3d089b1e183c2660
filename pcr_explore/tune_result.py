"""The tuner's answer: the recommended scan level, its confidence, and how it reads."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from .metrics import format_value, metric_label
from .quality import QualityCurve

__all__ = ["TuneResult"]


@dataclass(frozen=True)
class TuneResult:
    """The recommended scan level for a quality target.

    Attributes
    ----------
    scan : int
        The smallest level whose statistic reaches the target (the last level
        when none does; see ``met``).
    target : float
        The quality target.
    metric : str
        The metric's name.
    statistic : str
        "mean" or "p5" (5th percentile over images).
    value : float
        The statistic at ``scan``.
    bytes_fraction : float
        Bytes read at ``scan`` as a fraction of the full dataset's bytes.
    bandwidth_saving : float
        ``1 - bytes_fraction``.
    ci : (float, float)
        Bootstrap confidence interval of the statistic at ``scan``.
    ci_below : (float, float) or None
        The same at ``scan - 1`` (None when ``scan`` is 1).
    value_below : float or None
        The statistic at ``scan - 1``.
    decided : bool
        True when the sample separates the two levels: ``ci`` lies at or
        above the target and ``ci_below`` under it (always True when every
        image was measured).
    met : bool
        False when no level reaches the target.
    sample_size : int
        Images measured.
    population : int
        Images in the source.
    confidence : float
        Level of the intervals.
    curve : QualityCurve
        The measurements behind the decision.

    Examples
    --------
    >>> import numpy as np
    >>> from pcr_explore.quality import QualityCurve
    >>> from pcr_explore.tuner import recommend
    >>> values = np.tile([0.6, 0.9, 0.97, 1.0], (8, 1))
    >>> curve = QualityCurve.from_values(values, np.tile([10, 40, 70, 100], (8, 1)))
    >>> r = recommend(curve, target=0.95)
    >>> r.scan, round(r.bandwidth_saving, 3), r.decided
    (3, 0.3, True)
    """

    scan: int
    target: float
    metric: str
    statistic: str
    value: float
    bytes_fraction: float
    bandwidth_saving: float
    ci: tuple[float, float]
    ci_below: tuple[float, float] | None
    value_below: float | None
    decided: bool
    met: bool
    sample_size: int
    population: int
    confidence: float
    curve: QualityCurve

    @property
    def explanation(self) -> str:
        """Say in one sentence how sure the recommendation is."""
        pct = f"{self.confidence:.0%}"
        if not self.met:
            return (
                f"no level reaches {self.statistic} {self.metric} >= {self.target:g}; "
                f"the full level is recommended"
            )
        if self.sample_size >= self.population:
            return "every image was measured: the statistic is exact for this dataset"
        lo, hi = self.ci
        if lo < self.target:
            return (
                f"not clear: the {pct} interval at scan {self.scan} ({lo:.4f}..{hi:.4f}) "
                f"reaches below the target; measure more images"
            )
        if self.ci_below is not None and self.ci_below[1] >= self.target:
            return (
                f"not clear: the {pct} interval at scan {self.scan - 1} "
                f"({self.ci_below[0]:.4f}..{self.ci_below[1]:.4f}) reaches the target too; "
                "measure more images"
            )
        return f"clear at {pct}: scan {self.scan} is at or above the target and " + (
            "it is the first level" if self.ci_below is None else f"scan {self.scan - 1} below"
        )

    def summary(self) -> str:
        """Return a few lines for a terminal."""
        return (
            f"scan {self.scan} of {self.curve.num_scans}: {self.statistic} {self.metric} "
            f"{self.value:.4f} (target {self.target:g}), {self.bytes_fraction:.1%} of the bytes "
            f"({self.bandwidth_saving:.1%} saved); sample {self.sample_size} of "
            f"{self.population}; {self.explanation}"
        )

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (without the per-image table)."""
        return {
            "scan": self.scan,
            "target": self.target,
            "metric": self.metric,
            "statistic": self.statistic,
            "value": self.value,
            "bytes_fraction": self.bytes_fraction,
            "bandwidth_saving": self.bandwidth_saving,
            "ci": list(self.ci),
            "ci_below": list(self.ci_below) if self.ci_below is not None else None,
            "value_below": self.value_below,
            "decided": self.decided,
            "met": self.met,
            "sample_size": self.sample_size,
            "population": self.population,
            "confidence": self.confidence,
            "explanation": self.explanation,
        }

    def _repr_html_(self) -> str:
        label = html.escape(metric_label(self.metric).removesuffix(" (dB)"))
        target = format_value(self.target, "psnr") if self.metric == "psnr" else f"{self.target:g}"

        def fmt(v: float) -> str:
            return format_value(v, self.metric)

        exact = self.sample_size >= self.population

        def with_ci(v: float, ci: tuple[float, float]) -> str:
            # every image measured: the value is exact, an interval would mislead
            return fmt(v) if exact else f"{fmt(v)} [{fmt(ci[0])}, {fmt(ci[1])}]"

        below = (
            with_ci(self.value_below, self.ci_below)
            if self.ci_below is not None and self.value_below is not None
            else "-"
        )
        colour = "#1a7f37" if self.decided else "#9a6700"
        stat = "mean" if self.statistic == "mean" else "5th percentile"
        rows = [
            ("recommended scan", f"<b>{self.scan}</b> of {self.curve.num_scans}"),
            ("target", f"{stat} {label} &ge; {target}"),
            ("at this scan", with_ci(self.value, self.ci)),
            ("scan below", below),
            ("bytes", f"{self.bytes_fraction:.1%} ({self.bandwidth_saving:.1%} saved)"),
            ("sample", f"{self.sample_size} of {self.population} images"),
            (
                "confidence",
                f"<span style='color:{colour}'>{html.escape(self.explanation)}</span>",
            ),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows
        )
        return f"<table>{body}</table>"
