"""gpu_tensor's one float -> integer rule, on every path: saturate to the integer range,
NaN -> 0. The GPU's conversions saturate (cvt.rzi), so the cpu backend, the emulated device,
the copy kernels under host emulation and cuda (over the simulator here, a GPU in
gpu_check.sh) all do; numpy alone would wrap (inf -> INT_MIN, -1.0 -> uint8 255)."""

import math

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.kernel import copy as kcopy
from gpu_tensor.kernel import emulate

VALUES = [math.nan, math.inf, -math.inf, 1e20, -1e20, 3.7, -3.7, 300.0, -1.0]
I32 = [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 3, -3, 300, -1]
U8 = [0, 255, 0, 255, 0, 3, 0, 255, 0]
I64 = [0, 2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 3, -3, 300, -1]


def test_casts_saturate(device):
    x = cr.tensor(VALUES, device=device)
    assert x.to(dt.int32).tolist() == I32
    assert x.to(dt.uint8).tolist() == U8
    assert x.double().to(dt.int64).tolist() == I64
    assert x.t().to(dt.int32).tolist() == I32  # 1-d: a view, same path


def test_copy_into_integers_saturates(device):
    x = cr.tensor(VALUES, device=device)
    y = cr.zeros(len(VALUES), dtype=dt.uint8, device=device)
    y.copy_(x)
    assert y.tolist() == U8
    m = cr.tensor([VALUES, VALUES], device=device).t()  # strided: the nd copy kernel on cuda
    out = cr.zeros(len(VALUES), 2, dtype=dt.int32, device=device)
    out.copy_(m)
    assert out[:, 1].tolist() == I32


@pytest.mark.skipif(emulate.compiler() is None, reason="host emulation needs g++")
def test_copy_kernels_saturate_under_host_emulation():
    src = np.array([VALUES, VALUES], np.float32).T  # a transposed source: a kernel, no memcpy
    for dtype, want in ((np.int32, I32), (np.uint8, U8)):
        dst = np.zeros(src.shape, dtype)
        plan = kcopy.strided_copy(dst, src, launcher=kcopy.HostLauncher())
        assert plan.path not in ("memcpy", "fallback")
        assert dst[:, 0].tolist() == want
