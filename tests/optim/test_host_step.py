"""Adam's host-device step (optim/host_step.py) gives bit for bit the values of the paths it
replaced: the eager composition of in-place ops (kept below as the reference, as
optim/adam.py wrote it before issue 30) and the gt.fuse kernel (fused.adam_kernel, still
what real cuda runs), on the same inputs, on cpu and emulated cuda."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends import get_backend
from gpu_tensor.optim import host_step
from gpu_tensor.optim.fused import adam_kernel

# a gathered run of small parameters, a parameter cut into two chunks, one more small run
SHAPES = [(4, 5), (7,), (3, 2, 2), (host_step.CHUNK + 37,), (6, 6), (1,)]
STEPS = 3


def _reference_step(params, state, group, fused):
    """optim/adam.py's per-parameter step before issue 30 (eager: fused=False)."""
    lr, (beta1, beta2) = group["lr"], group["betas"]
    eps, wd, amsgrad = group["eps"], group["weight_decay"], group["amsgrad"]
    decoupled = group["decoupled_weight_decay"]
    for p in params:
        st = state.setdefault(id(p), {})
        if not st:
            st["step"] = gt.tensor(0.0, device="cpu")
            st["exp_avg"], st["exp_avg_sq"] = gt.zeros_like(p), gt.zeros_like(p)
            if amsgrad:
                st["max_exp_avg_sq"] = gt.zeros_like(p)
        st["step"].add_(1)
        step = float(st["step"].item())
        step_size = lr / (1 - beta1**step)
        bc2_sqrt = math.sqrt(1 - beta2**step)
        m, v, vmax = st["exp_avg"], st["exp_avg_sq"], st.get("max_exp_avg_sq")
        if fused:
            kernel = adam_kernel(wd != 0, decoupled, amsgrad, group["maximize"], 1 - beta1 < 0.5)
            ins = (p, p.grad, m, v) + ((vmax,) if amsgrad else ())
            kernel(
                *ins,
                1.0 - lr * wd,
                float(wd),
                1.0 - beta1,
                float(beta2),
                float(eps),
                step_size,
                bc2_sqrt,
                out=(p, m, v) + ((vmax,) if amsgrad else ()),
            )
            continue
        g = -p.grad if group["maximize"] else p.grad
        if wd != 0:
            if decoupled:
                p.mul_(1 - lr * wd)
            else:
                g = g + p * wd
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).add_(g * g, alpha=1 - beta2)
        if amsgrad:
            vmax.copy_(gt.maximum(vmax, v))
            denom = vmax.sqrt() / bc2_sqrt + eps
        else:
            denom = v.sqrt() / bc2_sqrt + eps
        p.add_(m / denom, alpha=-step_size)


