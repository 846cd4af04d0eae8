"""The cuda hot path, counted on the real CUDA backend over the simulated CuPy: every warm
elementwise op (mixed dtypes, scalars of another kind, broadcasts and strided operands
included) and a transposed tensor's `.contiguous()` is exactly one kernel launch, with no
device sync, no host wait and no host<->device bytes, in at most 20 calls of gpu_tensor's
own Python functions (issue 23: the launch plan is cached, operands are cast in the kernel).
The values are checked against the same op on cpu."""

import gc
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
def test_the_warm_entry_enters_its_device_with_several_and_results_give_their_blocks_back(
    monkeypatch,
):
    """With one device the warm entry is the packing function itself; with more it runs
    inside the backend's device (`with`). Both give the same values, and a dropped
    result's block goes back to the allocator (its owner is a tuple, freed by its
    finaliser)."""
    _sim()
    from gpu_tensor.backends import cuda_warm

    x = gt.from_numpy(np.arange(12, dtype=np.float32)).to("cuda")
    y = x * 3
    backend = x.device._backend
    f32 = np.dtype(np.float32)
    got = (x + y)._data
    xd = x._data
    layout = ((12,), True, xd.data.ptr & 15)  # y's too: made alike
    entry = backend.warm[("add:warm", x._warm_key(), y._warm_key())]
    launch = backend.warm[("add", f32, f32, *layout, f32, *layout)]
    assert entry.__name__ == "run"
    monkeypatch.setattr(backend, "_one_device", False)
    several = cuda_warm.bind(backend, launch, f32, False)
    assert several.__name__ == "on_device"
    entered, enter = [], type(backend._dev).__enter__
    monkeypatch.setattr(type(backend._dev), "__enter__", lambda d: entered.append(d) or enter(d))
    again = several(x._data, y._data)
    assert entered == [backend._dev]
    want = np.arange(12, dtype=np.float32) * 4
    for r in (got, again):
        np.testing.assert_array_equal(gt.Tensor._make(r, x.device, gt.float32).cpu().numpy(), want)
    del got, again, r
    gc.collect()  # earlier garbage holding cuda memory, else it may be freed in between
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


def _outcome(fn, *args):
    """(dtype, host values) of fn(*args), or (exception class, message) where it raises."""
    try:
        r = fn(*args)
    except Exception as exc:  # noqa: BLE001 - the outcome compared, whatever it is
        return type(exc), str(exc)
    return r.dtype, r.cpu().float().numpy() if r.dtype is gt.bfloat16 else r.cpu().numpy()


# (op, operand, other operand: a name in _cases' tensors or a Python value), one per branch
# of the written-out cuda path: the op's own table, the shared one, a scalar of each kind,
# via a half dtype, the one-element factor, refusals, complex, a 0-dim cpu tensor, shapes
BINARY_CASES = [
    ("add", "f32", "f32"),
    ("add", "f32", "i64"),
    ("lt", "f16", "f32"),
    ("add", "bf16", "f16"),  # rounded via bfloat16 in the kernel
    ("mul", "bf16", "one"),  # a one-element factor at full precision: apply()
    ("mul", "f32", 2.5),
    ("sub", "i64", 2.5),
    ("add", "f16", 3),
    ("sub", "b", "b"),  # refused: bool - bool
    ("sub", "f32", True),  # refused: - a bool
    ("floor_divide", "i64", "zeros"),  # integer division by zero
    ("floor_divide", "i64", 0),
    ("pow", "i64", -1),  # int ** negative int
    ("add", "c64", "f32"),  # complex: no kernel, apply() runs it
    ("add", "f32", 1j),
    ("add", "f32", "cpu0"),  # a 0-dim cpu tensor joins as a scalar
    ("add", "f32", "row"),
    ("add", "f32", "bad"),  # does not broadcast
]
UNARY_CASES = [("exp", "f32"), ("exp", "i64"), ("neg", "b"), ("abs", "c64"), ("sqrt", "f16")]


def _cases():
    rng = np.random.default_rng(3)
    f = rng.standard_normal((3, 4)).astype(np.float32)
    host = {
        "f32": gt.from_numpy(f),
        "f16": gt.from_numpy(f.astype(np.float16)),
        "bf16": gt.from_numpy(f).to(gt.bfloat16),
        "i64": gt.from_numpy(rng.integers(-4, 5, (3, 4))),
        "zeros": gt.zeros((3, 4), dtype=gt.int64),
        "b": gt.from_numpy(rng.random((3, 4)) < 0.5),
        "c64": gt.from_numpy((f + 1j * f).astype(np.complex64)),
        "one": gt.from_numpy(np.array([1.5], np.float32)),
        "row": gt.from_numpy(rng.standard_normal(4).astype(np.float32)),
        "bad": gt.from_numpy(rng.standard_normal(5).astype(np.float32)),
    }
    t = {k: v.to("cuda") for k, v in host.items()}
    t["cpu0"] = gt.tensor(2.0)
    return t


def _same(got, want, what):
    assert got[0] == want[0], (what, got, want)
    if isinstance(got[0], type):
        assert got[1] == want[1], what
    else:
        np.testing.assert_array_equal(got[1], want[1], err_msg=str(what))


