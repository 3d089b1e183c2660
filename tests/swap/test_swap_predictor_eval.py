"""Predictors graded on measured codec times of real tensors, against the measured oracle."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import calibrate, capture_training
from pcr_explore.swap.model.predictor_eval import (
    FAMILIES,
    MeasuredTimes,
    evaluate_predictors,
    measure_times,
)


def _synthetic(codec_time):
    """Four layers x three sizes; times given by *codec_time(n, nnz)*, exactly."""
    n = np.repeat([2e4, 1e5, 5e5, 2e6], 3) * np.tile([1.0, 1.3, 1.7], 4)
    nnz = n * np.tile([0.3, 0.5, 0.8], 4)
    groups = tuple(np.repeat(["a", "b", "c", "d"], 3))
    nbytes = (4 * nnz + n / 8 + 4096)[None]
    t = codec_time(n, nnz)[None]
    return MeasuredTimes(("zvc",), groups, n, nnz, 4 * n, nbytes, t, t)


def test_an_exact_linear_model_is_the_oracle():
    times = _synthetic(lambda n, nnz: 2e-6 + 4e-10 * n + 6e-10 * nnz)
    ev = evaluate_predictors(times, link_gbps=[0.5, 2.0, 8.0])
    for r in ev.rows:
        if r["family"] == "linear-nnls":
            assert r["gap"] == pytest.approx(0.0, abs=1e-12) and r["agreement"] == 1.0
    assert ev.errors["linear-nnls"]["zvc"]["encode"] < 1e-6
    assert set(ev.fit_groups).isdisjoint(ev.heldout_groups)
    assert len(ev.fit_groups) + len(ev.heldout_groups) == 4
    # each row's decisions can be no better than the oracle's, and the oracle no worse than raw
    for r in ev.rows:
        assert r["predicted_stall_s"] >= r["oracle_stall_s"] * (1 - 1e-12)
        assert r["oracle_stall_s"] <= r["raw_stall_s"] * (1 + 1e-12)
        assert r["tensors_fit"] + r["tensors_heldout"] == 12


def test_a_curved_cost_separates_the_families():
    # a cost that grows as n**1.5 (cache misses): the log-space power law fits it exactly,
    # the linear form cannot
    times = _synthetic(lambda n, nnz: 1e-12 * n**1.5)
    ev = evaluate_predictors(times, link_gbps=[1.0])
    assert ev.errors["power-law"]["zvc"]["encode"] < 1e-4  # log(n + 1), not log(n)
    assert ev.errors["linear-nnls"]["zvc"]["encode"] > 0.05
    assert ev.gap("power-law") == pytest.approx(0.0, abs=1e-6)


def test_measured_times_on_captured_tensors():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    nn = torch.nn
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 8 * 8, 3),
    )
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 3, (8,), generator=g))]
    cap = capture_training(net, loader=data, steps=2, every=1, keep_tensors=True)
    tensors, groups = [], []
    for step in cap.steps:
        tensors += cap.tensors[step]
        groups += [r.name for r in cap.trace.tensors]
    times = measure_times(tensors, groups, ["zvc", "zfp:8"], repeats=1)
    assert times.bytes.shape == (2, len(tensors)) and np.all(times.encode_s > 0)
    cal = calibrate("zvc", tensors=tensors, repeats=1)
    np.testing.assert_array_equal(cal.n, times.n)
    np.testing.assert_array_equal(cal.nnz, times.nnz)
    ev = evaluate_predictors(times, link_gbps=[1.0, 4.0])
    assert {r["family"] for r in ev.rows} == set(FAMILIES)
    assert {tuple(r["codecs"]) for r in ev.rows} == {("zvc",), ("zfp:8",), ("zvc", "zfp:8")}
    for r in ev.rows:
        assert 0.0 <= r["agreement"] <= 1.0
        assert r["gap"] >= -1e-12  # measured times: the oracle is the lower bound
    d = ev.to_dict()
    assert d["measured"].startswith("codec times measured") and set(d["gap"]) == set(FAMILIES)
    assert "held-out layers" in ev.to_text()


def test_errors():
    times = _synthetic(lambda n, nnz: 1e-9 * n)
    with pytest.raises(SwapError, match="family"):
        evaluate_predictors(times, families=["forest"])
    with pytest.raises(SwapError, match="not timed"):
        evaluate_predictors(times, codec_sets=[("zvc", "csr")])
    one = MeasuredTimes(
        ("zvc",),
        ("a",) * 12,
        times.n,
        times.nnz,
        times.raw_bytes,
        times.bytes,
        times.encode_s,
        times.decode_s,
    )
    with pytest.raises(SwapError, match="two layers"):
        evaluate_predictors(one)
    with pytest.raises(SwapError, match="group"):
        measure_times([np.zeros(4, np.float32)], ["a", "b"])
