"""Complex add, sub, mul, div, neg, eq, ne and where on cuda are ONE generated kernel
(issue 23):
a real operand (a tensor of another dtype, a Python int/float) or a Python complex is
converted as the kernel loads it, with no cast launch, no cupy routine and no temporary.

Expected values are computed here with numpy, part by part, over every pair of the (re, im)
grid below, and compared bit for bit (zero signs count; a nan is any nan, see _bits):
- add, sub, neg, eq, ne, where: numpy's own result on every device;
- div: numpy's too, on every device: the kernel computes numpy's Smith division step for
  step, each step rounded once (numpy compiles it without FMA). torch 2.13's cpu kernel
  computes it otherwise and differs from both in the last bits (or the sign of a zero
  part) of some values, so it is not the reference;
- mul: a kernel (real cuda; the simulated CuPy runs it) rounds each product and each sum
  once, (ac - bd) + (ad + bc)i, which is what torch 2.13's vectorized cpu kernel gives
  (test_kernel_values_match_torch). numpy 2.x contracts its complex product into FMAs where the
  CPU has them, so cpu and emulated cuda (numpy) may differ from the kernel by an ulp or
  by an overflow: those devices keep numpy's value, unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
from fusion_sim_counts import one_warm_launch

import gpu_tensor as gt

_INF, _NAN = float("inf"), float("nan")
# zeros of both signs, ordinary and inexact values, subnormals, huge values, inf and nan
_PARTS = [0.0, -0.0, 1.0, -2.5, 0.1, 3e-39, 5e-324, 1e38, 1e300, _INF, -_INF, _NAN]
_GRID = np.array([complex(a, b) for a in _PARTS for b in _PARTS])
_DTYPES = [(gt.complex64, np.complex64), (gt.complex128, np.complex128)]


def _grid(npdt):
    with np.errstate(over="ignore"):  # 1e300 becomes inf, 5e-324 zero in complex64
        return _GRID.astype(npdt)


def _pairs(npdt):
    """Every (a, b) pair of the grid, as two flat arrays (144 * 144 values)."""
    z = _grid(npdt)
    a, b = np.meshgrid(z, z)
    return a.ravel(), b.ravel()


def _bits(a: np.ndarray) -> np.ndarray:
    """Bit patterns, part by part for complex: zero signs count, and where a part is nan;
    a nan's sign and payload do not (CUDA gives one canonical nan, and which operand's nan
    an x86 instruction passes on depends on the order the compiler picked)."""
    a = np.array(a)
    if a.dtype.kind == "c":
        a = a.view(np.float32 if a.dtype == np.complex64 else np.float64)
    if a.dtype.kind == "f":
        a[np.isnan(a)] = np.nan
    return a.view(f"u{a.itemsize}")


def _runs_kernel(t) -> bool:
    backend = t.device._backend
    return t.device.type == "cuda" and backend is not None and backend.casts_in_kernel


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(ac - bd) + (ad + bc)i, each product and sum rounded once (numpy's real ufuncs)."""
    with np.errstate(all="ignore"):
        out = np.empty(a.shape, a.dtype)
        out.real = a.real * b.real - a.imag * b.imag
        out.imag = a.real * b.imag + a.imag * b.real
    return out


def _expected(key, a, b, kernel: bool):
    with np.errstate(all="ignore"):
        if key == "mul":
            return _product(a, b) if kernel else a * b
        fns = {"add": np.add, "sub": np.subtract, "div": np.true_divide}
        return {**fns, "eq": np.equal, "ne": np.not_equal}[key](a, b)


@pytest.mark.parametrize("key", ["add", "sub", "mul", "div", "eq", "ne"])
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_binary_values(device, key, dt, npdt):
    a, b = _pairs(npdt)
    r = getattr(gt, key)(gt.tensor(a, device=device), gt.tensor(b, device=device))
    assert r.dtype is (gt.bool if key in ("eq", "ne") else dt)
    want = _expected(key, a, b, _runs_kernel(r))
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(want))


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_neg_values(device, dt, npdt):
    z = _grid(npdt)
    r = -gt.tensor(z, device=device)
    assert r.dtype is dt
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(np.negative(z)))


