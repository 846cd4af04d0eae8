"""Nodes with several outputs (split, chunk, unbind, custom Functions returning a tuple):
one node is every output's grad_fn, edges name the output (node, output_nr), the engine
gives the node one gradient per output (zeros, or None, for the unused ones); and the
graphs torch records as several nodes (`scalar / x`, `x[1:, 0]`)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import autograd
from gpu_tensor.autograd import Function, function


def _leaf(device, shape, seed=0):
    v = np.random.default_rng(seed).uniform(-1, 1, shape)
    return gt.tensor(v, dtype=gt.float64, device=device, requires_grad=True)


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize(
    "op, name, n",
    [
        (lambda a: a.split(2), "SplitBackward0", 2),
        (lambda a: gt.split(a, [1, 3]), "SplitWithSizesBackward0", 2),
        (lambda a: a.chunk(3), "SplitBackward0", 2),  # 4 rows in pieces of 2
        (lambda a: a.unbind(1), "UnbindBackward0", 3),
        (lambda a: gt.unbind(a), "UnbindBackward0", 4),
    ],
)
def test_one_node_for_all_outputs(op, name, n, device):
    a = _leaf(device, (4, 3))
    pieces = op(a)
    assert len(pieces) == n
    node = pieces[0].grad_fn
    assert type(node).__name__ == name
    for i, p in enumerate(pieces):
        assert p.grad_fn is node and p.output_nr == i and p.requires_grad and not p.is_leaf
    assert type(node.next_functions[0][0]).__name__ == "AccumulateGrad"
    # a consumer's edge names the output it reads
    y = pieces[-1] * 2
    assert y.grad_fn.next_functions[0] == (node, n - 1)


def test_unused_outputs_get_zero_gradient(device):
    a = _leaf(device, (4, 2))
    first, second = a.split(2)
    (second * 3).sum().backward()
    expected = np.zeros((4, 2))
    expected[2:] = 3
    np.testing.assert_array_equal(_np(a.grad), expected)


def test_outputs_feeding_one_consumer_are_summed_before_the_node_runs(device):
    a = _leaf(device, (3, 2))
    calls = []
    rows = a.unbind(0)
    rows[0].register_hook(lambda g: calls.append(0))
    rows[2].register_hook(lambda g: calls.append(2))
    (rows[0] * rows[2] + rows[0]).sum().backward()
    v = _np(a)
    expected = np.zeros((3, 2))
    expected[0] = v[2] + 1
    expected[2] = v[0]
    np.testing.assert_allclose(_np(a.grad), expected)
    assert sorted(calls) == [0, 2]  # each output's hook once, with its own gradient


def test_per_output_hooks_retain_grad_and_autograd_grad(device):
    a = _leaf(device, (4, 2))
    p0, p1 = a.chunk(2)
    p0.retain_grad()
    p1.register_hook(lambda g: g * 10)  # replaces p1's gradient only
    assert p0.retains_grad and not p1.retains_grad
    (p0 * 2 + p1).sum().backward(retain_graph=True)
    np.testing.assert_array_equal(_np(p0.grad), np.full((2, 2), 2.0))
    assert p1.grad is None
    np.testing.assert_array_equal(_np(a.grad), np.r_[np.full((2, 2), 2.0), np.full((2, 2), 10.0)])
    g1, ga = autograd.grad((p1 * 5).sum(), [p1, a])
    np.testing.assert_array_equal(_np(g1), np.full((2, 2), 50.0))  # after p1's hook
    np.testing.assert_array_equal(_np(ga), np.r_[np.zeros((2, 2)), np.full((2, 2), 50.0)])


def test_retain_graph_through_a_split_then_freed(device):
    a = _leaf(device, (2, 2))
    p0, p1 = a.unbind(0)
    y = (p0 * p1).sum()
    y.backward(retain_graph=True)
    y.backward()  # twice: the gradients add up
    v = _np(a)
    np.testing.assert_allclose(_np(a.grad), 2 * np.stack([v[1], v[0]]))
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


class _SinCos(Function):
    """Two outputs; backward receives one gradient per output."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gt.sin(x), gt.cos(x)

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        ctx.seen = (g_sin, g_cos)
        return g_sin * gt.cos(x) - g_cos * gt.sin(x)


