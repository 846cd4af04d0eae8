"""The cuda hot path, counted on the real CUDA backend over the simulated CuPy: every warm
elementwise op (mixed dtypes, scalars of another kind, broadcasts and strided operands
included) and a transposed tensor's `.contiguous()` is exactly one kernel launch, with no
device sync, no host wait and no host<->device bytes, in at most 20 calls of gpu_tensor's
own Python functions (issue 23: the launch plan is cached, operands are cast in the kernel).
The values are checked against the same op on cpu."""

import os
import sys

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda

MAX_CALLS = 20
_PKG = os.path.dirname(os.path.abspath(gt.__file__)) + os.sep
_SIM = os.path.join(_PKG, "testing") + os.sep
_ENV = os.path.join(_PKG, "_env.py")


def own_calls(fn):
    """(result, number of Python calls in gpu_tensor/ outside gpu_tensor/testing/, the
    simulator) while `fn()` runs; comprehensions and generators count too, and so does
    reading a setting (gpu_tensor/_env.py) unless the simulator reads it."""
    n = 0

    def prof(frame, event, arg):
        nonlocal n
        if event == "call":
            f = frame.f_code.co_filename
            if f.startswith(_PKG) and not f.startswith(_SIM):
                if f == _ENV:  # a setting the simulator reads is the simulator's call
                    up = frame.f_back
                    while up is not None and up.f_code.co_filename == _ENV:
                        up = up.f_back
                    if up is not None and up.f_code.co_filename.startswith(_SIM):
                        return
                n += 1

    sys.setprofile(prof)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, n


def _operands():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    y = rng.standard_normal((6, 8)).astype(np.float32)
    i = rng.integers(-5, 5, (6, 8))
    h = rng.standard_normal((6, 8)).astype(np.float16)
    row = rng.standard_normal((8,)).astype(np.float32)
    sq = rng.standard_normal((8, 6)).astype(np.float32)
    return {"x": x, "y": y, "i": i, "h": h, "row": row, "sq": sq}


CASES = {
    "x + y": lambda t: t["x"] + t["y"],
    "x * 2.0": lambda t: t["x"] * 2.0,
    "x + int tensor": lambda t: t["x"] + t["i"],
    "int tensor * 2.5": lambda t: t["i"] * 2.5,
    "half + float": lambda t: t["h"] + t["x"],
    "half * 3": lambda t: t["h"] * 3,
    "broadcast row": lambda t: t["x"] - t["row"],
    "transposed operand": lambda t: t["sq_t"] * t["y"],
    "x.exp()": lambda t: t["x"].exp(),
    "x.t().contiguous()": lambda t: t["x_t"].contiguous(),
}


def _sim():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches and calls through the simulated CuPy")
    from gpu_tensor.testing import sim

    return sim


@requires_real_cuda
@pytest.mark.parametrize("case", list(CASES))
def test_a_warm_op_is_one_launch_in_few_calls(case):
    sim = _sim()
    host = _operands()
    cpu = {k: gt.from_numpy(v) for k, v in host.items()}
    cuda = {k: v.to("cuda") for k, v in cpu.items()}
    for d in (cpu, cuda):  # views are made outside the counted call
        d["sq_t"], d["x_t"] = d["sq"].t(), d["x"].t()
    op = CASES[case]

    def run():
        return op(cuda)

    run()
    run()  # warm: the kernel is compiled and the launch planned
    sim.synchronize()
    sim.reset_counters()
    r, calls = own_calls(run)
    sim.synchronize()
    c = sim.counters()
    assert c["kernel_launches"] == 1, c
    assert c["device_syncs"] == 0 and c["host_waits"] == 0, c
    assert c["bytes_copied"] == 0 and c["memcpy_calls"] == 0 and c["cupy_routines"] == 0, c
    assert calls <= MAX_CALLS, f"{case}: {calls} gpu_tensor calls"
    want = op(cpu)
    assert r.dtype is want.dtype and r.shape == want.shape
    np.testing.assert_allclose(r.cpu().numpy(), want.numpy(), rtol=1e-6, atol=0)


@requires_real_cuda
def test_launch_plans_follow_layout_and_alignment():
    """A plan is reused only for the same layout: another shape, a strided operand or an
    operand at another alignment (a view one element in) is planned anew and correct."""
    _sim()
    base = np.arange(40, dtype=np.float32)
    a = gt.from_numpy(base).to("cuda")
    for view in (slice(0, 32), slice(1, 33), slice(0, 40, 2), slice(3, 35)):
        got = (a[view] * 2 + a[view]).cpu().numpy()
        np.testing.assert_array_equal(got, base[view] * 3)
    m = a[:36].reshape(6, 6)
    np.testing.assert_array_equal(
        (m.t() + m).cpu().numpy(), base[:36].reshape(6, 6).T + base[:36].reshape(6, 6)
    )


