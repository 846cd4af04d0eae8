"""Reductions vs numpy on every device: dims, keepdim, dtypes, (values, indices)."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.ops import reduction as rd
from gpu_tensor.testing import assert_close

A = np.array(
    [
        [[3.0, -1.0, 2.0, 0.5], [7.0, 4.0, -6.0, 1.0], [0.0, 2.0, 8.0, -3.0]],
        [[1.0, 1.0, -2.0, 9.0], [5.0, -4.0, 6.0, 2.0], [3.5, 2.5, -8.0, 0.0]],
    ],
    np.float32,
)


@pytest.fixture
def x(device):
    return cr.tensor(A, device=device)


# fmt: off
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), [1, 2]])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name, np_fn", [
    ("sum", np.sum), ("mean", np.mean), ("prod", np.prod), ("amax", np.max),
    ("amin", np.min),
])
# fmt: on
def test_reductions_match_numpy(x, name, np_fn, dim, keepdim):
    axis = tuple(dim) if isinstance(dim, list) else dim
    if name in ("amax", "amin") and dim is None:
        r = getattr(rd, name)(x, keepdim=keepdim) if keepdim else getattr(rd, name)(x)
        assert_close(r, np_fn(A, keepdims=keepdim))
        return
    r = getattr(rd, name)(x, dim, keepdim) if dim is not None else getattr(rd, name)(x)
    want = np_fn(A, axis=axis, keepdims=keepdim) if dim is not None else np_fn(A)
    assert_close(r, np.asarray(want, np.float32), rtol=1e-5)


def test_integer_sums_are_int64(device):
    i = cr.tensor([[1, 2], [3, 4]], dtype=dt.int8, device=device)
    assert i.sum().dtype is dt.int64 and i.sum().item() == 10
    assert i.prod(1).tolist() == [2, 12]
    assert cr.tensor([True, True, False], device=device).sum().item() == 2
    assert i.sum(dtype=dt.float32).dtype is dt.float32


def test_half_sum_accumulates_in_float32(device):
    h = cr.ones(4096, dtype=dt.float16, device=device)
    assert h.sum().item() == 4096.0  # float16 accumulation would stop at 2048
    assert h.sum().dtype is dt.float16


def test_max_min_with_dim_return_values_and_indices(x):
    v, i = x.max(1)
    np.testing.assert_array_equal(v.cpu().numpy(), A.max(1))
    np.testing.assert_array_equal(i.cpu().numpy(), A.argmax(1))
    assert i.dtype is dt.int64
    r = x.min(dim=-1, keepdim=True)
    assert r.values.shape == (2, 3, 1) and r.indices.shape == (2, 3, 1)
    np.testing.assert_array_equal(r.indices.cpu().numpy()[..., 0], A.argmin(-1))
    assert x.max().item() == 9.0 and x.min().item() == -8.0
    assert_close(x.max(x * 0), np.maximum(A, 0))


def test_argmax_argmin(x):
    assert x.argmax().item() == A.argmax() and x.argmin().item() == A.argmin()
    np.testing.assert_array_equal(x.argmax(2).cpu().numpy(), A.argmax(2))
    assert x.argmax(0, keepdim=True).shape == (1, 3, 4)


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(x, correction):
    assert_close(x.var(1, correction=correction), A.var(1, ddof=correction), rtol=1e-5)
    assert_close(x.std(correction=correction), np.float32(A.std(ddof=correction)), rtol=1e-5)
    assert_close(x.var(unbiased=False), np.float32(A.var()), rtol=1e-5)


def test_all_any(device):
    b = cr.tensor([[True, False], [True, True]], device=device)
    assert not b.all().item() and b.any().item()
    assert b.all(1).tolist() == [False, True] and b.any(0).tolist() == [True, True]
    assert cr.tensor([1.0, 2.0], device=device).all().dtype is dt.bool


def test_norm(x):
    assert_close(x.norm(), np.float32(np.linalg.norm(A)), rtol=1e-5)
    assert_close(x.norm(p=1, dim=2), np.abs(A).sum(2), rtol=1e-5)
    assert_close(x.norm(p=float("inf")), np.float32(np.abs(A).max()))
    assert_close(
        x.norm(p=3, dim=(0, 1), keepdim=True),
        (np.abs(A) ** 3).sum((0, 1), keepdims=True) ** (1 / 3),
        rtol=1e-5,
    )


def test_cumsum_logsumexp(x):
    assert_close(x.cumsum(1), A.cumsum(1))
    assert_close(rd.cumprod(x, -1), A.cumprod(-1), rtol=1e-5)
    assert_close(rd.logsumexp(x, 1), np.log(np.exp(A).sum(1)), rtol=1e-5)


def test_reduction_errors(device):
    with pytest.raises(RuntimeError, match="mean"):
        cr.tensor([1, 2], device=device).mean()
    with pytest.raises(IndexError, match="Dimension out of range"):
        cr.zeros(2, 3, device=device).sum(2)
    with pytest.raises(RuntimeError, match="numel"):  # torch: RuntimeError
        cr.zeros(0, device=device).max()
