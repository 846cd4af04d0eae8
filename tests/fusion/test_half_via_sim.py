"""Half and bfloat16 ops with an operand of another dtype on cuda: torch rounds that operand
to the half type before computing in float32 (apply()'s `via`). The cuda fast path does the
same rounding inside the generated kernel: one launch, no copy first, and the values and
dtype of the cpu device (which rounds with a separate cast), on the simulated CuPy."""

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda


def _operands():
    rng = np.random.default_rng(3)
    # ints past 2048 are not all halves, so rounding them first changes some sums
    i = rng.integers(-6000, 6000, 64)
    return {
        "h": (rng.standard_normal(64) * 100).astype(np.float16),
        "b": (rng.standard_normal(64) * 100).astype(np.float32),  # made bfloat16 below
        "i": i,
        "i32": i.astype(np.int32),
        "u": rng.integers(0, 255, 64).astype(np.uint8),
        "m": rng.random(64) > 0.5,
    }


CASES = {
    "half + int64": lambda t: t["h"] + t["i"],
    "int64 + half": lambda t: t["i"] + t["h"],
    "half - int32": lambda t: t["h"] - t["i32"],
    "half * bool": lambda t: t["h"] * t["m"],
    "half / int64": lambda t: t["h"] / t["i"],
    "bfloat16 * int64": lambda t: t["b"] * t["i"],
    "bfloat16 - uint8": lambda t: t["b"] - t["u"],
    "int64 + bfloat16 0-dim": lambda t: t["i"] + t["b"][5],
    "maximum(half, int32)": lambda t: gt.maximum(t["h"], t["i32"]),
}


def _tensors():
    cpu = {k: gt.from_numpy(v) for k, v in _operands().items()}
    cpu["b"] = cpu["b"].to(gt.bfloat16)
    return cpu, {k: v.to("cuda") for k, v in cpu.items()}


@requires_real_cuda
@pytest.mark.parametrize("case", list(CASES))
def test_the_half_rounding_is_in_the_kernel(case):
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy")
    from gpu_tensor.testing import sim

    cpu, cuda = _tensors()
    op = CASES[case]
    op(cuda)  # warm: planned and compiled
    sim.synchronize()
    sim.reset_counters()
    got = op(cuda)
    sim.synchronize()
    c = sim.counters()
    assert c["kernel_launches"] == 1 and c["memcpy_calls"] == 0, c
    assert c["device_syncs"] == 0 and c["cupy_routines"] == 0, c
    want = op(cpu)
    assert got.dtype is want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.cpu().float().numpy(), want.float().numpy())


def test_the_cases_tell_rounding_first_from_not():
    """The expected values depend on the rounding: computing half + int64 in float32
    without rounding the int to half first gives other halves for some elements."""
    t = _operands()
    rounded = (t["h"].astype(np.float32) + t["i"].astype(np.float16).astype(np.float32)).astype(
        np.float16
    )
    direct = (t["h"].astype(np.float32) + t["i"].astype(np.float32)).astype(np.float16)
    assert (rounded != direct).any()
    want = (gt.from_numpy(t["h"]) + gt.from_numpy(t["i"])).numpy()
    np.testing.assert_array_equal(want, rounded)
