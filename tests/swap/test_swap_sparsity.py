"""Sparsity profiles over depth."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap.architectures import resnet50_trace, vgg16_trace
from pcr_explore.swap.sparsity import sparsity_profile, spec_to_json


def test_sparsity_profiles():
    np.testing.assert_allclose(sparsity_profile(0.3, 4), [0.3] * 4)
    np.testing.assert_allclose(sparsity_profile((0.2, 0.8), 4), [0.2, 0.4, 0.6, 0.8])
    np.testing.assert_allclose(sparsity_profile([0.1, 0.9], 3), [0.1, 0.5, 0.9])
    captured = vgg16_trace(batch=1, sparsity=(0.3, 0.9))
    onto = resnet50_trace(batch=1, sparsity=captured)
    sparse = [i for i, r in enumerate(onto.tensors) if r.kind != "input"]
    s = onto.sparsity[0, sparse]
    assert s[0] == pytest.approx(0.3) and s[-1] == pytest.approx(0.9)
    assert np.all(np.diff(s) >= -1e-12)
    assert onto.meta["sparsity"] == {"from_trace": captured.name}
    for bad in (1.2, (0.1, -0.5), []):
        with pytest.raises(SwapError):
            sparsity_profile(bad, 3)


def test_spec_descriptions_are_plain_json():
    assert spec_to_json(0.5) == 0.5
    assert spec_to_json((0.2, 0.8)) == [0.2, 0.8]
    assert spec_to_json(np.array([0.1, 0.4])) == [0.1, 0.4]
    assert vgg16_trace(batch=1, sparsity=(0.2, 0.8)).meta["sparsity"] == [0.2, 0.8]
