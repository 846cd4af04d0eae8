"""The engine and the graph: backward/grad, accumulation, retain_grad, node names and
next_functions, detach, torch's error messages, and freeing saved tensors (memory)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import autograd
from gpu_tensor.autograd import enable_grad, no_grad


def _leaf(device, *values):
    return gt.tensor(list(values), dtype=gt.float64, device=device, requires_grad=True)


def _np(t):
    return t.detach().cpu().numpy()


def test_leaf_and_result_flags(device):
    x = _leaf(device, 1.0, 2.0)
    y = x * 3
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert not y.is_leaf and y.requires_grad
    assert type(y.grad_fn).__name__ == "MulBackward0" and y.grad_fn.name() == "MulBackward0"
    ((node, nr),) = y.grad_fn.next_functions[:1]
    assert type(node).__name__ == "AccumulateGrad" and node.variable is x and nr == 0
    z = y + x
    assert type(z.grad_fn).__name__ == "AddBackward0"
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    assert z.grad_fn.next_functions[1][0] is node  # one AccumulateGrad per leaf
    plain = gt.ones(2, device=device)
    assert not (plain * 2).requires_grad and (plain * 2).grad_fn is None
    assert not (x > 1).requires_grad  # bool results never require grad
    assert not x.argmax().requires_grad


def test_backward_values_and_accumulation(device):
    x = _leaf(device, 1.0, -2.0, 3.0)
    (x * x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, -4.0, 6.0])
    (x * 3).sum().backward()  # accumulates until zeroed
    np.testing.assert_allclose(_np(x.grad), [5.0, -1.0, 9.0])
    x.grad = None
    x.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [1.0, 1.0, 1.0])


def test_diamond_graph_sums_paths(device):
    x = _leaf(device, 2.0)
    a = x * 3
    b = a.exp()
    c = a * a
    (b + c).sum().backward()
    expected = 3 * np.exp(6.0) + 2 * 6.0 * 3
    np.testing.assert_allclose(_np(x.grad), [expected])


def test_gradient_argument_and_shapes(device):
    x = _leaf(device, 1.0, 2.0)
    y = x * 2
    y.backward(gt.tensor([1.0, 10.0], dtype=gt.float64, device=device))
    np.testing.assert_allclose(_np(x.grad), [2.0, 20.0])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(gt.ones(3, dtype=gt.float64, device=device))


def test_broadcast_grad_has_input_shape_and_dtype(device):
    w = gt.ones(1, 3, dtype=gt.float32, device=device, requires_grad=True)
    x = gt.ones(4, 3, dtype=gt.float32, device=device)
    (x * w).sum().backward()
    assert w.grad.shape == (1, 3) and w.grad.dtype is gt.float32
    np.testing.assert_allclose(_np(w.grad), [[4.0, 4.0, 4.0]])
    assert w.grad.is_contiguous()


def test_error_no_grad_fn(device):
    t = gt.ones(2, device=device)
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        t.sum().backward()


def test_error_backward_twice(device):
    x = _leaf(device, 1.0, 2.0)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()  # retained once: a second pass is fine
    np.testing.assert_allclose(_np(x.grad), 2 * (np.exp([1.0, 2.0]) * (1 + np.array([1, 2]))))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_error_inplace_change_of_saved_tensor(device):
    x = _leaf(device, 1.0, 2.0)
    h = x * 1.0
    y = h.exp()  # saves its output
    with no_grad():
        y.add_(1.0)
    with pytest.raises(
        RuntimeError,
        match="one of the variables needed for gradient "
        "computation has been modified by an inplace "
        "operation",
    ):
        y.sum().backward()
    # a view shares the version counter of its storage
    a = x * 1.0
    b = a * a
    with no_grad():
        a[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_error_implicit_grad_non_scalar(device):
    x = _leaf(device, 1.0, 2.0)
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        (x * 2).backward()


def test_error_leaf_inplace_and_int_requires_grad(device):
    x = _leaf(device, 1.0, 2.0)
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation",
    ):
        x.add_(1.0)
    with no_grad():
        x.add_(1.0)  # parameter updates: fine under no_grad
    np.testing.assert_allclose(_np(x), [2.0, 3.0])
    with pytest.raises(RuntimeError, match="floating point"):
        gt.ones(2, dtype=gt.int64, device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf variables"):
        (x * 2).requires_grad_(False)


def test_grad_mode_context_decorator_and_function(device):
    x = _leaf(device, 1.0)
    assert autograd.is_grad_enabled()
    with no_grad():
        assert not autograd.is_grad_enabled()
        assert not (x * 2).requires_grad
        with enable_grad():
            assert (x * 2).requires_grad
        assert not autograd.is_grad_enabled()
    assert autograd.is_grad_enabled()

    @no_grad()
    def infer(t):
        return t * 2

    assert not infer(x).requires_grad and autograd.is_grad_enabled()
    with autograd.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert autograd.is_grad_enabled()
    autograd.set_grad_enabled(False)  # as a plain call it switches at once
    try:
        assert not autograd.is_grad_enabled()
    finally:
        autograd.set_grad_enabled(True)
    assert (x * 2).requires_grad

    @autograd.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert autograd.is_grad_enabled()  # decorating does not switch the mode
    assert not f(x).requires_grad


def test_grad_mode_is_thread_local():
    import threading

    seen = []
    with no_grad():
        t = threading.Thread(target=lambda: seen.append(autograd.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_retain_grad(device):
    x = _leaf(device, 1.0, 2.0)
    h = x * 2
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    (h * h).sum().backward()
    np.testing.assert_allclose(_np(h.grad), [4.0, 8.0])
    np.testing.assert_allclose(_np(x.grad), [8.0, 16.0])
    k = x * 3
    (k * 1.0).sum().backward()
    assert k.grad is None  # not retained
    with pytest.raises(RuntimeError, match="retain_grad"):
        gt.ones(1, device=device).retain_grad()


def test_autograd_grad(device):
    x = _leaf(device, 1.0, 2.0)
    w = _leaf(device, 3.0, 4.0)
    h = x * w
    y = (h * h).sum()
    gx, gh = autograd.grad(y, [x, h], retain_graph=True)
    np.testing.assert_allclose(_np(gx), 2 * (np.array([3.0, 8.0])) * np.array([3.0, 4.0]))
    np.testing.assert_allclose(_np(gh), [6.0, 16.0])
    assert x.grad is None and w.grad is None  # grad() never touches .grad
    unused = _leaf(device, 0.0)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        autograd.grad(y, [unused], retain_graph=True)
    assert autograd.grad(y, [unused], allow_unused=True, retain_graph=True) == (None,)
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(y, [gt.ones(1, device=device)])
    (gv,) = autograd.grad([x * 2], [x], grad_outputs=[gt.ones(2, dtype=gt.float64, device=device)])
    np.testing.assert_allclose(_np(gv), [2.0, 2.0])


def test_detach_cuts_history_and_shares_storage(device):
    x = _leaf(device, 1.0, 2.0)
    h = x * 2
    d = h.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.data_ptr() == h.data_ptr()
    y = (d * x).sum()
    y.backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 4.0])  # d counted as a constant
    h.detach_()
    assert h.grad_fn is None and not h.requires_grad


def test_attribute_requires_grad_after_activation(device):
    _leaf(device, 1.0)  # autograd is active from here on
    w = gt.ones(2, dtype=gt.float64, device=device)
    w.requires_grad = True
    (w * 5).sum().backward()
    np.testing.assert_allclose(_np(w.grad), [5.0, 5.0])


def test_unimplemented_derivative_is_an_error_not_a_silent_zero(device):
    x = _leaf(device, 1.0, 2.0)
    y = x.cumprod(0).sum()
    with pytest.raises(RuntimeError, match="derivative for 'cumprod' is not implemented"):
        y.backward()


def test_inplace_on_view_in_graph_rebases_the_base(device):
    x = _leaf(device, 1.0, 2.0)
    h = x * 1.0
    h[0:1].mul_(x[0:1])  # torch's CopySlices: h = [x0 * x0, x1]
    h.sum().backward()
    assert x.grad.tolist() == [2.0, 1.0]


def _alloc():
    gc.collect()
    return gt.cuda.memory_allocated()


def _block_bytes(nbytes):
    """What one tensor of nbytes takes in the allocator's accounting (its rounding)."""
    before = gt.cuda.memory_allocated()
    t = gt.empty(nbytes, dtype=gt.uint8, device="cuda")
    size = gt.cuda.memory_allocated() - before
    del t
    return size