# a real operand of each kind, and the complex dtype torch gives with complex64 (a
# float64 tensor widens it to complex128)
_REAL = [
    ("float32", np.float32, np.complex64),
    ("float64", np.float64, np.complex128),
    ("float16", np.float16, np.complex64),
    ("int64", np.int64, np.complex64),
    ("bool", np.bool_, np.complex64),
]


def _real_values(npdt):
    if npdt is np.bool_:
        return np.array([True, False] * 72)
    if npdt is np.int64:
        return np.arange(-72, 72, dtype=np.int64)
    with np.errstate(over="ignore"):
        return np.array(_PARTS * 12).astype(npdt)


_REAL_CASES = [
    (k, *r)
    for k in ("add", "sub", "mul", "div")
    for r in _REAL
    if not (k == "sub" and r[0] == "bool")
]  # fmt: skip (torch: no bool -)


@pytest.mark.parametrize(("key", "name", "rdt", "want_dt"), _REAL_CASES)
@pytest.mark.parametrize("reflected", [False, True])
def test_complex_with_a_real_tensor(device, key, name, rdt, want_dt, reflected):
    """The real operand is converted to the complex type (imaginary part +0) as it is
    loaded, as torch and numpy convert it first: z + x gives +0 imaginary parts where z's
    is -0, and inf * (x + 0i) gives nan ones."""
    z = _grid(np.complex64)
    x = _real_values(rdt)
    zt, xt = gt.tensor(z, device=device), gt.tensor(x, device=device)
    a, b = (xt, zt) if reflected else (zt, xt)
    r = getattr(gt, key)(a, b)
    assert r.dtype.np == want_dt
    za, zb = z.astype(want_dt), x.astype(want_dt)
    if reflected:
        za, zb = zb, za
    want = _expected(key, za, zb, _runs_kernel(r))
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(want))


_SCALARS = [2.5, -3, True, 0.1 + 2j, complex(_INF, 0.0), -0.0]


_SCALAR_CASES = [
    (k, v)
    for k in ("add", "sub", "mul", "div")
    for v in _SCALARS
    if not (k == "sub" and type(v) is bool)
]  # fmt: skip (torch: no bool -)


@pytest.mark.parametrize(("key", "scalar"), _SCALAR_CASES, ids=repr)
@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_complex_with_a_python_scalar(device, key, scalar, dt, npdt):
    """A Python scalar takes the tensor's complex dtype (torch's weak scalars): its parts
    are rounded to the part type, then the op runs as for two complex tensors."""
    z = _grid(npdt)
    zt = gt.tensor(z, device=device)
    for reflected in (False, True):
        dunder = {"div": "truediv"}.get(key, key)
        r = getattr(gt.Tensor, f"__{'r' if reflected else ''}{dunder}__")(zt, scalar)
        assert r.dtype is dt
        s = np.full(z.shape, complex(scalar), npdt)
        want = (
            _expected(key, s, z, _runs_kernel(r))
            if reflected
            else _expected(key, z, s, _runs_kernel(r))
        )
        np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(want))


def test_real_tensor_with_a_python_complex(device):
    """float32 * 2j is complex64 (the default complex dtype), float64 * 2j complex128."""
    for rdt, want in ((np.float32, np.complex64), (np.float64, np.complex128)):
        x = _real_values(rdt)
        r = gt.tensor(x, device=device) * (0.5 - 2j)
        assert r.dtype.np == want
        s = np.full(x.shape, 0.5 - 2j, want)
        np.testing.assert_array_equal(
            _bits(r.cpu().numpy()), _bits(_expected("mul", x.astype(want), s, _runs_kernel(r)))
        )


def test_where_and_non_contiguous(device):
    a, b = _pairs(np.complex64)
    a, b = a[:144].reshape(12, 12), b[:144].reshape(12, 12)
    cond = (np.arange(144) % 3 == 0).reshape(12, 12)
    at = gt.tensor(a, device=device).t()  # a transposed view: the strided kernel
    r = gt.where(gt.tensor(cond, device=device), at, gt.tensor(b, device=device))
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(np.where(cond, a.T, b)))
    r = gt.where(gt.tensor(cond, device=device), at, 1.5)  # a real scalar: +0 imaginary
    np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(np.where(cond, a.T, 1.5 + 0j)))


