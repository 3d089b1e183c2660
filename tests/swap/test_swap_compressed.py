"""compressed_activations: codecs on saved tensors during real training steps."""

from __future__ import annotations

import numpy as np
import pytest

from pcr_explore.errors import SwapError
from pcr_explore.swap import (
    SavedTensorInfo,
    compressed_activations,
    get_codec,
    least_stall,
    smallest_encoding,
)

torch = pytest.importorskip("torch")

LOSSLESS = ["zvc", "bitmap", "csr", "delta8", "rle", "lz4", "zstd"]


def _net():
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, 3),
    )


def _train(codec, steps=4, policy=None, seed=0):
    """Losses of a few SGD steps from a fixed seed; the saved activations through *codec*."""
    torch.manual_seed(seed)
    net = _net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    data = [
        (torch.randn(4, 3, 16, 16, generator=g), torch.randint(0, 3, (4,), generator=g))
        for _ in range(steps)
    ]
    losses = []

    def run():
        for x, y in data:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))

    if codec is None and policy is None:
        run()
        return losses, None
    with compressed_activations(codec, policy=policy, model=net, min_bytes=256) as log:
        run()
    return losses, log


@pytest.fixture(scope="module")
def baseline():
    return _train(None)[0]


@pytest.mark.parametrize("codec", [*LOSSLESS, "binarize"])
def test_lossless_codecs_give_the_same_run_loss_for_loss(codec, baseline):
    losses, log = _train(codec)
    assert losses == baseline  # exact: every float of every step
    if codec == "binarize":
        # only where backward reads nothing but the ReLU's mask: the first ReLU (read by the
        # ReLU and the max-pool) and the second (read by its ReLU; Linear reads a view)
        assert {r.codec for r in log.records} == {"raw", "binarize"}
        assert all(r.info.op == "relu" for r in log.records if r.codec == "binarize")
    else:
        assert {r.codec for r in log.records} == {get_codec(codec).name}


def test_zfp_changes_training_a_little():
    base, _ = _train(None)
    losses, log = _train("zfp:16")
    assert losses != base
    np.testing.assert_allclose(losses, base, rtol=0.05)
    assert log.saved_fraction == pytest.approx(0.5, abs=0.02)  # 16 of 32 bits per value


def test_bytes_accounting_counts_each_tensor_once():
    torch.manual_seed(0)
    net = _net()
    x = torch.randn(4, 3, 16, 16)
    with compressed_activations("zvc", model=net, min_bytes=256) as log:
        net(x).sum().backward()
    distinct = [r for r in log.records if r.same_as is None]
    shared = [r for r in log.records if r.shared]
    # input, conv out, ReLU out (saved by the ReLU and again by the pool: shared), pool out,
    # second ReLU out, its flattened view
    assert [r.info.op for r in distinct] == ["input", "conv", "relu", "maxpool", "relu", "view"]
    assert len(shared) == 1 and shared[0].same_as == distinct[2].index
    assert [r.info.saver for r in distinct] == ["conv", "bn", "relu", "conv", "relu", "linear"]
    assert log.raw_bytes == 4 * (4 * 3 * 256 + 4 * 8 * 256 * 2 + 4 * 8 * 64 * 3)
    zvc = get_codec("zvc")
    assert log.stored_bytes == sum(
        zvc.size_for_nnz(
            int(np.prod(r.info.shape)), round(np.prod(r.info.shape) * (1 - r.info.sparsity))
        )
        for r in distinct
    )
    assert log.by_codec()["zvc"]["raw_bytes"] == log.raw_bytes
    s = log.summary()
    assert s["tensors"] == 6 and s["stored_bytes"] == log.stored_bytes
    assert s["encode_seconds"] > 0 and s["decode_seconds"] > 0
    assert all(r.decode_s > 0 for r in distinct)  # each was decoded for backward


def test_decoded_tensor_is_bit_identical_and_keeps_strides():
    w = torch.randn(6, 5, requires_grad=True)
    x = torch.randn(5, 7).t()  # non-contiguous, saved by mm for the weight's gradient
    x[x < 0] = 0.0
    x[0, 0] = -0.0  # a signed zero is a value, not a zero, to every codec here
    with compressed_activations("zvc", min_bytes=0) as log:
        y = x @ w.t()
        saved = y.grad_fn._saved_self  # unpacks: decodes what was encoded
        y.sum().backward()
    assert saved.stride() == x.stride() and saved.dtype == x.dtype
    assert torch.equal(saved.view(torch.int32), x.view(torch.int32))  # bit for bit
    torch.testing.assert_close(w.grad, torch.ones(6, 7) @ x, rtol=0, atol=0)
    rec = next(r for r in log.records if r.info.shape == (7, 5))
    nnz = int((x.view(torch.int32) != 0).sum())
    assert rec.codec == "zvc" and rec.stored_bytes == get_codec("zvc").size_for_nnz(35, nnz)


def test_weights_and_small_or_integer_tensors_stay_raw():
    torch.manual_seed(0)
    net = _net()
    with compressed_activations("zvc", model=net, min_bytes=4096) as log:
        net(torch.randn(4, 3, 16, 16)).sum().backward()
    shapes = [r.info.shape for r in log.records]
    assert (8, 3, 3, 3) not in shapes and (3, 512) not in shapes  # parameters
    assert all(r.raw_bytes >= 4096 for r in log.records)  # the 4x512 view (8 KiB) is kept
    assert all(np.dtype(r.info.dtype).kind == "f" for r in log.records)  # no pool indices


def test_policy_decides_per_tensor_and_is_recorded(baseline):
    seen = []

    def only_sparse(info: SavedTensorInfo):
        seen.append(info)
        return "zvc" if info.sparsity > 0.3 else None

    losses, log = _train(None, policy=only_sparse)
    assert losses == baseline
    assert seen and {r.codec for r in log.records} == {"raw", "zvc"}
    for r in log.records:
        if not r.shared:
            assert (r.codec == "zvc") == (r.info.sparsity > 0.3)
            assert r.reason == f"policy: {r.codec}"
    with pytest.raises(SwapError):
        with compressed_activations("nonsense"):
            pass


def test_zfp_refusing_a_tensor_keeps_it_raw_and_says_why():
    x = torch.full((8, 64), float("nan"), requires_grad=True)
    with compressed_activations("zfp:8", min_bytes=0) as log:
        (x * x).sum().backward()
    assert log.records and all(r.codec == "raw" for r in log.records)
    assert "refused" in log.records[0].reason


def test_built_in_policies():
    shape, nbytes = (64, 64, 32, 32), 4 * 64 * 64 * 1024
    dense = SavedTensorInfo(shape, "float32", nbytes, 0.0, "conv", "bn")
    sparse = SavedTensorInfo(shape, "float32", nbytes, 0.7, "relu", "maxpool")
    assert smallest_encoding(["zvc", "csr"])(dense) is None
    assert smallest_encoding(["zvc", "binarize"])(sparse) == "binarize"
    assert smallest_encoding(["binarize"])(dense) is None  # not a mask-only tensor
    pick = least_stall("v100-pcie3", codecs=["zvc"])
    assert pick(sparse) == "zvc" and pick(dense) is None
    # a copy hidden behind enough compute never pays for a codec
    assert least_stall("v100-pcie3", codecs=["zvc"], overlap_s=1.0)(sparse) is None
    with pytest.raises(SwapError, match="prices none"):
        least_stall("v100-pcie3", codecs=["lz4"])
    with pytest.raises(SwapError, match="at least one"):
        smallest_encoding([])