def test_saved_tensors_are_freed_by_backward():
    gt.manual_seed(0)
    w1 = gt.randn(64, 128, device="cuda", requires_grad=True)
    w2 = gt.randn(128, 8, device="cuda", requires_grad=True)
    x = gt.randn(32, 64, device="cuda")
    baseline = _alloc()
    loss = ((x @ w1).relu() @ w2).tanh().square().mean()
    assert gt.cuda.memory_allocated() > baseline + 32 * 128 * 4  # activations are saved
    loss.backward()
    grads = _block_bytes(w1.nbytes) + _block_bytes(w2.nbytes)
    scalar = _block_bytes(loss.nbytes)
    # only the .grad tensors and the loss itself are left: every saved activation is freed
    # although `loss` (and so the graph's nodes) is still alive
    assert gt.cuda.memory_allocated() == baseline + grads + scalar
    del loss
    assert gt.cuda.memory_allocated() == baseline + grads
    w1.grad = w2.grad = None
    assert gt.cuda.memory_allocated() == baseline


def test_retain_graph_keeps_then_dropping_outputs_frees():
    w = gt.randn(64, 64, device="cuda", requires_grad=True)
    baseline = _alloc()
    out = (w @ w).exp()
    loss = out.sum()
    loss.backward(retain_graph=True)
    kept = gt.cuda.memory_allocated()
    assert kept > baseline + _block_bytes(w.nbytes)  # saved tensors still held
    del out, loss
    w.grad = None
    assert gt.cuda.memory_allocated() == baseline  # no reference cycles: freed at once


