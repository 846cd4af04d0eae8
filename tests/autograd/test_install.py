"""The wiring: nothing is wrapped until the first tensor that requires grad is made (the
plain dispatch path stays exactly as it was), and everything is wrapped after. Run in
subprocesses: activation is process-wide."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str) -> str:
    env = dict(os.environ, GPU_TENSOR_FALLBACK="1")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_plain_functions_until_activation_then_wrapped():
    out = _run("""
        import gpu_tensor as gt
        from gpu_tensor import autograd
        from gpu_tensor.ops import _dispatch, elementwise as ew
        from gpu_tensor.tensor import Tensor
        plain = (gt.add, Tensor.__add__, Tensor.sum, Tensor.reshape, Tensor.__getitem__)
        assert Tensor.__add__ is _dispatch._BINARY["add"]
        assert not any(hasattr(f, "__wrapped__") for f in plain)
        x = gt.ones(3) * 2  # ops on plain tensors do not activate anything
        assert not autograd.install.ACTIVE and gt.add is ew.add
        w = gt.ones(3, requires_grad=True)  # the first tensor that requires grad
        assert autograd.install.ACTIVE
        now = (gt.add, Tensor.__add__, Tensor.sum, Tensor.reshape, Tensor.__getitem__)
        assert all(f.__wrapped__ is p for f, p in zip(now, plain))
        assert ew.add is gt.add and Tensor.add is gt.add
        print("ok")
    """)
    assert out.strip() == "ok"


def test_direct_attribute_assignment_activates_autograd():
    """`t.requires_grad = True` (how torch users usually mark parameters) is a property
    setter: it switches autograd on just as requires_grad_() does."""
    out = _run("""
        import gpu_tensor as gt
        from gpu_tensor import autograd
        w = gt.ones(3)
        assert not autograd.install.ACTIVE
        w.requires_grad = True
        assert autograd.install.ACTIVE and w.requires_grad and w.is_leaf
        (w * 2).sum().backward()
        print(w.grad.tolist())
    """)
    assert out.strip() == "[2.0, 2.0, 2.0]"


def test_false_assignment_does_not_activate():
    out = _run("""
        import gpu_tensor as gt
        from gpu_tensor import autograd
        w = gt.ones(3)
        w.requires_grad = False
        gt.ones(2, requires_grad=False)
        print(autograd.install.ACTIVE)
    """)
    assert out.strip() == "False"
