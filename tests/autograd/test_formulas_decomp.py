"""Gradients of the matrix decompositions (autograd/formulas_decomp.py): checked against
finite differences with the project's gradcheck, against torch where installed, and with
torch's errors where the gradient is not defined (issue 24, item 7)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd.gradcheck import gradcheck

_RNG = np.random.default_rng(0)


def _t(*shape):
    return gt.tensor(_RNG.standard_normal(shape), dtype=gt.float64, requires_grad=True)


def _spd(a):  # a symmetric positive-definite function of a (cholesky reads one triangle)
    return a @ a.mT + 3 * gt.eye(a.shape[-1], dtype=gt.float64)


def _svd_parts(u, s, vh):  # a loss of the vectors that does not depend on their signs
    return (u[..., :, :1] * vh[..., :1, :]).sum(-1), s


_CASES = {
    "cholesky": (lambda a: gt.linalg.cholesky(_spd(a)), (3, 3)),
    "cholesky_upper_batched": (lambda a: gt.cholesky(_spd(a), upper=True), (2, 3, 3)),
    "pinverse_wide": (lambda a: gt.pinverse(a), (2, 4)),
    "pinv_tall": (lambda a: gt.linalg.pinv(a), (4, 2)),
    "svd_tall": (lambda a: _svd_parts(*gt.linalg.svd(a, full_matrices=False)), (4, 3)),
    "svd_wide": (lambda a: _svd_parts(*gt.linalg.svd(a, full_matrices=False)), (3, 5)),
    "svd_full_matrices": (lambda a: _svd_parts(*gt.linalg.svd(a)), (5, 3)),
    "svd_torch_style": (lambda a: (lambda u, s, v: (u @ v.mT, s))(*gt.svd(a)), (3, 3)),
    "svdvals": (lambda a: gt.linalg.svdvals(a), (3, 4)),
    "qr_tall": (lambda a: gt.linalg.qr(a), (4, 3)),
    "qr_wide": (lambda a: gt.linalg.qr(a), (3, 5)),
    "qr_complete_square": (lambda a: gt.linalg.qr(a, mode="complete"), (3, 3)),
    "qr_batched": (lambda a: gt.qr(a), (2, 4, 2)),
    "eigh": (
        lambda a: (lambda w, v: (w, v * v[..., :1, :].sign()))(*gt.linalg.eigh(a + a.mT)),
        (3, 3),
    ),
    "eigvalsh_batched": (lambda a: gt.linalg.eigvalsh(a + a.mT), (2, 3, 3)),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_decomposition_gradients_match_finite_differences(name):
    fn, shape = _CASES[name]
    assert gradcheck(fn, [_t(*shape)])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the 0/0 the test is about
def test_repeated_singular_values_give_torchs_non_finite_gradient():
    """torch raises nothing for repeated singular values: the vectors' gradient divides by
    S_j^2 - S_i^2 = 0 (its documentation's warning); the values' own gradient is fine."""
    a = gt.eye(3, dtype=gt.float64).requires_grad_()
    gt.linalg.svdvals(a).sum().backward()
    assert np.allclose(a.grad.numpy(), np.eye(3))
    b = gt.eye(3, dtype=gt.float64).requires_grad_()
    u, s, vh = gt.linalg.svd(b)
    (u[:, 0] * gt.arange(3.0, dtype=gt.float64)).sum().backward()
    assert not np.isfinite(b.grad.numpy()).all()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda a: gt.linalg.qr(a, mode="r").R, "not computed when mode='r'"),
        (lambda a: gt.linalg.qr(a, mode="complete").Q, "mode='complete' and nrows > ncols"),
        (lambda a: gt.qr(a, some=False).R, "mode='complete' and nrows > ncols"),
        (lambda a: gt.svd(a, compute_uv=False).S, "compute_uv to false"),
    ],
)
def test_undefined_gradients_raise_torchs_errors(call, match):
    a = _t(4, 3)
    out = call(a)
    assert out.grad_fn is not None  # recorded: the error comes with backward, as in torch
    with pytest.raises(RuntimeError, match=match):
        out.sum().backward()


def test_complex_phase_dependence_is_an_error():
    a = gt.tensor(
        _RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3)),
        dtype=gt.complex128,
        requires_grad=True,
    )
    u, s, vh = gt.linalg.svd(a)
    with pytest.raises(RuntimeError, match="up to multiplication by e\\^\\{i phi\\}"):
        u[0, 0].imag.backward()  # the phase of one column: not a function of A
    h = a + a.mH
    w, v = gt.linalg.eigh(h)
    with pytest.raises(RuntimeError, match="up to multiplication by e\\^\\{i phi\\}"):
        v[0, 0].imag.backward()


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    x = _RNG.standard_normal((4, 3))
    w = _RNG.standard_normal((3, 5))
    s = x.T @ x + 3 * np.eye(3)
    cases = [
        (s, lambda m, a: (m.linalg.cholesky(a) ** 2).sum()),
        (x, lambda m, a: (m.linalg.pinv(a) ** 2).sum()),
        (
            x,
            lambda m, a: (lambda u, sv, vh: sv.sum() + ((u @ vh) ** 2).sum())(
                *m.linalg.svd(a, full_matrices=False)
            ),
        ),
        (w, lambda m, a: (lambda q, r: (q**3).sum() + (r**2).sum())(*m.linalg.qr(a))),
        (x, lambda m, a: (lambda q, r: (q**3).sum() + (r**2).sum())(*m.linalg.qr(a))),
        (s, lambda m, a: (lambda e, v: (e**2).sum() + (v**4).sum())(*m.linalg.eigh(a))),
    ]
    for data, loss in cases:
        grads = []
        for m in (gt, torch):
            t = m.tensor(data, dtype=m.float64, requires_grad=True)
            loss(m, t).backward()
            grads.append(np.asarray(t.grad.tolist()))
        assert np.allclose(*grads, atol=1e-10), loss
