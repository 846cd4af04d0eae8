"""Eager ops and @gt.fuse read the same op table (fusion/optable.py): for every unary and
binary op and operand dtype, both give the same result dtype, or both raise the same
exception class."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.ops import elementwise as ew

_DTYPES = ["bool", "int64", "float32"]
_VALUES = {"bool": [True, False], "int64": [3, 2], "float32": [1.5, -2.0]}
_CASES = [(k, d) for k, op in sorted(OPS.items()) if op.arity in (1, 2) for d in _DTYPES]


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args).dtype)
    except Exception as exc:  # noqa: BLE001  (the class is what is compared)
        return (
            "raises",
            type(exc) if not isinstance(exc, gt.FusionError) else type(exc.__cause__ or exc),
        )


@pytest.mark.parametrize("key,dtype", _CASES, ids=[f"{k}-{d}" for k, d in _CASES])
def test_eager_and_fused_agree(key, dtype):
    op = getattr(ew, key)
    args = [gt.tensor(_VALUES[dtype], dtype=getattr(gt, dtype))] * OPS[key].arity
    eager = _outcome(op, *args)
    fused = _outcome(gt.fuse(op), *args)
    assert eager == fused


@pytest.mark.parametrize("expr", ["gelu", "floor_divide", "abs"])
def test_the_three_known_disagreements_now_raise_under_fuse(expr):
    """gelu(int), bool // bool and abs(bool) computed under @gt.fuse but raised eagerly."""
    x = gt.tensor([1, 2]) if expr == "gelu" else gt.tensor([True, False])
    fn = {"gelu": gt.gelu, "floor_divide": lambda a: a // a, "abs": abs}[expr]
    with pytest.raises(NotImplementedError, match="not implemented for"):
        fn(x)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        gt.fuse(fn)(x)


def test_aliases_dunders_and_methods_come_from_the_table():
    """The module functions, Tensor methods and the tracer's Proxy expose every row under
    its name and its aliases; operators follow the `dunder` column."""
    from gpu_tensor.fusion.trace import Proxy
    from gpu_tensor.ops import _dispatch

    for key, op in OPS.items():
        fn = getattr(ew, key)
        for alias in op.aliases:
            assert getattr(ew, alias) is fn and alias in gt.__all__, alias
            assert getattr(gt.Tensor, alias) is getattr(gt.Tensor, key), alias
            assert getattr(Proxy, alias) is getattr(Proxy, key), alias
        if op.dunder and op.arity == 2:
            assert getattr(gt.Tensor, f"__{op.dunder}__") is _dispatch._BINARY[key]
            assert hasattr(Proxy, f"__{op.dunder}__")
        if op.inplace:
            assert hasattr(gt.Tensor, key + "_"), key


# -- issue 23: the special-function rows agree in dtype, value and exception class --------
_SPECIAL_START = list(OPS).index("tan")  # the block of unary special functions
_SPECIAL = [k for k in list(OPS)[_SPECIAL_START:] if OPS[k].arity == 1]
_PARAMS = {
    "special_polygamma": {"n": 2},
    "logit": {"eps": 1e-3},
    "mvlgamma": {"p": 3},
    "nan_to_num": {"nan": 1.5, "posinf": 7.0},
}
# (no complex: @gt.fuse refuses complex tensors before any op, for every row alike)
_SPECIAL_DTYPES = ["bool", "int64", "float16", "bfloat16", "float32", "float64"]
_SPECIAL_CASES = [(k, d) for k in _SPECIAL for d in _SPECIAL_DTYPES]


def _special_call(key):
    """The row as a user calls it (the parameter as its keyword)."""
    params = _PARAMS.get(key, {})
    fn = getattr(ew, key)
    if key == "special_polygamma":
        return lambda x: fn(params["n"], x)
    return (lambda x: fn(x, **params)) if params else fn


def _special_outcome(fn, x):
    try:
        r = fn(x)
    except Exception as exc:  # noqa: BLE001  (the class is what is compared)
        return (
            "raises",
            type(exc) if not isinstance(exc, gt.FusionError) else type(exc.__cause__ or exc),
        ), None
    return ("ok", r.dtype), r


@pytest.mark.parametrize("key,dtype", _SPECIAL_CASES, ids=[f"{k}-{d}" for k, d in _SPECIAL_CASES])
def test_special_rows_agree_eager_and_fused(key, dtype, device):
    """Eager on cpu (the numpy reference) against @gt.fuse on the device (on cuda: the
    generated kernel): same dtype or same exception class, and the same values within the
    tolerance of the result dtype."""
    from fusion_tolerance import assert_close

    from gpu_tensor.fusion.dtypes import as_np_dtype

    values = {"bool": [True, False], "int64": [3, 0, -2]}.get(
        dtype, [0.25, -0.75, 1.5, 0.0, 2.5, 0.9]
    )
    x = gt.tensor(values, dtype=getattr(gt, dtype), device="cpu")
    fn = _special_call(key)
    eager, expected = _special_outcome(fn, x)
    fused, got = _special_outcome(gt.fuse(fn), x.to(device))
    assert eager == fused
    if got is not None:
        out, ref = got.cpu().double(), expected.double()  # (numpy has no bfloat16)
        assert_close(out.numpy(), ref.numpy(), as_np_dtype(got.dtype.np))


# -- numpy's ufuncs on traced values run the table's rows ---------------------------------
# Found from numpy itself, not from the tracer's own list: every ufunc numpy exports under a
# row's name or alias (np.tan, np.asin, np.arcsin, np.divide, ...), and the ones whose
# numpy name differs (np.absolute, np.rint, np.equal, np.degrees, ...).
_NUMPY_DIFFERENT = {
    "absolute": "abs", "power": "pow", "rint": "round", "invert": "bitwise_not",
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
    "greater_equal": "ge", "degrees": "rad2deg", "radians": "deg2rad",
}  # fmt: skip
_ROW_NAMES = {name: key for key, op in OPS.items() for name in (key, *op.aliases)}
_UFUNC_ROWS = sorted(
    (name, _ROW_NAMES.get(name) or _NUMPY_DIFFERENT[name])
    for name in dir(np)
    if isinstance(getattr(np, name), np.ufunc) and (name in _ROW_NAMES or name in _NUMPY_DIFFERENT)
)
_UFUNC_CASES = [(n, k, d) for n, k in _UFUNC_ROWS for d in _DTYPES]


def test_numpy_ufuncs_found_include_the_ones_once_refused():
    """The list above is not empty by accident: np.tan and np.arcsin were refused before."""
    names = dict(_UFUNC_ROWS)
    assert names["tan"] == "tan" and names["arcsin"] == "asin" and names["asin"] == "asin"
    assert names["divide"] == "div" and names["arctan2"] == "atan2" and len(names) >= 80


@pytest.mark.parametrize(
    "name,key,dtype", _UFUNC_CASES, ids=[f"{n}-{d}" for n, _, d in _UFUNC_CASES]
)
def test_numpy_ufunc_on_traced_values_is_the_row(name, key, dtype):
    """np.<ufunc>(traced) under @gt.fuse gives what the row gives eagerly: the same dtype
    and values, or the same exception class."""
    ufunc = getattr(np, name)
    args = [gt.tensor(_VALUES[dtype], dtype=getattr(gt, dtype))] * ufunc.nin
    eager = _outcome(getattr(ew, key), *args)
    fused = _outcome(gt.fuse(lambda *a: ufunc(*a)), *args)
    assert eager == fused
    if eager[0] == "ok":
        want = getattr(ew, key)(*args).double().numpy()
        got = gt.fuse(lambda *a: ufunc(*a))(*args).double().numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["tan", "arcsin", "arctan2", "divide", "degrees", "trunc"])