def test_custom_function_with_several_outputs(device):
    x = _leaf(device, (3,))
    s, c = _SinCos.apply(x)
    assert s.grad_fn is c.grad_fn and (s.output_nr, c.output_nr) == (0, 1)
    (s * 2 + c * 3).sum().backward()
    v = _np(x)
    np.testing.assert_allclose(_np(x.grad), 2 * np.cos(v) - 3 * np.sin(v))
    assert autograd.gradcheck(
        lambda t: _SinCos.apply(t)[0] * _SinCos.apply(t)[1], (_leaf(device, (3,), seed=1),)
    )


def test_custom_function_unused_output_is_zeros_or_none(device):
    x = _leaf(device, (2,))
    s, c = _SinCos.apply(x)
    c.sum().backward()
    g_sin, g_cos = s.grad_fn.seen
    np.testing.assert_array_equal(_np(g_sin), np.zeros(2))  # torch's default: zeros
    np.testing.assert_array_equal(_np(x.grad), -np.sin(_np(x)))

    class _Lazy(_SinCos):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return _SinCos.forward(ctx, x)

        @staticmethod
        def backward(ctx, g_sin, g_cos):
            ctx.seen = (g_sin, g_cos)
            return g_cos * 0 if g_sin is None else g_sin

    s, c = _Lazy.apply(x)
    c.sum().backward()
    assert s.grad_fn.seen[0] is None


def test_custom_function_non_tensor_and_non_differentiable_outputs(device):
    class _Split(Function):
        @staticmethod
        def forward(ctx, x):
            idx = gt.argmax(x)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx, "label"

        @staticmethod
        def backward(ctx, g, g_idx, g_label):
            assert g_label is None
            return g * 2

    x = _leaf(device, (3,))
    y, idx, label = _Split.apply(x)
    assert label == "label" and idx.grad_fn is None and not idx.requires_grad
    assert y.grad_fn is not None and y.output_nr == 0
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.full(3, 2.0))


def test_scalar_over_tensor_is_reciprocal_times_scalar(device):
    x = gt.tensor([0.5, 2.0, -4.0], dtype=gt.float64, device=device, requires_grad=True)
    y = 2.0 / x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    (rec, _), (none, _) = y.grad_fn.next_functions
    assert type(rec).__name__ == "ReciprocalBackward0" and none is None
    np.testing.assert_allclose(_np(y), [4.0, 1.0, -0.5])
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), -2.0 / _np(x) ** 2)
    # tensor / tensor and the no-grad path stay one division
    assert type((x / x.detach()).grad_fn).__name__ == "DivBackward0"
    with autograd.no_grad():
        np.testing.assert_allclose(_np(2.0 / x), [4.0, 1.0, -0.5])


def _chain(fn):
    names = []
    while fn is not None and type(fn).__name__ != "AccumulateGrad":
        names.append(type(fn).__name__)
        fn = fn.next_functions[0][0]
    return names


@pytest.mark.parametrize(
    "index, names",
    [
        ((slice(1, None), 0), ["SelectBackward0", "SliceBackward0"]),
        (
            (-1, None, slice(None, None, 2)),
            ["SliceBackward0", "UnsqueezeBackward0", "SelectBackward0"],
        ),
        ((Ellipsis, None, 1), ["SelectBackward0", "UnsqueezeBackward0"]),
        ((slice(0, None), 1), ["SelectBackward0"]),  # a slice keeping the whole dim: no node
        ((slice(0, None), slice(None)), ["AliasBackward0"]),
        ((1, 2), ["SelectBackward0", "SelectBackward0"]),
    ],
)
def test_basic_index_is_one_node_per_component(index, names, device):
    a = _leaf(device, (3, 4))
    y = a[index]
    assert _chain(y.grad_fn) == names
    np.testing.assert_array_equal(_np(y), _np(a)[index])
    y.sum().backward()
    expected = np.zeros((3, 4))
    expected[index] = 1
    np.testing.assert_array_equal(_np(a.grad), expected)


def test_outputs_free_the_node_and_registry():
    """The output_nr registry holds no node alive: dropping the pieces frees both."""
    a = _leaf("cpu", (4, 2))
    gc.collect()  # earlier tests' garbage would be collected below and shrink the registry
    before = len(function._OUTPUT_NR)
    pieces = a.split(1)
    ref = weakref.ref(pieces[0].grad_fn)
    assert len(function._OUTPUT_NR) == before + 4
    del pieces
    gc.collect()
    assert ref() is None and len(function._OUTPUT_NR) == before
