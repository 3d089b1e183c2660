"""capture_training on tiny networks: op labels, savers, per-step sparsity, a simulatable trace."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from pcr_explore.errors import MissingExtraError, SwapError
from pcr_explore.swap import (
    SparsityTable,
    Trace,
    bit_sparsity,
    build_net,
    capture_training,
    compressed_activations,
    simulate_many,
    swap_train,
)

torch = pytest.importorskip("torch")


def _batches(n=3, batch=4, side=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(batch, 3, side, side, generator=g), torch.randint(0, 3, (batch,), generator=g))
        for _ in range(n)
    ]


def _tiny():
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 4, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 8 * 8, 3),
    )


def test_capture_labels_each_saved_activation_with_its_op_and_savers():
    cap = capture_training(_tiny(), loader=_batches(), steps=4, every=2, keep_tensors=True)
    t = cap.trace
    assert cap.steps == (1, 3, 4) and t.iterations == 3 and len(cap.losses) == 4
    names = [r.name for r in t.tensors]
    ops = [r.op for r in t.tensors]
    # input (saved by conv), conv out (saved by BN), ReLU out (saved by ReLU and the pool),
    # pool out (saved by conv), ReLU out (saved by ReLU and Linear, through Flatten's view),
    # the flattened view (saved by Linear), the log-softmax output (saved by the loss)
    assert ops == ["input", "conv", "relu", "maxpool", "relu", "view", "log_softmax"]
    assert names[:4] == ["input", "0:conv", "2:relu", "3:maxpool"]
    assert [r.kind for r in t.tensors][:4] == ["input", "activation", "relu", "pool"]
    assert cap.savers[2] == ("maxpool", "relu") and cap.savers[1] == ("bn",)
    # only a ReLU output whose every saver reads just its mask can be binarized; the second
    # ReLU's output reaches Linear as a separate (flattened) view, saved apart
    assert [r.binarizable for r in t.tensors] == [False, False, True, False, True, False, False]
    # FLOPs of the producing conv: 2 * outputs * 3 * 3 * 3 inputs
    assert t.tensors[1].fwd_flops == 2 * 4 * 4 * 16 * 16 * 27
    assert t.tensors[0].shape == (4, 3, 16, 16) and t.tensors[2].shape == (4, 4, 16, 16)
    # no parameters, buffers, statistics or max-pool indices
    assert all(len(r.shape) >= 2 and r.dtype == "float32" for r in t.tensors)
    # sparsity per captured step, from the kept tensors
    for k, step in enumerate(cap.steps):
        got = [bit_sparsity(a) for a in cap.tensors[step]]
        np.testing.assert_allclose(t.sparsity[k], got)
    assert t.sparsity[0, 2] > 0.2 and t.sparsity[0, 0] == 0.0
    assert t.meta["steps"] == [1, 3, 4] and t.meta["savers"][2] == ["maxpool", "relu"]


def test_capture_leaves_training_unchanged():
    plain = _tiny()
    opt = torch.optim.SGD(plain.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for x, y in _batches() + _batches()[:1]:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(plain(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    cap = capture_training(_tiny(), loader=_batches(), steps=4, every=1)
    assert list(cap.losses) == losses


def test_sparsity_table_and_trace_round_trip(tmp_path):
    cap = capture_training(
        _tiny(), loader=_batches(), steps=3, every=1, measure_codecs=("zvc", "rle")
    )
    tab = cap.sparsity_table()
    assert isinstance(tab, SparsityTable) and tab.steps == (1, 2, 3)
    assert tab.sparsity.shape == (3, len(cap.trace))
    assert set(tab.mean_by_kind()) == {"relu", "pool"}
    text = tab.to_text()
    assert text.splitlines()[0].split()[-1] == "3" and "2:relu" in text
    assert tab.to_dict()["tensors"][2]["op"] == "relu"
    assert cap.trace.tensors[2].measured_bytes.keys() == {"zvc", "rle"}
    path = tmp_path / "cap.json"
    cap.trace.save(path)
    back = Trace.load(path)
    assert [r.op for r in back.tensors] == [r.op for r in cap.trace.tensors]
    np.testing.assert_array_equal(back.sparsity, cap.trace.sparsity)
    # the captured trace prices compute from the measured FLOPs, so the simulator takes it
    res = simulate_many(back, profile="v100-pcie3", policies=["vdnn", "cswap", "oracle"])
    assert res["oracle"].stall_seconds <= res["vdnn"].stall_seconds
    assert res["vdnn"].compute_seconds > 0


def test_capture_refuses_changing_shapes_and_bad_arguments():
    batches = _batches(2) + [(torch.randn(2, 3, 16, 16), torch.randint(0, 3, (2,)))]
    with pytest.raises(SwapError, match="smaller last batch"):
        capture_training(_tiny(), loader=batches, steps=3, every=1)
    with pytest.raises(SwapError, match="steps"):
        capture_training(_tiny(), loader=_batches(), steps=0)
    with pytest.raises(SwapError, match="every"):
        capture_training(_tiny(), loader=_batches(), steps=2, every=0)
    with pytest.raises(SwapError, match="no batch"):
        capture_training(_tiny(), loader=[], steps=2)


@pytest.mark.parametrize("name", ["small-cnn", "vgg-small", "resnet-small"])
def test_builtin_nets_train_and_label_their_ops(name):
    torch.manual_seed(0)
    net = build_net(name, num_classes=3, width=4)
    cap = capture_training(net, loader=_batches(1, 2), steps=1)
    ops = {r.op for r in cap.trace.tensors}
    assert {"input", "relu"} <= ops
    if name == "resnet-small":
        assert "conv" in ops and "bn" not in ops  # BN outputs feed ReLUs, which save outputs
    if name == "vgg-small":
        assert "maxpool" in ops
        assert sum(r.binarizable for r in cap.trace.tensors) == 3  # the ReLU before each pool
    with pytest.raises(SwapError, match="unknown network"):
        build_net("lenet", num_classes=3)


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # "import torch" now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
        capture_training(object(), loader=[], steps=1)
    with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
        with compressed_activations("zvc"):
            pass
    with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
        swap_train("nowhere", codec="zvc")
    with pytest.raises(MissingExtraError, match=r"pcr-explore\[torch\]"):
        build_net("vgg-small", num_classes=3)
