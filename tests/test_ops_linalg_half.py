"""Half-precision matrix products: float16 and bfloat16 operands give a result of their
dtype whose error is the output's rounding, not a half-precision accumulation (cupy: fp16
goes to cuBLAS as fp16 with fp32 accumulation; elsewhere the product is taken in float32)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


@pytest.mark.parametrize("dtype", [gt.float16, gt.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("shapes", [((16, 512), (512, 8)), ((2, 16, 512), (512, 8))],
                         ids=["mm", "batched"])
def test_half_matmul_accumulates_in_float32(device, dtype, shapes):
    rng = np.random.default_rng(1)
    a = gt.tensor(rng.standard_normal(shapes[0]).astype(np.float32), device=device).to(dtype)
    b = gt.tensor(rng.standard_normal(shapes[1]).astype(np.float32), device=device).to(dtype)
    r = a @ b
    assert r.dtype is dtype
    ref = a.float().cpu().numpy().astype(np.float64) @ b.float().cpu().numpy().astype(np.float64)
    ulp = 2.0 ** (-10 if dtype is gt.float16 else -7)  # the output's relative rounding
    err = np.abs(r.float().cpu().numpy() - ref)
    # a fp16 accumulation over k=512 would be off by many ulps; fp32 accumulation: <= 1
    assert (err <= ulp * np.abs(ref) + 1e-3).all(), err.max()
