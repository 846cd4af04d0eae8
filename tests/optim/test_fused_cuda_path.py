"""The fused optimizer step through gt.fuse's real-CUDA branch, on the CPU: the generated
kernel (planned, packed and launched as on a GPU) runs from its CUDA source under host
emulation. One launch per parameter, and param/state written in place while being read
gives the eager result."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.kernel import emulate
from gpu_tensor.testing import assert_close
from profiling.bench_optim import HostEmulatedCounter

if emulate.compiler() is None:
    pytest.skip("host emulation needs g++", allow_module_level=True)

RNG = np.random.default_rng(7)
SHAPES = [(6, 10), (13,)]  # a vectorised body and a scalar tail
CONFIGS = [
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.3, 0.9))),  # 1 - beta1 > 0.5: torch's other lerp branch
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
]


def _params():
    return [gt.tensor(RNG.standard_normal(s).astype(np.float32)) for s in SHAPES]


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_one_launch_per_parameter_matching_eager(name, kwargs):
    grads = [[RNG.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(3)]
    start = _params()
    fused_p = [gt.tensor(p.numpy().copy()) for p in start]
    eager_p = [gt.tensor(p.numpy().copy()) for p in start]
    fused = getattr(gt.optim, name)(fused_p, **kwargs)
    eager = getattr(gt.optim, name)(eager_p, **kwargs)
    for group in fused.param_groups:
        group["fused"] = True
    for group in eager.param_groups:
        group["fused"] = False
    counter = HostEmulatedCounter()
    per_step = []
    for step_grads in grads:
        for p, q, g in zip(fused_p, eager_p, step_grads, strict=True):
            p.grad, q.grad = gt.tensor(g), gt.tensor(g)
        per_step.append(counter.count(fused.step))
        eager.step()
    assert per_step == [len(SHAPES)] * len(grads)
    for p, q in zip(fused_p, eager_p, strict=True):
        assert_close(p, q, atol=1e-6, rtol=1e-5)
    for p, q in zip(fused_p, eager_p, strict=True):
        for key, value in eager.state[q].items():
            if key != "step":
                assert_close(fused.state[p][key], value, atol=1e-6, rtol=1e-5)
