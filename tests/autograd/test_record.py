"""Autograd is decided at call time: names bound before the first tensor that requires
grad are as differentiable as names looked up later, nothing is ever rebound, and a formula
can only name an op that makes the check. The first two run in a fresh process, so no
earlier test has made a tensor that requires grad."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import gpu_tensor as gt
from gpu_tensor.autograd import record

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str) -> str:
    env = dict(os.environ, GPU_TENSOR_FALLBACK="1")
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_names_bound_before_the_first_requires_grad_are_differentiable():
    out = _run("""
        from gpu_tensor import mul, sin, sum, Tensor
        view = Tensor.view
        import gpu_tensor as gt
        x = gt.tensor([3.0], requires_grad=True)
        (x * x + mul(x, x)).sum().backward()
        print(x.grad.tolist())
        y = gt.tensor([0.5, 1.0], requires_grad=True)
        sum(sin(view(y, 2, 1))).backward()
        print([round(v, 6) for v in y.grad.tolist()])
    """)
    import math

    lines = out.split("\n")
    assert lines[0] == "[12.0]"
    assert lines[1] == str([round(math.cos(0.5), 6), round(math.cos(1.0), 6)])


def test_ops_are_the_same_objects_for_the_life_of_the_process():
    out = _run("""
        import gpu_tensor as gt
        from gpu_tensor.ops import _dispatch, elementwise as ew
        from gpu_tensor.fusion.fuse import Fused
        Tensor = gt.Tensor
        before = (gt.mul, gt.add, Tensor.__add__, Tensor.view, Tensor.sum, Tensor.add_,
                  Tensor.__getitem__, Tensor.requires_grad, Fused.__call__)
        w = gt.ones(3, requires_grad=True)
        w.requires_grad = True
        (w * 2).view(3, 1).sum().backward()
        after = (gt.mul, gt.add, Tensor.__add__, Tensor.view, Tensor.sum, Tensor.add_,
                 Tensor.__getitem__, Tensor.requires_grad, Fused.__call__)
        assert all(a is b for a, b in zip(before, after)), "an op was rebound"
        assert Tensor.__add__ is _dispatch._BINARY["add"] and gt.mul is ew.mul
        print(w.grad.tolist())
    """)
    assert out.strip() == "[2.0, 2.0, 2.0]"


def test_no_grad_and_grad_free_inputs_record_nothing():
    x = gt.ones(2, requires_grad=True)
    with gt.no_grad():
        y = x * 2 + x.sin()
    assert not y.requires_grad and y.grad_fn is None
    z = gt.ones(2) * gt.ones(2)
    assert not z.requires_grad
    assert (x * 2).grad_fn.name() == "MulBackward0"


def test_a_formula_must_name_a_differentiable_op():
    import types

    ns = types.SimpleNamespace(f=lambda t: t)
    with pytest.raises(TypeError, match="decorate it with @gpu_tensor._grad.differentiable"):
        record.formula("FBackward0", (ns, "f"))(lambda ctx, out, x: None)


def test_a_registered_decorated_op_records_its_node():
    from gpu_tensor._grad import differentiable

    @differentiable
    def double(t):
        return t * 2

    ns = type("ns", (), {"double": staticmethod(double)})
    spec = record.formula("DoubleBackward0", (ns, "double"))(lambda ctx, out, x: None)
    spec.backward(lambda ctx, g: g * 2)
    x = gt.ones(2, requires_grad=True)
    y = double(x)
    assert y.grad_fn.name() == "DoubleBackward0"  # one node, not the MulBackward0 inside
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
