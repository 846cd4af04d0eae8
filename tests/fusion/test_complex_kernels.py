"""Complex sgn, nan_to_num, abs, exp, sigmoid and silu on cuda are ONE generated kernel (issue 23): hand-written
complex C types in the preamble (fusion/preamble_complex.py), no cupy routine, no sync, no
copy; values bit-equal on cpu, emulated cuda and the simulated CuPy (which runs the kernel's
CUDA source under g++). Expected values are computed here with numpy, part by part."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_sim_counts import one_warm_launch

import gpu_tensor as gt
from gpu_tensor import device as dv

_INF, _NAN = float("inf"), float("nan")
# zeros of both signs, ordinary values, subnormals of both types, huge values, inf and nan
_PARTS = [0.0, -0.0, 1.0, -2.5, 3e-39, 5e-324, 1e38, 1e300, _INF, -_INF, _NAN]
_Z128 = np.array([complex(a, b) for a in _PARTS for b in _PARTS])
with np.errstate(over="ignore"):  # 1e300 becomes inf, 5e-324 zero in complex64
    _Z64 = _Z128.astype(np.complex64)


def _values(npdt) -> np.ndarray:
    return _Z64 if npdt is np.complex64 else _Z128


_DTYPES = [(gt.complex64, np.complex64), (gt.complex128, np.complex128)]


def _bits(a: np.ndarray) -> np.ndarray:
    """The parts' bit patterns (nan payloads and zero signs count)."""
    real = np.float32 if a.dtype == np.complex64 else np.float64
    return np.ascontiguousarray(a).view(real).view(np.uint32 if real is np.float32 else np.uint64)


def _bits_any_nan(a: np.ndarray) -> np.ndarray:
    """_bits with every nan part the same nan: which operand's nan an x86 instruction passes
    on (its sign) depends on the order the compiler picked for a commutative step."""
    parts = np.array(a).view(np.float32 if a.dtype == np.complex64 else np.float64)
    parts[np.isnan(parts)] = np.nan
    return _bits(parts.view(a.dtype))


def _sgn(z: np.ndarray) -> np.ndarray:
    """torch.sgn: each part divided by |z| = hypot(re, im), 0 where |z| is 0."""
    with np.errstate(all="ignore"):
        m = np.hypot(z.real, z.imag)
        safe = np.where(m == 0, 1, m).astype(m.dtype)
        out = np.empty_like(z)
        out.real = np.where(m == 0, 0, z.real / safe)
        out.imag = np.where(m == 0, 0, z.imag / safe)
    return out


def _nan_to_num(z: np.ndarray, nan, hi, lo) -> np.ndarray:
    real = z.real.dtype.type
    out = np.empty_like(z)
    for part, src in (("real", z.real), ("imag", z.imag)):
        v = np.where(np.isnan(src), real(nan), src)
        v = np.where(np.isposinf(src), real(hi), v)
        setattr(out, part, np.where(np.isneginf(src), real(lo), v))
    return out


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_sgn_values(device, dt, npdt):
    z = _values(npdt)
    r = gt.sgn(gt.tensor(z, device=device))
    assert r.dtype is dt
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(_sgn(z)))


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
@pytest.mark.parametrize("limits", [(0.0, None, None), (1.5, 2.0, -3.0), (_NAN, -_INF, _INF)])
def test_nan_to_num_values(device, dt, npdt, limits):
    z = _values(npdt)
    nan, hi, lo = limits
    r = gt.nan_to_num(gt.tensor(z, device=device), *limits)
    assert r.dtype is dt
    big = np.finfo(z.real.dtype).max
    want = _nan_to_num(z, nan, big if hi is None else hi,
                       -big if lo is None else lo)  # fmt: skip
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(want))


def _abs(z: np.ndarray) -> np.ndarray:
    """torch's |z| on cuda: hypot(re, im), real."""
    with np.errstate(all="ignore"):
        return np.hypot(z.real, z.imag)


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_abs_values(device, dt, npdt):
    """|z| is real (float32 for complex64). Real cuda's kernel (the sim runs it) gives
    hypot(re, im), torch's value; cpu and emulated cuda keep numpy's np.abs, one ulp away
    from it at 1e38+1e38j in complex128 (the only such value here)."""
    z = _values(npdt)
    r = gt.abs(gt.tensor(z, device=device))
    assert r.dtype is dt.to_real()
    backend = r.device._backend
    kernel = r.device.type == "cuda" and backend is not None and backend.casts_in_kernel
    with np.errstate(all="ignore"):
        want = _abs(z) if kernel else np.abs(z)
    got = r.cpu().numpy()
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
    with np.errstate(all="ignore"):
        a, h = np.abs(z), _abs(z)
    assert int((~((a == h) | (np.isnan(a) & np.isnan(h)))).sum()) == (npdt is np.complex128)


