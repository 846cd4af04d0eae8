"""The ops of ops/special.py, sort.py, matrix.py, index_write.py, statistics.py, pointwise.py and
meta.py on every device: against numpy/math (always), and against torch where installed.
Gradients are tested in tests/autograd/test_formulas_more.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt

RNG = np.random.default_rng(0)
A = RNG.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)  # inside every domain below
P = RNG.uniform(1.1, 3.0, (3, 4)).astype(np.float32)  # > 1: acosh, log2, lgamma
INTS = RNG.integers(0, 5, (3, 4))
AN = np.where(A > 0.5, np.nan, A).astype(np.float32)  # with nans
M = RNG.normal(size=(3, 3)) + 3 * np.eye(3)  # well-conditioned, positive determinant


def _np(t):
    return t.cpu().numpy() if isinstance(t, gt.Tensor) else np.asarray(t)


def _vec(fn):
    return lambda a: np.frompyfunc(fn, 1, 1)(a).astype(a.dtype)


# name -> (gpu_tensor call, numpy reference, input)
NUMPY_CASES = {
    "asin": (lambda x: x.asin(), np.arcsin, A),
    "acos": (gt.acos, np.arccos, A),
    "atan": (lambda x: x.arctan(), np.arctan, A),
    "sinh": (gt.sinh, np.sinh, A),
    "cosh": (lambda x: x.cosh(), np.cosh, A),
    "tan": (gt.tan, np.tan, A),
    "asinh": (gt.asinh, np.arcsinh, A),
    "acosh": (lambda x: x.acosh(), np.arccosh, P),
    "atanh": (gt.atanh, np.arctanh, A),
    "log2": (gt.log2, np.log2, P),
    "log10": (lambda x: x.log10(), np.log10, P),
    "expm1": (gt.expm1, np.expm1, A),
    "exp2": (gt.exp2, np.exp2, A),
    "sinc": (gt.sinc, np.sinc, A),
    "erf": (gt.erf, _vec(math.erf), A),
    "erfc": (lambda x: x.erfc(), _vec(math.erfc), A),
    "lgamma": (gt.lgamma, _vec(math.lgamma), P),
    "deg2rad": (gt.deg2rad, np.deg2rad, A),
    "frac": (gt.frac, lambda a: a - np.trunc(a), P * 3),
    "erfinv_roundtrip": (lambda x: x.erfinv().erf(), lambda a: a, A),
    # digamma is lgamma's derivative: compare with a central difference
    "digamma": (
        gt.digamma,
        lambda a: (
            (
                _vec(math.lgamma)(a.astype(np.float64) + 1e-6)
                - _vec(math.lgamma)(a.astype(np.float64) - 1e-6)
            )
            / 2e-6
        ),
        A + 0.05,
    ),
    "atan2": (lambda x: gt.atan2(x, x + 2), lambda a: np.arctan2(a, a + 2), A),
    "hypot": (lambda x: gt.hypot(x, x * 2), lambda a: np.hypot(a, a * 2), A),
    "logaddexp": (lambda x: gt.logaddexp(x, x * 3), lambda a: np.logaddexp(a, a * 3), A),
    "logaddexp2": (lambda x: x.logaddexp2(x * 3), lambda a: np.logaddexp2(a, a * 3), A),
    "xlogy": (lambda x: gt.xlogy(x, x + 2), lambda a: a * np.log(a + 2), A),
    "copysign": (lambda x: gt.copysign(x + 2, x), lambda a: np.copysign(a + 2, a), A),
    "signbit": (gt.signbit, np.signbit, A),
    "sgn": (gt.sgn, np.sign, A),
    "fmax": (lambda x: gt.fmax(x, -x), lambda a: np.fmax(a, -a), A),
    "sort": (lambda x: x.sort(1).values, lambda a: np.sort(a, 1), A),
    "sort_desc": (lambda x: x.sort(0, descending=True).values, lambda a: -np.sort(-a, 0), A),
    "argsort": (lambda x: x.argsort(1), lambda a: np.argsort(a, 1, kind="stable"), A),
    "topk": (lambda x: x.topk(2).values, lambda a: -np.sort(-a, 1)[:, :2], A),
    "kthvalue": (lambda x: x.kthvalue(2, 0).values, lambda a: np.sort(a, 0)[1], A),
    "median": (lambda x: x.median(), lambda a: np.sort(a.reshape(-1))[5], A),
    "quantile": (lambda x: x.quantile(0.3, dim=1), lambda a: np.quantile(a, 0.3, axis=1), A),
    "unique": (gt.unique, np.unique, INTS),
    "cummax": (lambda x: x.cummax(1).values, lambda a: np.maximum.accumulate(a, 1), A),
    "det": (gt.det, np.linalg.det, M),
    "inverse": (lambda x: x.inverse(), np.linalg.inv, M),
    "solve": (lambda x: gt.linalg.solve(x, x[0]), lambda a: np.linalg.solve(a, a[0]), M),
    "svdvals": (lambda x: x.svd().S, lambda a: np.linalg.svd(a, compute_uv=False), M),
    "slogdet": (lambda x: x.slogdet().logabsdet, lambda a: np.linalg.slogdet(a)[1], M),
    "pinverse": (lambda x: x.pinverse(), np.linalg.pinv, A),
    "matrix_power": (lambda x: x.matrix_power(3), lambda a: np.linalg.matrix_power(a, 3), M),
    "trace": (lambda x: x.trace(), np.trace, M),
    "tril": (gt.tril, np.tril, A),
    "triu": (lambda x: x.triu(1), lambda a: np.triu(a, 1), A),
    "diag": (lambda x: gt.diag(x[0], -1), lambda a: np.diag(a[0], -1), A),
    "diag2": (lambda x: x.diag(1), lambda a: np.diag(a, 1), A),
    "addmm": (lambda x: gt.addmm(x, x, x, beta=0.5, alpha=2), lambda a: 0.5 * a + 2 * a @ a, M),
    "cross": (lambda x: gt.cross(x, x.flip(0), dim=1), lambda a: np.cross(a, a[::-1], axis=1), M),
    "kron": (lambda x: gt.kron(x[:2, :2], x), lambda a: np.kron(a[:2, :2], a), M),
    "inner": (lambda x: gt.inner(x, x), lambda a: np.inner(a, a), A),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=0), lambda a: np.repeat(a, 2, 0), A),
    "diff": (lambda x: x.diff(n=2), lambda a: np.diff(a, 2), A),
    "rot90": (lambda x: x.rot90(), np.rot90, A),
    "fliplr": (gt.fliplr, np.fliplr, A),
    "bincount": (lambda x: gt.bincount(x.reshape(-1)), lambda a: np.bincount(a.ravel()), INTS),
    "nansum": (lambda x: x.nansum(1), lambda a: np.nansum(a, 1), AN),
    "nanmean": (lambda x: x.nanmean(0), lambda a: np.nanmean(a, 0), AN),
    "cov": (gt.cov, np.cov, A),
    "corrcoef": (gt.corrcoef, np.corrcoef, A),
    "logcumsumexp": (lambda x: x.logcumsumexp(1), lambda a: np.log(np.cumsum(np.exp(a), 1)), A),
    "left_shift": (lambda x: x.bitwise_left_shift(2), lambda a: a << 2, INTS),
    "gcd": (lambda x: gt.gcd(x, x + 2), lambda a: np.gcd(a, a + 2), INTS),
    "angle": (gt.angle, np.angle, A),
    "hsplit": (lambda x: x.hsplit(2)[1], lambda a: np.hsplit(a, 2)[1], A),
    "adjoint": (lambda x: x.adjoint(), lambda a: a.T, A),
}


@pytest.mark.parametrize("name", sorted(NUMPY_CASES))
def test_matches_numpy(device, name):
    fn, ref, x = NUMPY_CASES[name]
    got = _np(fn(gt.tensor(x, device=device)))
    want = ref(x)
    np.testing.assert_allclose(
        got.astype(np.float64), np.asarray(want, np.float64), rtol=2e-5, atol=2e-6, err_msg=name
    )


def test_integer_inputs_give_the_default_float(device):
    r = gt.tensor([0, 1], device=device).asin()
    assert r.dtype is gt.float32 and r.device.type == device


def test_sort_puts_nan_last_ascending_first_descending(device):
    x = gt.tensor([2.0, float("nan"), 1.0], device=device)
    assert _np(x.sort().indices).tolist() == [2, 0, 1]
    assert _np(x.sort(descending=True).indices).tolist() == [1, 0, 2]


def test_sort_is_stable(device):
    x = gt.tensor([1, 0, 1, 0, 1], device=device)
    assert _np(x.sort(stable=True).indices).tolist() == [1, 3, 0, 2, 4]
    assert _np(x.sort(descending=True).indices).tolist() == [0, 2, 4, 1, 3]


def test_median_is_the_lower_middle(device):
    assert gt.tensor([4.0, 1.0, 3.0, 2.0], device=device).median().item() == 2.0


def test_unique_inverse_and_counts(device):
    u, inv, cnt = gt.unique(
        gt.tensor([3, 1, 3, 2], device=device), return_inverse=True, return_counts=True
    )
    assert _np(u).tolist() == [1, 2, 3] and _np(inv).tolist() == [2, 0, 2, 1]
    assert _np(cnt).tolist() == [1, 1, 2]


def test_singular_solve_is_a_clear_error(device):
    with pytest.raises(RuntimeError, match="singular"):
        gt.zeros(2, 2, dtype=gt.float64, device=device).inverse()
    with pytest.raises(RuntimeError, match="floating point"):
        gt.ones(2, 2, dtype=gt.int64, device=device).det()


def test_index_writes(device):
    x = gt.zeros(3, 2, device=device)
    src = gt.ones(3, 2, device=device)
    idx = gt.tensor([0, 2, 0], device=device)
    assert _np(x.index_add(0, idx, src))[:, 0].tolist() == [2, 0, 1]
    assert _np(x.index_fill(1, gt.tensor([1], device=device), 5.0))[:, 1].tolist() == [5] * 3
    y = gt.zeros(4, device=device)
    y.index_copy_(0, gt.tensor([3, 1], device=device), gt.tensor([7.0, 8.0], device=device))
    assert _np(y).tolist() == [0, 8, 0, 7]
    z = gt.zeros(2, 2, device=device)
    z.index_put_(
        (gt.tensor([0, 0], device=device), gt.tensor([1, 1], device=device)),
        gt.tensor(1.0, device=device),
        accumulate=True,
    )
    assert _np(z).tolist() == [[0, 2], [0, 0]]
    m = gt.tensor([[True, False], [False, True]], device=device)
    r = z.masked_scatter(m, gt.tensor([5.0, 6.0, 7.0], device=device))
    assert _np(r).tolist() == [[5, 2], [0, 6]]
    with pytest.raises(IndexError, match="int32/int64"):
        x.index_add(0, gt.tensor([0.0], device=device), src[:1])


def test_nonzero_static_pads_and_truncates(device):
    x = gt.tensor([0, 3, 0, 4], device=device)
    assert _np(x.nonzero_static(size=3)).tolist() == [[1], [3], [-1]]
    assert _np(x.nonzero_static(size=1)).tolist() == [[1]]


def test_in_place_forms_write_into_the_tensor(device):
    x = gt.tensor([0.5, -0.5], device=device)
    ptr = x.data_ptr()
    assert x.asin_() is x and x.data_ptr() == ptr
    np.testing.assert_allclose(_np(x), np.arcsin([0.5, -0.5]), rtol=1e-6)
    x.cumsum_(0)
    assert abs(_np(x)[1]) < 1e-6
    x.clamp_min_(0.1)
    assert _np(x).min() >= 0.1
    e = gt.tensor([1.0, 2.0], device=device)
    assert _np(e.eq_(gt.tensor([1.0, 0.0], device=device))).tolist() == [1.0, 0.0]


def test_set_shares_the_source(device):
    a, b = gt.zeros(3, device=device), gt.arange(4.0, device=device)
    assert a.set_(b) is a and a.shape == (4,)
    b[0] = 9
    assert a[0].item() == 9 and a.data_ptr() == b.data_ptr()


def test_in_place_view_changes(device):
    x = gt.arange(6.0, device=device)
    assert x.unsqueeze_(0).shape == (1, 6)
    assert x.squeeze_().shape == (6,)
    x.resize_(2, 3)
    assert x.t_().shape == (3, 2) and not x.is_contiguous()
    assert x.transpose_(0, 1).is_contiguous()


def test_metadata(device):
    x = gt.ones(2, 3, device=device)
    assert x.layout is gt.strided and repr(gt.strided) == "gpu_tensor.strided"
    assert not x.is_sparse and not x.is_quantized and not x.is_meta
    assert gt.is_tensor(x) and not gt.is_tensor(np.ones(2))
    assert x.is_signed() and not gt.ones(1, dtype=gt.uint8, device=device).is_signed()
    assert x.t().dim_order() == (1, 0)
    assert len(x.storage()) == 6 and x.storage().data_ptr() == x.data_ptr()
    assert x.new([1, 2]).dtype is gt.float32 and x.new(4).shape == (4,)
    assert x.sum_to_size(1, 3).shape == (1, 3)
    assert _np(x.sum_to_size(1, 3)).tolist() == [[2, 2, 2]]
    with pytest.raises(RuntimeError, match="ambiguous"):
        x.is_nonzero()


def test_isclose_allclose_equal(device):
    a = gt.tensor([1.0, float("nan"), float("inf")], device=device)
    b = gt.tensor([1.0 + 1e-7, float("nan"), float("inf")], device=device)
    assert _np(gt.isclose(a, b)).tolist() == [True, False, True]
    assert _np(gt.isclose(a, b, equal_nan=True)).tolist() == [True, True, True]
    assert gt.allclose(a[:1], b[:1]) and not gt.allclose(a, b)
    assert gt.equal(a[::2], a[::2]) and not gt.equal(a[:1], b[:2])


def test_nan_to_num(device):
    x = gt.tensor([float("nan"), float("inf"), -float("inf"), 1.0], device=device)
    r = _np(x.nan_to_num(posinf=9.0))
    assert r[0] == 0 and r[1] == 9 and r[2] == np.finfo(np.float32).min and r[3] == 1


@pytest.fixture()
def torch():
    return pytest.importorskip("torch")


# name -> (call with m = gpu_tensor or torch, inputs): torch parity where torch is installed
TORCH_CASES = {
    "erfinv": (lambda m, x: x.erfinv(), A),
    "digamma": (lambda m, x: x.digamma(), A),
    "i0": (lambda m, x: m.i0(x), A),
    "logit": (lambda m, x: x.abs().logit(), A),
    "nextafter": (lambda m, x: m.nextafter(x, x + 1), A),
    "float_power": (lambda m, x: m.float_power(x, 2), A),
    "sort": (lambda m, x: x.sort(0, descending=True), A),
    "topk": (lambda m, x: x.topk(2, 0), A),
    "flip varargs": (lambda m, x: x.flip(0, 1), A),
    "flip list": (lambda m, x: x.flip([1]), A),
    "median_dim": (lambda m, x: x.median(1), A),
    "nanmedian": (lambda m, x: x.nanmedian(), A),
    "quantile": (
        lambda m, x: x.quantile(m.tensor([0.2, 0.9], device=x.device), dim=1, keepdim=True),
        A,
    ),
    "nanquantile": (lambda m, x: x.nanquantile(0.5, dim=0), A),
    "mode": (lambda m, x: x.mode(1), INTS),
    "cummin": (lambda m, x: x.cummin(0), INTS),
    "unique_consecutive": (
        lambda m, x: m.unique_consecutive(x, return_counts=True, return_inverse=True),
        INTS,
    ),
    "qr": (lambda m, x: m.linalg.qr(x), M),
    "cholesky": (lambda m, x: m.linalg.cholesky(x @ x.t()), M),
    "matrix_exp": (lambda m, x: x.matrix_exp(), M),
    "logdet": (lambda m, x: x.logdet(), M),
    "matrix_norm": (
        lambda m, x: [m.linalg.matrix_norm(x, o) for o in ("fro", "nuc", 2, 1, -1, float("inf"))],
        M,
    ),
    "diag_embed": (lambda m, x: m.diag_embed(x), A),
    "diagflat": (lambda m, x: m.diagflat(x[:2]), A),
    "baddbmm": (lambda m, x: m.baddbmm(x, x[None], x[None]), M),
    "addcdiv": (lambda m, x: x.addcdiv(x, x + 2, value=0.5), A),
    "scatter_reduce": (
        lambda m, x: x.scatter_reduce(
            0, m.tensor([[0, 1, 0, 1]], device=x.device), x[:1] * 10, "mean", include_self=False
        ),
        A,
    ),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, x.argsort(1), 1), A),
    "repeat_interleave": (lambda m, x: m.repeat_interleave(m.tensor([1, 0, 2])), A),
    "slice_scatter": (
        lambda m, x: m.slice_scatter(x, m.zeros(3, 2, device=x.device), 1, 0, 4, 2),
        A,
    ),
    "fill_diagonal_": (lambda m, x: x.clone().fill_diagonal_(5.0), A),
    "histc": (lambda m, x: x.histc(5), A),
    "aminmax": (lambda m, x: x.aminmax(dim=1), A),
    "renorm": (lambda m, x: x.renorm(2, 0, 1.0), A),
    "frexp": (lambda m, x: x.frexp(), A),
    "softmax": (lambda m, x: x.softmax(1), A),
    "log_softmax": (lambda m, x: x.log_softmax(0), A),
    "hardshrink": (lambda m, x: x.hardshrink(0.3), A),
    "heaviside": (lambda m, x: m.heaviside(x, m.tensor(0.5, device=x.device)), A),
    "polygamma": (lambda m, x: [(x + 1).polygamma(n) for n in (1, 2, 3)], A),
    "mvlgamma": (lambda m, x: (x + 2).mvlgamma(3), A),
    "diagonal_scatter": (lambda m, x: m.diagonal_scatter(x, x[0, :3] * 0 - 1, 1), A),
    "index_reduce": (
        lambda m, x: x.index_reduce(
            0, m.tensor([0, 2, 0], device=x.device), x + 1, "amax", include_self=False
        ),
        A,
    ),
    "prelu": (
        lambda m, x: m.prelu(x.reshape(1, 3, 4), m.tensor([0.1, 0.2, 0.3], device=x.device)),
        A,
    ),
    "as_strided_scatter": (
        lambda m, x: m.as_strided_scatter(x, m.ones(2, device=x.device), (2,), (2,)),
        A,
    ),
    "triangular_solve": (
        lambda m, x: (
            (x[:, :3] + m.eye(3, device=x.device) * 3)
            .triangular_solve(x[:, :3].triu() + m.eye(3, device=x.device) * 2, upper=True)
            .solution
        ),
        A,
    ),
}


def _same(name, got, want):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), name
        for g, w in zip(got, want, strict=True):
            _same(name, g, w)
        return
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
    assert tuple(got.shape) == tuple(want.shape), name
    np.testing.assert_allclose(
        _np(got), want.detach().numpy(), rtol=1e-4, atol=1e-5, equal_nan=True, err_msg=name
    )


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
@pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "index_reduce() is in beta"
def test_matches_torch(torch, device, name):
    fn, x = TORCH_CASES[name]
    _same(name, fn(gt, gt.tensor(x, device=device)), fn(torch, torch.tensor(x)))


# bad input: torch's error class, a message naming the problem (never numpy's own words)
BAD = {
    "solve_shapes": (
        lambda d: gt.linalg.solve(gt.eye(3, device=d), gt.ones(4, device=d)),
        RuntimeError,
        "incompatible shapes",
    ),
    "histc_bins": (lambda d: gt.ones(3, device=d).histc(0), RuntimeError, "bins"),
    "rot90_dims": (lambda d: gt.ones(2, 2, device=d).rot90(1, (0, 0)), RuntimeError, "different"),
    "nonzero_static": (
        lambda d: gt.ones(2, device=d).nonzero_static(size=-1),
        RuntimeError,
        "non-negative",
    ),
    "searchsorted": (lambda d: gt.searchsorted(gt.ones(3, device=d), "a"), TypeError, "input"),
    "cov_3d": (lambda d: gt.ones(2, 2, 2, device=d).cov(), RuntimeError, "two or fewer"),
    "kron_int": (lambda d: gt.kron(gt.ones(2, device=d), 3), TypeError, "Tensors"),
    "scatter_reduce_oob": (
        lambda d: gt.ones(3, 4, device=d).scatter_reduce(
            0, gt.tensor([[9, 0, 0, 0]], device=d), gt.ones(3, 4, device=d), "amax"
        ),
        RuntimeError,
        "out of bounds",
    ),
    "index_fill_oob": (
        lambda d: gt.ones(3, 4, device=d).index_fill(1, gt.tensor([9], device=d), 0.0),
        IndexError,
        "out of range",
    ),
    "topk_k": (lambda d: gt.ones(3, device=d).topk(4), RuntimeError, "k out of range"),
    "quantile_q": (lambda d: gt.ones(3, device=d).quantile(2.0), RuntimeError, r"\[0, 1\]"),
    "cholesky": (lambda d: gt.linalg.cholesky(-gt.eye(2, device=d)), RuntimeError, "positive"),
    "multinomial": (
        lambda d: gt.multinomial(gt.ones(2, 2, 2, device=d), 1),
        RuntimeError,
        "1 or 2 dim",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_a_clear_error(device, name):
    fn, cls, match = BAD[name]
    with pytest.raises(cls, match=match):
        fn(device)
