"""The cuda warm path (backends/cuda_warm.py): an operator's key of its operands finds the
backend's entry, which allocates, packs and launches in one frame. Checked on the real
CUDA backend over the simulated CuPy: the same results as apply() for every argument
order an entry is written out for, exactly two Python frames of ours outside the
allocator per warm op, the result's creation site is the caller's line, and the entries
live and die with the launch plans they are bound to."""

import inspect
import os
import sys

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda

_PKG = os.path.dirname(os.path.abspath(gt.__file__)) + os.sep
_NOT_COUNTED = tuple(_PKG + d + os.sep for d in ("testing", "memory"))


def _sim():
    if not dv.cuda_is_simulated():
        pytest.skip("reads the cuda backend's plan cache through the simulated CuPy")


def _frames(fn):
    """(result, qualnames of the Python calls of gpu_tensor/ outside its allocator
    (memory/), the simulator (testing/) and settings (_env.py), in order) of `fn()`."""
    seen = []

    def prof(frame, event, arg):
        f = frame.f_code.co_filename
        if event == "call" and f.startswith(_PKG) and not f.startswith(_NOT_COUNTED):
            if not f.endswith("_env.py"):
                seen.append(frame.f_code.co_qualname)

    sys.setprofile(prof)
    try:
        r = fn()
    finally:
        sys.setprofile(None)
    return r, seen


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except Exception as exc:  # noqa: BLE001 - the outcome compared, whatever it is
        return type(exc), str(exc)
    return r.dtype, r.cpu().numpy()


@requires_real_cuda
def test_each_written_out_order_gives_what_apply_gives():
    """An array alone, two arrays (the operator's order and reflected), an array then a
    number (and reflected: 2.0 - x), an array read twice, a 0-dim tensor, a stride-0
    broadcast, an empty result and an int too large for the kernel's int64 (apply()),
    each taken twice (the second from the kept entry): dtype and values as apply()."""
    _sim()
    from gpu_tensor.ops import _dispatch as d

    rng = np.random.default_rng(7)
    host = rng.standard_normal((3, 4)).astype(np.float32)
    x = gt.from_numpy(host).to("cuda")
    y = gt.from_numpy(host[::-1].copy()).to("cuda")
    i = gt.from_numpy(rng.integers(-4, 5, (3, 4))).to("cuda")
    zero_dim = gt.tensor(1.5).to("cuda")
    wide = gt.from_numpy(host[:1]).to("cuda").expand(3, 4)  # stride 0
    empty = gt.from_numpy(np.zeros((0, 4), np.float32)).to("cuda")
    cases = [
        (d._BINARY["sub"], (x, y), ("sub", x, y)),
        (d._RBINARY["sub"], (x, y), ("sub", y, x)),  # y - x through x's reflected op
        (d._BINARY["mul"], (x, 2.5), ("mul", x, 2.5)),
        (d._RBINARY["sub"], (x, 2.5), ("sub", 2.5, x)),
        (d._BINARY["add"], (x, x), ("add", x, x)),
        (d._BINARY["add"], (x, zero_dim), ("add", x, zero_dim)),
        (d._BINARY["lt"], (wide, x), ("lt", wide, x)),
        (d._BINARY["add"], (empty, 1.0), ("add", empty, 1.0)),
        (d._BINARY["mul"], (i, 2**70), ("mul", i, 2**70)),
        (gt.exp, (x,), ("exp", x)),
        (gt.exp, (empty,), ("exp", empty)),
    ]
    for op, args, general in cases:
        want = _outcome(d.apply, *general)
        for _ in range(2):
            got = _outcome(op, *args)
            assert got[0] == want[0], (general, got, want)
            if isinstance(want[0], type):
                assert got[1] == want[1]
            else:
                np.testing.assert_array_equal(got[1], want[1], err_msg=str(general))


@requires_real_cuda
@pytest.mark.parametrize("expr", ["x + y", "x * 2.0", "2.0 - x", "x.exp()"])
def test_a_warm_op_is_the_operator_and_its_entry(expr):
    """Outside the allocator, a warm op runs two Python frames of ours: the operator and
    the backend's entry (no backend.kernel, run_planned, _result or Tensor._make)."""
    _sim()
    x = gt.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)).to("cuda")
    y = x * 3
    op = eval("lambda: " + expr, {"x": x, "y": y})  # noqa: S307 - the test's own text
    op()
    r, seen = _frames(op)
    assert len(seen) == 2, seen
    assert seen[1] == "bind.<locals>.run", seen
    want = eval(expr, {"x": x.cpu(), "y": y.cpu()})  # noqa: S307
    np.testing.assert_allclose(r.cpu().numpy(), want.numpy(), rtol=1e-6)  # (exp: CUDA expf)


