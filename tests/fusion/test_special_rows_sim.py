"""On cuda each binary special function and elementwise flag is ONE generated kernel: no
operand copies, no host round trip, no device sync (issue 23), counted by the simulated CuPy,
whose kernels run their CUDA source; the values are the cpu row's (numpy)."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_special_rows import BINARY, FLAGS, row_function

import gpu_tensor as gt
from gpu_tensor import device as dv

pytestmark = pytest.mark.sim

_ROWS = BINARY + FLAGS
_A = np.array(
    [[0.0, -0.0, 1.5, -2.25], [3.0, np.inf, -np.inf, np.nan], [1e-3, -7.5, 0.5, -1.0]],
    dtype=np.float32,
)
_B = np.array(
    [[0.5, 2.0, -0.0, 0.0], [-3.0, np.inf, 2.5, 1.0], [-np.inf, np.nan, -1.0, -1.0]],
    dtype=np.float32,
)


def _sim():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy (GPU_TENSOR_FALLBACK=sim)")
    from gpu_tensor.testing import sim

    return sim


@pytest.mark.parametrize("key", _ROWS)
def test_one_launch_no_copy_no_sync(key):
    sim = _sim()
    unary = key.startswith("is") or key == "signbit"
    # float_power computes in float64: float32 operands would be cast first (a launch each,
    # until operands are cast inside the kernel: issue 23 item 2)
    dt = gt.float64 if key == "float_power" else gt.float32
    cpu = [gt.tensor(_A, dtype=dt, device="cpu"), gt.tensor(_B, dtype=dt, device="cpu")][
        : 1 if unary else 2
    ]
    args = [t.to("cuda") for t in cpu]
    row_function(key)(*args)  # warm: the kernel is compiled and cached
    sim.reset_counters()
    r = row_function(key)(*args)
    c = sim.counters()
    assert c["kernel_launches"] == 1, c
    assert c["device_syncs"] == c["host_waits"] == 0, c
    assert c["bytes_copied"] == c["memcpy_calls"] == c["cupy_routines"] == 0, c
    want = row_function(key)(*cpu)
    assert r.dtype is want.dtype
    np.testing.assert_allclose(r.cpu().numpy(), want.numpy(), rtol=2e-6, atol=0, equal_nan=True)


def test_fused_with_neighbours_is_one_launch():
    sim = _sim()
    a, b = gt.tensor(_A, device="cuda"), gt.tensor(_B, device="cuda")

    @gt.fuse
    def f(x, y):
        return gt.logaddexp(x, y) * gt.hypot(x, y) + gt.atan2(x, y).isfinite()

    f(a, b)
    sim.reset_counters()
    r = f(a, b)
    c = sim.counters()
    assert c["kernel_launches"] == 1 and c["device_syncs"] == 0, c
    want = f.fn(gt.tensor(_A, device="cpu"), gt.tensor(_B, device="cpu"))
    np.testing.assert_allclose(r.cpu().numpy(), want.numpy(), rtol=2e-6, equal_nan=True)


@pytest.mark.parametrize("op", ["floordiv", "mod", "truediv", "fmod", "scalar_floordiv"])
def test_integer_division_is_one_launch(op):
    """Integer floor_divide/remainder/fmod and true division of integer tensors on cuda: one
    generated kernel (floor_divide rounds toward -inf, remainder takes the divisor's sign).
    A zero divisor raises as on cpu: a number is checked on the host (no sync), a tensor
    divisor by one reduction and a sync (torch's cuda kernels check nothing; ours keep the
    error every other device gives)."""
    sim = _sim()
    a_host = np.array([7, -7, 5, -9, 0, 6], dtype=np.int64)
    b_host = np.array([2, 2, -3, -4, 3, 1], dtype=np.int64)
    a, b = gt.tensor(a_host, device="cuda"), gt.tensor(b_host, device="cuda")
    fn = {
        "floordiv": lambda: a // b,
        "mod": lambda: a % b,
        "truediv": lambda: a / b,
        "fmod": lambda: gt.fmod(a, b),
        "scalar_floordiv": lambda: a // -3,
    }[op]
    fn()
    sim.synchronize()
    sim.reset_counters()
    r = fn()
    c = sim.counters()
    checked = op in ("floordiv", "mod", "fmod")  # a tensor divisor of an integer division
    assert c["kernel_launches"] == 1, c  # the op: one generated kernel
    assert c["cupy_routines"] == 2 * checked, c  # the zero test: divisor == 0, then any()
    assert c["device_syncs"] + c["host_waits"] == checked, c  # reading that test's answer
    want = {
        "floordiv": a_host // b_host,
        "mod": a_host % b_host,
        "truediv": a_host.astype(np.float32) / b_host.astype(np.float32),
        "fmod": np.fmod(a_host, b_host),
        "scalar_floordiv": a_host // -3,
    }[op]
    np.testing.assert_array_equal(r.cpu().numpy(), want)
    if op != "truediv":
        zero = gt.tensor([1, 0], device="cuda")
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            {
                "floordiv": lambda: a[:2] // zero,
                "mod": lambda: a[:2] % zero,
                "fmod": lambda: gt.fmod(a[:2], zero),
                "scalar_floordiv": lambda: a // 0,
            }[op]()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nextafter_on_half_types_is_one_launch(dtype):
    """The 16-bit step happens in the kernel (its {storage} type), with no float32 detour."""
    sim = _sim()
    dt = getattr(gt, dtype)
    cpu = [gt.tensor(_A, dtype=dt, device="cpu"), gt.tensor(_B, dtype=dt, device="cpu")]
    args = [t.to("cuda") for t in cpu]
    gt.nextafter(*args)
    sim.reset_counters()
    r = gt.nextafter(*args)
    c = sim.counters()
    assert c["kernel_launches"] == 1, c
    assert c["device_syncs"] == c["host_waits"] == 0, c
    assert c["bytes_copied"] == c["memcpy_calls"] == c["cupy_routines"] == 0, c
    want = gt.nextafter(*cpu)
    assert r.dtype is dt
    got, ref = r.cpu().view(gt.int16).numpy(), want.view(gt.int16).numpy()
    nan = np.isnan(want.float().numpy())
    np.testing.assert_array_equal(got[~nan], ref[~nan])
    assert np.isnan(r.cpu().float().numpy()[nan]).all()
