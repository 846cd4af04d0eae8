"""matmul/mm/bmm/mv/dot/outer/einsum vs numpy on every device."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.ops import linalg
from gpu_tensor.testing import assert_close

rng = np.random.default_rng(0)
M = rng.standard_normal((3, 4)).astype(np.float32)
N = rng.standard_normal((4, 5)).astype(np.float32)
B1 = rng.standard_normal((2, 3, 4)).astype(np.float32)
B2 = rng.standard_normal((2, 4, 5)).astype(np.float32)


def test_matmul_shapes(device):
    t = lambda a: cr.tensor(a, device=device)  # noqa: E731
    assert_close(t(M) @ t(N), M @ N, rtol=1e-5)
    assert_close(linalg.mm(t(M), t(N)), M @ N, rtol=1e-5)
    assert_close(linalg.bmm(t(B1), t(B2)), B1 @ B2, rtol=1e-5)
    assert_close(t(B1) @ t(N), B1 @ N, rtol=1e-5)  # broadcasting batch
    assert_close(t(M) @ t(N[:, 0]), M @ N[:, 0], rtol=1e-5)  # matrix @ vector
    assert_close(linalg.mv(t(M), t(N[:, 0])), M @ N[:, 0], rtol=1e-5)
    assert_close(linalg.dot(t(N[:, 0]), t(N[:, 1])), np.float32(N[:, 0] @ N[:, 1]), rtol=1e-5)
    assert_close(linalg.outer(t(M[0]), t(N[0])), np.outer(M[0], N[0]), rtol=1e-5)
    assert_close(linalg.einsum("ij,jk->ik", t(M), t(N)), M @ N, rtol=1e-5)
    assert_close(t(M).t() @ t(M), M.T @ M, rtol=1e-5)  # strided operand


def test_matmul_int_and_half(device):
    i = cr.tensor([[1, 2], [3, 4]], device=device)
    assert (i @ i).tolist() == [[7, 10], [15, 22]] and (i @ i).dtype is dt.int64
    h = cr.tensor(M, dtype=dt.float16, device=device)
    r = h @ cr.tensor(N, dtype=dt.float16, device=device)
    assert r.dtype is dt.float16
    assert_close(
        r,
        (M.astype(np.float16).astype(np.float32) @ N.astype(np.float16).astype(np.float32)).astype(
            np.float16
        ),
        rtol=2e-3,
        atol=2e-3,
    )


def test_matmul_errors(device):
    a = cr.tensor(M, device=device)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ cr.tensor(N, dtype=dt.float64, device=device)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        a @ a
    with pytest.raises(RuntimeError, match="2D"):
        linalg.mm(cr.tensor(B1, device=device), a)
    with pytest.raises(RuntimeError, match="1 dimension"):
        a @ cr.tensor(1.0, device=device)
