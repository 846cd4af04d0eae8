"""dtype objects and PyTorch's promotion rules (pure: no device needed)."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr


def test_dtype_attributes():
    assert dt.float32.np == np.float32 and dt.float32.itemsize == 4
    assert dt.bfloat16.np.name == "bfloat16" and dt.bfloat16.itemsize == 2
    assert dt.float16.is_floating_point and not dt.int32.is_floating_point
    assert dt.complex64.is_complex and not dt.float64.is_complex
    assert repr(dt.int64) == "gpu_tensor.int64"


@pytest.mark.parametrize(
    "spec, want",
    [
        ("float32", dt.float32),
        (np.float64, dt.float64),
        (np.dtype("int8"), dt.int8),
        ("bfloat16", dt.bfloat16),
        (bool, dt.bool),
        (int, dt.int64),
        (float, dt.float64),
        (complex, dt.complex128),
        ("torch.int16", dt.int16),
        (dt.uint8, dt.uint8),
    ],
)
def test_to_dtype(spec, want):
    assert dt.to_dtype(spec) is want


def test_to_dtype_rejects_unsupported():
    with pytest.raises(TypeError, match="unsupported dtype"):
        dt.to_dtype(np.str_)
    with pytest.raises(TypeError, match="supported dtypes"):
        dt.to_dtype("str")


@pytest.mark.parametrize(
    "a, b, want",
    [
        (dt.uint8, dt.int8, dt.int16),
        (dt.bool, dt.int32, dt.int32),
        (dt.int64, dt.float16, dt.float16),
        (dt.float16, dt.bfloat16, dt.float32),
        (dt.float64, dt.complex64, dt.complex128),
        (dt.int32, dt.int64, dt.int64),
        (dt.uint8, dt.int16, dt.int16),
        (dt.float32, dt.float64, dt.float64),
    ],
)
def test_promote_types(a, b, want):
    assert dt.promote_types(a, b) is want
    assert dt.promote_types(b, a) is want


def test_promote_matches_numpy_where_numpy_agrees():
    """Within one category (no bfloat16) torch and numpy agree; check the whole table."""
    same = [dt.bool, dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64]
    for a in same:
        for b in same:
            assert dt.promote_types(a, b).np == np.promote_types(a.np, b.np)


def _t(d, ndim=1):
    return cr.zeros(*(2,) * ndim, dtype=d)


@pytest.mark.parametrize(
    "operands, want",
    [
        ((_t(dt.int64), 2.5), dt.float32),  # scalars do not widen, but move category
        ((_t(dt.float16), 2.5), dt.float16),
        ((_t(dt.int32), 5), dt.int32),
        ((_t(dt.uint8), 1000), dt.uint8),
        ((_t(dt.bool), True), dt.bool),
        ((_t(dt.bool), 1), dt.int64),
        ((_t(dt.float32), 1j), dt.complex64),
        ((_t(dt.float64), 1j), dt.complex128),
        ((_t(dt.int32), 1j), dt.complex64),
        ((_t(dt.float16), _t(dt.float64, 0)), dt.float16),  # 0-dim of same category: ignored
        ((_t(dt.int32), _t(dt.float64, 0)), dt.float64),  # 0-dim of higher category wins
        ((_t(dt.int8), _t(dt.int64, 0)), dt.int8),
        ((_t(dt.int32, 0), _t(dt.int64, 0)), dt.int64),  # both 0-dim: normal promotion
        ((_t(dt.int32, 0), 2.5), dt.float32),
        ((_t(dt.uint8), _t(dt.int8)), dt.int16),
    ],
)
def test_result_type(operands, want):
    assert dt.result_type(*operands) is want


def test_default_dtype_changes_float_scalars():
    try:
        dt.set_default_dtype(dt.float64)
        assert dt.get_default_dtype() is dt.float64
        assert dt.result_type(_t(dt.int64), 2.5) is dt.float64
        assert cr.tensor([1.5]).dtype is dt.float64
    finally:
        dt.set_default_dtype(dt.float32)
    with pytest.raises(TypeError, match="floating point"):
        dt.set_default_dtype(dt.int32)


def test_can_cast():
    assert dt.can_cast(dt.int64, dt.float16)
    assert not dt.can_cast(dt.float32, dt.int64)
    assert not dt.can_cast(dt.complex64, dt.float64)