@requires_real_cuda
def test_mixed_dtypes_match_the_cpu_rules():
    """Promotion with operands cast in the kernel: 0-dim tensors, bool, bfloat16 and uint8
    operands give torch's dtypes and the cpu values."""
    _sim()
    rng = np.random.default_rng(1)
    f = gt.from_numpy(rng.standard_normal(12).astype(np.float32))
    cases = [
        (
            f,
            gt.tensor(3, dtype=gt.int64, device="cpu"),
        ),  # a 0-dim int tensor: the float tensor wins
        # a 0-dim float tensor with a uint8 one: float32
        (gt.tensor([1, 2, 3], dtype=gt.uint8, device="cpu"), gt.tensor(2.5, device="cpu")),
        (gt.tensor([True, False, True], device="cpu"), 7),
        (f.to(gt.bfloat16), f),
        (f.to(gt.bfloat16), 1.5),
        (
            gt.tensor([250, 7, 3], dtype=gt.uint8, device="cpu"),
            gt.tensor([10, -128, 4], dtype=gt.int8, device="cpu"),
        ),
    ]
    for a, b in cases:
        want = a + b
        bb = b.to("cuda") if isinstance(b, gt.Tensor) else b
        got = a.to("cuda") + bb
        assert got.dtype is want.dtype, (a.dtype, b)
        np.testing.assert_array_equal(got.cpu().float().numpy(), want.float().numpy())


@requires_real_cuda
def test_the_warm_entry_is_bound_once_and_results_give_their_blocks_back(monkeypatch):
    """With one device the backend's `kernel` becomes eager.run_planned bound to its plans
    and allocator after the first op (a frame less per op); with more it stays the method,
    entering the device each call. Both give the same values, and a dropped result's
    block goes back to the allocator (its owner is a tuple, freed by its finaliser)."""
    _sim()
    from functools import partial

    from gpu_tensor.fusion import eager

    x = gt.from_numpy(np.arange(12, dtype=np.float32)).to("cuda")
    y = x * 3
    backend = x.device._backend
    f32 = np.dtype(np.float32)
    x + y
    bound = vars(backend)["kernel"]
    assert isinstance(bound, partial) and bound.func is eager.run_planned
    assert bound.args == (backend._plans, backend._result)
    got = backend.kernel("add", (x._data, y._data), f32, None, None)
    monkeypatch.delattr(backend, "kernel")  # the method again, as with two devices
    monkeypatch.setattr(backend, "_one_device", False)
    again = backend.kernel("add", (x._data, y._data), f32, None, None)
    assert "kernel" not in vars(backend)  # several devices: nothing bound
    want = np.arange(12, dtype=np.float32) * 4
    for r in (got, again):
        np.testing.assert_array_equal(gt.Tensor._make(r, x.device, gt.float32).cpu().numpy(), want)
    del got, again, r
    before = gt.cuda.memory_allocated()
    z = x + y
    assert gt.cuda.memory_allocated() > before  # 48 bytes, in a rounded-up block
    del z
    assert gt.cuda.memory_allocated() == before


@requires_real_cuda
def test_the_plan_key_shortcuts_give_the_general_key():
    """run_planned builds the key of one array, or an array then an array or a scalar,
    without its loop (eager._key): the same tuple, so a plan is found whichever way."""
    _sim()
    from gpu_tensor.fusion import eager

    x = gt.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)).to("cuda")
    i = gt.from_numpy(np.arange(4)).to("cuda")
    h = x.to(gt.float16)
    backend = x.device._backend
    f32, f16 = np.dtype(np.float32), np.dtype(np.float16)
    calls = [
        ("add", (x._data, x.t()._data.T), f32, None, None),  # two arrays
        ("add", (x._data, i._data), f32, None, None),  # mixed dtypes, a broadcast
        ("mul", (x._data, 2.0), f32, None, None),  # an array and a scalar
        ("mul", (2, x._data), f32, None, None),  # a scalar first: the loop
        ("exp", (x._data,), f32, None, None),  # one array
        ("add", (h._data, i._data), f16, None, (f16, False)),  # via: the loop
        ("where", (x._data > 3, x._data, 0.5), f32, None, None),  # three operands: the loop
    ]
    for key, inputs, out, params, via in calls:
        plans: dict = {}
        r = eager.run_planned(plans, backend._result, key, inputs, out, params, via)
        assert list(plans) == [eager._key(key, inputs, out, params, via)], key
        again = eager.run_planned(plans, backend._result, key, inputs, out, params, via)
        assert len(plans) == 1  # the second call found the plan
        np.testing.assert_array_equal(r.get(), again.get())
