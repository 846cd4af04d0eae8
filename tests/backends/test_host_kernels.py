"""backends/host_kernels.py: the compiled host kernels give numpy's values bit for bit
(issue 30): the full float sum against np.add.reduce, the Adam step against
optim/host_step.py's numpy formulas, on the same inputs; and the callers (x.sum() on cpu
and emulated cuda, Adam's host step) use them, or numpy when they are off."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends import get_backend
from gpu_tensor.backends import host_kernels as hk
from gpu_tensor.ops import reduction
from gpu_tensor.optim import host_step

DTYPES = [np.float32, np.float64]


@pytest.fixture
def kernels():
    """The library is built (Adam's kernel runs on any x86-64 or other g++ target)."""
    why = hk.reason()
    if hk._state["lib"] is None:
        pytest.skip(why)  # no g++: every caller keeps numpy (tested below)


@pytest.fixture
def sum_kernel(kernels):
    """The sum kernel is on (it needs AVX2 to beat numpy, and agreed with it at load)."""
    if not hk._state["sum"]:
        pytest.skip(hk.reason())


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), (a, b)


def _special(n, dtype, rng, payloads=True):
    """n values mixing normals, -0.0, ±inf, huge and subnormal magnitudes and NaNs: the
    hardware's default NaN (what inf - inf gives) or, with `payloads`, NaNs of other signs
    and payloads too."""
    a = rng.standard_normal(n).astype(dtype)
    pick = rng.integers(0, 40, n)
    a[pick == 0] = -0.0
    a[pick == 1] = np.inf
    a[pick == 2] = -np.inf
    a[pick == 3] = np.finfo(dtype).max
    a[pick == 4] = np.finfo(dtype).tiny / 4  # subnormal
    with np.errstate(invalid="ignore"):
        a[pick == 5] = np.array(np.inf, dtype) - np.array(np.inf, dtype)
    if payloads:
        a[pick == 6] = np.nan  # +NaN
        bits = a.view(np.uint32 if dtype == np.float32 else np.uint64)
        nan = 0x7F800001 if dtype == np.float32 else 0x7FF0000000000001
        bits[pick == 7] |= bits.dtype.type(nan)  # NaNs with the normals' bits as payload
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_sum_is_numpys_bits_at_every_size(sum_kernel, dtype, monkeypatch):
    monkeypatch.setattr(hk, "SUM_MIN", 0)  # the kernel for every size, not only the large
    rng = np.random.default_rng(1)
    sizes = list(range(301)) + list(range(301, 4200, 7))  # every shape of a small tree
    sizes += [2**k + d for k in range(9, 21) for d in (-1, 0, 1)]
    for n in sizes + [10**6]:
        a = rng.standard_normal(n).astype(dtype) * 1e3
        _same(hk.full_sum(a), np.add.reduce(a))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_full_sum_of_special_values_and_shapes(sum_kernel, dtype, monkeypatch):
    monkeypatch.setattr(hk, "SUM_MIN", 0)
    rng = np.random.default_rng(2)
    cases = [
        np.full(1000, -0.0, dtype),  # the identity 0.0 first: +0.0, as numpy
        np.full(5, -0.0, dtype),
        np.array([np.inf, -np.inf] * 300, dtype),
        np.full(999, np.finfo(dtype).max, dtype),  # overflow to inf
    ]
    cases += [_special(n, dtype, rng) for n in (7, 129, 1000, 65537)]
    for shape in [(1000, 1000), (3, 7, 1001), (128, 129), (1, 40000), (40000, 1)]:
        a = rng.standard_normal(shape).astype(dtype)
        cases += [a, np.asfortranarray(a), a.T, np.ascontiguousarray(a[::-1])]
    for a in cases:
        got, want = hk.full_sum(a), np.add.reduce(a, axis=None)
        if got is None:  # a NaN sum: numpy's own (which NaN is numpy's loop's choice)
            assert np.isnan(want)
        else:
            _same(got, want)
    assert hk.full_sum(cases[2]) is None
    strided = rng.standard_normal((400, 400)).astype(dtype)[:, ::2]
    assert hk.full_sum(strided) is None  # not one dense block: numpy's own sum
    assert hk.full_sum(np.ones(10**5, np.float16)) is None
    assert hk.full_sum(np.ones(10**5, ">f4")) is None


def _host(device) -> bool:
    return get_backend(gt.device(device)).host_arrays


def _sum_cases(device, rng):
    for dtype in (np.float32, np.float64, np.float16):
        a = rng.standard_normal((300, 401)).astype(dtype)
        x = gt.from_numpy(a).to(device)
        yield x.sum()
        yield x.sum(dtype=gt.float64)
        yield x.sum(dim=None, keepdim=True)
        yield x.t().sum()  # F-contiguous data: one dense block
        yield gt.sum(x, dim=(0, 1))  # dims: numpy's sum over axes, not the kernel


def test_tensor_sum_takes_the_kernel_with_the_same_values(sum_kernel, device, monkeypatch):
    calls = []

    def counted(a):
        r = hk.full_sum(a)
        calls.append(r is not None)
        return r

    monkeypatch.setattr(reduction, "full_sum", counted)
    new = [t.cpu().numpy() for t in _sum_cases(device, np.random.default_rng(3))]
    if _host(device):
        assert sum(calls) >= 9  # (the dim=(0, 1) sums go to numpy)
    else:  # the sim tier's cuda: CuPy's arrays, never the host kernel
        assert not any(calls)
    monkeypatch.setattr(hk, "_state", dict(lib=None, sum=False, why="off for the test"))
    old = [t.cpu().numpy() for t in _sum_cases(device, np.random.default_rng(3))]
    for a, b in zip(new, old, strict=True):
        _same(a, b)