def _params(device, dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for s in SHAPES:
        p = gt.from_numpy(rng.standard_normal(s).astype(dtype)).to(device)
        p.grad = gt.from_numpy(rng.standard_normal(s).astype(dtype)).to(device)
        out.append(p)
    return out


def _bits(t):
    a = t.cpu().numpy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


CONFIGS = [
    dict(),
    dict(weight_decay=0.1),
    dict(weight_decay=0.05, decoupled_weight_decay=True, amsgrad=True),
    dict(maximize=True, betas=(0.3, 0.9)),  # 1 - beta1 >= 0.5: lerp's other branch
    dict(weight_decay=0.1, maximize=True, amsgrad=True, eps=1e-3),
]


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("config", CONFIGS)
def test_host_step_matches_the_per_parameter_paths_bit_for_bit(device, fused, config):
    dtype = np.float64 if config.get("amsgrad") and not fused else np.float32
    mine, ref = _params(device, dtype, 5), _params(device, dtype, 5)
    opt = gt.optim.Adam(mine, lr=1e-2, fused=fused, **config)
    group = dict(opt.param_groups[0])
    state: dict = {}
    for k in range(STEPS):
        if k:  # new gradients each step, the same on both sides
            for a, b in zip(mine, ref, strict=True):
                a.grad = (a.grad * 0.5 + 0.25).detach()
                b.grad = (b.grad * 0.5 + 0.25).detach()
        opt.step()
        with gt.no_grad():
            _reference_step(ref, state, group, fused)
    for a, b in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
        for name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            if name in state[id(b)]:
                np.testing.assert_array_equal(_bits(opt.state[a][name]), _bits(state[id(b)][name]))
        assert float(opt.state[a]["step"]) == STEPS


def test_state_of_small_parameters_is_one_flat_buffer_and_survives_a_reload(device):
    params = _params(device, np.float32, 1)
    opt = gt.optim.Adam(params, lr=1e-2)
    opt.step()
    m0, m1 = opt.state[params[0]]["exp_avg"], opt.state[params[1]]["exp_avg"]
    if get_backend(params[0].device).xp is np:  # (real or simulated cuda: one kernel each)
        assert m1.data_ptr() == m0.data_ptr() + m0.numel() * 4  # views of one buffer
    saved = opt.state_dict()
    again = gt.optim.Adam(params, lr=1e-2)
    again.load_state_dict(saved)  # separate tensors: the next step lays them out again
    opt.step()
    again.step()
    for p in params:
        np.testing.assert_array_equal(
            _bits(opt.state[p]["exp_avg_sq"]), _bits(again.state[p]["exp_avg_sq"])
        )


def test_unequal_step_counts_take_the_per_parameter_path(device):
    params = _params(device, np.float32, 2)[:2]
    opt = gt.optim.Adam(params, lr=1e-2)
    g1 = params[1].grad
    params[1].grad = None
    opt.step()  # only params[0] steps
    params[1].grad = g1
    opt.step()
    assert float(opt.state[params[0]]["step"]) == 2
    assert float(opt.state[params[1]]["step"]) == 1


def _twin(params, opt):
    """Copies of params (values and grads) under a new optimizer with opt's state loaded:
    its first step takes the checking path, with nothing cached."""
    twins = []
    for p in params:
        t = p.detach().clone()
        t.grad = p.grad.clone()
        twins.append(t)
    fresh = gt.optim.Adam(twins, lr=1e-2)
    fresh.load_state_dict(opt.state_dict())
    return twins, fresh


def _same(params, opt, twins, fresh):
    for a, b in zip(params, twins, strict=True):
        np.testing.assert_array_equal(_bits(a), _bits(b))
        for name, t in fresh.state[b].items():
            np.testing.assert_array_equal(_bits(opt.state[a][name]), _bits(t))


def _replace_a_parameter(opt, params):
    new = gt.from_numpy(np.full((6, 6), 0.5, np.float32)).to(params[4].device)
    new.grad = gt.ones_like(new)
    opt.param_groups[0]["params"][4] = params[4] = new  # no state: unequal step counts


def _set_a_parameter(opt, params):
    with gt.no_grad():  # the same tensor on new memory
        params[0].set_(params[0].detach().clone() + 1)


def _assign_a_parameters_data(opt, params):
    params[2].data = params[2].detach().clone() * 3  # torch's idiom for the same


def _load_a_changed_state(opt, params):
    sd = opt.state_dict()
    for st in sd["state"].values():
        st["exp_avg"] = st["exp_avg"] + 1
    opt.load_state_dict(sd)


def _write_one_step_count(opt, params):
    opt.state[params[1]]["step"].fill_(7.0)  # in place: unequal counts, per-parameter path


def _write_every_step_count(opt, params):
    for p in params:
        opt.state[p]["step"].fill_(7.0)  # in place, all equal: the host step at step 8


@pytest.mark.parametrize(
    "change",
    [
        _replace_a_parameter,
        _set_a_parameter,
        _assign_a_parameters_data,
        _load_a_changed_state,
        _write_one_step_count,
        _write_every_step_count,
    ],
)
def test_the_cached_step_plan_sees_a_replaced_parameter_or_state(device, change, monkeypatch):
    planned = []
    plan = host_step._plan
    monkeypatch.setattr(host_step, "_plan", lambda *a: planned.append(1) or plan(*a))
    params = _params(device, np.float32, 7)
    opt = gt.optim.Adam(params, lr=1e-2)
    for _ in range(3):
        opt.step()
    host = get_backend(params[0].device).host_arrays  # (simulated cuda: no host step)
    assert len(planned) == (1 if host else 0)  # steps 2 and 3 reused the plan
    change(opt, params)
    twins, fresh = _twin(params, opt)
    opt.step()
    fresh.step()
    _same(params, opt, twins, fresh)
    opt.step()  # (and the plan made after the change holds on)
    fresh.step()
    _same(params, opt, twins, fresh)
