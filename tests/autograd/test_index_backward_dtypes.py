"""Backward of indexing, index_select and take accumulates through the backend's index_add_,
so it works for dtypes cupy.add.at rejects (bfloat16 above all), on every device."""

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr


def test_index_backward_in_bfloat16_and_half(device):
    for dtype in (dt.bfloat16, dt.float16):
        x = cr.ones(4, dtype=dtype, device=device, requires_grad=True)
        idx = cr.tensor([1, 1, 3], device=device)
        (x[idx].sum() + x.index_select(0, idx).sum() + x.take(idx).sum()).backward()
        assert x.grad.dtype is dtype
        assert x.grad.tolist() == [0.0, 6.0, 0.0, 3.0]
