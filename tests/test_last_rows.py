"""Issue 23's last rows of the op table: trunc (and its alias fix), frac, deg2rad, rad2deg,
sgn, angle, positive, nan_to_num (its limits a parameter) and mvlgamma (p a parameter), and
the arc* names as aliases of their rows. Each runs as the row on every device and inside
@gt.fuse (the every-row tests of tests/fusion and tests/test_special_rows.py pick them up).

Expected values are recorded from torch 2.13.0 (CPU) into this file; the parity test at the
end compares with torch itself when it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt

inf, nan = float("inf"), float("nan")
_XS = [-2.5, -0.0, 0.0, 0.7, 3.25, 181.0, inf, -inf, nan]
_FLOATS = ["float16", "bfloat16", "float32", "float64"]

# torch.<name>(torch.tensor(_XS, dtype=dtype)), as float64 (torch 2.13.0)
RECORDED = {
    "frac": {
        "float16": [-0.5, 0.0, 0.0, 0.7001953125, 0.25, 0.0, nan, nan, nan],
        "bfloat16": [-0.5, 0.0, 0.0, 0.69921875, 0.25, 0.0, nan, nan, nan],
        "float32": [-0.5, 0.0, 0.0, 0.699999988079071, 0.25, 0.0, nan, nan, nan],
        "float64": [-0.5, 0.0, 0.0, 0.7, 0.25, 0.0, nan, nan, nan],
    },
    "deg2rad": {
        "float16": [-0.04364013671875, -0.0, 0.0, 0.0122222900390625, 0.056732177734375,
                    3.158203125, inf, -inf, nan],
        "bfloat16": [-0.043701171875, -0.0, 0.0, 0.01220703125, 0.056640625, 3.15625, inf,
                     -inf, nan],
        "float32": [-0.04363323003053665, -0.0, 0.0, 0.012217304669320583, 0.05672319978475571,
                    3.159045934677124, inf, -inf, nan],
        "float64": [-0.04363323129985824, -0.0, 0.0, 0.012217304763960306, 0.05672320068981571,
                    3.1590459461097367, inf, -inf, nan],
    },
    "rad2deg": {
        "float16": [-143.25, -0.0, 0.0, 40.125, 186.25, 10368.0, inf, -inf, nan],
        "bfloat16": [-143.0, -0.0, 0.0, 40.0, 186.0, 10368.0, inf, -inf, nan],
        "float32": [-143.2394561767578, -0.0, 0.0, 40.1070442199707, 186.21128845214844,
                    10370.5361328125, inf, -inf, nan],
        "float64": [-143.2394487827058, -0.0, 0.0, 40.10704565915762, 186.21128341751756,
                    10370.5360918679, inf, -inf, nan],
    },
    # the same for every float dtype (every value is exact in each)
    "trunc": [-2.0, -0.0, 0.0, 0.0, 3.0, 181.0, inf, -inf, nan],
    "fix": [-2.0, -0.0, 0.0, 0.0, 3.0, 181.0, inf, -inf, nan],
    "sgn": [-1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, -1.0, 0.0],
    "angle": [np.pi, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.pi, nan],
}  # fmt: skip
# nan_to_num's defaults: the dtype's largest finite value
_BIG = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
        "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}  # fmt: skip
# torch.mvlgamma(torch.tensor([0.2, 1.5, 2.0, 7.25], dtype=dtype), p=3)
_MVLGAMMA3 = {
    "float16": [6.453125, 2.16796875, 1.595703125, 20.109375],
    "bfloat16": [6.46875, 2.171875, 1.6015625, 20.125],
    "float32": [6.453206539154053, 2.168677568435669, 1.5963125228881836, 20.104799270629883],
    "float64": [6.453206075807482, 2.1686775340635553, 1.5963125911388552, 20.104800157934413],
}


def _expected(name, dtype):
    table = RECORDED[name]
    return table[dtype] if isinstance(table, dict) else table


def _rounded(values, dtype):
    """torch's values rounded to `dtype` (the recorded angle is pi in float64)."""
    return gt.tensor(values, dtype=gt.float64, device="cpu").to(getattr(gt, dtype)).double().numpy()


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_float_values_are_torchs_bit_for_bit(name, dtype, device):
    x = gt.tensor(_XS, dtype=getattr(gt, dtype), device=device)
    got = getattr(gt, name)(x)
    assert got.dtype is x.dtype
    got = got.cpu().double().numpy()
    want = _rounded(_expected(name, dtype), dtype)
    np.testing.assert_array_equal(got, want)
    zeros = want == 0
    assert list(np.signbit(got[zeros])) == list(np.signbit(want[zeros])), "signs of zeros"


@pytest.mark.parametrize("dtype", _FLOATS)
def test_nan_to_num_defaults_are_the_dtypes_limits(dtype, device):
    x = gt.tensor(_XS, dtype=getattr(gt, dtype), device=device)
    got = gt.nan_to_num(x)
    assert got.dtype is x.dtype
    want = _rounded(_XS[:6] + [_BIG[dtype], -_BIG[dtype], 0.0], dtype)
    np.testing.assert_array_equal(got.cpu().double().numpy(), want)


