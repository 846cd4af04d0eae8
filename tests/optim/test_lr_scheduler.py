"""lr_scheduler: torch's closed forms, written into the optimizer's groups."""

from __future__ import annotations

import math

import pytest

import gpu_tensor as gt
from gpu_tensor.optim import lr_scheduler as sched


def _lrs(make, steps=8, lr=0.5):
    opt = gt.optim.SGD([gt.zeros(1)], lr=lr)
    s = make(opt)
    first = s.get_last_lr()[0]
    out = []
    for _ in range(steps):
        opt.step()
        s.step()
        out.append(opt.param_groups[0]["lr"])
    assert s.get_last_lr() == [out[-1]]
    return first, out


def test_step_and_lambda():
    first, lrs = _lrs(lambda o: sched.StepLR(o, step_size=3, gamma=0.5))
    assert first == 0.5 and lrs == [0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125]
    _, lrs = _lrs(lambda o: sched.LambdaLR(o, lambda e: 1 / (e + 1)), steps=3)
    assert lrs == pytest.approx([0.25, 0.5 / 3, 0.125])


def test_cosine_annealing():
    _, lrs = _lrs(lambda o: sched.CosineAnnealingLR(o, T_max=4, eta_min=0.1), steps=4)
    want = [0.1 + 0.4 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(1, 5)]
    assert lrs == pytest.approx(want) and lrs[-1] == pytest.approx(0.1)


def test_linear_warmup_then_cosine():
    first, lrs = _lrs(lambda o: sched.LinearLR(o, start_factor=0.25, total_iters=3), steps=4)
    assert first == pytest.approx(0.125)
    assert lrs == pytest.approx([0.25, 0.375, 0.5, 0.5])

    def both(o):
        warm = sched.LinearLR(o, start_factor=0.2, total_iters=2)
        return sched.SequentialLR(o, [warm, sched.CosineAnnealingLR(o, T_max=4)], [2])

    first, lrs = _lrs(both, steps=4)
    assert first == pytest.approx(0.1)
    assert lrs == pytest.approx([0.3, 0.5, 0.5 * (1 + math.cos(math.pi / 4)) / 2, 0.25])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        sched.LinearLR(gt.optim.SGD([gt.zeros(1)], lr=0.1), start_factor=0)
