"""Half-precision matrix products: float16 and bfloat16 operands give a result of their
dtype whose error is the output's rounding, not a half-precision accumulation (cupy: fp16
goes to cuBLAS as fp16 with fp32 accumulation; elsewhere the product is taken in float32)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


@pytest.mark.parametrize("dtype", [gt.float16, gt.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize(
    "shapes", [((16, 512), (512, 8)), ((2, 16, 512), (512, 8))], ids=["mm", "batched"]
)
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


@pytest.mark.sim
def test_bf16_products_on_cuda_go_to_cublas(monkeypatch):
    """The real CUDA backend (the sim tier here, a GPU there) hands bf16 products to cuBLAS
    gemmEx on the bf16 bits, transposed operands included (no copy), and each product
    matches the float32 one rounded to bf16 (fp32 accumulation)."""
    from gpu_tensor import device as dv

    if not dv.real_cuda_available():
        pytest.skip("the cuBLAS path of the real CUDA backend (pytest -m sim, or a GPU)")
    from gpu_tensor.backends._cupy import cupy

    lib = cupy().cuda.cublas
    calls = []
    for name in ("gemmEx", "gemmStridedBatchedEx"):
        real = getattr(lib, name)
        monkeypatch.setattr(
            lib, name, lambda *a, _real=real, _n=name: (calls.append((_n, a[1:3])), _real(*a))[1]
        )
    rng = np.random.default_rng(2)

    def bf(*shape):
        return gt.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda").to(
            gt.bfloat16
        )

    x, w, b3, c3 = bf(6, 32), bf(5, 32), bf(3, 6, 32), bf(3, 32, 4)
    cases = [
        ("x @ w.t()", lambda: x @ w.t(), ("gemmEx", (1, 0))),
        ("w.t().t() @ x.t()", lambda: w @ x.t(), ("gemmEx", (1, 0))),
        ("3-D @ 2-D", lambda: b3 @ w.t(), ("gemmEx", (1, 0))),
        ("bmm", lambda: gt.bmm(b3, c3), ("gemmStridedBatchedEx", (0, 0))),
        ("linear", lambda: gt.nn.functional.linear(x, w), ("gemmEx", (1, 0))),
    ]
    for label, fn, call in cases:
        calls.clear()
        r = fn()
        assert calls == [call], label
        assert r.dtype is gt.bfloat16
    want = x.float().cpu().numpy() @ w.float().cpu().numpy().T  # fp32 products and sums
    np.testing.assert_allclose((x @ w.t()).float().cpu().numpy(), want, rtol=2**-8, atol=1e-6)
    want3 = b3.float().cpu().numpy() @ c3.float().cpu().numpy()
    np.testing.assert_allclose(gt.bmm(b3, c3).float().cpu().numpy(), want3, rtol=2**-8, atol=1e-6)
