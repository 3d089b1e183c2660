"""Per-layer sparsity against the training step, from a captured (or shipped) trace.

A trace made by :func:`~pcr_explore.swap.capture.train_capture.capture_training`
holds one iteration per captured step and names the steps in its metadata;
:class:`SparsityTable` lays that out as layers x steps, prints it, and
compares ReLU outputs with pool outputs.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._json import json_safe
from ..._public import public
from ..traces import Trace

__all__ = ["SparsityTable"]


@public("pcr_explore.swap")
@dataclass(frozen=True, eq=False)
class SparsityTable:
    """Sparsity (fraction of +0.0 elements) of each saved tensor at each captured step.

    Attributes
    ----------
    trace_name : str
        The trace it comes from.
    names, ops, kinds : tuple of str
        Per tensor, in forward order.
    steps : tuple of int
        Captured steps (1-based), one per row of :attr:`sparsity`.
    sparsity : ndarray, shape (steps, tensors)

    Examples
    --------
    >>> from pcr_explore.swap import Trace, TensorRecord
    >>> t = Trace("toy", (TensorRecord("a:relu", (2, 4), kind="relu", op="relu"),
    ...                   TensorRecord("b:maxpool", (2, 2), kind="pool", op="maxpool")),
    ...           [[0.5, 0.25], [0.75, 0.5]], meta={"steps": [1, 10]})
    >>> tab = SparsityTable.from_trace(t)
    >>> tab.change().tolist(), tab.mean_by_kind()
    ([0.25, 0.25], {'relu': [0.5, 0.75], 'pool': [0.25, 0.5]})
    >>> print(tab.to_text())
    tensor     op          shape          step 1  step 10
    a:relu     relu        2x4              0.50     0.75
    b:maxpool  maxpool     2x2              0.25     0.50
    """

    trace_name: str
    names: tuple[str, ...]
    ops: tuple[str, ...]
    kinds: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    steps: tuple[int, ...]
    sparsity: np.ndarray

    @classmethod
    def from_trace(cls, trace: Trace) -> SparsityTable:
        """Build the table from a trace; steps come from ``meta["steps"]`` (else 1, 2, ...).

        Parameters
        ----------
        trace : Trace
            Any trace; one row per iteration.

        Returns
        -------
        SparsityTable
        """
        steps = trace.meta.get("steps")
        if not isinstance(steps, list) or len(steps) != trace.iterations:
            steps = list(range(1, trace.iterations + 1))
        return cls(
            trace.name,
            tuple(r.name for r in trace.tensors),
            tuple(r.op or r.kind for r in trace.tensors),
            tuple(r.kind for r in trace.tensors),
            tuple(r.shape for r in trace.tensors),
            tuple(int(s) for s in steps),
            np.asarray(trace.sparsity),
        )

    def change(self) -> np.ndarray:
        """Sparsity at the last captured step minus at the first, per tensor."""
        return self.sparsity[-1] - self.sparsity[0]

    def mean_by_kind(self) -> dict[str, list[float]]:
        """Mean sparsity of ReLU outputs and of pool outputs at each step.

        Returns
        -------
        dict of str to list of float
            ``"relu"`` and ``"pool"`` (when present), one value per step.
        """
        out = {}
        for kind in ("relu", "pool"):
            cols = [i for i, k in enumerate(self.kinds) if k == kind]
            if cols:
                out[kind] = [float(v) for v in self.sparsity[:, cols].mean(axis=1)]
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return the table as JSON-ready data.

        Returns
        -------
        dict
            ``trace``, ``steps`` and per tensor ``name``, ``op``, ``kind``,
            ``shape`` and ``sparsity`` (one value per step).
        """
        return json_safe(
            {
                "trace": self.trace_name,
                "steps": list(self.steps),
                "tensors": [
                    {
                        "name": n,
                        "op": o,
                        "kind": k,
                        "shape": list(s),
                        "sparsity": [float(v) for v in self.sparsity[:, i]],
                    }
                    for i, (n, o, k, s) in enumerate(
                        zip(self.names, self.ops, self.kinds, self.shapes)
                    )
                ],
            }
        )

    def to_text(self, max_steps: int = 6) -> str:
        """Format the table: one row per tensor, one column per step.

        Parameters
        ----------
        max_steps : int
            Show at most this many steps, spread evenly (first and last kept).

        Returns
        -------
        str
        """
        cols = _spread(len(self.steps), max_steps)
        w = max([len("tensor"), *map(len, self.names)]) + 2
        head = f"{'tensor':<{w}}{'op':<12}{'shape':<12}" + "".join(
            f"{'step ' + str(self.steps[c]):>9}" for c in cols
        )
        lines = [head.rstrip()]
        for i, name in enumerate(self.names):
            shape = "x".join(map(str, self.shapes[i]))
            vals = "".join(f"{self.sparsity[c, i]:>9.2f}" for c in cols)
            lines.append(f"{name:<{w}}{self.ops[i]:<12}{shape:<12}{vals}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cols = _spread(len(self.steps), 8)
        head = "".join(f"<th>step {self.steps[c]}</th>" for c in cols)
        rows = "".join(
            f"<tr><td>{html.escape(n)}</td><td>{html.escape(self.ops[i])}</td>"
            + "".join(f"<td>{self.sparsity[c, i]:.2f}</td>" for c in cols)
            + "</tr>"
            for i, n in enumerate(self.names)
        )
        return (
            f"<b>{html.escape(self.trace_name)}</b>: sparsity per saved tensor, measured"
            f"<table><tr><th>tensor</th><th>op</th>{head}</tr>{rows}</table>"
        )


def _spread(n: int, k: int) -> list[int]:
    """At most *k* indices of ``range(n)``, evenly spread, first and last included."""
    if n <= k:
        return list(range(n))
    return sorted({int(round(v)) for v in np.linspace(0, n - 1, k)})
