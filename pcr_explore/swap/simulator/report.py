"""A swap report: one trace on one device under several policies, as a table or JSON.

:func:`report` is what ``pcr-explore swap-sim`` runs: it builds or loads the
trace, simulates every policy and returns a :class:`SwapReport` that prints
as a text table, renders in a notebook and saves as JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..._json import json_safe, to_json
from ..._public import public
from ...errors import SwapError
from ...storage._atomic import atomic_write
from ..model.profiles import DeviceProfile, get_profile
from ..traces import Trace
from ..traces._trace import MAX_ITERATIONS, check_iterations
from ..traces.architectures import builtin_trace
from ..traces.catalog import load_trace
from ..traces.sparsity import SparsitySpec
from .policies import Policy
from .results import SimResult
from .simulate import simulate_many

__all__ = ["SwapReport", "report", "MAX_ITERATIONS"]


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class SwapReport:
    """Several policies simulated on one trace and profile.

    Attributes
    ----------
    trace : Trace
        The trace simulated.
    profile : DeviceProfile
        The device it was priced on.
    results : mapping of str to SimResult
        One result per policy, keyed by canonical policy name, in order.
    """

    trace: Trace
    profile: DeviceProfile
    results: Mapping[str, SimResult]

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready data (non-finite numbers become ``None``).

        Returns
        -------
        dict
            ``kind`` (``"simulated"``), ``assumptions`` (the profile whose
            assumed speeds priced it), ``trace``, ``profile``,
            ``mean_sparsity``, ``total_bytes``,
            ``policies`` (each result's totals, see
            :meth:`~pcr_explore.swap.simulator.results.SimResult.to_dict`) and
            ``tensors``: per tensor its ``name``, ``shape``, ``bytes``,
            last-iteration ``sparsity`` and, per policy, the ``codec``,
            ``bytes``, ``stall_seconds`` and ``reason`` of its decision.
        """
        decisions = {name: r.decisions() for name, r in self.results.items()}
        tensors = [
            {
                "name": rec.name,
                "shape": list(rec.shape),
                "bytes": rec.nbytes,
                "sparsity": float(self.trace.sparsity[-1, t]),
                "decisions": {
                    name: {
                        "codec": d[t].codec,
                        "bytes": d[t].bytes,
                        "stall_seconds": d[t].actual_stall,
                        "reason": d[t].reason,
                    }
                    for name, d in decisions.items()
                },
            }
            for t, rec in enumerate(self.trace.tensors)
        ]
        return json_safe(
            {
                "kind": "simulated",
                "assumptions": self.profile.name,
                "trace": self.trace.name,
                "profile": self.profile.name,
                "mean_sparsity": self.trace.mean_sparsity,
                "total_bytes": self.trace.total_bytes,
                "policies": {name: r.to_dict(decisions=False) for name, r in self.results.items()},
                "tensors": tensors,
            }
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as strict JSON.

        Parameters
        ----------
        path : str or path-like
            File to write (atomically: a reader, or a run stopped midway, sees
            the old file or the whole new one).

        Raises
        ------
        SwapError
            If the file cannot be written.
        """
        text = to_json(self.to_dict())
        try:
            atomic_write(path, text)
        except OSError as exc:
            # atomic_write's strerror already reads "cannot write: <why>"
            raise SwapError(f"{path}: {exc.strerror}") from exc

    def to_text(self) -> str:
        """Format the policies' totals as a text table.

        Returns
        -------
        str
            A header line naming trace and device and saying the figures are
            simulated under that profile's assumptions, then one row per policy:
            swap time, stall, link GiB, step time, swap time relative to
            ``vdnn`` (when simulated) and the codecs used.
        """
        base = self.results.get("vdnn")
        lines = [
            f"{self.trace.name} on {self.profile.name}: {len(self.trace)} tensors, "
            f"{self.trace.total_bytes / 2**30:.2f} GiB, "
            f"mean sparsity {self.trace.mean_sparsity:.2f}",
            f"simulated, assumptions profile {self.profile.name} (docs/SWAP.md), not measured",
            f"{'policy':<18}{'swap ms':>10}{'stall ms':>10}{'link GiB':>10}{'step ms':>10}"
            f"{'vs vdnn':>9}  codecs",
        ]
        for name, r in self.results.items():
            rel = ""
            if base is not None and base.swap_seconds > 0:
                rel = f"{(r.swap_seconds / base.swap_seconds - 1) * 100:+.1f}%"
            counts = " ".join(f"{c}:{k}" for c, k in r.summary()["codec_counts"].items())
            lines.append(
                f"{name:<18}{r.swap_seconds * 1e3:>10.2f}{r.stall_seconds * 1e3:>10.2f}"
                f"{r.link_bytes / 2**30:>10.3f}{r.step_seconds * 1e3:>10.2f}{rel:>9}  {counts}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<li>{r._repr_html_()}</li>" for r in self.results.values())
        return f"<pre>{self.to_text().splitlines()[0]}</pre><ul>{rows}</ul>"


@public("pcr_explore.swap")
def report(
    model: str = "vgg16",
    *,
    profile: DeviceProfile | str = "v100-pcie3",
    policies: Iterable[str | Policy] | None = None,
    trace: Trace | str | os.PathLike[str] | None = None,
    batch: int = 64,
    resolution: int = 224,
    sparsity: SparsitySpec | None = None,
    iterations: int = 1,
    drift: float = 0.1,
    noise: float = 0.05,
    seed: int = 0,
    warmup: int = 2,
    drift_threshold: float = 0.02,
) -> SwapReport:
    """Simulate a model's swapped activations under several policies on one device.

    Parameters
    ----------
    model : str
        Built-in model (``"vgg16"``, ``"resnet50"``); ignored when ``trace``
        is given.
    profile : DeviceProfile or str
        A profile or a built-in profile name.
    policies : iterable of str or Policy, optional
        Defaults to :func:`~pcr_explore.swap.simulator.policies.default_policies`.
    trace : Trace, str or path-like, optional
        A trace, a trace JSON file written by
        :meth:`~pcr_explore.swap.traces.Trace.save`, or the name of a
        built-in measured trace (:func:`~pcr_explore.swap.traces.catalog.load_trace`),
        instead of ``model``.
    batch : int
        Batch size of the built-in model, >= 1.
    resolution : int
        Input side of the built-in model, pixels.
    sparsity : SparsitySpec, optional
        Sparsity of ReLU and pool outputs (a value or a ``(shallow, deep)``
        ramp, see :func:`~pcr_explore.swap.traces.sparsity.sparsity_profile`). The
        default keeps a given trace's sparsity, and gives built-in models
        0.65.
    iterations : int
        Iterations to simulate, at most :data:`MAX_ITERATIONS` (1,000); above
        1, sparsity drifts by ``drift`` from the first to the last
        (:meth:`~pcr_explore.swap.traces.Trace.with_drift`).
    drift : float
        Sparsity change over the iterations.
    noise, seed, warmup, drift_threshold
        See :func:`~pcr_explore.swap.simulator.simulate.simulate`; ``seed`` also
        seeds the drift's jitter.

    Returns
    -------
    SwapReport
        The trace, the profile and one result per policy.

    Raises
    ------
    SwapError
        For a bad trace file, model, profile, policy, sparsity, batch or
        iteration count.

    Examples
    --------
    >>> rep = report("vgg16", profile="v100-pcie3", policies=["vdnn", "always:zvc"], batch=8,
    ...              sparsity=0.7)
    >>> print(rep.to_text())  # doctest: +NORMALIZE_WHITESPACE
    vgg16-b8-r224 on v100-pcie3: 21 tensors, 0.45 GiB, mean sparsity 0.69
    simulated, assumptions profile v100-pcie3 (docs/SWAP.md), not measured
    policy               swap ms  stall ms  link GiB   step ms  vs vdnn  codecs
    vdnn                   77.81     40.70     0.908    126.54    +0.0%  raw:21
    always:zvc             33.04     15.20     0.311    101.05   -57.5%  zvc:21
    """
    if not isinstance(batch, int) or batch < 1:
        raise SwapError(f"batch must be an integer >= 1, got {batch!r}")
    check_iterations(iterations)
    if trace is None:
        tr = builtin_trace(
            model,
            batch=batch,
            resolution=resolution,
            sparsity=0.65 if sparsity is None else sparsity,
        )
    else:
        tr = trace if isinstance(trace, Trace) else load_trace(trace)
        if sparsity is not None:
            tr = tr.with_sparsity(sparsity)
    if iterations > 1:
        tr = tr.with_drift(iterations, change=drift, seed=seed)
    prof = get_profile(profile)
    results = simulate_many(
        tr,
        profile=prof,
        policies=policies,
        noise=noise,
        seed=seed,
        warmup=warmup,
        drift_threshold=drift_threshold,
    )
    return SwapReport(tr, prof, results)