def test_nan_to_num_limits_and_complex(device):
    x = gt.tensor(_XS, device=device)
    got = gt.nan_to_num(x, nan=9.0, posinf=1e6, neginf=-1e6).cpu().tolist()
    assert got[6:] == [1e6, -1e6, 9.0] and got[:6] == gt.tensor(_XS[:6]).tolist()
    # a limit the dtype cannot hold rounds to inf (torch 2.13: [inf, -65504.0, 0.0])
    h = gt.tensor([inf, -inf, nan], dtype=gt.float16, device=device)
    assert gt.nan_to_num(h, posinf=1e6).cpu().tolist() == [inf, -65504.0, 0.0]
    z = gt.tensor([3 + 4j, complex(nan, 1), complex(inf, -inf)], device=device)
    got = gt.nan_to_num(z, nan=1.0, posinf=2.0, neginf=-3.0)
    assert got.dtype is gt.complex64 and got.cpu().tolist() == [3 + 4j, 1 + 1j, 2 - 3j]
    assert x.nan_to_num(nan=5.0).cpu().tolist()[-1] == 5.0


@pytest.mark.parametrize(
    "name,src,dtype,want",
    [
        ("trunc", [0, 3, 200], "uint8", [0, 3, 200]),
        ("fix", [-7, 0, 5], "int64", [-7, 0, 5]),
        ("sgn", [True, False], "bool", [True, False]),
        ("sgn", [-7, 0, 5], "int64", [-1, 0, 1]),
        ("nan_to_num", [-7, 0, 5], "int64", [-7, 0, 5]),
        ("nan_to_num", [True, False], "bool", [True, False]),
    ],
)
def test_integer_inputs_keep_their_dtype(name, src, dtype, want, device):
    x = gt.tensor(src, dtype=getattr(gt, dtype), device=device)
    got = getattr(gt, name)(x)
    assert got.dtype is x.dtype and got.cpu().tolist() == want


@pytest.mark.parametrize(
    "name,want",
    [
        ("deg2rad", [-0.12217304855585098, 0.0, 0.0872664600610733]),
        ("rad2deg", [-401.0704650878906, 0.0, 286.4789123535156]),
        ("angle", [3.1415927410125732, 0.0, 0.0]),
    ],
)
def test_integer_inputs_give_the_default_float(name, want, device):
    got = getattr(gt, name)(gt.tensor([-7, 0, 5], device=device))
    assert got.dtype is gt.float32 and got.cpu().tolist() == want
    assert getattr(gt, name)(gt.tensor([True, False], device=device)).dtype is gt.float32


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: gt.trunc(gt.tensor([True])), NotImplementedError, "Bool"),
        (lambda: gt.fix(gt.tensor([1j])), NotImplementedError, "ComplexFloat"),
        (lambda: gt.frac(gt.tensor([3])), NotImplementedError, "Long"),
        (lambda: gt.frac(gt.tensor([True])), NotImplementedError, "Bool"),
        (lambda: gt.deg2rad(gt.tensor([1j])), RuntimeError, "not supported for complex"),
        (lambda: gt.rad2deg(gt.tensor([1j])), RuntimeError, "not supported for complex"),
        (lambda: gt.positive(gt.tensor([True])), RuntimeError, "bool tensor"),
        (lambda: gt.mvlgamma(gt.tensor([True]), 1), RuntimeError, "boolean tensor"),
        (lambda: gt.mvlgamma(gt.tensor([2.0]), 0), RuntimeError, "greater than or equal to 1"),
        (lambda: gt.mvlgamma(gt.tensor([2j]), 1), NotImplementedError, "ComplexFloat"),
    ],
)
def test_refusals_raise_torchs_class(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
    assert exc is not RuntimeError or not issubclass(exc, NotImplementedError)


def test_complex_sgn_and_angle():
    z = gt.tensor([3 + 4j, -2 + 0j, 0j, complex(nan, 1)])
    s = gt.sgn(z)
    assert s.dtype is gt.complex64
    np.testing.assert_allclose(s.numpy()[:3], [0.6 + 0.8j, -1, 0], rtol=1e-7)
    assert np.isnan(s.numpy()[3].real) and np.isnan(s.numpy()[3].imag)
    a = gt.angle(z)  # a real result (torch: float32 for complex64)
    assert a.dtype is gt.float32
    np.testing.assert_allclose(a.numpy()[:3], [0.9272952079772949, np.pi, 0.0], rtol=1e-7)


def test_positive_returns_its_input_and_fuses_as_identity():
    x = gt.tensor([1.5, -2.0])
    assert gt.positive(x) is x  # torch returns the input itself
    assert gt.fuse(lambda t: gt.positive(t) * 2)(x).tolist() == [3.0, -4.0]


@pytest.mark.parametrize("dtype", _FLOATS)
def test_mvlgamma_values_are_torchs(dtype, device):
    # like torch 2.13, no domain check: 0.2 <= (p - 1) / 2 gives lgamma's values
    x = gt.tensor([0.2, 1.5, 2.0, 7.25], dtype=getattr(gt, dtype), device=device)
    got = gt.mvlgamma(x, p=3)
    assert got.dtype is x.dtype
    rtol = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-13}[dtype]
    np.testing.assert_allclose(got.cpu().double().numpy(), _MVLGAMMA3[dtype], rtol=rtol)
    assert x.mvlgamma(3).cpu().double().tolist() == got.cpu().double().tolist()