def test_numpy_ufuncs_fuse_on_each_device(name, device):
    """On cuda the ufunc is a row of the one generated kernel, like the gt function (on the
    simulated CuPy: 1 launch, no sync, no copy)."""
    from fusion_tolerance import assert_close

    from gpu_tensor import device as dv

    ufunc = getattr(np, name)
    x = gt.tensor([0.25, -0.75, 0.5], device=device)
    args = (x, x * 2 + 1)[: ufunc.nin]
    fused = gt.fuse(lambda *a: ufunc(*a) * 2)
    got = fused(*args)
    want = getattr(ew, _ROW_NAMES.get(name) or _NUMPY_DIFFERENT[name])(*args) * 2
    assert got.device == x.device and got.dtype == want.dtype
    assert_close(got.cpu().numpy(), want.cpu().numpy(), np.dtype(np.float32))
    if x.device.type == "cuda" and dv.cuda_is_simulated():
        from gpu_tensor.testing import sim

        sim.synchronize()
        sim.reset_counters()
        fused(*args)
        c = sim.counters()
        assert (c["kernel_launches"], c["device_syncs"], c["host_waits"]) == (1, 0, 0), c
        assert c["bytes_copied"] == c["cupy_routines"] == 0, c


def test_numpy_ufunc_calls_fuse_cannot_take_say_why():
    x = gt.tensor([1.0, 2.0])
    for fn in (lambda a: np.cbrt(a), lambda a: np.add.reduce(a), lambda a: np.exp(a, dtype=float)):
        with pytest.raises(gt.FusionError, match="cannot be fused: only a plain call"):
            gt.fuse(fn)(x)


