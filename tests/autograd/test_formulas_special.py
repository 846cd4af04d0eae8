"""Gradients of the special functions that had none (issue 24, item 7): i0 and
gt.special.i0e/i1/i1e, polygamma of every order (in place too), nextafter and frexp."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd.gradcheck import gradcheck

_X = [-3.0, -0.7, 0.0, 0.4, 2.0, 35.0]  # both sides of the series/asymptotic switch (30)


def _x(values=_X):
    return gt.tensor(values, dtype=gt.float64, requires_grad=True)


@pytest.mark.parametrize(
    "fn", [gt.i0, gt.special.i0e, gt.special.i1, gt.special.i1e], ids=["i0", "i0e", "i1", "i1e"]
)
def test_bessel_gradients(fn):
    assert gradcheck(fn, [_x()])


def test_bessel_values_without_torch():
    """i0 is numpy's; i1 = i0' (central differences of np.i0); the scaled forms are
    e^-|x| times the unscaled ones (where those do not overflow)."""
    x = np.array([-3.0, -0.7, 0.0, 0.4, 2.0, 35.0, 120.0])
    h = 1e-5
    i1_ref = (np.i0(x + h) - np.i0(x - h)) / (2 * h)
    t = gt.tensor(x, dtype=gt.float64)
    assert np.allclose(gt.special.i1(t).numpy(), i1_ref, rtol=1e-8, atol=1e-12)
    assert np.allclose(gt.special.i0e(t).numpy(), np.i0(x) * np.exp(-np.abs(x)), rtol=1e-13)
    assert np.allclose(gt.special.i1e(t).numpy(), i1_ref * np.exp(-np.abs(x)), rtol=1e-8)
    big = gt.special.i1e(gt.tensor([1e4, -1e6], dtype=gt.float64)).numpy()
    assert np.allclose(
        big, np.sign([1e4, -1e6]) / np.sqrt(2 * np.pi * np.array([1e4, 1e6])), rtol=1e-4
    )  # e^-x I1(x) ~ 1/sqrt(2 pi x), where I1 overflows


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma_gradient_of_any_order(n):
    assert gradcheck(lambda t: gt.polygamma(n, t), [_x([0.3, 1.0, 2.5, 7.0])])
    x = _x([1.0, 2.0])
    x.polygamma(n).sum().backward()  # Tensor.polygamma(n): the same node
    assert x.grad_fn is None and np.allclose(
        x.grad.numpy(), gt.polygamma(n + 1, x.detach()).numpy()
    )


def test_in_place_polygamma_carries_its_gradient():
    """The issue's repro: y.polygamma_(1) left x.grad = [1, 1]; torch gives psi''(x)
    (-2.4041138, -0.4041138: -2 zeta(3) and 2 - 2 zeta(3), recorded from torch 2.13)."""
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.polygamma_(1)
    assert type(y.grad_fn).__name__ == "PolygammaBackward0"
    y.sum().backward()
    assert np.allclose(x.grad.numpy(), [-2.4041138, -0.4041138], atol=1e-5)


def test_nextafter_and_frexp_gradients():
    """torch's: nextafter passes the input's gradient and gives the direction none; frexp's
    mantissa x / 2**e has gradient 1 / 2**e (away from powers of two)."""
    a, b = _x([1.0, 3.0]), _x([5.0, -5.0])
    gt.nextafter(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [0.0, 0.0]
    x = _x([0.3, 1.5, -6.0, 100.0])
    assert gradcheck(lambda t: gt.frexp(t).mantissa, [x])
    gt.frexp(x).mantissa.sum().backward()
    assert x.grad.tolist() == [2.0, 0.5, 0.125, 1 / 128]  # 0.3 = 0.6 * 2**-1


def test_special_values_and_gradients_match_torch():
    torch = pytest.importorskip("torch")
    x = np.array([-3.0, -0.7, 0.4, 2.0, 35.0])
    for name in ("i0", "i0e", "i1", "i1e"):
        got, want = [], []
        for m, out in ((gt, got), (torch, want)):
            t = m.tensor(x, dtype=m.float64, requires_grad=True)
            r = getattr(m.special, name)(t)
            r.sum().backward()
            out += [r.tolist(), t.grad.tolist()]
        assert np.allclose(got, want, rtol=1e-12), name