def test_gradients_are_torchs():
    x = gt.tensor([1.5, 2.75, 4.0], dtype=gt.float64, requires_grad=True)
    y = gt.mvlgamma(x, p=3)
    assert y.grad_fn.name() == "MvlgammaBackward0"
    y.sum().backward()  # torch.mvlgamma(x, p=3).sum().backward(), recorded
    np.testing.assert_allclose(
        x.grad.numpy(), [-2.5042357169443794, 1.6389199451460272, 3.2820586441755104], rtol=1e-12
    )
    x = gt.tensor([1.0, nan, inf, -2.5], requires_grad=True)
    gt.nan_to_num(x).backward(gt.tensor([2.0, 3.0, 4.0, 5.0]))
    assert x.grad.tolist() == [2.0, 0.0, 0.0, 5.0]
    for name, slope in (("deg2rad", np.pi / 180), ("rad2deg", 180 / np.pi), ("frac", 1.0),
                        ("trunc", 0.0), ("sgn", 0.0), ("angle", 0.0)):  # fmt: skip
        x = gt.tensor([-1.5, 2.5], dtype=gt.float64, requires_grad=True)
        getattr(gt, name)(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [slope, slope], rtol=1e-15, err_msg=name)


def test_complex_sgn_gradient_is_torchs():
    z = gt.tensor([3 + 4j, -1 + 2j, 0j], requires_grad=True)
    gt.sgn(z).backward(gt.tensor([1 + 2j, -0.5 + 1j, 1 + 1j]))
    # torch.sgn(z).backward(g), recorded: z.grad
    want = [-0.064 + 0.048j, 0j, 0j]
    np.testing.assert_allclose(z.grad.numpy(), want, atol=1e-7)


def test_arc_names_are_aliases_of_the_rows():
    from gpu_tensor.fusion.trace import Proxy

    for alias, key in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                       ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"),
                       ("arctan2", "atan2"), ("fix", "trunc")):  # fmt: skip
        assert getattr(gt, alias) is getattr(gt, key), alias
        assert getattr(gt.Tensor, alias) is getattr(gt.Tensor, key), alias
        assert getattr(Proxy, alias) is getattr(Proxy, key), alias
    x = gt.tensor([0.25, -0.5])
    f = gt.fuse(lambda t: t.arcsin() + t.arctan2(t) + t.fix())
    np.testing.assert_allclose(f(x).numpy(), (x.asin() + x.atan2(x) + x.trunc()).numpy())
    y = x.clone()
    y.arcsin_()
    assert y.tolist() == x.asin().tolist()


_PARITY = ["trunc", "fix", "frac", "deg2rad", "rad2deg", "sgn", "angle", "nan_to_num"]


@pytest.mark.parametrize("name", _PARITY + ["positive", "mvlgamma"])
def test_against_torch_itself(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.normal(0, 50, 64), [0.0, -0.0, inf, -inf, nan]])
    for dtype in ["bool", "uint8", "int64", *_FLOATS, "complex64"]:
        src = values if dtype not in ("bool", "uint8", "int64") else np.abs(values[:64]) // 3
        t = torch.tensor(src).to(getattr(torch, dtype))
        x = gt.tensor(t.to(torch.float64).numpy() if not t.is_complex() else t.numpy())
        x = x.to(getattr(gt, dtype))
        args = (3,) if name == "mvlgamma" else ()
        try:
            want = getattr(torch, name)(t + 2 if name == "mvlgamma" else t, *args)
        except Exception as exc:  # noqa: BLE001  (the class is compared)
            with pytest.raises(type(exc)):
                getattr(gt, name)(x + 2 if name == "mvlgamma" else x, *args)
            continue
        got = getattr(gt, name)(x + 2 if name == "mvlgamma" else x, *args)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1], (name, dtype)
        w = want.to(torch.complex128 if want.is_complex() else torch.float64).numpy()
        g = got.to(gt.complex128 if got.dtype.is_complex else gt.float64).numpy()
        np.testing.assert_allclose(g, w, rtol=1e-2 if name == "mvlgamma" else 0, atol=0,
                                   equal_nan=True, err_msg=f"{name} {dtype}")  # fmt: skip