# exp's grid adds the real parts where glibc's cexp takes exp(re) in factors exp(t) (t = 88
# for complex64, 709 for complex128) and where even that overflows (above 3t)
_EXP_PARTS = _PARTS + [88.5, 100.0, -100.0, 200.0, 710.0, 1000.0, 1500.0, 2200.0, 3.3]
_EXP128 = np.array([complex(a, b) for a in _EXP_PARTS for b in _EXP_PARTS])


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_exp_values(device, dt, npdt):
    """exp of complex: numpy's np.exp on cpu and emulated cuda; real cuda's kernel ports
    glibc's cexp, which numpy and torch 2.13 cpu call, so under the sim (g++, glibc's
    expf/sincosf) the bits are numpy's on every grid value, special ones included. On a GPU
    CUDA's expf/sincosf may differ from glibc's by an ulp: compared within tolerance there."""
    with np.errstate(over="ignore"):
        z = _EXP128.astype(npdt)
    r = gt.tensor(z, device=device).exp()
    assert r.dtype is dt
    with np.errstate(all="ignore"):
        want = np.exp(z)
    got = r.cpu().numpy()
    if r.device.type == "cuda" and dv.cuda_kind() == "cuda":  # a GPU's own expf/sincosf
        from fusion_tolerance import assert_close

        real = got.real.dtype
        assert_close(got.view(real), want.view(real), real)
        return
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_exp_reference_is_torchs(npdt):
    """numpy's complex exp (the kernel's reference above) is torch 2.13 cpu's, bit for bit
    on the whole exp grid: both call glibc's cexp."""
    torch = pytest.importorskip("torch", reason="the torch parity check needs torch")
    with np.errstate(over="ignore"):
        z = _EXP128.astype(npdt)
    padded = np.concatenate([z, np.zeros(64 - len(z) % 64, npdt)])  # all in the vector loop
    with np.errstate(all="ignore"):
        want = np.exp(z)
    np.testing.assert_array_equal(_bits(torch.exp(torch.from_numpy(padded)).numpy()[: len(z)]),
                                  _bits(want))  # fmt: skip


@pytest.mark.parametrize("key", ["sigmoid", "silu"])
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_sigmoid_and_silu_values(device, key, dt, npdt):
    """sigmoid of complex: 1 / (1 + exp(-z)) in numpy's steps (the row's complex_fn), so
    the kernel's bits are numpy's (glibc's exp, numpy's sum and Smith quotient). silu
    multiplies by z: the kernel rounds that product's steps once each (test_complex_arith),
    where numpy, on cpu and emulated cuda, may contract them into FMAs."""
    z = _values(npdt)
    fn = gt.sigmoid if key == "sigmoid" else gt.nn.functional.silu
    r = fn(gt.tensor(z, device=device))
    assert r.dtype is dt
    one = np.ones(1, npdt)
    with np.errstate(all="ignore"):
        want = one / (one + np.exp(-z))
        if key == "silu":
            kernel = r.device.type == "cuda" and r.device._backend.casts_in_kernel
            if kernel:  # (ac - bd) + (ad + bc)i, each step rounded once
                prod = np.empty_like(z)
                prod.real = z.real * want.real - z.imag * want.imag
                prod.imag = z.real * want.imag + z.imag * want.real
                want = prod
            else:
                want = z * want
    np.testing.assert_array_equal(_bits_any_nan(r.cpu().numpy()), _bits_any_nan(want))


def test_non_contiguous_and_method(device):
    z = gt.tensor(_Z64.reshape(11, 11), device=device).t()
    want = _sgn(_Z64.reshape(11, 11).T)
    np.testing.assert_array_equal(_bits(z.sgn().cpu().numpy()), _bits(want))


@pytest.mark.sim
@pytest.mark.parametrize(
    "op", ["sgn", "nan_to_num", "nan_to_num_limits", "abs", "exp", "sigmoid", "silu"]
)
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_one_launch_on_sim(op, dt, npdt):
    fn = {
        "sgn": gt.sgn,
        "nan_to_num": gt.nan_to_num,
        "nan_to_num_limits": lambda t: gt.nan_to_num(t, 1.0, 2.0, -2.0),
        "abs": gt.abs,
        "exp": gt.exp,
        "sigmoid": gt.sigmoid,
        "silu": gt.nn.functional.silu,
    }[op]
    r = one_warm_launch(fn, gt.tensor(_values(npdt), device="cuda"))
    if op == "silu":  # (its product: numpy's FMAs on cpu, test_sigmoid_and_silu_values)
        return
    if op == "abs":  # real, and hypot's (test_abs_values)
        got, want = r.cpu().numpy(), _abs(_values(npdt))
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
        return
    want = fn(gt.tensor(_values(npdt), device="cpu"))
    np.testing.assert_array_equal(_bits_any_nan(r.cpu().numpy()), _bits_any_nan(want.numpy()))


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_complex_kernels_compile_under_nvrtc(npdt):
    """The hand-written complex structs and overloads compile under NVRTC (no headers), in
    the vector and the strided variant (the sim runs them under g++ instead)."""
    from gpu_tensor.fusion import eager
    from gpu_tensor.kernel import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: skip
        pytest.skip(f"NVRTC is not available here: {exc}")
    rows = (("sgn", {}), ("nan_to_num", {"limits": (1.0, 2.0, -3.0)}), ("abs", {}), ("angle", {}),
            ("exp", {}), ("sigmoid", {}), ("silu", {}))  # fmt: skip
    for key, params in rows:
        for x in (np.zeros(64, npdt), np.zeros((8, 8), npdt).T):
            graph = eager._graph_for(key, [x], params)
            out = np.empty(x.shape, graph.outputs[0].dtype)  # abs, angle: the real type
            ksrc, _, _ = eager.prepare(graph, graph.outputs, [x], [], [out])
            assert nvrtc.compile_ptx(ksrc.source, "compute_90").count(".entry") == 1