# -- the rows with a parameter, called as Tensor methods on traced values -------------------
_PARAM_METHODS = {
    "logit": lambda t: t.logit(1e-3),
    "logit_eps_keyword": lambda t: t.logit(eps=0.25),
    "nan_to_num": lambda t: t.nan_to_num(nan=1.5, posinf=7.0),
    "nan_to_num_defaults": lambda t: t.nan_to_num(),
    "mvlgamma": lambda t: t.mvlgamma(2),
    "mvlgamma_p_keyword": lambda t: t.mvlgamma(p=3),
    "polygamma": lambda t: t.polygamma(1),
    "polygamma_n_keyword": lambda t: t.polygamma(n=2),
    "gelu": lambda t: t.gelu(approximate="tanh"),
    "clamp": lambda t: t.clamp(min=0.5, max=2.0),
}


@pytest.mark.parametrize("name", list(_PARAM_METHODS))
def test_row_methods_take_their_parameter_on_traced_values(name, device):
    """x.logit(eps), x.nan_to_num(nan=...), x.mvlgamma(p), x.polygamma(n) inside @gt.fuse
    are what they are eagerly (they were refused with a TypeError naming a closure)."""
    from fusion_tolerance import assert_close

    fn = _PARAM_METHODS[name]
    inf = float("inf")
    x = gt.tensor([0.25, 0.75, 1.5, 2.5, float("nan"), inf, -inf], device=device)
    eager, fused = fn(x), gt.fuse(fn)(x)
    assert fused.dtype == eager.dtype and fused.device == x.device
    assert_close(fused.cpu().numpy(), eager.cpu().numpy(), np.dtype(np.float32))


def test_wrong_arguments_of_a_traced_method_name_the_tensor_method():
    x = gt.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"^Tensor\.exp\(\) takes 1 positional") as info:
        gt.fuse(lambda t: t.exp(2))(x)
    assert "<locals>" not in str(info.value)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        gt.fuse(lambda t: t.mvlgamma(0))(x)


# -- complex operands (issue 23) ----------------------------------------------------------
_ROWS_1_2 = [k for k, op in sorted(OPS.items()) if op.arity in (1, 2)]


def _complex_bits(t) -> np.ndarray:
    a = np.array(t.numpy())
    if a.dtype.kind == "c":
        a = a.view(np.float32 if a.dtype == np.complex64 else np.float64)
    return a.view(f"u{a.itemsize}")


