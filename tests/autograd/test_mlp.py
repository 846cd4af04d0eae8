"""End to end: a two-layer MLP (kaiming_uniform_/xavier_uniform_ init, plain SGD) learns a
synthetic regression problem; its loss falls clearly. Seeded."""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor import autograd, nn


def _problem(device, n=256, d_in=8):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d_in)).astype(np.float32)
    true_w = rng.standard_normal((d_in, 1)).astype(np.float32)
    y = np.tanh(x @ true_w) + 0.1 * np.sin(3 * x[:, :1])
    return gt.tensor(x, device=device), gt.tensor(y.astype(np.float32), device=device)


def test_mlp_trains(device):
    gt.manual_seed(0)
    x, y = _problem(device)
    hidden = 32
    w1 = gt.empty(hidden, 8, device=device, requires_grad=True)
    b1 = gt.zeros(hidden, device=device, requires_grad=True)
    w2 = gt.empty(1, hidden, device=device, requires_grad=True)
    b2 = gt.zeros(1, device=device, requires_grad=True)
    nn.init.kaiming_uniform_(w1, nonlinearity="relu")
    nn.init.xavier_uniform_(w2)
    params = [w1, b1, w2, b2]
    assert all(p.is_leaf and p.requires_grad for p in params)

    losses = []
    lr = 0.05
    for _ in range(150):
        h = (x @ w1.T + b1).relu()
        pred = h @ w2.T + b2
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        with autograd.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        losses.append(loss.item())
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.25 * losses[0], (losses[0], losses[-1])
    assert losses[-1] < np.mean(losses[:10])
    assert all(p.is_leaf and p.grad is None for p in params)
