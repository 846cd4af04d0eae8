"""GradScaler: torch 2.13's state machine, trajectory and messages (recorded from torch 2.13
CPU, `GradScaler("cpu")`, where the comments say so), on every device."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import gpu_tensor as gt

# (scale, growth tracker, stepped) after each update; init_scale=2**16, growth_interval=3,
# loss * inf at iteration 1. Recorded from torch 2.13 CPU.
TORCH_TRAJECTORY = [
    (65536.0, 1, True),
    (32768.0, 0, False),
    (32768.0, 1, True),
    (32768.0, 2, True),
    (65536.0, 0, True),
    (65536.0, 1, True),
    (65536.0, 2, True),
]
# the weight after each step (SGD lr=0.1) of the same run, recorded from torch 2.13 CPU
TORCH_WEIGHTS = {
    0: [0.0, -0.4, 0.0, 0.0, 0.4, 0.4, -1.0, 0.4],
    6: [-0.5, -1.4, -1.5, -2.0, -0.1, -0.6, -2.5, -1.6],
}


def _model(device, optimizer="SGD", **kw):
    m = gt.nn.Linear(4, 2).to(device)
    with gt.no_grad():
        m.weight.copy_(gt.tensor([[0.1, -0.2, 0.3, 0.4], [0.5, 0.6, -0.7, 0.8]]))
        m.bias.copy_(gt.tensor([0.01, -0.02]))
    opt = getattr(gt.optim, optimizer)(m.parameters(), lr=0.1, **kw)
    return m, opt


def _run(device, iterations=7, bad=1, bad_value=float("inf")):
    m, opt = _model(device)
    sc = gt.amp.GradScaler(device, init_scale=2.0**16, growth_interval=3)
    x = gt.tensor([[1.0, 2.0, 3.0, 4.0]], device=device)
    rows, weights = [], {}
    for i in range(iterations):
        opt.zero_grad()
        loss = m(x).sum()
        if i == bad:
            loss = loss * bad_value
        sc.scale(loss).backward()
        before = m.weight.detach().clone()
        sc.step(opt)
        sc.update()
        stepped = not bool((m.weight.detach() == before).all())
        rows.append((sc.get_scale(), sc._get_growth_tracker(), stepped))
        weights[i] = m.weight.detach().cpu().reshape(-1).tolist()
    return rows, weights, sc


def test_trajectory_matches_torch(device):
    rows, weights, _ = _run(device)
    assert rows == TORCH_TRAJECTORY
    for i, want in TORCH_WEIGHTS.items():
        np.testing.assert_allclose(weights[i], want, atol=1e-6)


def test_nan_backs_off_and_scale_never_grows_to_inf(device):
    sc = gt.amp.GradScaler(device, init_scale=4.0, growth_interval=100)
    m, opt = _model(device)
    (sc.scale(m(gt.ones(1, 4, device=device)).sum()) * float("nan")).backward()
    sc.step(opt)
    sc.update()
    assert sc.get_scale() == 2.0 and sc._get_growth_tracker() == 0
    # growth_interval=1 at the largest power of two below float32's max: stays (torch)
    sc = gt.amp.GradScaler(device, init_scale=2.0**127, growth_interval=1)
    m, opt = _model(device)
    sc.scale(m(gt.ones(1, 4, device=device)).sum() * 0.0).backward()
    sc.step(opt)
    sc.update()
    assert sc.get_scale() == 1.7014118346046923e38 and sc._get_growth_tracker() == 0


def test_unscale_is_bitwise_grad_times_float32_inverse(device):
    sc = gt.amp.GradScaler(device, init_scale=3.0)
    m, opt = _model(device)
    sc.scale(m(gt.tensor([[1.0, 2.0, 3.0, 4.0]], device=device)).sum()).backward()
    scaled = m.weight.grad.cpu().numpy().copy()
    sc.unscale_(opt)
    inv = np.float32(1.0 / np.float64(np.float32(3.0)))
    np.testing.assert_array_equal(m.weight.grad.cpu().numpy(), scaled * inv)


def test_contract_errors(device):
    m, opt = _model(device)
    sc = gt.amp.GradScaler(device)
    with pytest.raises(AssertionError, match=r"^Attempted step but _scale is None.  This may "):
        sc.step(opt)
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        sc.update()
    sc.scale(m(gt.ones(1, 4, device=device)).sum()).backward()
    sc.unscale_(opt)
    with pytest.raises(
        RuntimeError,
        match=r"^unscale_\(\) has already been called on this "
        r"optimizer since the last update\(\)\.$",
    ):
        sc.unscale_(opt)
    with pytest.raises(
        RuntimeError, match="^Closure use is not currently supported if GradScaler is enabled.$"
    ):
        sc.step(opt, closure=lambda: None)
    sc.step(opt)
    with pytest.raises(
        RuntimeError,
        match=r"^step\(\) has already been called since the "
        r"last update\(\)\.$",
    ):
        sc.step(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\)\.$"):
        sc.unscale_(opt)
    sc.update()
    with pytest.raises(AssertionError, match="^No inf checks were recorded prior to update.$"):
        sc.update()


def test_fp16_grads_refused_bf16_allowed(device):
    for dtype, ok in ((gt.float16, False), (gt.bfloat16, True)):
        p = gt.ones(3, dtype=dtype, device=device, requires_grad=True)
        opt = gt.optim.SGD([p], lr=0.1)
        sc = gt.amp.GradScaler(device, init_scale=4.0)  # (2**16 would overflow fp16)
        sc.scale((p * 2).sum()).backward()
        if ok:
            sc.unscale_(opt)
            assert p.grad.float().cpu().tolist() == [2.0, 2.0, 2.0]
        else:
            with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
                sc.unscale_(opt)


def test_scale_forms_and_dtypes(device):
    sc = gt.amp.GradScaler(device, init_scale=8.0)
    assert sc.get_scale() == 8.0  # before the first scale(): init_scale, no tensor yet
    half = gt.tensor(2.0, dtype=gt.float16, device=device)
    assert sc.scale(half).dtype is gt.float32  # two 0-dim operands promote (torch)
    a, b = gt.ones(2, device=device), gt.ones(3, device=device)
    out = sc.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert out[1][0].cpu().tolist() == [8.0] * 3
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        sc.scale([1.0])
    off = gt.amp.GradScaler(device, enabled=False)
    assert off.scale(a) is a and off.get_scale() == 1.0 and off.state_dict() == {}
    assert not off.is_enabled()


def test_state_dict_round_trip(device):
    rows, _, sc = _run(device, iterations=2)
    sd = sc.state_dict()
    assert sd == {
        "scale": 32768.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 3,
        "_growth_tracker": 0,
    }
    fresh = gt.amp.GradScaler(device)
    fresh.load_state_dict({**sd, "_growth_tracker": 2})
    assert fresh.get_scale() == 32768.0 and fresh._get_growth_tracker() == 2
    with pytest.raises(RuntimeError, match="^The source state dict is empty, possibly because"):
        fresh.load_state_dict({})
    again = pickle.loads(pickle.dumps(sc))
    assert again.get_scale() == 32768.0 and again.get_growth_interval() == 3


def test_factor_checks_and_setters():
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        gt.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        gt.amp.GradScaler("cpu", backoff_factor=1.0)
    sc = gt.amp.GradScaler("cpu")
    sc.set_growth_factor(3.0)
    sc.set_backoff_factor(0.25)
    sc.set_growth_interval(7)
    assert (sc.get_growth_factor(), sc.get_backoff_factor(), sc.get_growth_interval()) == (
        3.0,
        0.25,
        7,
    )


def test_overflow_report_names_the_parameter(device):
    m, opt = _model(device)
    sc = gt.amp.GradScaler(device)
    sc.scale(m(gt.ones(1, 4, device=device)).sum()).backward()
    with gt.no_grad():
        m.bias.grad[1] = float("inf")
    sc.step(opt)
    sc.update()
    assert sc.last_step_skipped()
    assert sc.found_inf_report() == [(0, 1, (2,))]  # group 0, parameter 1 (the bias)


def test_deprecated_aliases_warn_with_torchs_text():
    with pytest.warns(
        FutureWarning,
        match=r"^`torch.cuda.amp.GradScaler\(args...\)` is "
        r"deprecated. Please use `torch.amp.GradScaler\('cuda', args...\)` "
        r"instead.$",
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # (no cuda: disabled, as torch)
            gt.cuda.amp.GradScaler()
    with pytest.warns(FutureWarning, match=r"^`torch.cpu.amp.GradScaler\(args...\)` is "):
        s = gt.cpu.amp.GradScaler(init_scale=4.0)
    assert s.get_scale() == 4.0 and isinstance(s, gt.amp.GradScaler)
