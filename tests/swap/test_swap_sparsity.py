"""Sparsity profiles over depth."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap.traces.architectures import resnet50_trace, vgg16_trace
from pcr_explore.swap.traces.sparsity import sparsity_profile, spec_to_json


def test_sparsity_profiles():
    np.testing.assert_allclose(sparsity_profile(0.3, 4), [0.3] * 4)
    np.testing.assert_allclose(sparsity_profile((0.2, 0.8), 4), [0.2, 0.4, 0.6, 0.8])
    np.testing.assert_allclose(sparsity_profile([0.1, 0.9], 3), [0.1, 0.5, 0.9])
    captured = vgg16_trace(batch=1, sparsity=(0.3, 0.9))
    onto = resnet50_trace(batch=1, sparsity=captured)
    # ReLU outputs take the captured ReLU sparsities, pool outputs the captured pools'
    relus = [i for i, r in enumerate(onto.tensors) if r.kind == "relu"]
    s = onto.sparsity[0, relus]
    assert s[0] == pytest.approx(0.3) and s[-1] == pytest.approx(0.9)
    assert np.all(np.diff(s) >= -1e-12)
    first_pool = next(i for i, r in enumerate(captured.tensors) if r.kind == "pool")
    pool = next(i for i, r in enumerate(onto.tensors) if r.kind == "pool")
    assert onto.sparsity[0, pool] == pytest.approx(captured.sparsity[0, first_pool])
    assert onto.meta["sparsity"] == {"from_trace": captured.name}
    for bad in (1.2, (0.1, -0.5), []):
        with pytest.raises(SwapError):
            sparsity_profile(bad, 3)


def test_measured_pool_sparsity_is_kept_apart_from_relu():
    from pcr_explore.swap import measured_trace

    measured = measured_trace("small-cnn-flowers5")
    kinds = [r.kind for r in measured.tensors]
    relu = np.mean([measured.sparsity[0, i] for i, k in enumerate(kinds) if k == "relu"])
    pool = np.mean([measured.sparsity[0, i] for i, k in enumerate(kinds) if k == "pool"])
    assert pool < relu - 0.05  # measured: max-pool outputs are clearly less sparse
    onto = vgg16_trace(batch=1, sparsity=measured)
    on_pool = [onto.sparsity[0, i] for i, r in enumerate(onto.tensors) if r.kind == "pool"]
    on_relu = [onto.sparsity[0, i] for i, r in enumerate(onto.tensors) if r.kind == "relu"]
    assert max(on_pool) < min(on_relu)


def test_spec_descriptions_are_plain_json():
    assert spec_to_json(0.5) == 0.5
    assert spec_to_json((0.2, 0.8)) == [0.2, 0.8]
    assert spec_to_json(np.array([0.1, 0.4])) == [0.1, 0.4]
    assert vgg16_trace(batch=1, sparsity=(0.2, 0.8)).meta["sparsity"] == [0.2, 0.8]
