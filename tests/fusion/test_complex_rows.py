"""Every elementwise row that takes complex tensors is ONE generated kernel on cuda and fuses
(issue 23). sqrt and log follow glibc's csqrt/clog (fusion/preamble_complex.py, session 11);
sin, cos, tan, sinh, cosh, tanh glibc's csin ... ctanh (preamble_complex_trig.py); asin,
acos, atan, asinh, acosh, atanh glibc's casin ... catanh (preamble_complex_arc.py); log1p,
expm1, exp2, log2, log10, rsqrt, pow, sinc and ldexp numpy's own formulas
(preamble_complex_math.py), step for step. numpy 2.x on Linux calls those glibc functions,
so under the simulated CuPy (the kernel built by g++ against glibc's real functions) the bits
are numpy's on every grid value (complex_grid.py: zeros, infs, nans, subnormal, huge,
near-unit-circle parts and each port's branch points), nan signs included except where
said; cpu and emulated cuda run numpy itself. On a GPU, CUDA's real functions may differ
from glibc's by an ulp: compared in ulps there (unmeasured: no GPU in session 12).
Gradients: test_complex_rows_grad.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from complex_grid import (
    any_nan_bits,
    assert_compiles_under_nvrtc,
    assert_numpys,
    grid,
)
from fusion_sim_counts import one_warm_launch

import gpu_tensor as gt
from gpu_tensor import device as dv

_DTYPES = [(gt.complex64, np.complex64), (gt.complex128, np.complex128)]
_FNS = {
    "sqrt": np.sqrt,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "exp2": np.exp2,
    "log2": np.log2,
    "log10": np.log10,
    "rsqrt": lambda z: z.dtype.type(1) / np.sqrt(z),
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
}
# expm1's real part multiplies two nans at z = nan +- inf i (expm1(nan) cos(inf)): which
# one's sign the product keeps is the compiler's choice of operand order, not numpy's; so
# there a nan is any nan (8 of the grid's values)
_NAN_SIGN = {"expm1": False}
_FLAGS = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
_BINARY = ["pow", "float_power", "ldexp", "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("key", list(_FNS))
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_values_are_numpys(device, key, dt, npdt):
    z = grid(npdt)
    r = getattr(gt, key)(gt.tensor(z, device=device))
    assert r.dtype is dt
    with np.errstate(all="ignore"):
        assert_numpys(r, _FNS[key](z), nan_sign=_NAN_SIGN.get(key, True))


def test_non_contiguous_and_methods(device):
    z = grid(np.complex128)[:1024].reshape(32, 32)
    t = gt.tensor(z, device=device).t()
    for key, fn in _FNS.items():
        with np.errstate(all="ignore"):
            assert_numpys(getattr(t, key)(), fn(z.T), nan_sign=_NAN_SIGN.get(key, True))


def test_fused_is_eager(device):
    """Inside @gt.fuse the rows take complex values (the same kernel helpers as eager cuda,
    numpy's functions on cpu): fused equals eager on each device (a nan is any nan)."""
    z = gt.tensor(grid(np.complex64)[:1500], device=device)
    w = gt.tensor(grid(np.complex64)[1500:3000], device=device)
    fns = [
        lambda a, b: a.sin() * b.cos() + a.tanh(),
        lambda a, b: gt.tan(a / b) - gt.sinh(b).conj() * gt.cosh(a),
        lambda a, b: a.sqrt() * b + a.log(),
        lambda a, b: gt.log(a / b) - gt.sqrt(b).conj(),
        lambda a, b: gt.log1p(a) * gt.expm1(b) - gt.rsqrt(a + b),
        lambda a, b: gt.exp2(a) + gt.log2(b) / gt.log10(a),
        lambda a, b: gt.asin(a) * gt.acos(b) - gt.atan(a * b),
        lambda a, b: gt.asinh(a) / gt.acosh(b) + gt.atanh(a - b),
        lambda a, b: np.sin(a) + np.cos(b) - np.tanh(a * b) + np.sqrt(a) * np.log(b),
    ]
    eager = [*fns[:8], lambda a, b: a.sin() + b.cos() - (a * b).tanh() + a.sqrt() * b.log()]
    for fused_fn, eager_fn in zip(fns, eager, strict=True):
        want = eager_fn(z, w).cpu().numpy()
        got = gt.fuse(fused_fn)(z, w).cpu().numpy()
        np.testing.assert_array_equal(any_nan_bits(got), any_nan_bits(want))


def _exponents(npdt, n):
    """Integers in and past numpy's small-integer loop (|n| < 100), halves, complex ones and
    the grid itself reversed."""
    rng = np.random.default_rng(5)
    return {
        "ints": (rng.integers(-120, 120, n) + 0j).astype(npdt),
        "halves": (rng.integers(-8, 8, n) / 2 + 0j).astype(npdt),
        "complex": (rng.standard_normal(n) * 3 + 1j * rng.standard_normal(n) * 3).astype(npdt),
        "grid": grid(npdt)[::-1].copy(),
    }


# on a GPU (unmeasured: no GPU here) exp(b log a) turns an ulp of CUDA's log into about
# |b log a| ulps of the result, up to ~700 on this grid
_POW_GPU_ULPS = 2048


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_pow_is_numpys(device, dt, npdt):
    """pow follows numpy's npy_cpow (its small-integer loop of plain products, then glibc's
    cpow); integer exponents give the same bits up to a nan's sign where two nans meet in
    the loop (2 of complex64's values, (+-inf + nan i) ** 23 and ** 79)."""
    z = grid(npdt)
    t = gt.tensor(z, device=device)
    for name, e in _exponents(npdt, len(z)).items():
        r = t ** gt.tensor(e, device=device)
        assert r.dtype is dt
        with np.errstate(all="ignore"):
            assert_numpys(r, np.power(z, e), _POW_GPU_ULPS, nan_sign=name != "ints")
    for k in (2, 3, -1, 0.5, 2.5, 1j):
        with np.errstate(all="ignore"):
            assert_numpys(t**k, np.power(z, np.array(k, npdt)), _POW_GPU_ULPS)
    with np.errstate(all="ignore"):
        want = np.power(z.astype(np.complex128), 1.5 - 2j)
        assert_numpys(gt.float_power(t, 1.5 - 2j), want, _POW_GPU_ULPS)


def _kernel_product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x * y as the kernel computes it: each product and each sum rounded once (numpy's
    complex multiply may fuse them into FMAs on this CPU)."""
    re = x.real * y.real - x.imag * y.imag
    im = x.real * y.imag + x.imag * y.real
    return _pack(re, im)


def _pack(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    out = np.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im
    return out


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_sinc_ldexp_and_the_logical_ops(device, dt, npdt):
    """sinc is numpy's np.sinc step for step (bits, but a nan's sign); ldexp is x * exp2(e), numpy's exp2 and
    the kernel's product on cuda (numpy's own on cpu and emulated cuda); the logical ops
    read a complex operand as nonzero, a nan part included; positive is the value."""
    z = grid(npdt)
    w = z[::-1].copy()
    t, u = gt.tensor(z, device=device), gt.tensor(w, device=device)
    with np.errstate(all="ignore"):
        # (an infinite part gives nan parts whose sign numpy's vector complex loops set
        # their own way: a nan is any nan there)
        assert_numpys(gt.sinc(t), np.sinc(z), nan_sign=False)
        kernel = t.device.type == "cuda" and not dv.cuda_is_emulated()
        want = _kernel_product(z, np.exp2(w)) if kernel else z * np.exp2(w)
        assert_numpys(gt.ldexp(t, u), want)
        assert_numpys(+t, z)
    for key in ("logical_and", "logical_or", "logical_xor"):
        got = getattr(gt, key)(t, u).cpu().numpy()
        np.testing.assert_array_equal(got, getattr(np, key)(z, w), err_msg=key)
    np.testing.assert_array_equal(gt.logical_not(t).cpu().numpy(), np.logical_not(z))


@pytest.mark.parametrize("key", list(_FLAGS))
@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_isnan_isinf_isfinite(device, key, npdt):
    """A part that is nan, infinite; both finite (numpy's and torch's rule), one kernel."""
    z = grid(npdt)
    r = getattr(gt, key)(gt.tensor(z, device=device))
    assert r.dtype is gt.bool
    np.testing.assert_array_equal(r.cpu().numpy(), _FLAGS[key](z))
    fused = gt.fuse(lambda a: getattr(gt, key)(a * 2) | (a == 0))(gt.tensor(z, device=device))
    with np.errstate(all="ignore"):
        want = _FLAGS[key](z * 2) | (z == 0)
    np.testing.assert_array_equal(fused.cpu().numpy(), want)


@pytest.mark.sim
@pytest.mark.parametrize("key", [*_FNS, *_FLAGS, *_BINARY, "sinc", "logical_not", "positive"])
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_one_launch_on_sim(key, dt, npdt):
    args = [gt.tensor(grid(npdt)[:256], device="cuda")]
    if key in _BINARY:
        args.append(gt.tensor(_exponents(npdt, 256)["complex"], device="cuda"))
    if key == "positive":  # the tensor itself, as torch's: no launch
        assert gt.positive(*args) is args[0]
        return
    one_warm_launch(getattr(gt, key), *args)


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_rows_compile_under_nvrtc(npdt):
    """The ports compile under NVRTC (no headers), in the vector and the strided variant."""
    assert_compiles_under_nvrtc([*_FNS, *_FLAGS, *_BINARY, "sinc", "logical_not"], npdt)
