"""The op table's numpy functions follow PyTorch's semantics (pure; no device)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gpu_tensor.fusion.dtypes import BFLOAT16
from gpu_tensor.fusion.optable import OPS

CONTRACT_KEYS = (
    "add sub mul div floor_divide remainder pow neg abs exp log log1p sqrt rsqrt sin cos tanh "
    "sigmoid relu gelu silu floor ceil round sign eq ne lt le gt ge logical_and logical_or "
    "logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not maximum minimum "
    "where clamp"
).split()
# issue 23: the unary special functions
CONTRACT_KEYS += (
    "tan asin acos atan sinh cosh asinh acosh atanh expm1 exp2 log2 log10 sinc erf erfc erfinv "
    "lgamma digamma i0 special_i0e special_i1 special_i1e special_polygamma special_erfcx "
    "special_ndtr special_ndtri special_log_ndtr special_entr special_bessel_j0 "
    "special_bessel_j1 special_bessel_y0 special_bessel_y1 special_modified_bessel_i0 "
    "special_modified_bessel_i1 special_modified_bessel_k0 special_modified_bessel_k1 "
    "special_scaled_modified_bessel_k0 special_scaled_modified_bessel_k1 "
    "special_spherical_bessel_j0 logit"
).split()
# binary special functions and the elementwise flags (issue 23)
CONTRACT_KEYS += (
    "hypot logaddexp logaddexp2 xlogy xlog1py atan2 copysign nextafter fmod ldexp heaviside fmax "
    "fmin float_power isnan isinf isfinite isposinf isneginf signbit"
).split()
# the last rows of issue 23
CONTRACT_KEYS += "trunc frac deg2rad rad2deg sgn angle positive nan_to_num mvlgamma".split()
# complex conjugation (issue 23): rows with a complex kernel
CONTRACT_KEYS += ["conj", "conj_physical"]


def test_keys_are_exactly_the_contract():
    assert sorted(OPS) == sorted(CONTRACT_KEYS)


@pytest.mark.parametrize(
    "key, operands, expected",
    [
        ("add", (np.arange(3, dtype=np.int32), 2.5), np.float32),  # int tensor + float -> f32
        ("add", (np.arange(3, dtype=np.int64), np.ones(3, np.float16)), np.float16),
        ("add", (np.ones(3, np.float16), np.ones(3, BFLOAT16)), np.float32),
        ("add", (np.ones(3, np.uint8), np.ones(3, np.int8)), np.int16),
        ("add", (np.ones(3, np.int8), np.int64(5)), np.int8),  # 0-dim does not widen
        ("add", (np.ones(3, np.bool_), 1), np.int64),
        ("div", (np.arange(3, dtype=np.int64), np.int64(2)), np.float32),  # true division
        ("exp", (np.arange(3, dtype=np.int32),), np.float32),
        ("gelu", (np.ones(3, np.float64),), np.float64),
        ("lt", (np.ones(3, np.float16), 0.5), np.bool_),
        ("logical_and", (np.ones(3, np.float32), np.zeros(3, np.int8)), np.bool_),
        ("where", (np.ones(3, np.bool_), np.ones(3, np.int32), 1.5), np.float32),
        ("clamp", (np.arange(3, dtype=np.int32), 0.5, None), np.float32),
        ("relu", (np.arange(3, dtype=np.int16),), np.int16),
        ("neg", (np.ones(3, BFLOAT16),), BFLOAT16),
    ],
)
def test_result_dtype_follows_torch(key, operands, expected):
    assert OPS[key].numpy(*operands).dtype == np.dtype(expected)


def test_floor_divide_and_remainder_use_pythons_sign_rules():
    a = np.arange(-9, 10, dtype=np.int32)
    for b in (-4, -3, 3, 4):
        bb = np.full_like(a, b)
        assert OPS["floor_divide"].numpy(a, bb).tolist() == [int(x) // b for x in a]
        assert OPS["remainder"].numpy(a, bb).tolist() == [int(x) % b for x in a]
    x = np.array([-7.5, -0.5, 0.5, 7.5, 3.0], np.float64)
    for b in (-2.0, 2.0, 0.75):
        assert OPS["floor_divide"].numpy(x, b).tolist() == [v // b for v in x]
        assert OPS["remainder"].numpy(x, b).tolist() == [v % b for v in x]


def test_round_is_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], np.float32)
    assert OPS["round"].numpy(x).tolist() == [round(float(v)) for v in x]
    assert OPS["round"].numpy(np.arange(5, dtype=np.int32)).dtype == np.int32


def test_gelu_exact_and_tanh():
    x = np.linspace(-6, 6, 241)
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(OPS["gelu"].numpy(x), exact, rtol=1e-12, atol=1e-14)
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(OPS["gelu"].numpy(x, approximate="tanh"), approx, rtol=1e-14)
    with pytest.raises(ValueError, match="approximate"):
        OPS["gelu"].template("fast")


def test_sigmoid_is_stable_and_quiet():
    x = np.array([-1e4, -100.0, 0.0, 100.0, 1e4, np.nan], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = OPS["sigmoid"].numpy(x)
    assert y[0] == 0 and y[2] == 0.5 and y[4] == 1 and np.isnan(y[5])
    np.testing.assert_allclose(OPS["silu"].numpy(x[:5]), x[:5] * y[:5])


def test_nan_propagation_matches_torch():
    x = np.array([np.nan, -1.0, 2.0], np.float32)
    assert np.isnan(OPS["relu"].numpy(x)[0])
    assert np.isnan(OPS["maximum"].numpy(x, 0.0)[0]) and np.isnan(
        OPS["minimum"].numpy(0.0 * x, x)[0]
    )
    assert np.isnan(OPS["clamp"].numpy(x, 0.0, 1.0)[0])
    assert OPS["clamp"].numpy(x, 0.0, 1.0)[1:].tolist() == [0.0, 1.0]
    assert OPS["sign"].numpy(x).tolist()[0] == 0.0  # torch.sign(nan) == 0, unlike numpy


def test_half_types_compute_in_float32_and_round_once():
    a = np.array([1000.0, 0.1, 3.0], np.float16)
    b = np.array([0.3, 0.2, 1e-4], np.float16)
    expected = (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16)
    assert OPS["mul"].numpy(a, b).tolist() == expected.tolist()
    bf = np.array([1.5, -2.25], BFLOAT16)
    assert OPS["exp"].numpy(bf).dtype == BFLOAT16


def test_integer_semantics():
    assert OPS["add"].numpy(np.array([100], np.int8), 1000).tolist() == [
        (100 + 1000 + 128) % 256 - 128
    ]
    p = OPS["pow"].numpy(
        np.array([2, 1, -1, -1, 3], np.int64), np.array([3, -2, -3, -2, -1], np.int64)
    )
    assert p.tolist() == [8, 1, -1, 1, 0]  # torch: negative exponents give 0 except for +-1
    assert OPS["bitwise_not"].numpy(np.array([True, False])).tolist() == [False, True]
    assert OPS["abs"].numpy(np.array([-3, 4], np.int16)).tolist() == [3, 4]


@pytest.mark.parametrize(
    "key, operands, match",
    [
        ("sub", (np.ones(2, np.bool_), np.ones(2, np.bool_)), "Subtraction"),
        ("neg", (np.ones(2, np.bool_),), "Negation"),
        ("bitwise_and", (np.ones(2, np.float32), np.ones(2, np.float32)), "integer and bool"),
    ],
)
def test_refused_dtypes_raise_torch_messages(key, operands, match):
    with pytest.raises(RuntimeError, match=match):  # torch's classes, as eager code raises
        OPS[key].numpy(*operands)


def test_out_dtype_casts_like_out_argument():
    y = OPS["div"].numpy(np.array([7], np.int32), np.array([2], np.int32), out_dtype=np.float64)
    assert y.dtype == np.float64 and y.tolist() == [3.5]