def test_register_hook(device):
    x = _leaf(device, 1.0, 2.0)
    seen = []
    handle = x.register_hook(lambda g: seen.append(_np(g)))
    h = x * 3
    h.register_hook(lambda g: g * 10)  # replaces the gradient flowing on from h
    h.sum().backward()
    np.testing.assert_allclose(seen[0], [30.0, 30.0])
    np.testing.assert_allclose(_np(x.grad), [30.0, 30.0])
    handle.remove()
    (x * 1.0).sum().backward()
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        gt.ones(1, device=device).register_hook(lambda g: g)


def test_leaf_grads_never_share_memory(device):
    a, b = _leaf(device, 1.0, 2.0), _leaf(device, 3.0, 4.0)
    (a + b).sum().backward()  # AddBackward0 hands the same gradient to both leaves
    assert a.grad.data_ptr() != b.grad.data_ptr()
    with no_grad():
        a.grad.zero_()
    np.testing.assert_allclose(_np(b.grad), [1.0, 1.0])
    g = gt.ones(2, dtype=gt.float64, device=device)
    a.grad = None
    a.backward(g)  # a user's gradient is copied, not adopted
    assert a.grad.data_ptr() != g.data_ptr()
    w = _leaf(device, 1.0, 2.0)
    x = gt.ones(3, 2, dtype=gt.float64, device=device)
    (x @ w).sum().backward()  # a fresh matmul result may be kept as .grad directly
    np.testing.assert_allclose(_np(w.grad), [3.0, 3.0])


def test_accumulation_is_in_place(device):
    x = _leaf(device, 1.0, 2.0)
    (x * 2).sum().backward()
    g = x.grad
    (x * 3).sum().backward()
    assert x.grad is g  # an optimizer holding .grad sees the sum
    np.testing.assert_allclose(_np(g), [5.0, 5.0])
    with no_grad():
        x.grad.zero_()  # zero_grad(set_to_none=False)
    (x * 1).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [1.0, 1.0])


def test_a_kept_gradient_has_the_parameters_strides_size_one_dims_included():
    # the (3, 1) product's transpose is row-major with stride 1 on the size-1 dim; the
    # engine keeps it only with the parameter's own strides, else copies. torch 2.13 gives
    # (3, 1) here (recorded), as for F.linear's (1, 3) weight
    y = gt.ones(1, 3, requires_grad=True)
    (gt.ones(4, 3) @ y.t()).sum().backward()
    assert y.grad.stride() == (3, 1)
    np.testing.assert_array_equal(y.grad.numpy(), [[4.0, 4.0, 4.0]])
