"""Built-in VGG-16 and ResNet-50 traces: shapes, FLOPs, bytes."""

from __future__ import annotations

import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import builtin_trace
from pcr_explore.swap.traces.architectures import BUILTIN_MODELS, resnet50_trace, vgg16_trace


def test_vgg16_shapes_and_flops():
    t = vgg16_trace(batch=2, resolution=224, sparsity=0.6)
    names = [r.name for r in t.tensors]
    assert names[:4] == ["input", "conv1_1", "conv1_2", "pool1"]
    assert len(t) == 21  # input + 13 conv + 5 pool + fc6 + fc7
    rec = {r.name: r for r in t.tensors}
    assert rec["conv5_3"].shape == (2, 512, 14, 14)
    assert rec["pool5"].shape == (2, 512, 7, 7)
    assert rec["conv1_2"].binarizable and not rec["conv1_1"].binarizable
    # 15.47 G multiply-adds per 224x224 image in the convs and fcs
    macs = sum(r.fwd_flops for r in t.tensors if r.kind == "relu") / 2 / 2
    assert macs == pytest.approx(15.47e9, rel=0.01)
    s = dict(zip(names, t.sparsity[0], strict=True))
    assert s["input"] == 0.0 and s["conv3_1"] == pytest.approx(0.6)


def test_resnet50_shapes_and_flops():
    t = resnet50_trace(batch=1)
    assert len(t) == 51
    rec = {r.name: r for r in t.tensors}
    assert rec["stem.relu"].shape == (1, 64, 112, 112)
    assert rec["stem.pool"].shape == (1, 64, 56, 56)
    assert rec["layer2.0.relu2"].shape == (1, 128, 28, 28)
    assert rec["layer4.2.relu3"].shape == (1, 2048, 7, 7)
    total = sum(r.fwd_flops for r in t.tensors) + t.tail_fwd_flops
    assert total / 2 == pytest.approx(4.1e9, rel=0.03)  # ~4.1 G multiply-adds


def test_batch_and_resolution_scale_bytes():
    small = vgg16_trace(batch=1, resolution=64)
    big = vgg16_trace(batch=4, resolution=128)
    assert big.tensors[1].nbytes == 16 * small.tensors[1].nbytes
    with pytest.raises(SwapError, match="batch"):
        vgg16_trace(batch=0)
    with pytest.raises(SwapError, match="resolution"):
        resnet50_trace(resolution=16)
    with pytest.raises(SwapError, match="unknown model"):
        builtin_trace("alexnet")


def test_builtin_trace_by_name_equals_the_builder():
    assert sorted(BUILTIN_MODELS) == ["resnet50", "vgg16"]
    a = builtin_trace("ResNet50", batch=2, resolution=96, sparsity=(0.3, 0.7))
    b = resnet50_trace(batch=2, resolution=96, sparsity=(0.3, 0.7))
    assert a.name == b.name == "resnet50-b2-r96" and a.tensors == b.tensors
    assert a.sparsity.tolist() == b.sparsity.tolist()
    assert builtin_trace("vgg16", batch=1).sparsity[0, 1] == pytest.approx(0.65)
