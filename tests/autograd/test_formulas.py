"""gradcheck (float64 central differences vs the engine) for every differentiable op,
on every available device (cpu and emulated cuda here)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import autograd  # noqa: F401  (attaches backward / requires_grad_)
from gpu_tensor.autograd import gradcheck

F64 = gt.float64


def _r(device, *shape, lo=-1.0, hi=1.0, seed=0, away=None):
    """A float64 leaf requiring grad; `away`: keep values at least that far from 0."""
    rng = np.random.default_rng(seed + sum(shape) * 7)
    v = rng.uniform(lo, hi, shape)
    if away is not None:
        v = np.where(np.abs(v) < away, np.sign(v + 1e-12) * away + v, v)
    return gt.tensor(v, dtype=F64, device=device).requires_grad_()


def _pos(device, *shape, seed=0):
    return _r(device, *shape, lo=0.5, hi=2.0, seed=seed)


def _fixed(device, values):
    """A float64 leaf with the given values (zeros and ties, where formulas special-case)."""
    return gt.tensor(values, dtype=F64, device=device).requires_grad_()


def _weighted(pieces):
    """sum_i (i + 1) * pieces[i].sum(): a scalar that uses every piece differently."""
    return sum((p * float(i + 1)).sum() for i, p in enumerate(pieces))


def _idx(device, values):
    return gt.tensor(values, dtype=gt.int64, device=device)


# name -> builder(device) -> (function, inputs)
CASES = {
    # elementwise, with broadcasting reduced back to the input shapes
    "add": lambda d: (lambda a, b: a + b, (_r(d, 2, 3), _r(d, 3, seed=1))),
    "add_alpha": lambda d: (lambda a, b: gt.add(a, b, alpha=2.5), (_r(d, 2, 3), _r(d, 1, 3))),
    "radd_scalar": lambda d: (lambda a: 2.0 + a, (_r(d, 4),)),
    "sub": lambda d: (lambda a, b: a - b, (_r(d, 2, 3), _r(d, 2, 1, seed=1))),
    "rsub": lambda d: (lambda a: 1.5 - a, (_r(d, 3),)),
    "mul": lambda d: (lambda a, b: a * b, (_r(d, 2, 3), _r(d, 3, seed=1))),
    "div": lambda d: (lambda a, b: a / b, (_r(d, 2, 3), _pos(d, 3, seed=1))),
    "rdiv": lambda d: (lambda a: 2.0 / a, (_pos(d, 3),)),
    "pow_scalar": lambda d: (lambda a: a**3, (_r(d, 2, 3),)),
    "pow_tensor": lambda d: (lambda a, b: a**b, (_pos(d, 2, 3), _r(d, 3, seed=1))),
    "rpow": lambda d: (lambda a: 2.0**a, (_r(d, 3),)),
    "neg": lambda d: (lambda a: -a, (_r(d, 3),)),
    "abs": lambda d: (gt.abs, (_r(d, 5, away=0.1),)),
    "exp": lambda d: (gt.exp, (_r(d, 2, 3),)),
    "log": lambda d: (gt.log, (_pos(d, 2, 3),)),
    "log1p": lambda d: (gt.log1p, (_pos(d, 3),)),
    "sqrt": lambda d: (gt.sqrt, (_pos(d, 3),)),
    "rsqrt": lambda d: (gt.rsqrt, (_pos(d, 3),)),
    "sin": lambda d: (gt.sin, (_r(d, 3),)),
    "cos": lambda d: (gt.cos, (_r(d, 3),)),
    "tanh": lambda d: (gt.tanh, (_r(d, 3),)),
    "sigmoid": lambda d: (gt.sigmoid, (_r(d, 3),)),
    "relu": lambda d: (gt.relu, (_r(d, 6, away=0.1),)),
    "gelu": lambda d: (gt.gelu, (_r(d, 6, lo=-3, hi=3),)),
    "gelu_tanh": lambda d: (lambda a: gt.gelu(a, approximate="tanh"), (_r(d, 5, lo=-3, hi=3),)),
    "silu": lambda d: (gt.silu, (_r(d, 5, lo=-3, hi=3),)),
    "square": lambda d: (gt.square, (_r(d, 3),)),
    "reciprocal": lambda d: (gt.reciprocal, (_pos(d, 3),)),
    "maximum": lambda d: (gt.maximum, (_r(d, 2, 3), _r(d, 3, seed=5))),
    "minimum": lambda d: (gt.minimum, (_r(d, 2, 3), _r(d, 3, seed=5))),
    "remainder": lambda d: (lambda a: gt.remainder(a, 0.7), (_r(d, 4, lo=0.05, hi=0.6),)),
    "floor_ceil_round": lambda d: (
        lambda a: gt.floor(a) + gt.ceil(a) + gt.round(a) + a,
        (_r(d, 4, lo=0.1, hi=0.4),),
    ),
    "where": lambda d: (
        lambda a, b: gt.where(a > 0, a, b),
        (_r(d, 2, 3, away=0.1), _r(d, 3, seed=2)),
    ),
    "clamp": lambda d: (lambda a: gt.clamp(a, -0.5, 0.5), (_r(d, 8, away=0.05),)),
    "clamp_tensor_bounds": lambda d: (
        lambda a, lo: gt.clamp(a, min=lo),
        (_r(d, 6, seed=3), _r(d, 6, seed=4)),
    ),
    "lerp (composite)": lambda d: (lambda a, b: gt.lerp(a, b, 0.3), (_r(d, 3), _r(d, 3, seed=1))),
    # reductions
    "sum": lambda d: (lambda a: a.sum(), (_r(d, 2, 3),)),
    "sum_dim": lambda d: (lambda a: a.sum(dim=1), (_r(d, 2, 3),)),
    "sum_dims_keepdim": lambda d: (lambda a: a.sum(dim=(0, 2), keepdim=True), (_r(d, 2, 3, 2),)),
    "mean": lambda d: (lambda a: a.mean(), (_r(d, 2, 3),)),
    "mean_dim": lambda d: (lambda a: a.mean(-1, keepdim=True), (_r(d, 2, 3),)),
    "prod": lambda d: (lambda a: a.prod(dim=1), (_pos(d, 2, 3),)),
    "prod_with_zeros": lambda d: (
        lambda a: a.prod(dim=1),
        (_fixed(d, [[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]]),),
    ),
    "prod_full_with_zero": lambda d: (lambda a: a.prod(), (_fixed(d, [[2.0, 0.0], [3.0, 0.5]]),)),
    "amax": lambda d: (lambda a: a.amax(dim=1), (_r(d, 2, 4),)),
    "amin": lambda d: (lambda a: a.amin(), (_r(d, 2, 4),)),
    "max_full": lambda d: (lambda a: a.max(), (_r(d, 3, 2),)),
    "max_dim": lambda d: (lambda a: a.max(dim=0).values, (_r(d, 3, 2),)),
    "min_dim_keepdim": lambda d: (lambda a: a.min(1, keepdim=True)[0], (_r(d, 3, 2),)),
    "var": lambda d: (lambda a: a.var(dim=1), (_r(d, 2, 4),)),
    "var_correction0": lambda d: (lambda a: a.var(correction=0), (_r(d, 5),)),
    "std": lambda d: (lambda a: a.std(dim=0, keepdim=True), (_r(d, 4, 2),)),
    "norm": lambda d: (lambda a: a.norm(), (_r(d, 2, 3),)),
    "norm_p1_dim": lambda d: (lambda a: a.norm(p=1, dim=1), (_r(d, 2, 3, away=0.1),)),
    "norm_p3": lambda d: (lambda a: a.norm(p=3), (_r(d, 4, away=0.1),)),
    "logsumexp": lambda d: (lambda a: a.logsumexp(dim=1), (_r(d, 2, 3),)),
    "cumsum": lambda d: (lambda a: a.cumsum(1), (_r(d, 2, 4),)),
    # matrix products
    "matmul_2d": lambda d: (lambda a, b: a @ b, (_r(d, 2, 3), _r(d, 3, 4, seed=1))),
    "matmul_batched_broadcast": lambda d: (gt.matmul, (_r(d, 2, 2, 3), _r(d, 3, 2, seed=1))),
    "matmul_1d_2d": lambda d: (gt.matmul, (_r(d, 3), _r(d, 3, 2, seed=1))),
    "matmul_2d_1d": lambda d: (gt.matmul, (_r(d, 2, 3), _r(d, 3, seed=1))),
    "mm": lambda d: (gt.mm, (_r(d, 2, 3), _r(d, 3, 2, seed=1))),
    "bmm": lambda d: (gt.bmm, (_r(d, 2, 2, 3), _r(d, 2, 3, 2, seed=1))),
    "mv": lambda d: (gt.mv, (_r(d, 2, 3), _r(d, 3, seed=1))),
    "dot": lambda d: (gt.dot, (_r(d, 3), _r(d, 3, seed=1))),
    "outer": lambda d: (gt.outer, (_r(d, 3), _r(d, 2, seed=1))),
    # views
    "view": lambda d: (lambda a: a.view(3, 2) * 1.0, (_r(d, 2, 3),)),
    "reshape_noncontig": lambda d: (lambda a: a.t().reshape(-1), (_r(d, 2, 3),)),
    "flatten": lambda d: (lambda a: a.flatten(), (_r(d, 2, 3),)),
    "transpose": lambda d: (lambda a: a.transpose(0, 2), (_r(d, 2, 3, 2),)),
    "T_property": lambda d: (lambda a: a.T, (_r(d, 2, 3),)),
    "mT": lambda d: (lambda a: a.mT, (_r(d, 2, 3, 2),)),
    "permute": lambda d: (lambda a: a.permute(2, 0, 1), (_r(d, 2, 3, 2),)),
    "movedim": lambda d: (lambda a: a.movedim(0, -1), (_r(d, 2, 3),)),
    "expand": lambda d: (
        lambda a: a.expand(4, 2, 3),
        (_r(d, 2, 1, seed=2).expand(2, 3).contiguous().detach().requires_grad_(),),
    ),
    "expand_singleton": lambda d: (lambda a: a.expand(3, 4), (_r(d, 3, 1),)),
    "narrow": lambda d: (lambda a: a.narrow(1, 1, 2), (_r(d, 2, 4),)),
    "select": lambda d: (lambda a: a.select(0, 1), (_r(d, 3, 2),)),
    "unsqueeze_squeeze": lambda d: (lambda a: a.unsqueeze(1).squeeze(), (_r(d, 3, 2),)),
    "diagonal": lambda d: (lambda a: a.diagonal(), (_r(d, 3, 3),)),
    "contiguous": lambda d: (lambda a: a.t().contiguous(), (_r(d, 2, 3),)),
    "clone": lambda d: (lambda a: a.clone(), (_r(d, 3),)),
    "unbind": lambda d: (lambda a: a.unbind(1)[1], (_r(d, 2, 3),)),
    # indexing
    "getitem_basic": lambda d: (lambda a: a[1:, ::2], (_r(d, 3, 4),)),
    "getitem_int": lambda d: (lambda a: a[1], (_r(d, 3, 2),)),
    "getitem_advanced_repeated": lambda d: (lambda a: a[_idx(d, [0, 2, 0])], (_r(d, 3, 2),)),
    "getitem_mask": lambda d: (lambda a: a[a > 0], (_r(d, 3, 2, away=0.1),)),
    "getitem_mixed": lambda d: (lambda a: a[:, [1, 1, 0]], (_r(d, 2, 3),)),
    "gather": lambda d: (lambda a: a.gather(1, _idx(d, [[0, 0], [2, 1]])), (_r(d, 2, 3),)),
    "index_select": lambda d: (lambda a: a.index_select(1, _idx(d, [2, 0, 2])), (_r(d, 2, 3),)),
    "take": lambda d: (lambda a: gt.take(a, _idx(d, [0, 5, 5])), (_r(d, 2, 3),)),
    "masked_fill": lambda d: (lambda a: a.masked_fill(a > 0, 0.0), (_r(d, 2, 3, away=0.1),)),
    "masked_select": lambda d: (lambda a: a.masked_select(a > 0), (_r(d, 2, 3, away=0.1),)),
    "scatter": lambda d: (
        lambda a, s: a.scatter(1, _idx(d, [[0], [2]]), s),
        (_r(d, 2, 3), _r(d, 2, 1, seed=1)),
    ),
    "scatter_add": lambda d: (
        lambda a, s: a.scatter_add(0, _idx(d, [[1, 0, 1]]), s),
        (_r(d, 2, 3), _r(d, 1, 3, seed=1)),
    ),
    # joins and splits
    "cat": lambda d: (lambda a, b: gt.cat([a, b], 1), (_r(d, 2, 3), _r(d, 2, 2, seed=1))),
    "stack": lambda d: (lambda a, b: gt.stack([a, b], -1), (_r(d, 2, 3), _r(d, 2, 3, seed=1))),
    "split": lambda d: (lambda a: a.split([1, 3], dim=1)[1] * 2.0, (_r(d, 2, 4),)),
    "chunk": lambda d: (lambda a: a.chunk(2)[0], (_r(d, 4, 2),)),
    # every piece used, with different weights: the multi-output node sums them back
    "split_int_all": lambda d: (lambda a: _weighted(gt.split(a, 2, dim=1)), (_r(d, 2, 5),)),
    "split_sizes_all": lambda d: (lambda a: _weighted(a.split([1, 3], 0)), (_r(d, 4, 2),)),
    "chunk_all_uneven": lambda d: (lambda a: _weighted(a.chunk(3, -1)), (_r(d, 2, 4),)),
    "unbind_all": lambda d: (lambda a: _weighted(a.unbind(0)), (_r(d, 3, 2),)),
    "unbind_twice": lambda d: (lambda a: a.unbind(1)[0] * a.unbind(1)[0], (_r(d, 2, 3),)),
    "split_one_piece": lambda d: (lambda a: a.split(4)[0] * 3.0, (_r(d, 3, 2),)),
    "tensor_split": lambda d: (lambda a: _weighted(a.tensor_split(2, 1)), (_r(d, 2, 3),)),
    "hstack": lambda d: (lambda a, b: gt.hstack([a, b]), (_r(d, 3), _r(d, 2, seed=1))),
    # copies
    "flip": lambda d: (lambda a: a.flip(0), (_r(d, 3, 2),)),
    "roll": lambda d: (lambda a: a.roll(1, 1), (_r(d, 2, 3),)),
    "repeat": lambda d: (lambda a: a.repeat(2, 1, 3), (_r(d, 2, 2),)),
    # casts and moves
    "to_float32_and_back": lambda d: (lambda a: (a.to(gt.float32) * 2).double(), (_r(d, 3),)),
    "to_other_device": lambda d: (lambda a: (a.cpu() * 3).to(d), (_r(d, 3),)),
}

LOOSE = {"to_float32_and_back"}  # a float32 trip rounds at ~1e-7: only that much precision


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck(case, device):
    fn, inputs = CASES[case](device)
    if case in LOOSE:
        assert gradcheck(fn, inputs, eps=1e-3, atol=1e-4, rtol=1e-3)
    else:
        assert gradcheck(fn, inputs)


def test_gradcheck_catches_a_wrong_formula(device):
    class Bad(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # wrong: should be 2 * x * g

    x = _r(device, 3)
    with pytest.raises(gt.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(Bad.apply, (x,))
    assert gradcheck(Bad.apply, (x,), raise_exception=False) is False


def test_custom_function_with_saved_tensors(device):
    class Cube(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = _r(device, 4)
    y = Cube.apply(x)
    assert type(y.grad_fn).__name__ == "CubeBackward"
    assert gradcheck(Cube.apply, (x,))


def test_inplace_on_non_leaf_is_differentiated(device):
    def f(a, b):
        h = a * 1.0
        h.mul_(b)
        h += 1.0
        h[0] = b[1] * 3
        return h

    assert gradcheck(f, (_r(device, 3), _r(device, 3, seed=1)))


def test_fused_function_backward(device):
    @gt.fuse
    def bias_gelu(x, a, b):
        return (a * x + b).gelu()

    x, b = _r(device, 2, 3), _r(device, 3, seed=1)
    assert gradcheck(lambda x, b: bias_gelu(x, 2.0, b), (x, b))
    with gt.autograd.no_grad():  # without grad it stays the fused kernel and agrees
        plain = bias_gelu(x, 2.0, b)
    np.testing.assert_allclose(
        plain.cpu().numpy(force=True), (2.0 * x + b).gelu().detach().cpu().numpy(), rtol=1e-12
    )


FUSED = {
    "bias_gelu": (
        lambda x, a, b: (a * x + b).gelu(),
        lambda d: (_r(d, 2, 3), 2.0, _r(d, 3, seed=1)),
    ),
    "gelu_tanh_sigmoid": (
        lambda x, y: x.gelu(approximate="tanh") * y.sigmoid() - y.exp(),
        lambda d: (_r(d, 4), _r(d, 4, seed=2)),
    ),
    "where_clamp_max": (
        lambda x, y: gt.where(x > 0, gt.maximum(x, y), gt.clamp(y, -0.3, 0.3)),
        lambda d: (_r(d, 5, away=0.1), _r(d, 5, seed=3)),
    ),
    "div_pow_sqrt_log": (
        lambda x, y: (x / y) ** 2 + gt.sqrt(y) * gt.log(y) - gt.rsqrt(y),
        lambda d: (_r(d, 3), _pos(d, 3, seed=4)),
    ),
    "silu_tanh_cast": (
        lambda x: (x.to(gt.float32).to(gt.float64).silu() + x.tanh()).abs(),
        lambda d: (_r(d, 4, away=0.2),),
    ),
    "reused_input": (
        lambda x: x * x * x - x.sin() * x.cos() + x.relu(),
        lambda d: (_r(d, 6, away=0.1),),
    ),
}


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_backward_is_fused_and_correct(name, device):
    body, make = FUSED[name]
    fused = gt.fuse(body)
    args = make(device)
    loose = name == "silu_tanh_cast"  # a float32 trip inside: ~1e-7 precision
    kw = dict(eps=1e-3, atol=1e-4) if loose else {}
    assert gradcheck(fused, args, **kw)
    out = fused(*args)
    assert type(out.grad_fn).__name__ == "FusedBackward"  # not an op-by-op graph
    assert all(
        type(f).__name__ == "AccumulateGrad" for f, _ in out.grad_fn.next_functions if f is not None
    )
    backward = fused._autograd_backward  # the gradient itself is one fused function
    assert backward and all(isinstance(b, gt.fusion.Fused) for b in backward.values())


@pytest.mark.parametrize(
    "shapes",
    [((3, 2), (2,)), ((2,), (2, 3)), ((4, 2, 3), (3, 2)), ((2,), (2,)), ((2, 1, 2, 3), (2, 3, 4))],
)
def test_matmul_one_side_requires_grad(shapes, device):
    """Only one operand requires grad: the other is not saved (its shape stands in)."""
    a_shape, b_shape = shapes
    for first in (True, False):
        a = _r(device, *a_shape) if first else _r(device, *a_shape).detach()
        b = _r(device, *b_shape, seed=1).detach() if first else _r(device, *b_shape, seed=1)
        assert gradcheck(gt.matmul, (a, b))
