"""The small numpy CNN on bundled photos, and traces built from it."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import bit_sparsity, cnn_trace, get_codec, simulate_many
from pcr_explore.swap.capture.cnn import cnn_activations, sample_images


def test_cnn_on_photos_records_sparse_relu_outputs():
    acts = cnn_activations(size=32)
    names = [a[0] for a in acts]
    assert names == [
        "conv1_1",
        "conv1_2",
        "pool1",
        "conv2_1",
        "conv2_2",
        "pool2",
        "conv3_1",
        "conv3_2",
        "pool3",
    ]
    assert acts[0][1].shape == (4, 16, 32, 32) and acts[-1][1].shape == (4, 64, 4, 4)
    assert acts[0][2] == 2.0 * 4 * 16 * 32 * 32 * 3 * 9  # conv1_1 FLOPs
    sp = {n: bit_sparsity(a) for n, a, _ in acts}
    relu = [s for n, s in sp.items() if n.startswith("conv")]
    # documented ramp: ~0.5 at the first conv to ~0.85 at the last (fixed weights, photos)
    assert relu[0] == pytest.approx(0.51, abs=0.05)
    assert relu[-1] == pytest.approx(0.86, abs=0.05)
    assert np.all(np.diff(relu) > 0)  # deeper is sparser
    # a 2x2 max-pool output is zero only where all four inputs are: less sparse
    for block in (1, 2, 3):
        assert sp[f"pool{block}"] < sp[f"conv{block}_2"]
    assert all(not np.any(np.signbit(a)) for _, a, _ in acts)


def test_cnn_trace_carries_measured_sizes_used_by_simulator():
    t = cnn_trace(size=32, codecs=("zvc", "rle"))
    assert t.tensors[0].kind == "input" and t.tensors[0].shape == (4, 3, 32, 32)
    assert t.sparsity[0, 0] == bit_sparsity(sample_images(32))  # a few black pixels
    zvc = get_codec("zvc")
    for rec, s in zip(t.tensors, t.sparsity[0], strict=True):
        assert rec.measured_bytes["zvc"] == zvc.encoded_size(rec.n, s)  # ZVC's size is exact
    assert t.tensors[2].binarizable and not t.tensors[1].binarizable  # conv1_2 feeds pool1
    res = simulate_many(t, profile="v100-pcie3", policies=["vdnn", "always:rle", "oracle"])
    link = res["always:rle"].link_bytes / 2
    assert link == pytest.approx(sum(r.measured_bytes["rle"] for r in t.tensors))


def test_cnn_rejects_bad_images():
    with pytest.raises(SwapError, match="images"):
        cnn_activations(np.zeros((2, 1, 16, 16)))