def test_without_the_kernels_callers_keep_numpy(monkeypatch):
    monkeypatch.setattr(hk, "_state", dict(lib=None, sum=False, why="no g++ (test)"))
    a = np.random.default_rng(4).standard_normal(10**5).astype(np.float32)
    assert hk.full_sum(a) is None
    assert hk.reason() == "no g++ (test)"
    _same(gt.from_numpy(a).sum().numpy(), a.sum())
    p = gt.from_numpy(a.copy()).requires_grad_(True)
    p.grad = gt.from_numpy(a[::-1].copy())
    gt.optim.Adam([p], lr=0.1).step()
    assert np.isfinite(p.detach().numpy()).all()


FLAG_SETS = [
    dict(),
    dict(wd=0.1),
    dict(wd=0.05, decoupled=True, amsgrad=True),
    dict(maximize=True, beta1=0.3),  # fused: 1 - beta1 >= 0.5, lerp's other branch
    dict(wd=2, maximize=True, amsgrad=True, eps=1e-3),  # an int weight decay
]


def _step_scalars(step, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, wd=0, **flags):
    return dict(
        lr=lr,
        beta1=beta1,
        beta2=beta2,
        eps=eps,
        wd=wd,
        decoupled=flags.get("decoupled", False),
        maximize=flags.get("maximize", False),
        amsgrad=flags.get("amsgrad", False),
        step_size=lr / (1 - beta1**step),
        bc2_sqrt=(1 - beta2**step) ** 0.5,
    )


def _same_but_nan_payloads(a, b):
    """Bits equal, except that where b is NaN, a is a NaN of any sign and payload."""
    nan = np.isnan(b)
    np.testing.assert_array_equal(np.isnan(a), nan)
    assert a[~nan].tobytes() == b[~nan].tobytes()


@pytest.mark.parametrize("payloads", [False, True])
@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", FLAG_SETS)
def test_adam_kernel_is_the_numpy_formula_bit_for_bit(kernels, config, dtype, fused, payloads):
    """Three steps on the same inputs. With one kind of NaN the bits are equal everywhere;
    where NaNs of different payloads meet in an add or a multiply, numpy itself answers
    either operand's NaN depending on the element's place in its loop (vector body or
    tail), so there only NaN-ness is compared."""
    rng = np.random.default_rng(5)
    n = 1037  # vector body and scalar tail
    p, m = _special(n, dtype, rng, payloads), _special(n, dtype, rng, payloads)
    v = np.abs(rng.standard_normal(n)).astype(dtype)
    v[::50] = -1.0  # a loaded state can hold anything: sqrt of a negative is NaN
    v[1::50] = 0.0
    vmax = np.where(rng.random(n) < 0.5, v, dtype(0.5)).astype(dtype)
    vmax[::7] = -0.0  # np.maximum(-0.0, 0.0) is 0.0, its second operand
    mine = [a.copy() for a in (p, m, v, vmax)]
    ref = [a.copy() for a in (p, m, v, vmax)]
    formula = host_step._fused if fused else host_step._eager
    # (maximize negates the gradient: a -NaN becomes a +NaN, and two kinds of NaN meet)
    exact = not payloads and not config.get("maximize")
    check = _same if exact else _same_but_nan_payloads
    for step in (1, 2, 3):
        g = _special(n, dtype, rng, payloads)
        g[1::50] = 0.0
        sc = _step_scalars(step, **config)
        state = mine[1:] if sc["amsgrad"] else mine[1:3]
        assert host_step._in_kernel(fused, mine[0], g.copy(), state, sc)
        t = [np.empty(n, dtype) for _ in range(3)]
        with np.errstate(all="ignore"):
            formula(ref[0], g.copy(), *(ref[1:] if sc["amsgrad"] else ref[1:3]), t=t, **sc)
        for a, b in zip(mine, ref, strict=True):
            check(a, b)


def _adamw_run(device, steps=2):
    rng = np.random.default_rng(6)
    shapes = [(host_step.CHUNK + 5,), (3, 4), (7,)]  # a run of its own, a gathered run
    params = []
    for s in shapes:
        q = gt.from_numpy(rng.standard_normal(s).astype(np.float32)).to(device)
        params.append(q.requires_grad_(True))
    opt = gt.optim.AdamW(params, lr=0.1, amsgrad=True)
    for _ in range(steps):
        for q in params:
            q.grad = gt.from_numpy(rng.standard_normal(q.shape).astype(np.float32)).to(device)
        opt.step()
    return [q.detach().cpu().numpy() for q in params] + [
        opt.state[q][n].cpu().numpy() for q in params for n in ("exp_avg", "max_exp_avg_sq")
    ]


def test_optimizer_steps_run_in_the_kernel_with_the_old_values(kernels, device, monkeypatch):
    calls = []
    real = hk.adam
    monkeypatch.setattr(hk, "adam", lambda *a: calls.append(a[0]) or real(*a))
    new = _adamw_run(device)
    # per step: the big parameter, the gathered small ones (none on the sim tier's cuda)
    assert len(calls) == (4 if _host(device) else 0)
    monkeypatch.setattr(hk, "_state", dict(lib=None, sum=False, why="off for the test"))
    old = _adamw_run(device)
    for a, b in zip(new, old, strict=True):
        _same(a, b)


def test_no_compiler_turns_the_kernels_off_with_a_reason(monkeypatch):
    monkeypatch.setattr(hk, "_state", {})
    monkeypatch.setattr(hk.shutil, "which", lambda name: None)
    assert "no g++" in hk.reason()
    assert hk.full_sum(np.ones(10**5, np.float32)) is None
    p = np.ones(3, np.float32)
    assert not hk.adam("eager", p, p.copy(), p.copy(), p.copy(), None, hk.AdamScalars(), 0)
