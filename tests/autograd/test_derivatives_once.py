"""Each op-table row's derivative is written once (its `grad` rule, fusion/derivatives.py):
eager autograd and the fused backward both run it, so they agree on value and dtype; and a
differentiable op without a formula raises torch's error instead of dropping the history."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd import record
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.ops import elementwise as ew

_ROWS = sorted(k for k, op in OPS.items() if op.grad is not None)

# operand values away from each rule's kinks, ties and poles (ties get their own test)
_VALUES = {
    1: ([0.7, -1.3, 0.45, 2.1],),
    2: ([0.7, -1.3, 0.45, 2.1], [1.6, 0.9, -0.8, 1.2]),
}
_POSITIVE = {"log", "log1p", "sqrt", "rsqrt", "pow"}  # rules valid for positive inputs


def _operands(key, dtype, device):
    op = OPS[key]
    if key == "where":
        a, b = _VALUES[2]
        return [
            gt.tensor([True, False, False, True], device=device),
            gt.tensor(a, dtype=dtype, device=device),
            gt.tensor(b, dtype=dtype, device=device),
        ]
    if key == "clamp":
        x, lo = _VALUES[2]
        return [
            gt.tensor(x, dtype=dtype, device=device),
            gt.tensor([v - 1 for v in lo], dtype=dtype, device=device),
            gt.tensor([v + 0.2 for v in lo], dtype=dtype, device=device),
        ]
    vals = _VALUES[op.arity]
    if key in _POSITIVE:
        vals = tuple([abs(v) + 0.1 for v in vs] for vs in vals)
    return [gt.tensor(v, dtype=dtype, device=device) for v in vals]


def _call(key):
    fn = getattr(ew, key)
    if key == "gelu":
        return lambda x: fn(x, approximate="tanh")  # "none" is covered by the fused tests
    if key == "special_polygamma":  # issue 23's rows with a parameter
        return lambda x: fn(2, x)
    if key == "logit":
        return lambda x: fn(x, eps=0.3)  # -1.3 and 2.1 are clamped: their gradient is 0
    if key == "mvlgamma":
        return lambda x: fn(x, p=3)
    return fn


def _grads(fn, operands):
    leaves = [t.detach().requires_grad_() if t.dtype.is_floating_point else t for t in operands]
    out = fn(*leaves)
    out.backward(gt.ones_like(out) * 0.75)
    return [t.grad for t in leaves if t.dtype.is_floating_point]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("key", _ROWS)
def test_eager_and_fused_backward_agree(key, dtype, device):
    """One rule, two runners: the same gradient values and dtypes."""
    operands = _operands(key, getattr(gt, dtype), device)
    eager = _grads(_call(key), operands)
    fused_fn = gt.fuse(_call(key))
    fused = _grads(fused_fn, operands)
    assert fused_fn._autograd_backward, "the fused backward ran (not the op-by-op fallback)"
    assert len(eager) == len(fused) > 0
    for e, f in zip(eager, fused, strict=True):
        assert e.dtype is f.dtype is getattr(gt, dtype)
        tol = 1e-6 if dtype == "float32" else 1e-13
        np.testing.assert_allclose(f.cpu().numpy(), e.cpu().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("key", ["maximum", "minimum"])
def test_ties_split_the_gradient_in_both_runners(key):
    a, b = gt.tensor([1.0, 2.0, 3.0]), gt.tensor([1.0, 5.0, -1.0])
    eager = _grads(getattr(ew, key), [a, b])
    fused = _grads(gt.fuse(getattr(ew, key)), [a, b])
    expect_a = [0.375, 0.0, 0.75] if key == "maximum" else [0.375, 0.75, 0.0]
    for grads in (eager, fused):
        assert grads[0].tolist() == expect_a
        assert grads[1].tolist() == [0.75 - v for v in expect_a]


def test_clamp_with_crossed_tensor_bounds_follows_torch():
    """lo > hi: clamp gives hi, so the gradient goes to hi (torch's clamp_backward_min_max)."""
    x, lo, hi = gt.tensor([0.5, 3.0]), gt.tensor([2.0, 0.0]), gt.tensor([1.0, 1.0])
    for fn in (ew.clamp, gt.fuse(ew.clamp)):
        gx, glo, ghi = _grads(fn, [x, lo, hi])
        assert gx.tolist() == [0.0, 0.0]
        assert glo.tolist() == [0.0, 0.0]
        assert ghi.tolist() == [0.75, 0.75]


def test_a_rule_lives_in_the_row_only():
    """Replacing the sigmoid row's rule changes both the eager and the fused gradient."""
    object.__setattr__(OPS["sigmoid"], "grad", lambda g, out, x: (g * 0 + 42.0,))  # frozen row
    try:
        x = gt.tensor([0.1, -0.4])
        for fn in (ew.sigmoid, gt.fuse(lambda t: t.sigmoid())):
            (grad,) = _grads(fn, [x])
            assert grad.tolist() == [42.0, 42.0]
    finally:
        from gpu_tensor.fusion import derivatives

        object.__setattr__(OPS["sigmoid"], "grad", derivatives.sigmoid)


def test_the_gelu_sigmoid_and_rsqrt_rules_are_written_once():
    """The derivative math is in fusion/derivatives.py only: the autograd package repeats
    none of it (the tanh-gelu constant appears there and in the forward's numpy and CUDA
    forms)."""
    root = pathlib.Path(gt.__file__).parent
    hits = sorted(
        str(p.relative_to(root)) for p in root.rglob("*.py") if "0.044715" in p.read_text()
    )
    assert hits == ["fusion/derivatives.py", "fusion/npmath.py", "fusion/preamble.py"]
    for name in ("formulas_elementwise.py", "fused.py"):
        text = (root / "autograd" / name).read_text()
        assert "(1 - out)" not in text and "out * out * out" not in text, name


def test_a_differentiable_op_without_formula_raises(monkeypatch):
    monkeypatch.delitem(record._SPECS, ew.sigmoid)
    x = gt.tensor([0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="the derivative for 'sigmoid' is not implemented"):
        ew.sigmoid(x)
    with gt.no_grad():  # no gradient wanted: no error
        assert ew.sigmoid(x).requires_grad is False
    assert ew.sigmoid(x.detach()).tolist() == pytest.approx([0.6224593312])
