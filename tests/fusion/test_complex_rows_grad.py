"""Gradients of the complex rows whose kernels came in session 12 (test_complex_rows.py):
each row's rule conjugates its factor for complex operands (torch's g * conj(f'(z)), the
conjugate Wirtinger convention; the rules live in fusion/derivatives_special.py and
fusion/derivatives.py). The expected values were recorded from torch 2.13.0 (cpu,
complex128) with /work/torchenv; complex64 is checked at float32's tolerance. sin, cos,
tanh, log1p, rsqrt and pow are test_complex_grad.py's.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt

# -- gradients: torch's g * conj(f'(z)) ------------------------------------------------------
_Z = [1 + 2j, 3 - 1j, -0.5 + 0.25j, -2 - 0.75j]
_W = [2 + 1j, 1 - 1j, 0.5j, -1.5 + 0.5j]
# torch 2.13.0's z.grad of (f(z) * w).real.sum(), complex128, recorded (/work/torchenv)
_TORCH_GRAD = {
    "tan": [
        (-0.1259516324284147 - 0.10858938403457047j),
        (0.5045347746320985 + 0.32276484442841524j),
        (0.15761645890512802 - 0.5784571349597738j),
        (1.1173158308115938 - 1.4889062602438647j),
    ],
    "sinh": [
        (-2.3529036708138182 - 1.4950667180500368j),
        (-2.9901700898301806 + 13.86933207186971j),
        (0.06446052086404913 - 0.5462854023659588j),
        (-5.365239380127701 + 2.331934591928376j),
    ],
    "cosh": [
        (-2.3812317687046276 - 2.3171822422027875j),
        (-3.058964531121955 + 13.884326377478342j),
        (-0.13948956417513075 + 0.2524478571939975j),
        (5.262829286988934 - 2.5198209140626506j),
    ],
    "asin": [
        (0.615988423788623 - 0.7102406199603006j),
        (-0.1946201264392006 + 0.42314709523219673j),
        (0.08063736031282899 - 0.5362680905659986j),
        (-0.557522926680091 + 0.5795945591442525j),
    ],
    "acos": [
        (-0.615988423788623 + 0.7102406199603006j),
        (0.1946201264392006 - 0.42314709523219673j),
        (-0.08063736031282899 + 0.5362680905659986j),
        (0.557522926680091 - 0.5795945591442525j),
    ],
    "atan": [
        (-0 + 0.5j),
        (0.1282051282051282 + 0.025641025641025644j),
        (-0.08488063660477453 - 0.40318302387267907j),
        (-0.179714091218516 - 0.23417290673927843j),
    ],
    "asinh": [
        (0.8994537199739336 + 0.5558929702514213j),
        (0.3791201445271091 + 0.20289894386653068j),
        (-0.04700515457639925 - 0.4514432372880235j),
        (-0.556422922060231 - 0.3963859038057624j),
    ],
    "acosh": [
        (0.7102406199603006 + 0.6159884237886231j),
        (0.4231470952321966 + 0.1946201264392006j),
        (0.5362680905659987 + 0.08063736031282898j),
        (0.5795945591442526 + 0.5575229266800912j),
    ],
    "atanh": [
        (0.125 - 0.375j),
        (-0.15294117647058825 - 0.011764705882352944j),
        (0.17297297297297298 - 0.5621621621621622j),
        (0.14431372549019608 + 0.3827450980392157j),
    ],
    "expm1": [
        (-4.734135439518447 - 3.812248960252824j),
        (-6.049134620952136 + 27.753658449348052j),
        (-0.07502904331108164 - 0.29383754517196137j),
        (-0.10241009313876724 - 0.18788632213427475j),
    ],
    "exp2": [
        (-0.8541150741670281 - 2.9798569963078227j),
        (0.7224125479494957 + 7.808719862569975j),
        (-0.04225423425984105 - 0.24139429659146808j),
        (-0.18254955103891946 - 0.20431946759965855j),
    ],
    "log2": [
        (1.1541560327111706 + 0.865617024533378j),
        (0.5770780163555854 + 0.28853900817779266j),
        (0.5770780163555853 + 1.1541560327111706j),
        (0.830043722155294 + 0.6719401560304761j),
    ],
    "sinc": [
        (-176.69803661766426 - 153.8299891503699j),
        (-4.710302868416106 - 1.8037397476518087j),
        (0.15524247358839738 - 0.7522391062947116j),
        (2.5652630464080945 + 2.771379736147971j),
    ],
    "log10": [
        (0.3474355855226015 + 0.26057668914195115j),
        (0.17371779276130073 + 0.08685889638065038j),
        (0.17371779276130075 + 0.3474355855226015j),
        (0.249868058081323 + 0.2022741422563091j),
    ],
}


def _grad(module, key, cdt, device=None):
    kw = {} if device is None else {"device": device}
    z = module.tensor(_Z, dtype=cdt, requires_grad=True, **kw)
    w = module.tensor(_W, dtype=cdt, **kw)
    (getattr(module, key)(z) * w).real.sum().backward()
    return z.grad


@pytest.mark.parametrize("key", list(_TORCH_GRAD))
@pytest.mark.parametrize(("cdt", "tol"), [(gt.complex128, 1e-12), (gt.complex64, 2e-6)])
def test_gradient_is_torchs(device, key, cdt, tol):
    """Each row's rule conjugates its factor for complex operands (the rows of
    fusion/derivatives_special.py; sin, cos, tanh are test_complex_grad.py's)."""
    got = _grad(gt, key, cdt, device)
    assert got.dtype is cdt
    np.testing.assert_allclose(got.cpu().numpy(), np.array(_TORCH_GRAD[key]), rtol=tol, atol=tol)


# torch 2.13.0's (z.grad, w.grad) of ldexp(z, w).abs().sum(), complex128, recorded
_TORCH_LDEXP = (
    [
        (1.788854381999832 + 3.5777087639996634j),
        (1.8973665961010275 - 0.6324555320336757j),
        (-0.8944271909999159 + 0.4472135954999579j),
        (-0.3310423554409472 - 0.12414088329035519j),
    ],
    [6.199696856577434, 4.383847688586825, 0.3874810535360897, 0.5234580780733298],
)


def _ldexp_grads(module, cdt, device=None):
    kw = {} if device is None else {"device": device}
    z = module.tensor(_Z, dtype=cdt, requires_grad=True, **kw)
    w = module.tensor(_W, dtype=cdt, requires_grad=True, **kw)
    module.ldexp(z, w).abs().sum().backward()
    return z.grad, w.grad


@pytest.mark.parametrize(("cdt", "tol"), [(gt.complex128, 1e-12), (gt.complex64, 2e-6)])
def test_ldexp_gradient_is_torchs(device, cdt, tol):
    for got, want in zip(_ldexp_grads(gt, cdt, device), _TORCH_LDEXP, strict=True):
        np.testing.assert_allclose(got.cpu().numpy(), np.array(want), rtol=tol, atol=tol)


def test_recorded_gradients_are_torchs():
    torch = pytest.importorskip("torch")
    for key, want in _TORCH_GRAD.items():
        got = _grad(torch, key, torch.complex128)
        np.testing.assert_array_equal(got.resolve_conj().numpy(), np.array(want), err_msg=key)
    for got, want in zip(_ldexp_grads(torch, torch.complex128), _TORCH_LDEXP, strict=True):
        np.testing.assert_array_equal(got.numpy(), np.array(want, got.numpy().dtype))
