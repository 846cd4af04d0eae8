"""The modes word (gpu_tensor/_modes.py): every interception point reaches the handler
with the op's name; nothing is intercepted while no mode is on; re-entry and masking;
thread-locality."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import _modes


@pytest.fixture
def modes():
    """A clean handler table (restored afterwards: features register theirs at import)."""
    saved = dict(_modes._handlers)
    _modes._handlers.clear()
    yield _modes
    _modes._handlers.clear()
    _modes._handlers.update(saved)
    assert _modes.ACTIVE[0] == 0, "a test left a mode on"


def _recorder(log, go_on=True):
    def handler(name, fn, args, kwargs):
        log.append(name)
        return fn(*args, **kwargs) if go_on else ("took", name)

    return handler


class _On:
    def __init__(self, *bits):
        self.bits = bits

    def __enter__(self):
        for b in self.bits:
            _modes.enter(b)

    def __exit__(self, *exc):
        for b in reversed(self.bits):
            _modes.exit(b)


@gt.fuse
def _axpy(x, y):
    return x * 2.0 + y


def _points():
    """(expected name, call) for each kind of interception point."""
    a = gt.ones(4)
    b = gt.ones(4)
    m = gt.ones(2, 2)
    c = a > 0
    d = gt.ones(4)  # written in place
    return [
        ("add", lambda: a + b),  # the dispatcher's binary hot function
        ("rsub", lambda: 2 - a),
        ("add", lambda: gt.add(a, b)),  # @differentiable, layered over the dispatcher
        ("mul", lambda: gt.mul(a, 3.0)),
        ("exp", lambda: a.exp()),  # the unary hot function
        ("gelu", lambda: gt.nn.functional.gelu(a)),
        ("where", lambda: gt.where(c, a, b)),  # apply()
        ("sum", lambda: a.sum()),
        ("matmul", lambda: m @ m),
        ("mm", lambda: gt.mm(m, m)),
        ("cat", lambda: gt.cat([a, b])),
        ("__getitem__", lambda: a[1:]),
        ("clone", lambda: a.clone()),
        ("view", lambda: a.view(2, 2)),  # inline-checked views
        ("reshape", lambda: a.reshape(2, 2)),
        ("transpose", lambda: m.transpose(0, 1)),
        ("permute", lambda: m.permute(1, 0)),
        ("narrow", lambda: a.narrow(0, 1, 2)),
        ("select", lambda: m.select(0, 1)),
        ("expand", lambda: a.expand(2, 4)),
        ("unsqueeze", lambda: a.unsqueeze(0)),
        ("squeeze", lambda: m.squeeze()),
        ("add_", lambda: d.add_(b)),  # in-place methods
        ("fill_", lambda: d.fill_(1.0)),
        ("__setitem__", lambda: d.__setitem__(0, 1.0)),
        ("fused", lambda: _axpy(a, b)),  # Fused.__call__
        ("linear", lambda: gt.nn.functional.linear(m, m)),  # nn.functional's composites
        ("empty", lambda: gt.empty(3)),  # factories
        ("zeros", lambda: gt.zeros(3)),
        ("ones", lambda: gt.ones(2, 3)),
        ("full", lambda: gt.full((2,), 1.5)),
        ("rand", lambda: gt.rand(3)),
        ("randn", lambda: gt.randn(3)),
        ("arange", lambda: gt.arange(5)),
        ("tensor", lambda: gt.tensor([1.0, 2.0])),
        ("zeros_like", lambda: gt.zeros_like(a)),
    ]


@pytest.mark.parametrize("i", range(len(_points())))
def test_every_point_reaches_the_handler_once_by_name(modes, i):
    name, call = _points()[i]
    expected = call()
    log = []
    modes.register(modes.AUTOCAST, _recorder(log))  # masks its bit: only the op itself
    with _On(modes.AUTOCAST):
        got = call()
    assert log == [name]
    if isinstance(expected, gt.Tensor) and not name.endswith(
        "_"
    ):  # the handler went on with fn: the same result
        assert got.shape == expected.shape and got.dtype == expected.dtype
        if name not in ("empty", "rand", "randn"):
            np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_a_handler_may_answer_instead(modes):
    modes.register(modes.QUANTIZED, _recorder([], go_on=False))
    a = gt.ones(2)
    with _On(modes.QUANTIZED):
        assert a * a == ("took", "mul")
        assert gt.zeros(3) == ("took", "zeros")
    assert isinstance(a * a, gt.Tensor)


def test_nothing_is_intercepted_while_no_mode_is_on(modes):
    log = []
    for bit in (modes.PROFILE, modes.AUTOCAST, modes.QUANTIZED):
        modes.register(bit, _recorder(log))
    assert modes.ACTIVE[0] == 0
    a = gt.ones(4)
    for _, call in _points():
        call()
    assert log == []
    with _On(modes.PROFILE):
        assert modes.ACTIVE[0] == 1
    assert modes.ACTIVE[0] == 0
    a.exp()
    assert log == []


def test_a_mode_with_no_handler_runs_the_op(modes):
    with _On(modes.AUTOCAST):
        np.testing.assert_array_equal((gt.ones(2) + 1).numpy(), [2.0, 2.0])


def test_children_stay_visible_to_a_children_bit_only(modes):
    """round(x, 1) runs mul, round and div inside: the profiler-like bit sees them as
    children, the autocast-like bit (masked while its handler runs) sees round alone."""
    seen, masked = [], []
    modes.register(modes.PROFILE, _recorder(seen), children=True)
    modes.register(modes.AUTOCAST, _recorder(masked))
    x = gt.tensor([1.25, 2.5])
    with _On(modes.PROFILE, modes.AUTOCAST):
        r = gt.round(x, decimals=1)
    np.testing.assert_allclose(r.numpy(), [1.2, 2.5])
    assert masked == ["round"]
    assert seen[0] == "round" and "mul" in seen[1:] and "div" in seen[1:]


def test_order_profile_then_autocast_then_quantized(modes):
    order = []

    def make(tag):
        def handler(name, fn, args, kwargs):
            order.append((tag, name))
            if tag == "autocast" and name == "mul":
                args = (args[0].to(gt.float64), args[1])  # a cast, as autocast makes
            return fn(*args, **kwargs)

        return handler

    modes.register(modes.QUANTIZED, make("quantized"))
    modes.register(modes.AUTOCAST, make("autocast"))
    modes.register(modes.PROFILE, make("profile"), children=True)
    modes.set_global(modes.QUANTIZED, True)
    try:
        with _On(modes.AUTOCAST, modes.PROFILE):
            r = gt.ones(2) * gt.ones(2)
    finally:
        modes.set_global(modes.QUANTIZED, False)
    # ones() twice (all three bits), then mul: profile, autocast, whose cast the profiler
    # sees as a child op (and quantized, still unmasked there), then quantized for mul
    mul = order[6:]
    assert mul[:2] == [("profile", "mul"), ("autocast", "mul")]
    assert ("profile", "to") in mul and ("autocast", "to") not in mul
    assert mul[-1] == ("quantized", "mul")
    assert r.dtype is gt.float64


def test_autograd_records_once_under_a_mode(modes):
    log = []
    modes.register(modes.PROFILE, _recorder(log), children=True)
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    with _On(modes.PROFILE):
        y = (w * w).sum()
    assert log[:2] == ["mul", "sum"]  # the recorder's re-run of mul is not a second op
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])


def test_modes_are_per_thread(modes):
    log = []
    modes.register(modes.PROFILE, _recorder(log), children=True)
    a = gt.ones(2)
    other = []
    ready, done = threading.Event(), threading.Event()

    def worker():
        ready.wait()
        (a + a).exp()
        other.append(modes.live())
        done.set()

    th = threading.Thread(target=worker)
    th.start()
    with _On(modes.PROFILE):
        ready.set()
        done.wait(10)
        a.neg()
    th.join()
    assert log == ["neg"]  # the worker's add and exp ran while this thread profiled
    assert other == [0]


def test_global_bits_reach_every_thread(modes):
    log = []
    lock = threading.Lock()

    def handler(name, fn, args, kwargs):
        with lock:
            log.append((threading.current_thread().name, name))
        return fn(*args, **kwargs)

    modes.register(modes.QUANTIZED, handler)
    modes.set_global(modes.QUANTIZED, True)
    try:
        th = threading.Thread(target=lambda: gt.ones(2).exp(), name="w")
        th.start()
        th.join()
    finally:
        modes.set_global(modes.QUANTIZED, False)
    assert ("w", "exp") in log
    assert modes.ACTIVE[0] == 0


def test_enter_and_exit_nest(modes):
    modes.enter(modes.PROFILE)
    modes.enter(modes.PROFILE)
    modes.exit(modes.PROFILE)
    assert modes.live() == modes.PROFILE
    modes.exit(modes.PROFILE)
    assert modes.live() == 0
    with pytest.raises(RuntimeError, match="without a matching enter"):
        modes.exit(modes.PROFILE)


def test_entry_wraps_a_plain_function(modes):
    log = []
    modes.register(modes.AUTOCAST, _recorder(log))
    f = modes.entry("linear", lambda x, w: x * w)
    assert f(2, 3) == 6 and log == []
    with _On(modes.AUTOCAST):
        assert f(2, 3) == 6
    assert log == ["linear"]


def test_watched_module_globals_mirror_the_word(modes):
    from gpu_tensor import creation
    from gpu_tensor.ops import _dispatch

    assert creation.MODES_ON == 0 and _dispatch.MODES_ON == 0
    with _On(modes.QUANTIZED):
        assert creation.MODES_ON == 1 and _dispatch.MODES_ON == 1 and modes.ACTIVE[0] == 1
    assert creation.MODES_ON == 0 and _dispatch.MODES_ON == 0
