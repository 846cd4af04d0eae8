"""The optimizers' GradScaler inputs (optim/fused.py `amp=True`): the fused step kernel
unscales the grad as it reads it and, where found_inf is set, writes param and state back
unchanged; Adam's step count and bias corrections stay on the device and count only the
steps that ran. Checked on every device through the kernels' numpy evaluation or launch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.optim import fused

RNG = np.random.default_rng(3)


def _t(shape, device):
    return gt.tensor(RNG.standard_normal(shape).astype(np.float32), device=device)


@pytest.mark.parametrize("which", ["sgd", "adam", "rmsprop"])
def test_amp_kernel_unscales_or_skips(device, which):
    p, g = _t((5, 3), device), _t((5, 3), device)
    states = [_t((5, 3), device).abs() for _ in range(3)]
    if which == "sgd":
        make, n_state, scalars = (
            lambda amp: fused.sgd_kernel(True, True, False, False, amp=amp),
            1,
            (0.1, 0.01, 0.9, 0.9, 1.0),
        )
    elif which == "adam":
        make, n_state, scalars = (
            lambda amp: fused.adam_kernel(True, True, False, False, True, amp=amp),
            2,
            (0.99, 0.01, 0.1, 0.999, 1e-8, 0.5, 0.3),
        )
    else:
        make, n_state, scalars = (
            lambda amp: fused.rmsprop_kernel(False, False, True, False, True, amp=amp),
            2,
            (0.01, 0.0, 0.99, 1e-8, 0.5),
        )
    state = states[:n_state]
    inv = gt.tensor(0.25, device=device)
    want = make(False)(p, g * 0.25, *state, *scalars)
    for found, expect in ((0.0, want), (1.0, (p, *state))):
        got = make(True)(p, g, *state, *scalars, inv, gt.tensor(found, device=device))
        for a, b in zip(got, expect, strict=True):
            np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-6, atol=1e-7)


def test_adam_corrections_count_only_steps_that_ran(device):
    p = _t((2,), device)
    state = {"step": gt.tensor(0.0)}  # host-side, as Adam keeps it
    for found in (0.0, 1.0, 0.0):
        step_size, bc2 = fused.adam_amp_corrections(
            state, p, gt.tensor(found, device=device), 0.1, 0.9, 0.999
        )
    assert state["step"].device == p.device and state["step"].item() == 2.0
    assert math.isclose(step_size.item(), 0.1 / (1 - 0.9**2), rel_tol=1e-6)
    assert math.isclose(bc2.item(), math.sqrt(1 - 0.999**2), rel_tol=1e-5)
