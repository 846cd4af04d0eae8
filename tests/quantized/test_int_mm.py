"""gt._int_mm / int8_matmul: exact int32 products on every device (no M > 16 limit)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


@pytest.mark.parametrize("m,k,n", [(1, 5, 3), (8, 7, 4), (17, 64, 9), (3, 4093, 5)])
def test_exact_against_int64(device, m, k, n):
    rng = np.random.default_rng(m * k)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    out = gt._int_mm(gt.tensor(a, device=device), gt.tensor(b, device=device))
    assert out.dtype is gt.int32 and out.shape == (m, n)
    np.testing.assert_array_equal(out.cpu().numpy(), a.astype(np.int64) @ b.astype(np.int64))


def test_extremes_do_not_overflow(device):
    k = 4096  # -128 * -128 * 4096 = 2**26: far from int32's limit, and exact
    a = gt.full((2, k), -128, dtype=gt.int8, device=device)
    out = gt._int_mm(a, a.t().contiguous())
    assert out.cpu().tolist() == [[128 * 128 * k] * 2] * 2


def test_errors():
    a = gt.ones(2, 3, dtype=gt.int8)
    with pytest.raises(RuntimeError, match="Expected self dtype to be torch.int8"):
        gt._int_mm(a.float(), a.t())
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        gt._int_mm(a, a)


@pytest.mark.cuda
@pytest.mark.parametrize(
    "m,k", [(1, 64), (17, 4093), pytest.param(4096, 4096, marks=pytest.mark.hardware)]
)  # the simulator's product is numpy's int64 one
def test_cublas_gemmex_exact(m, k):
    """Real cuda (and the simulator): the cuBLAS int8 path, K padded where it is not a
    multiple of 4, against an exact float64 product."""
    rng = np.random.default_rng(k)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = rng.integers(-128, 128, (72, k)).astype(np.int8)
    from gpu_tensor.quantized.int_mm import int8_mm_nt

    out = int8_mm_nt(gt.tensor(a, device="cuda"), gt.tensor(w, device="cuda"))
    want = (a.astype(np.float64) @ w.astype(np.float64).T).astype(np.int64)
    np.testing.assert_array_equal(out.cpu().numpy(), want)
