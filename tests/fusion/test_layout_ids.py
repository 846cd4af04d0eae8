"""Layout ids (gpu_tensor/_layout_ids.py): a cuda tensor names its layout (dtype, shape,
strides, alignment) once, as a small int in `Tensor._key`, and the warm paths key their
entries by those ints. Checked on the real CUDA backend over the simulated CuPy: a result
is born with the id of its own layout, whatever op made it; every in-place change of a
tensor's array or dtype names it again; and an id is never given to a second layout, also
after the table starts over."""

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import _layout_ids
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda


def _sim():
    if not dv.cuda_is_simulated():
        pytest.skip("reads the warm paths' keys through the simulated CuPy")


def _fresh_id(t):
    """The id t's array and dtype have now, named from scratch."""
    x = t._data
    return _layout_ids.layout_id(t.dtype, x.shape, x._c_contiguous or x.strides, x.data.ptr & 15)


def _close(r, want):
    """Equal values; exp within 1 ulp or so (the device's libm is not numpy's)."""
    got = r.cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(got, want.numpy().astype(np.float64), rtol=1e-6, atol=0)


def _cuda(a):
    return gt.from_numpy(np.ascontiguousarray(a)).to("cuda")


def _operands():
    rng = np.random.default_rng(0)
    x = _cuda(rng.standard_normal((6, 5)).astype(np.float32))
    return {
        "x": x,
        "y": _cuda(rng.standard_normal((6, 5)).astype(np.float32)),
        "i": _cuda(rng.integers(-4, 5, (6, 5))),
        "h": x.half(),
        "b": x.to(gt.bfloat16),
        "row": _cuda(rng.standard_normal(5).astype(np.float32)),
        "xt": _cuda(rng.standard_normal((5, 6)).astype(np.float32)).t(),
        "sl": x[:, 1:4],  # a start that is not 16-byte aligned
        "s0": _cuda(np.array(2.5, np.float32)),
        "e": _cuda(np.zeros((0, 5), np.float32)),
        "d": _cuda(rng.integers(1, 4, (6, 5))),
        "cl": _cuda(rng.standard_normal((2, 3, 4, 5)).astype(np.float32)).contiguous(
            memory_format=gt.channels_last
        ),
    }


_OPS = {
    "x + y": lambda t: t["x"] + t["y"],
    "x + int tensor": lambda t: t["x"] + t["i"],
    "half + float": lambda t: t["h"] + t["x"],
    "bf16 * float": lambda t: t["b"] * t["x"],
    "broadcast row": lambda t: t["x"] - t["row"],
    "transposed operand": lambda t: t["xt"] * t["y"],
    "unaligned slice": lambda t: t["sl"] + 1.0,
    "0-dim operand": lambda t: t["x"] * t["s0"],
    "number": lambda t: t["x"] * 2.0,
    "reflected number": lambda t: 2.0 - t["x"],
    "int // int (checked entry)": lambda t: t["i"] // t["d"],
    "empty": lambda t: t["e"] + 1.0,
    "exp": lambda t: t["x"].exp(),
    "channels_last sigmoid (a strided result)": lambda t: t["cl"].sigmoid(),
    "channels_last + number": lambda t: t["cl"] + 1.0,
    "exp of a slice": lambda t: t["sl"].exp(),
    "neg of a transpose": lambda t: -t["xt"],
    "half()": lambda t: t["x"].half(),
    "to(float64) of a transpose": lambda t: t["xt"].to(gt.float64),
    "bf16 cast": lambda t: t["x"].to(gt.bfloat16),
    "clone()": lambda t: t["x"].clone(),
    "clone() of a transpose": lambda t: t["xt"].clone(),
    "contiguous() of a transpose": lambda t: t["xt"].contiguous(),
    "contiguous() of a slice": lambda t: t["sl"].contiguous(),
}


@requires_real_cuda
@pytest.mark.parametrize("op", list(_OPS))
def test_a_warm_result_is_born_with_the_id_of_its_own_layout(op):
    """Cold (the call that binds the entry) and warm, every result that carries an id
    carries its own layout's; the values are the cpu ones."""
    _sim()
    t = _operands()
    host = {k: v.cpu() for k, v in t.items()}
    want = _OPS[op](host)
    for _ in range(3):
        r = _OPS[op](t)
        if r._key is not None:
            assert r._key == _fresh_id(r), op
        assert r.dtype is want.dtype and r.shape == want.shape
        _close(r, want)
    # warm results of the ops with an entry carry one (the empty result takes its own
    # entry too): only ops that fall back to the general path may have none
    assert r._key is not None, op


@requires_real_cuda
def test_distinct_layouts_get_distinct_ids_and_equal_ones_the_same():
    _sim()
    t = _operands()
    x, y, xt, sl, h = t["x"], t["y"], t["xt"], t["sl"], t["h"]
    ids = [z._warm_key() for z in (x, xt, sl, h, t["row"], t["e"])]
    assert len(set(ids)) == len(ids)  # dtype, shape, strides and alignment each count
    assert y._warm_key() == x._warm_key()  # another array, the same layout
    assert (x + y)._key == x._key  # a result in a fresh block: C order, aligned