@pytest.mark.parametrize("key", _ROWS_1_2)
def test_complex_operands_eager_and_fused(key):
    """A row with complex overloads (complex_kernel) fuses complex tensors and gives what
    it gives eagerly: the same dtype and bits, or the same exception class. Any other row
    that takes complex tensors eagerly is refused under @gt.fuse, with an error that names
    the op and the fix (the rows that refuse complex eagerly raise torch's error in both)."""
    fn = getattr(ew, key)
    z = gt.tensor([1.5 - 2j, -0.25 + 0.5j, 0j, complex("inf-0j")], dtype=gt.complex64)
    args = [z] * OPS[key].arity
    eager = _outcome(fn, *args)
    if OPS[key].complex_kernel or eager[0] == "raises":
        assert _outcome(gt.fuse(fn), *args) == eager
        if eager[0] == "ok":
            got, want = gt.fuse(fn)(*args), fn(*args)
            np.testing.assert_array_equal(_complex_bits(got), _complex_bits(want))
    else:
        with pytest.raises(
            gt.FusionError,
            match=rf"^{key} of a complex tensor cannot be fused: .* Run {key} outside the fused",
        ):
            gt.fuse(fn)(*args)


def test_every_complex_kernel_row_is_fused_and_the_rest_refused():
    """What the test above covers, counted: since session 12 every row that takes complex
    tensors eagerly fuses them (the rest refuse complex operands with torch's error, fused
    and eager alike)."""
    kernel = sorted(k for k in _ROWS_1_2 if OPS[k].complex_kernel)
    z = gt.tensor([1.5 - 2j, -0.25 + 0.5j], dtype=gt.complex64)
    takes = sorted(k for k in _ROWS_1_2 if _outcome(getattr(ew, k), *[z] * OPS[k].arity)[0] == "ok")
    assert kernel == takes
    want = "abs acos acosh add angle asin asinh atan atanh conj conj_physical cos cosh div eq exp "
    want += "exp2 expm1 float_power isfinite isinf isnan ldexp log log10 log1p log2 logical_and "
    want += "logical_not logical_or logical_xor mul nan_to_num ne neg positive pow rsqrt sgn "
    want = (want + "sigmoid silu sin sinc sinh sqrt sub tan tanh").split()
    assert kernel == want


_COMPLEX_FUSED = {
    "z * w + x": lambda z, w, x: z * w + x,
    "-(z - 2.5j) * 2": lambda z, w, x: -(z - 2.5j) * 2,
    "where(x > 0, sgn(z), abs(w))": lambda z, w, x: gt.where(x > 0, gt.sgn(z), gt.abs(w)),
    "nan_to_num(z * w) != z": lambda z, w, x: gt.nan_to_num(z * w) != z,
    "x.to(complex128) * z": lambda z, w, x: x.to(gt.complex128) * z,
    "angle(z) + x": lambda z, w, x: gt.angle(z) + x,
    "exp(z * x) - w": lambda z, w, x: gt.exp(z * x) - w,
    "z / (w + x) + 1": lambda z, w, x: z / (w + x) + 1,
    "tanh(z) * sin(w) - cos(z * x)": lambda z, w, x: gt.tanh(z) * gt.sin(w) - gt.cos(z * x),
    "sinh(z) / cosh(w) + tan(x)": lambda z, w, x: gt.sinh(z) / gt.cosh(w) + gt.tan(x),
    "log1p(z) * expm1(w) - rsqrt(z + x)": lambda z, w, x: (
        gt.log1p(z) * gt.expm1(w) - gt.rsqrt(z + x)
    ),
    "asinh(z) + atan(w) * acos(x)": lambda z, w, x: gt.asinh(z) + gt.atan(w) * gt.acos(x),
    "isfinite(exp2(z)) | isnan(log10(w))": lambda z, w, x: (
        gt.isfinite(gt.exp2(z)) | gt.isnan(gt.log10(w))
    ),
    "z ** w + z ** 2 - x ** z": lambda z, w, x: z**w + z**2 - x**z,
}


