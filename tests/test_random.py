"""gt.Generator, manual_seed and the in-place samplers on every device: seeded runs
repeat, samples have the right dtype/range/moments, bad parameters give torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt

N = 20000  # enough samples for moment checks at ~4 sigma


def test_manual_seed_repeats_on_every_device(device):
    gt.manual_seed(3)
    a = gt.empty(5, device=device).normal_()
    gt.manual_seed(3)
    b = gt.empty(5, device=device).normal_()
    assert a.tolist() == b.tolist()
    assert gt.initial_seed() == 3
    gt.cuda.manual_seed(3)
    assert gt.empty(5, device=device).normal_().tolist() == a.tolist()


def test_generator_is_independent_and_restorable(device):
    g = gt.Generator().manual_seed(7)
    assert g.initial_seed() == 7
    state = g.get_state()
    assert state.dtype is gt.uint8
    a = gt.rand(4, generator=g, device=device)
    g.set_state(state)
    assert gt.rand(4, generator=g, device=device).tolist() == a.tolist()
    x = gt.empty(3, device=device).uniform_(2, 5, generator=g)
    assert ((x >= 2) & (x < 5)).all()
    with pytest.raises(RuntimeError, match="RNG state size to be 3"):
        g.set_state(gt.tensor([1, 2, 3], dtype=gt.uint8))


@pytest.mark.parametrize(
    "name, args, mean, var",
    [
        ("normal_", (2.0, 3.0), 2.0, 9.0),
        ("uniform_", (-1.0, 3.0), 1.0, 16 / 12),
        ("exponential_", (2.0,), 0.5, 0.25),
        ("bernoulli_", (0.3,), 0.3, 0.21),
        ("geometric_", (0.5,), 2.0, 2.0),
        ("log_normal_", (0.0, 0.5), np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    ],
)
def test_sampler_moments(device, name, args, mean, var):
    gt.manual_seed(0)
    x = getattr(gt.empty(N, dtype=gt.float64, device=device), name)(*args)
    vals = x.cpu().numpy()
    assert abs(vals.mean() - mean) < 4 * np.sqrt(var / N)
    assert abs(vals.var() - var) < 0.1 * var


def test_random_integers(device):
    x = gt.empty(1000, dtype=gt.int64, device=device).random_(3, 7)
    assert set(x.tolist()) == {3, 4, 5, 6}
    y = gt.empty(1000, dtype=gt.uint8, device=device).random_()
    assert y.min().item() >= 0 and y.max().item() <= 255
    b = gt.empty(100, dtype=gt.bool, device=device).random_()
    assert b.dtype is gt.bool
    with pytest.raises(RuntimeError, match="from"):
        gt.empty(2, device=device).random_(5, 5)


def test_bad_parameters(device):
    with pytest.raises(RuntimeError, match="std"):
        gt.empty(2, device=device).normal_(0, -1)
    with pytest.raises(RuntimeError, match="from"):
        gt.empty(2, device=device).uniform_(3, 1)
    with pytest.raises(NotImplementedError, match="Long"):
        gt.empty(2, dtype=gt.int64, device=device).normal_()
    with pytest.raises(RuntimeError, match="lambda"):
        gt.empty(2, device=device).exponential_(0)


def test_bernoulli_and_multinomial(device):
    gt.manual_seed(1)
    p = gt.tensor([0.0, 1.0, 0.5], device=device).expand(2000, 3)
    s = gt.bernoulli(p)
    assert s.dtype is gt.float32 and s.device.type == device
    m = s.mean(0).tolist()
    assert m[0] == 0 and m[1] == 1 and abs(m[2] - 0.5) < 0.05
    w = gt.tensor([[0.0, 10.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]], device=device)
    draws = gt.multinomial(w, 1)
    assert draws.shape == (2, 1) and draws[0, 0].item() == 1
    assert sorted(gt.multinomial(w[1], 4).tolist()) == [0, 1, 2, 3]
    many = gt.multinomial(w[0], 50, replacement=True)
    assert set(many.tolist()) == {1}
    with pytest.raises(RuntimeError, match="not enough"):
        gt.multinomial(w[0], 2)
    with pytest.raises(RuntimeError, match="inf"):
        gt.multinomial(gt.tensor([-1.0, 1.0], device=device), 1)


def test_normal_function(device):
    m = gt.zeros(3000, device=device)
    x = gt.normal(m, 2.0)
    assert x.shape == (3000,) and abs(float(x.std()) - 2.0) < 0.15
    y = gt.normal(1.0, 0.5, size=(2, 3), device=device)
    assert y.shape == (2, 3) and y.device.type == device
