"""nn.Module and the layers: registration, traversal, state_dict, modes, moves, hooks, repr,
torch's default initialisations and BatchNorm's running statistics."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import nn
from gpu_tensor.testing import assert_close


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.register_buffer("scale", gt.ones(3))
        self.register_buffer("cache", gt.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)).relu()) * self.scale


def test_registration_and_traversal():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "fc1.weight",
        "fc1.bias",
        "norm.weight",
        "norm.bias",
        "fc2.weight",
    ]
    assert [n for n, _ in net.named_buffers()] == [
        "scale",
        "cache",
        "norm.running_mean",
        "norm.running_var",
        "norm.num_batches_tracked",
    ]
    assert [n for n, _ in net.named_children()] == ["fc1", "norm", "fc2"]
    assert len(list(net.modules())) == 4
    assert all(isinstance(p, nn.Parameter) and isinstance(p, gt.Tensor) for p in net.parameters())
    assert net.get_submodule("fc1") is net.fc1
    shared = nn.Sequential(net.fc1, net.fc1)
    assert len(list(shared.parameters())) == 2  # the shared layer counted once
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        _ = net.nope
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'fc1'|child module"):
        net.fc1 = gt.zeros(1)
    with pytest.raises(AttributeError, match="before Module.__init__"):

        class Early(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(gt.zeros(1))

        Early()


def test_state_dict_round_trip_and_key_errors():
    net, other = Net(), Net()
    sd = net.state_dict()
    assert list(sd) == [
        "scale",
        "fc1.weight",
        "fc1.bias",
        "norm.weight",
        "norm.bias",
        "norm.running_mean",
        "norm.running_var",
        "norm.num_batches_tracked",
        "fc2.weight",
    ]  # torch's order; the non-persistent `cache` left out
    assert not sd["fc1.weight"].requires_grad
    result = other.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert_close(other.fc1.weight, net.fc1.weight)
    bad = OrderedDict(sd)
    del bad["fc2.weight"]
    bad["extra"] = gt.zeros(1)
    with pytest.raises(RuntimeError) as err:
        other.load_state_dict(bad)
    msg = str(err.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:")
    assert 'Missing key(s) in state_dict: "fc2.weight".' in msg
    assert 'Unexpected key(s) in state_dict: "extra".' in msg
    keys = other.load_state_dict(bad, strict=False)
    assert keys.missing_keys == ["fc2.weight"] and keys.unexpected_keys == ["extra"]
    bad = OrderedDict(sd, **{"fc1.bias": gt.zeros(5)})
    with pytest.raises(
        RuntimeError,
        match="size mismatch for fc1.bias: copying a param with "
        "shape .*5.* from checkpoint, the shape in current model is .*8",
    ):
        other.load_state_dict(bad, strict=False)


def test_modes_grads_moves_and_dtype(device):
    net = Net()
    assert net.training and net.norm.training
    net.eval()
    assert not net.training and not net.norm.training
    net.train()
    w = net.fc1.weight
    net.to(device, gt.float64)
    assert net.fc1.weight is w  # converted in place: an optimizer made earlier still holds it
    assert w.dtype is gt.float64 and w.device.type == device and w.requires_grad
    assert net.norm.num_batches_tracked.dtype is gt.int64  # integer buffers keep their dtype
    out = net(gt.randn(5, 4, dtype=gt.float64, device=device))
    out.sum().backward()
    assert w.grad is not None and w.grad.dtype is gt.float64
    net.zero_grad()
    assert w.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    with pytest.raises(TypeError, match="floating point"):
        net.to(gt.int32)


def test_forward_hooks_and_repr():
    lin = nn.Linear(8, 16)
    seen = []
    handle = lin.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    pre = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    out = lin(gt.ones(2, 8))
    assert seen == [(2, 16)]
    assert_close(out, lin.bias.detach().expand(2, 16))  # the pre-hook zeroed the input
    handle.remove()
    pre.remove()
    lin(gt.ones(1, 8))
    assert seen == [(2, 16)]
    assert repr(lin) == "Linear(in_features=8, out_features=16, bias=True)"
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4, 2))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (1): ReLU()\n"
        "  (2): Flatten(start_dim=1, end_dim=-1)\n"
        "  (3): Linear(in_features=4, out_features=2, bias=True)\n"
        ")"
    )
    assert repr(nn.Parameter(gt.zeros(1))).startswith("Parameter containing:\ntensor([0.]")


def test_containers():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    assert len(layers) == 4 and isinstance(layers[-1], nn.ReLU)
    assert len(list(layers.parameters())) == 6
    d = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.Tanh()})
    assert list(d.keys()) == ["a", "b"] and "a" in d
    seq = nn.Sequential(OrderedDict([("lin", nn.Linear(2, 2)), ("act", nn.Sigmoid())]))
    assert isinstance(seq[1], nn.Sigmoid) and isinstance(seq[:1], nn.Sequential)
    assert list(seq.state_dict()) == ["lin.weight", "lin.bias"]
    clone = copy.deepcopy(seq)
    assert clone.lin.weight is not seq.lin.weight
    assert_close(clone.lin.weight, seq.lin.weight)


def test_default_inits_are_torchs():
    gt.manual_seed(0)
    lin = nn.Linear(50, 200)
    bound = 1 / math.sqrt(50)  # kaiming_uniform_(a=sqrt(5)) and the bias rule agree here
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    conv = nn.Conv2d(4, 6, 3, groups=2)
    assert tuple(conv.weight.shape) == (6, 2, 3, 3)
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(2 * 9)
    emb = nn.Embedding(1000, 8, padding_idx=3)
    e = emb.weight.detach().numpy()
    assert (e[3] == 0).all() and abs(e.std() - 1) < 0.05
    ln = nn.LayerNorm(5)
    assert (ln.weight.detach().numpy() == 1).all() and (ln.bias.detach().numpy() == 0).all()


def test_batchnorm_running_stats_follow_torchs_rule(device):
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm2d(3).to(device)
    mean, var = np.zeros(3), np.ones(3)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32) * 2 + 1
        out = bn(gt.tensor(x, device=device))
        bm, bv = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
        ref = (x - bm[None, :, None, None]) / np.sqrt(bv[None, :, None, None] + 1e-5)
        assert_close(out, ref.astype(np.float32), atol=1e-5, rtol=1e-5)
        mean = 0.9 * mean + 0.1 * bm
        var = 0.9 * var + 0.1 * x.var(axis=(0, 2, 3), ddof=1)
    assert_close(bn.running_mean, mean.astype(np.float32), atol=1e-6, rtol=1e-5)
    assert_close(bn.running_var, var.astype(np.float32), atol=1e-6, rtol=1e-5)
    assert int(bn.num_batches_tracked.item()) == 3
    bn.eval()
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    assert_close(bn(gt.tensor(x, device=device)), ref.astype(np.float32), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(gt.zeros(2, 3, device=device))
    bn1 = nn.BatchNorm1d(3).train()
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        bn1(gt.zeros(1, 3))


def test_dropout_module_and_losses():
    drop = nn.Dropout(0.5)
    x = gt.ones(100)
    assert (drop(x).numpy() == 0).any()
    drop.eval()
    assert drop(x) is x
    weight = gt.tensor([1.0, 2.0])
    loss = nn.CrossEntropyLoss(weight=weight, label_smoothing=0.1)
    assert list(loss.state_dict()) == ["weight"]
    x, y = gt.tensor([[1.0, 2.0], [0.5, -1.0]]), gt.tensor([1, 0])
    assert_close(loss(x, y), nn.functional.cross_entropy(x, y, weight, label_smoothing=0.1))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