_CASES = {
    "z + w": lambda z, w, x, d: z + w,
    "z - w": lambda z, w, x, d: z - w,
    "z * w": lambda z, w, x, d: z * w,
    "z / w": lambda z, w, x, d: z / w,
    "2.5 / z": lambda z, w, x, d: 2.5 / z,
    "-z": lambda z, w, x, d: -z,
    "z == w": lambda z, w, x, d: z == w,
    "z != w": lambda z, w, x, d: z != w,
    "z * x (float32)": lambda z, w, x, d: z * x,
    "x + z (float32)": lambda z, w, x, d: x + z,
    "z - d (float64)": lambda z, w, x, d: z - d,
    "z * 2.5": lambda z, w, x, d: z * 2.5,
    "3 - z": lambda z, w, x, d: 3 - z,
    "z * (1+2j)": lambda z, w, x, d: z * (1 + 2j),
    "x * 2j": lambda z, w, x, d: x * 2j,
    "where(c, z, w)": lambda z, w, x, d: gt.where(d > 0, z, w),
}


@pytest.mark.sim
@pytest.mark.parametrize("case", list(_CASES))
def test_one_launch_on_sim(case):
    """A warm op: 1 kernel launch, 0 cupy routines, 0 device syncs, 0 host waits, 0 bytes
    copied (before: `z + w` was 1 cupy routine, `z * x` a cast launch and 1 routine)."""
    a, b = _pairs(np.complex64)
    x = np.resize(_real_values(np.float32), a.shape)
    args = [gt.tensor(v, device="cuda") for v in (a, b, x, x.astype(np.float64))]
    fn = _CASES[case]
    if case.startswith("where"):  # its condition computed before counting
        c = args[3] > 0
        fn = lambda z, w, x, d: gt.where(c, z, w)  # noqa: E731
    r = one_warm_launch(fn, *args)
    if "*" not in case:  # (mul: numpy's FMAs on cpu, test_binary_values)
        want = _CASES[case](*(t.cpu() for t in args))
        assert r.dtype is want.dtype
        np.testing.assert_array_equal(_bits(r.cpu().numpy()), _bits(want.numpy()))


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_complex_arithmetic_compiles_under_nvrtc(npdt):
    """The operators and conversions compile under NVRTC (no headers), vector and strided,
    with a real operand and with a Python complex scalar (a by-value struct)."""
    from gpu_tensor.fusion import eager
    from gpu_tensor.kernel import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: skip
        pytest.skip(f"NVRTC is not available here: {exc}")
    z, zt = np.zeros(64, npdt), np.zeros((8, 8), npdt).T
    real = np.zeros(64, np.float64 if npdt is np.complex64 else np.float32)
    cases = [("add", [z, z]), ("sub", [zt, zt]), ("mul", [z, z]), ("mul", [zt, zt]),
             ("div", [z, z]), ("div", [zt, 2.5]), ("neg", [z]), ("eq", [z, z]), ("ne", [zt, zt]), ("mul", [z, real]),
             ("add", [real, z]), ("mul", [z, 0.5 - 2j]), ("sub", [zt, 2.5]),
             ("where", [np.zeros(64, np.bool_), z, real])]  # fmt: skip
    for key, inputs in cases:
        graph = eager._graph_for(key, inputs, {})
        arrays = [x for x in inputs if isinstance(x, np.ndarray)]
        scalars = [x for x in inputs if not isinstance(x, np.ndarray)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        out = np.empty(shape, graph.outputs[0].dtype)
        ksrc, _, _ = eager.prepare(graph, graph.outputs, arrays, scalars, [out])
        ptx = nvrtc.compile_ptx(ksrc.source, "compute_90")
        assert ptx.count(".entry") == 1, key
        if key in ("mul", "div"):  # products and sums stay unfused: no fma in the PTX
            assert "fma.rn" not in ptx, ptx[-2000:]


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_kernel_values_match_torch(dt, npdt):
    """The kernel's products are torch 2.13's cpu values bit for bit (a nan is any nan),
    over every grid pair, with a real tensor and with Python scalars. The grid is padded so
    that every pair falls in torch's vectorized loop: its scalar tail (the last n mod 8
    elements) computes complex128 products with FMA, like numpy.

    add and sub are numpy's, part by part (here and in the kernel), not torch's: torch
    computes a + alpha * b with alpha = 1 + 0i (-1 + 0i for sub), a complex product that
    turns an infinite part of b into a nan in the other part and a -0 part into +0
    (0j + (inf+1j) is inf+nanj in torch 2.13, inf+1j in numpy). That model is checked
    below, so a change in torch shows here.
    """
    torch = pytest.importorskip("torch", reason="the torch parity check needs torch")
    a, b = _pairs(npdt)
    n = len(a)
    pad = np.zeros(64 - n % 64, npdt)
    ta, tb = torch.from_numpy(np.concatenate([a, pad])), torch.from_numpy(np.concatenate([b, pad]))
    got = torch.mul(ta, tb).numpy()[:n]
    np.testing.assert_array_equal(_bits(got), _bits(_expected("mul", a, b, kernel=True)))
    x = np.resize(_real_values(np.float32), n + len(pad))
    got = (ta * torch.from_numpy(x)).numpy()[:n]
    want = _expected("mul", a, x[:n].astype(npdt), kernel=True)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    for s in (2.5, 0.1 + 2j, complex(_INF, 0.0)):
        got = (ta * s).numpy()[:n]
        want = _expected("mul", a, np.full(n, s, npdt), kernel=True)
        np.testing.assert_array_equal(_bits(got), _bits(want))
    for fn, alpha in ((torch.add, 1), (torch.sub, -1)):
        torch_model = np.add(a, _product(np.full(n, alpha, npdt), b))
        np.testing.assert_array_equal(_bits(fn(ta, tb).numpy()[:n]), _bits(torch_model))


_QUIET_CASES = {
    "z + w": lambda z, w: z + w,
    "z - w": lambda z, w: z - w,
    "z * w": lambda z, w: z * w,
    "z / w": lambda z, w: z / w,
    "gt.mul(z, w)": lambda z, w: gt.mul(z, w),
    "z * inf": lambda z, w: z * _INF,
    "inf * z": lambda z, w: _INF * z,
    "z + nan": lambda z, w: z + _NAN,
    "2 - z": lambda z, w: 2 - z,
    "z * (1+2j)": lambda z, w: z * (1 + 2j),
    "z / 3": lambda z, w: z / 3,
    "-z": lambda z, w: -z,
    "z.exp()": lambda z, w: z.exp(),
    "z.sqrt()": lambda z, w: z.sqrt(),
    "z.log()": lambda z, w: z.log(),
    "z.abs()": lambda z, w: z.abs(),
    "z.sgn()": lambda z, w: z.sgn(),
    "z.conj()": lambda z, w: z.conj(),
    "z.sigmoid()": lambda z, w: z.sigmoid(),
}


@pytest.mark.parametrize(("dt", "npdt"), _DTYPES)
def test_no_numpy_warnings(device, dt, npdt):
    """torch never warns on inf/nan parts; numpy's complex loops do (overflow or invalid in
    multiply, ...). On cpu the complex operands of a loud row take the fast path's numpy
    call silenced (ops/_specs.py's fast_quiet, _dispatch._silenced), after the real fast
    path, which stays unsilenced (bench_dispatch: 0 bytecodes more); each value is the
    general path's (apply()), bit for bit."""
    import warnings

    from gpu_tensor.ops._apply import apply

    a, b = _pairs(npdt)
    z, w = gt.tensor(a, device=device), gt.tensor(b, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = {name: fn(z, w) for name, fn in _QUIET_CASES.items()}
        y = z.clone()
        y *= w
        y /= w
        general = {
            "z * w": apply("mul", z, w),
            "z * inf": apply("mul", z, _INF),
            "2 - z": apply("sub", 2, z),
            "z * (1+2j)": apply("mul", z, 1 + 2j),
            "z / 3": apply("div", z, 3),
            "z.conj()": apply("conj", z),
        }
    for name, want in general.items():
        got = results[name]
        assert got.dtype is want.dtype is dt
        np.testing.assert_array_equal(_bits(got.cpu().numpy()), _bits(want.cpu().numpy()))
    with np.errstate(all="ignore"):  # numpy's values
        want = {"z + w": a + b, "z - w": a - b, "z / w": a / b}
    for name, ref in want.items():
        np.testing.assert_array_equal(_bits(results[name].cpu().numpy()), _bits(ref))
    if not _runs_kernel(z):  # (mul on a kernel: its rounded-once product, test_binary_values)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(_bits(y.cpu().numpy()), _bits((a * b) / b))
