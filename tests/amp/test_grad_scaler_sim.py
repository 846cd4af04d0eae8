"""A whole AMP training step (forward, backward, GradScaler step and update) on cuda makes
no host sync: counted by the simulated CuPy (`pytest -m sim`). With gpu_tensor's fused
optimizers the overflow check, the unscale, the skip and the scale update all stay on the
device; torch's unfused path costs one `.item()` per step. The skipped step and the
device-side Adam step count give the same parameters as the cpu run, which follows torch."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv

pytestmark = [
    pytest.mark.sim,  # (the cpu reference run multiplies by inf: numpy warns)
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


def _train(device, optimizer, steps=4, bad=1):
    gt.manual_seed(0)
    m = gt.nn.Sequential(gt.nn.Linear(8, 8), gt.nn.ReLU(), gt.nn.Linear(8, 2))
    m = m.to(device)
    opt = optimizer(m.parameters())
    sc = gt.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    x = gt.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8), device=device)
    syncs = []
    for i in range(steps):
        if dv.cuda_is_simulated():
            from gpu_tensor.testing import sim

            sim.reset_counters()
        opt.zero_grad()
        loss = m(x).square().mean()
        if i == bad:
            loss = loss * float("inf")
        sc.scale(loss).backward()
        sc.step(opt)
        sc.update()
        if dv.cuda_is_simulated():
            c = sim.counters()
            syncs.append(c["host_waits"] + c["device_syncs"])
    return [p.detach().cpu().numpy() for p in m.parameters()], sc, syncs


def test_amp_step_makes_no_host_sync_and_matches_cpu():
    if not dv.cuda_is_simulated():
        pytest.skip("counts syncs through the simulated CuPy (pytest -m sim)")

    def adam(ps):
        return gt.optim.Adam(ps, lr=0.01)

    params, sc, syncs = _train("cuda", adam)
    assert syncs == [0, 0, 0, 0]
    ref, ref_sc, _ = _train("cpu", adam)  # cpu: GradScaler reads found_inf (torch's path)
    for a, b in zip(params, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert sc.get_scale() == ref_sc.get_scale() == 2.0**10  # backed off once, grew once


def test_unfused_optimizer_syncs_once_per_step():
    if not dv.cuda_is_simulated():
        pytest.skip("counts syncs through the simulated CuPy (pytest -m sim)")

    def sgd(ps):
        return gt.optim.SGD(ps, lr=0.1, fused=False)  # torch's path: found_inf.item()

    _, _, syncs = _train("cuda", sgd, steps=2)
    assert syncs == [1, 1]