@requires_real_cuda
def test_a_warm_results_creation_site_is_the_callers_line():
    """The entry tells malloc that it and the operator are gpu_tensor's (`inside`): the
    block's creation site is still the line that wrote the op, with one device or
    several (the entry inside the device's `with`)."""
    _sim()
    from gpu_tensor.backends import cuda_warm
    from gpu_tensor.fusion import eager
    from gpu_tensor.memory import live

    if not live.enabled():
        pytest.skip("creation sites are off (GPU_TENSOR_RECORD_SITES=0)")
    x = gt.from_numpy(np.ones((3, 4), np.float32)).to("cuda")
    backend = x.device._backend
    for _ in range(2):
        line = inspect.currentframe().f_lineno + 1
        r = x + x
        block = backend._alloc.lookup(r._data.data.ptr)
        assert block.site[1:] == (line, "test_a_warm_results_creation_site_is_the_callers_line")
    f32 = np.dtype(np.float32)
    launch = eager.launch_for(backend._plans, "add", (x._data, x._data), f32)  # x + x's
    backend._one_device = False
    try:
        entry = cuda_warm.bind(backend, launch, f32, False)
    finally:
        backend._one_device = True

    def operator(a):  # stands for the operator frame the entry counts as inside
        return entry(a, a)

    line = inspect.currentframe().f_lineno + 1
    out = operator(x._data)
    assert backend._alloc.lookup(out.data.ptr).site[1] == line


@requires_real_cuda
def test_entries_are_kept_in_the_plan_cache_and_go_with_it(monkeypatch):
    """An entry is kept under the operator's key in the backend's plan cache (`warm` is
    that dict), with the result's dtype as `out`; when the cache starts over the entries
    go too, and the next op binds a new one with the same values."""
    _sim()
    from gpu_tensor.fusion import eager

    x = gt.from_numpy(np.arange(6, dtype=np.float32)).to("cuda")
    backend = x.device._backend
    assert backend.warm is backend._plans
    backend.warm.clear()  # (what other tests planned; compiled kernels stay cached)
    first = x.exp().cpu().numpy()
    sig = ("exp:warm", x._warm_key())
    entry = backend.warm[sig]
    assert entry.out is gt.float32 and callable(entry)
    monkeypatch.setattr(eager, "MAX_PLANS", len(backend.warm))
    i = gt.from_numpy(np.arange(6)).to("cuda")
    r = i.exp()  # a new key: the cache is full, so it starts over
    assert sig not in backend.warm and len(backend.warm) <= 3
    assert r.dtype is gt.float32
    np.testing.assert_allclose(r.cpu().numpy(), np.exp(np.arange(6)).astype(np.float32))
    np.testing.assert_array_equal(x.exp().cpu().numpy(), first)
    assert backend.warm[sig] is not entry


@requires_real_cuda
def test_rules_that_depend_on_values_are_checked_in_the_entry_on_every_call():
    """Integer division and int ** int get an entry that runs the op's check first: a zero
    divisor (tensor or number) and a negative integer exponent raise torch's errors on the
    warm path too, and valid operands with the same key are one launch, also after the
    key's first operands were refused."""
    _sim()
    from gpu_tensor.testing import sim

    host = np.arange(1, 7)
    a = gt.from_numpy(host).to("cuda")
    b = gt.from_numpy(np.array([1, 2, 3, 1, 2, 3])).to("cuda")
    zeros = gt.zeros(6, dtype=gt.int64).to("cuda")
    a.device._backend.warm.clear()  # every key below is met first here
    for _ in range(2):
        launches = sim.counters()["kernel_launches"]
        r = a // b
        q = a // 4
        p = a**2
        assert sim.counters()["kernel_launches"] - launches == 3
        np.testing.assert_array_equal(r.cpu().numpy(), host // [1, 2, 3, 1, 2, 3])
        np.testing.assert_array_equal(q.cpu().numpy(), host // 4)
        np.testing.assert_array_equal(p.cpu().numpy(), host**2)
        with pytest.raises(RuntimeError, match="by zero"):
            a // zeros
        with pytest.raises(RuntimeError, match="by zero"):
            a // 0
        with pytest.raises(RuntimeError, match="negative integer powers"):
            a ** (-1)
    warm = a.device._backend.warm
    assert any(
        k[0] == "floor_divide:warm" and v.__name__ == "checked" for k, v in warm.items() if v
    )
    # The first call of a key refused by its values binds the checked entry all the same: a
    # later call with good values of that key takes the kernel, not apply() for good
    c = gt.from_numpy(host.astype(np.int32)).to("cuda")
    with pytest.raises(RuntimeError, match="negative integer powers"):
        c ** (-2)
    assert warm[("pow:warm", c._warm_key(), int)].__name__ == "checked"
    launches = sim.counters()["kernel_launches"]
    np.testing.assert_array_equal((c**3).cpu().numpy(), host**3)
    assert sim.counters()["kernel_launches"] - launches == 1
    # a cold tensor divisor is checked once (one reduction, one sync), not at bind and again
    d = gt.from_numpy(host.astype(np.int16)).to("cuda")
    syncs = sim.counters()["device_syncs"]
    d // d
    assert sim.counters()["device_syncs"] - syncs == 1


@requires_real_cuda
def test_a_number_out_of_range_is_refused_before_the_zero_divisor_as_torch_does():
    """2**70 // x with a zero in x: torch 2.13 raises OverflowError ("int too big to
    convert"), as gpu_tensor's cpu does; the checked entry converts the number first."""
    _sim()
    x = gt.tensor([0, 1, 2], device="cuda")
    y = gt.tensor([1, 2, 3], device="cuda")
    for first in (lambda: 7 // y, lambda: 2**70 // x):  # whichever binds the key
        try:
            first()
        except OverflowError:
            pass
        for _ in range(2):
            with pytest.raises(OverflowError):
                2**70 // x
            with pytest.raises(OverflowError):
                2**70 % x
            with pytest.raises(RuntimeError, match="by zero"):
                7 // x
    with pytest.raises(OverflowError):
        2**70 // gt.tensor([0, 1, 2])  # the cpu device, for comparison