_IN_PLACE = {
    "t_": lambda z: z.t_(),
    "transpose_": lambda z: z.transpose_(0, 1),
    "unsqueeze_": lambda z: z.unsqueeze_(0),
    "squeeze_ after unsqueeze_": lambda z: z.unsqueeze_(1).squeeze_(1),
    "as_strided_": lambda z: z.as_strided_((3, 5), (1, 6), 2),
    "resize_ (same count)": lambda z: z.resize_(5, 6),
    "resize_ (new memory)": lambda z: z.resize_(4, 4),
    "set_": lambda z: z.set_(gt.arange(30.0, device="cuda").reshape(6, 5)[:, 1:]),
    "x.data = other": lambda z: setattr(z, "data", gt.ones(2, 3, dtype=gt.float16, device="cuda")),
    "set_ to another dtype": lambda z: z.set_(gt.arange(6, device="cuda")),
}


@requires_real_cuda
@pytest.mark.parametrize("change", list(_IN_PLACE))
def test_an_in_place_change_of_array_or_dtype_names_the_layout_again(change):
    """A tensor the warm path has named, then changed in place: the next ops key it by
    its new layout (values as cpu's, for a kernel planned for the new strides)."""
    _sim()
    z = _cuda(np.arange(30, dtype=np.float32).reshape(6, 5))
    (z + 1.0).exp()  # named, and its key's entries bound
    z.exp()
    before = z._key
    _IN_PLACE[change](z)
    assert z._key is None
    host = z.cpu()
    for _ in range(2):
        np.testing.assert_array_equal((z + z).cpu().numpy(), (host + host).numpy())
        _close(z.exp(), host.exp())
        assert z._key == _fresh_id(z)
    if z.dtype is gt.float32 and z.shape == (6, 5) and z.is_contiguous():
        assert z._key == before  # (resize_ back to the same layout)


@requires_real_cuda
def test_a_parameter_and_module_to_carry_a_consistent_id():
    """nn.Parameter copies a tensor's slots, the id with them (or its absence); Module.to()
    adopts another tensor's payload: either way the id is that of the array it now holds."""
    _sim()
    x = _cuda(np.ones((3, 4), np.float32))
    (x + x).sum()
    p = gt.nn.Parameter(x)
    assert p._key is None or p._key == _fresh_id(p)
    lin = gt.nn.Linear(4, 3).to("cuda")
    w = lin.weight
    with gt.no_grad():
        (p * 2.0).sum()
        assert p._key == _fresh_id(p)
        (w * 2.0).sum()
        assert w._key == _fresh_id(w)
        lin.to(gt.float64)
        assert w._key is None or w._key == _fresh_id(w)
        np.testing.assert_allclose((w * 2.0).cpu().numpy(), w.cpu().numpy() * 2.0)
        assert w.dtype is gt.float64 and w._key == _fresh_id(w)


@requires_real_cuda
def test_ids_are_never_reused_when_the_table_starts_over(monkeypatch):
    """Past MAX_IDS the table is cleared, and the layouts met then get new numbers: an id a
    live tensor holds never names a second layout, so its ops stay right."""
    _sim()
    monkeypatch.setattr(_layout_ids, "MAX_IDS", 4)
    x = _cuda(np.arange(12, dtype=np.float32).reshape(3, 4))
    old = x._warm_key()
    seen = {old}
    for n in range(1, 12):  # new shapes: the table starts over (more than once)
        k = _cuda(np.ones(n, np.float32))._warm_key()
        assert k not in seen
        seen.add(k)
    assert len(_layout_ids.IDS) <= 4
    other = _cuda(np.ones((4, 3), np.float32))
    assert other._warm_key() not in seen
    np.testing.assert_array_equal((x + x).cpu().numpy(), 2 * np.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize(
    "shape, order",
    [((3, 4), (0, 1)), ((3, 4), (1, 0)), ((1, 4), (1, 0)), ((4, 1), (1, 0)), ((0, 3), (1, 0)),
     ((2, 1, 3), (2, 0, 1)), ((2, 3, 4), (0, 2, 1)), ((), ()), ((5,), (0,)), ((1, 1), (1, 0)),
     ((2, 0, 3), (2, 1, 0))],
)  # fmt: skip
def test_layout_of_reads_what_an_array_of_those_strides_says(shape, order):
    """layout_of(shape, strides) is `x._c_contiguous or x.strides` of such an array (numpy's
    C-contiguity flag is cupy's rule: size-1 dims ignored, no elements contiguous)."""
    base = np.empty([shape[i] for i in order], np.float32)
    x = base.transpose(np.argsort(order))
    assert x.shape == shape
    want = x.flags.c_contiguous or x.strides
    assert _layout_ids.layout_of(shape, x.strides, 4) == want
    assert _layout_ids.layout_of(shape, None, 4) is True


@requires_real_cuda
def test_a_warm_op_called_straight_from_c_works():
    """An op with no Python frame under it (called by C: here a thread whose whole work is
    `results.extend(map(operator.call, ops))`, as atexit calls a callback): malloc's
    creation-site walk runs past the bottom of the stack, which _getframe reports with
    ValueError; the op must still run (its block just has no site)."""
    _sim()
    import _thread
    import operator
    import time

    x = _cuda(np.arange(12, dtype=np.float32).reshape(3, 4)).t()
    y = _cuda(np.ones((4, 3), np.float32))
    ops = [x.clone, x.contiguous, x.half, y.exp, y.__neg__]
    for f in ops:  # warm: their entries bound
        f()
        f()
    results: list = []
    _thread.start_new_thread(results.extend, (map(operator.call, ops),))
    deadline = time.monotonic() + 10
    while len(results) < len(ops) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(results) == len(ops)  # (an op that raised stops the thread short)
    for f, r in zip(ops, results, strict=True):
        np.testing.assert_array_equal(r.cpu().float().numpy(), f().cpu().float().numpy())