@requires_real_cuda
def test_the_written_out_cuda_paths_give_what_apply_gives():
    """make_binary's and make_unary's cuda branches (the kernel path written out in the
    operator, its out dtypes kept per op and dtype) against the general path, apply(), on
    the same operands, each taken twice (the second from the kept entry), reflected too
    where the other operand is a Python scalar: the same dtype and values, or the same
    error."""
    _sim()
    from gpu_tensor.ops import _dispatch as d

    t = _cases()
    for key, a, o in BINARY_CASES:
        x, b = t[a], (t[o] if isinstance(o, str) else o)
        for _ in range(2):
            want = _outcome(d.apply, key, x, b)
            _same(_outcome(d._BINARY[key], x, b), want, (key, a, o))
            if not isinstance(o, str):  # a Python scalar: the reflected op too
                want = _outcome(d.apply, key, b, x)
                _same(_outcome(d._RBINARY[key], x, b), want, ("r" + key, a, o))
    for key, a in UNARY_CASES:
        for _ in range(2):
            _same(_outcome(getattr(gt, key), t[a]), _outcome(d.apply, key, t[a]), (key, a))


@requires_real_cuda
def test_a_plan_keeps_its_results_layout_and_packs_a_trailing_scalar_directly():
    """run_planned gives the plan to the allocator, which keeps the result's layout there
    after the first result (the warm call hashes no (shape, dtype)); an array then a
    scalar is packed without the loops, a scalar first through them, with equal values;
    a result the allocator gives unaligned is still computed right (unplanned)."""
    _sim()
    from gpu_tensor.backends.cuda import _result_layout
    from gpu_tensor.fusion import eager

    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = gt.from_numpy(host).to("cuda")
    backend = x.device._backend
    f32 = np.dtype(np.float32)
    plans: dict = {}
    for inputs, want in (
        (("mul", (x._data, 2.5)), host * 2.5),
        (("sub", (2.5, x._data)), 2.5 - host),
    ):
        key, args = inputs
        for _ in range(2):
            r = eager.run_planned(plans, backend._result, key, args, f32, None)
            np.testing.assert_array_equal(r.get(), want)
        launch = plans[eager._key(key, args, f32, None, None)]
        assert launch.result == _result_layout((3, 4), f32)
        assert launch.scalar is (np.float64 if key == "mul" else None)
    cp = backend.xp
    spare = cp.empty(13, dtype=np.float32)
    unaligned = spare[1:].reshape(3, 4)  # 4 bytes into an allocator block
    assert unaligned.data.ptr & 15
    r = eager.run_planned(
        plans, lambda shape, dtype, launch: unaligned, "mul", (x._data, 2.5), f32, None
    )
    assert r is unaligned
    np.testing.assert_array_equal(r.get(), host * 2.5)


@requires_real_cuda
def test_c_contiguous_operands_of_one_shape_share_a_plan_whatever_their_size1_strides():
    """The plan key holds True for a C-contiguous operand, not its strides: an operand
    whose size-1 dim has another stride (still C-contiguous) finds the same plan and gives
    the same values; a transposed operand of the same shape gets its own plan."""
    _sim()
    from gpu_tensor.fusion import eager

    host = np.arange(12, dtype=np.float32).reshape(3, 1, 4)
    t = gt.from_numpy(host).to("cuda")
    x, backend = t._data, t.device._backend
    cp, f32 = backend.xp, np.dtype(np.float32)
    odd = cp.ndarray((3, 1, 4), f32, memptr=x.data, strides=(16, 404, 4))
    assert odd._c_contiguous and odd.strides != x.strides
    plans: dict = {}
    for b in (x, odd):
        r = eager.run_planned(plans, backend._result, "add", (x, b), f32, None)
        np.testing.assert_array_equal(r.get(), host * 2)
    assert len(plans) == 1
    sq = gt.from_numpy(np.arange(16, dtype=np.float32).reshape(4, 4)).to("cuda")._data
    r = eager.run_planned(plans, backend._result, "add", (sq, sq), f32, None)
    rt = eager.run_planned(plans, backend._result, "add", (sq, sq.T), f32, None)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(r.get(), a * 2)
    np.testing.assert_array_equal(rt.get(), a + a.T)
    assert len(plans) == 3


@requires_real_cuda
def test_a_derivative_where_with_a_number_first_is_one_launch():
    """relu's gradient, torch's `where(out <= 0, 0.0, g)`: the comparison and one where, with
    no negation of the mask between them (derivatives.where takes the number where it is)."""
    sim = _sim()
    a = np.array([[-1.0, 0.0, 2.0, np.nan]], np.float32)
    x = gt.from_numpy(a).to("cuda").requires_grad_(True)
    g = gt.from_numpy(np.full((1, 4), 3.0, np.float32)).to("cuda")
    for _ in range(2):  # warm: kernels compiled
        x.grad = None
        y = x.relu()
        sim.synchronize()
        sim.reset_counters()
        y.backward(g)
        sim.synchronize()
        launches = sim.counters()["kernel_launches"]
    # le, where; the leaf keeps the fresh gradient without a copy
    assert launches == 2
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0.0, 0.0, 3.0, 3.0]])
