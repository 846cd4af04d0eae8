"""Elementwise ops vs numpy on every device: promotion, broadcasting, scalars, in-place."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.ops import elementwise as ew
from gpu_tensor.testing import assert_close

A = np.array([[-2.5, -1.0, 0.0], [0.5, 1.5, 3.0]], np.float32)
B = np.array([1.5, -2.0, 4.0], np.float32)


def _t(a, device, d=None):
    return cr.tensor(a, device=device, dtype=d)


# fmt: off
@pytest.mark.parametrize("name, np_fn", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide),
    ("floor_divide", np.floor_divide), ("remainder", np.remainder), ("maximum", np.maximum),
    ("minimum", np.minimum), ("pow", lambda a, b: np.power(np.abs(a), b)),
])
# fmt: on
def test_binary_float(device, name, np_fn):
    a = np.abs(A) if name == "pow" else A
    r = getattr(ew, name)(_t(a, device), _t(B, device))
    assert_close(r, np_fn(a, B).astype(np.float32))


# fmt: off
@pytest.mark.parametrize("op, np_op", [
    (lambda x, y: x + y, np.add), (lambda x, y: x - y, np.subtract),
    (lambda x, y: x * y, np.multiply), (lambda x, y: x / y, np.true_divide),
    (lambda x, y: x // y, np.floor_divide), (lambda x, y: x % y, np.remainder),
    (lambda x, y: x ** y, np.power), (lambda x, y: x == y, np.equal),
    (lambda x, y: x != y, np.not_equal), (lambda x, y: x < y, np.less),
    (lambda x, y: x <= y, np.less_equal), (lambda x, y: x > y, np.greater),
    (lambda x, y: x >= y, np.greater_equal),
])
# fmt: on
def test_operators_and_reflected_scalars(device, op, np_op):
    x = _t(np.abs(A) + 1, device)
    ref = np.abs(A) + 1
    assert_close(op(x, _t(B, device)), np_op(ref, B))
    assert_close(op(x, 2.0), np_op(ref, np.float32(2.0)))
    assert_close(op(2.0, x), np_op(np.float32(2.0), ref))


# fmt: off
@pytest.mark.parametrize("a_dt, other, want", [
    (dt.int64, 2.5, dt.float32), (dt.int32, 3, dt.int32), (dt.uint8, 2, dt.uint8),
    (dt.float16, 2.5, dt.float16), (dt.bool, True, dt.bool), (dt.bool, 2, dt.int64),
    (dt.int8, dt.uint8, dt.int16), (dt.int64, dt.float16, dt.float16),
    (dt.float32, dt.float64, dt.float64), (dt.bfloat16, dt.float16, dt.float32),
    (dt.float32, 1j, dt.complex64),
])
# fmt: on
def test_add_promotion(device, a_dt, other, want):
    x = cr.ones(3, dtype=a_dt, device=device)
    y = cr.ones(3, dtype=other, device=device) if isinstance(other, dt.DType) else other
    r = x + y
    assert r.dtype is want
    exp = np.ones(3, want.np) + (
        np.ones(3, want.np) if isinstance(other, dt.DType) else np.array(other).astype(want.np)
    )
    assert_close(r, exp.astype(want.np))


def test_int_true_division_gives_float32(device):
    r = _t([1, 2, 3], device) / _t([2, 2, 2], device)
    assert r.dtype is dt.float32 and r.tolist() == [0.5, 1.0, 1.5]
    assert (_t([3], device) / 2).dtype is dt.float32
    assert ew.div(_t([-7, 7], device), 2, rounding_mode="floor").tolist() == [-4, 3]
    assert ew.div(_t([-7, 7], device), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert ew.div(_t([-7.5], device), 2, rounding_mode="trunc").tolist() == [-3.0]


def test_zero_dim_tensors_act_like_scalars(device):
    x = cr.ones(2, dtype=dt.float16, device=device)
    assert (x + cr.tensor(2.0, dtype=dt.float64, device=device)).dtype is dt.float16
    i = cr.ones(2, dtype=dt.int32, device=device)
    assert (i + cr.tensor(2.5, dtype=dt.float64, device=device)).dtype is dt.float64
    # a 0-dim cpu tensor may join a cuda op, like a Python scalar
    r = i + cr.tensor(3)
    assert r.device == i.device and r.tolist() == [4, 4]


def test_broadcasting(device):
    r = _t(A, device) + _t(B[None, :], device)
    assert_close(r, A + B)
    c = _t(np.arange(3.0).reshape(3, 1), device) * _t(np.arange(4.0), device)
    assert_close(c, np.arange(3.0).reshape(3, 1) * np.arange(4.0))


# fmt: off
@pytest.mark.parametrize("name, np_fn", [
    ("neg", np.negative), ("abs", np.abs), ("exp", np.exp), ("log", np.log),
    ("log1p", np.log1p), ("sqrt", np.sqrt), ("rsqrt", lambda a: 1 / np.sqrt(a)),
    ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
    ("sigmoid", lambda a: 1 / (1 + np.exp(-a))), ("relu", lambda a: np.maximum(a, 0)),
    ("silu", lambda a: a / (1 + np.exp(-a))), ("floor", np.floor), ("ceil", np.ceil),
    ("round", np.rint), ("sign", np.sign), ("square", np.square),
])
# fmt: on
def test_unary(device, name, np_fn):
    a = np.abs(A) + 0.25 if name in ("log", "sqrt", "rsqrt", "log1p") else A
    r = getattr(ew, name)(_t(a, device))
    assert_close(r, np_fn(a).astype(np.float32), rtol=2e-6)
    m = getattr(_t(a, device), name)()  # the method form
    assert_close(m, r)


def test_gelu(device):
    import math

    x = _t(A, device)
    erf = np.vectorize(math.erf)
    assert_close(ew.gelu(x), (0.5 * A * (1 + erf(A / np.sqrt(2)))).astype(np.float32))
    t = 0.5 * A * (1 + np.tanh(np.sqrt(2 / np.pi) * (A + 0.044715 * A**3)))
    assert_close(ew.gelu(x, approximate="tanh"), t.astype(np.float32), rtol=1e-5)


def test_unary_int_to_float(device):
    r = ew.exp(_t([0, 1], device))
    assert r.dtype is dt.float32
    assert ew.neg(_t([1, 2], device)).dtype is dt.int64
    assert ew.abs(_t([-3], device, dt.int8)).tolist() == [3]


def test_half_types_compute_in_float32(device):
    for d in (dt.float16, dt.bfloat16):
        x = cr.tensor([1.0, 2.0, 3.0], dtype=d, device=device)
        r = (x * 1.5).exp()
        assert r.dtype is d
        want = np.exp(np.array([1.5, 3.0, 4.5], np.float32)).astype(d.np)
        assert_close(r, want)


def test_where_clamp(device):
    x = _t(A, device)
    assert_close(ew.where(x > 0, x, _t(B, device)), np.where(A > 0, A, B))
    assert ew.where(x > 0, 1.0, 0.0).dtype is dt.float32
    assert_close(ew.clamp(x, -1, 1), np.clip(A, -1, 1))
    assert_close(x.clamp(min=0.0), np.maximum(A, 0))
    assert_close(x.clamp_max(0.5), np.minimum(A, 0.5))
    i = _t([1, 5, 9], device)
    assert i.clamp(2, 6).tolist() == [2, 5, 6] and i.clamp(2, 6).dtype is dt.int64
    assert i.clamp(2.5).dtype is dt.float32


def test_logical_and_bitwise(device):
    p = _t([True, True, False], device)
    q = _t([True, False, False], device)
    assert (p & q).tolist() == [True, False, False]
    assert (p | q).tolist() == [True, True, False]
    assert (p ^ q).tolist() == [False, True, False]
    assert (~p).tolist() == [False, False, True]
    assert ew.logical_and(_t([1.0, 0.0], device), _t([2, 2], device)).tolist() == [True, False]
    i = _t([12, 10], device)
    assert (i & 6).tolist() == [4, 2] and (~i).tolist() == [-13, -11]
    assert ew.logical_not(i).dtype is dt.bool


def test_isnan_family(device):
    x = _t([1.0, float("nan"), float("inf")], device)
    assert ew.isnan(x).tolist() == [False, True, False]
    assert ew.isinf(x).tolist() == [False, False, True]
    assert ew.isfinite(x).tolist() == [True, False, False]
    assert ew.isnan(_t([1, 2], device)).tolist() == [False, False]


def test_complex(device):
    z = cr.tensor([1 + 2j, 3 - 1j], device=device)
    assert z.dtype is dt.complex64
    assert_close(z * z, np.array([1 + 2j, 3 - 1j], np.complex64) ** 2)
    assert z.real.tolist() == [1.0, 3.0] and z.imag.tolist() == [2.0, -1.0]
    assert z.conj().tolist() == [1 - 2j, 3 + 1j]


def test_inplace_ops(device):
    x = _t(A.copy(), device)
    ptr = x.data_ptr()
    x.add_(1).mul_(2).sub_(_t(B, device)).div_(2)
    assert x.data_ptr() == ptr
    assert_close(x, ((A + 1) * 2 - B) / 2)
    x += 1
    assert x.data_ptr() == ptr
    x.clamp_(-1, 1).zero_()
    assert x.abs().sum().item() == 0
    i = _t([1, 2], device)
    i += 1  # an int tensor may take int results...
    assert i.tolist() == [2, 3]
    with pytest.raises(RuntimeError, match="can't be cast"):
        i += 1.5  # ...but not float ones
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.div_(2)


def test_inplace_refuses_expanded_views(device):
    e = cr.zeros(1, 3, device=device).expand(4, 3)
    for op in (lambda: e.add_(1), lambda: e.copy_(cr.ones(4, 3)), lambda: e.__setitem__(0, 1.0)):
        with pytest.raises(RuntimeError, match="single memory location"):
            op()
    # torch allows fill_/zero_ there: every alias gets the same value
    assert e.fill_(2).tolist()[3] == [2.0, 2.0, 2.0] and e.zero_().tolist()[0] == [0.0] * 3
    ok = e[0]  # one row of the expansion does not overlap itself
    ok.add_(1)
    assert e.tolist()[3] == [1.0, 1.0, 1.0]


def test_inplace_broadcast_shape_must_match(device):
    x = cr.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(cr.zeros(2, 3, device=device))


def test_numpy_operands():
    x = _t([1.0, 2.0], "cpu")  # numpy operands join as cpu tensors
    assert (x + np.array([1.0, 1.0], np.float32)).tolist() == [2.0, 3.0]
    assert (np.float32(2) * x).tolist() == [2.0, 4.0]
    r = np.array([1.0, 1.0], np.float32) + x
    assert type(r).__name__ == "Tensor"
