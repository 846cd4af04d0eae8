"""gt.optim against numpy transcriptions of torch's formulas, the fused step against the
eager one on every device, param groups, state_dict and zero_grad (no torch needed).

Parameters here are plain tensors with hand-set gradients, so no autograd is involved."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.testing import assert_close

RNG = np.random.default_rng(3)
P0 = RNG.standard_normal((4, 5)).astype(np.float32)
GRADS = [RNG.standard_normal((4, 5)).astype(np.float32) for _ in range(6)]


def _np_adam(p, lr, betas, eps, wd, amsgrad, decoupled):
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(GRADS, 1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - betas[1] ** t) + eps
        p = p - lr / (1 - betas[0] ** t) * m / denom
    return p


def _np_sgd(p, lr, momentum, dampening, wd, nesterov):
    buf = None
    for g in GRADS:
        d = g + wd * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


def _np_rmsprop(p, lr, alpha, eps, wd, momentum, centered):
    sq, gavg, buf = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for g in GRADS:
        g = g + wd * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            gavg = alpha * gavg + (1 - alpha) * g
            avg = np.sqrt(sq - gavg * gavg) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    return p


CASES = [
    ("SGD", dict(lr=0.1), lambda p: _np_sgd(p, 0.1, 0, 0, 0, False)),
    (
        "SGD",
        dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01),
        lambda p: _np_sgd(p, 0.1, 0.9, 0.2, 0.01, False),
    ),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), lambda p: _np_sgd(p, 0.1, 0.9, 0, 0, True)),
    ("Adam", dict(lr=0.01), lambda p: _np_adam(p, 0.01, (0.9, 0.999), 1e-8, 0, False, False)),
    (
        "Adam",
        dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True),
        lambda p: _np_adam(p, 0.01, (0.8, 0.99), 1e-8, 0.1, True, False),
    ),
    ("AdamW", dict(lr=0.01), lambda p: _np_adam(p, 0.01, (0.9, 0.999), 1e-8, 0.01, False, True)),
    ("RMSprop", dict(lr=0.01), lambda p: _np_rmsprop(p, 0.01, 0.99, 1e-8, 0, 0, False)),
    (
        "RMSprop",
        dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.01),
        lambda p: _np_rmsprop(p, 0.01, 0.99, 1e-8, 0.01, 0.5, True),
    ),
]


def _run(device, name, kwargs, fused):
    p = gt.tensor(P0, device=device)
    extra = {} if fused is None or name == "RMSprop" else {"fused": fused}
    opt = getattr(gt.optim, name)([p], **kwargs, **extra)
    if name == "RMSprop" and fused is not None:
        opt.param_groups[0]["fused"] = fused  # RMSprop has no fused= in torch; set directly
    for g in GRADS:
        p.grad = gt.tensor(g, device=device)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_step_matches_torchs_formula_eager_and_fused(device, name, kwargs, ref):
    expected = ref(P0.astype(np.float64)).astype(np.float32)
    for fused in (False, True):
        p, _ = _run(device, name, kwargs, fused)
        assert_close(p, expected, atol=2e-6, rtol=2e-5)


def test_state_dict_round_trip_continues_identically(device):
    p, opt = _run(device, "Adam", dict(lr=0.01, amsgrad=True), None)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert float(sd["state"][0]["step"].item()) == len(GRADS)
    q = gt.tensor(p.cpu().numpy(), device=device)
    opt2 = gt.optim.Adam([q], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    for o, t in ((opt, p), (opt2, q)):
        t.grad = gt.tensor(GRADS[0], device=device)
        o.step()
    assert_close(q, p)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict({"state": {}, "param_groups": []})


def test_param_groups_zero_grad_and_argument_errors():
    a, b = gt.zeros(3), gt.zeros(2)
    opt = gt.optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1, momentum=0.5)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    assert opt.param_groups[1]["momentum"] == 0.5
    a.grad, b.grad = gt.ones(3), gt.ones(2)
    opt.step()
    assert_close(a, np.full(3, -0.1, np.float32))
    assert_close(b, np.full(2, -1.0, np.float32))
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    a.grad = gt.ones(3)
    opt.zero_grad(set_to_none=False)
    assert_close(a.grad, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        gt.optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        gt.optim.Adam([a], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
        gt.optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        gt.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        gt.optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        gt.optim.SGD(a, lr=0.1)
    assert gt.optim.AdamW([a]).param_groups[0]["weight_decay"] == 1e-2  # torch's default


def test_a_new_lr_does_not_retrace_the_fused_kernel():
    from gpu_tensor.optim.fused import adam_kernel

    # a strided parameter: the host devices' vectorised step (optim/host_step.py) takes only
    # contiguous ones, so this one goes through the fused kernel on every device
    p = gt.zeros(16)[::2]
    opt = gt.optim.Adam([p], lr=0.1, fused=True)
    kernel = adam_kernel(False, False, False, False, True)  # shared: other tests trace it too
    counts = []
    for lr in (0.1, 0.05, 0.01):
        opt.param_groups[0]["lr"] = lr
        p.grad = gt.ones(8)
        opt.step()
        counts.append(len(kernel._traces))
    assert counts[0] >= 1 and counts == [counts[0]] * 3