@pytest.mark.parametrize("name", list(_COMPLEX_FUSED))
def test_complex_fused_on_each_device(name, device):
    """Fused and eager agree bit for bit on each device (on cuda: one generated kernel,
    and on the simulated CuPy 1 launch, no sync, no copy, no cupy routine)."""
    from gpu_tensor import device as dv

    inf = float("inf")
    zs = [1.5 - 2j, -0.25 + 0.5j, 0j, complex(inf, -0.0), 1e38 + 1e38j, 0.1 + 0.1j]
    z = gt.tensor(zs, dtype=gt.complex64, device=device)
    w = gt.tensor(zs[::-1], dtype=gt.complex64, device=device)
    x = gt.tensor([0.5, -1.0, -0.0, 2.0, 3e-39, 0.1], device=device)
    fn = _COMPLEX_FUSED[name]
    fused = gt.fuse(fn)
    got, want = fused(z, w, x), fn(z, w, x)
    assert got.dtype == want.dtype and got.device == z.device
    np.testing.assert_array_equal(_complex_bits(got.cpu()), _complex_bits(want.cpu()))
    if z.device.type == "cuda" and dv.cuda_is_simulated():
        from gpu_tensor.testing import sim

        sim.synchronize()
        sim.reset_counters()
        fused(z, w, x)
        c = sim.counters()
        assert (c["kernel_launches"], c["device_syncs"], c["host_waits"]) == (1, 0, 0), c
        assert c["bytes_copied"] == c["cupy_routines"] == 0, c


def test_complex_in_fuse_refusals_say_what_to_do():
    z = gt.tensor([1 + 2j], dtype=gt.complex64)
    with pytest.raises(gt.FusionError, match="cannot be cast to a real dtype inside a fused"):
        gt.fuse(lambda a: a.float() + 1)(z)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        gt.fuse(lambda a: gt.floor(a))(z)  # torch's own error, as eagerly


def test_fused_angle_is_eager_angle_on_the_grid(device):
    """angle of a traced complex value takes the row (its complex overload calls gt_atan2),
    eagerly ops/special.angle calls the atan2 row over .imag and .real: the same bits on
    every pair of a grid of zeros of both signs, subnormals, huge values, inf and nan."""
    parts = [0.0, -0.0, 1.0, -2.5, 0.1, 3e-39, 5e-324, 1e38, 1e300]
    parts += [float("inf"), float("-inf"), float("nan")]
    grid = np.array([complex(a, b) for a in parts for b in parts])
    for dt in (gt.complex64, gt.complex128):
        with np.errstate(over="ignore"):
            z = gt.tensor(grid.astype(dt.np), device=device)
        got, want = gt.fuse(gt.angle)(z), gt.angle(z)
        assert got.dtype is want.dtype is dt.to_real()
        np.testing.assert_array_equal(_complex_bits(got.cpu()), _complex_bits(want.cpu()))


def test_complex_scalar_arguments_of_a_fused_function(device):
    """A Python complex passed to a fused function is a by-value argument (both parts in
    double), rounded to the tensor's complex dtype where it is used, as eagerly; with a
    real tensor it gives torch's default complex dtype (complex128 for float64)."""
    z = gt.tensor([1 + 2j, -0.5 + 0.25j, complex("inf+0j")], device=device)
    x = gt.tensor([1.0, -2.0, 0.1], device=device)
    f = gt.fuse(lambda a, s: a * s + 1)
    for t, s in ((z, 2j), (z, 0.1 - 1j), (x, 0.1 - 1j), (x.double(), 2j), (z, 3.0)):
        got, want = f(t, s), t * s + 1
        assert got.dtype is want.dtype
        np.testing.assert_array_equal(_complex_bits(got.cpu()), _complex_bits(want.cpu()))
    assert f(x.double(), 2j).dtype is gt.complex128 and f(x, 2j).dtype is gt.complex64
