"""The smaller torch differences of issue 28 item 8: memory_format in .to(), sparse COO
tensors are Tensors, autograd.Variable is a class, requires_grad=True placed as torch
places it in a long repr, t._storage() raises AttributeError, torch's keywords on the
fixed-arity ops, gt.functional, gt.backends.cudnn/mps flags and torch.sin_-style
in-place functions. Expected values recorded from torch 2.13 where noted."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


def test_to_memory_format_channels_last():
    x = gt.arange(120.0).reshape(2, 3, 4, 5)
    y = x.to(memory_format=gt.channels_last)
    assert y.stride() == (60, 1, 15, 3)  # torch 2.13
    assert bool((y == x).all())
    assert x.to(gt.float64, memory_format=gt.channels_last).stride() == (60, 1, 15, 3)
    assert y.to(gt.float64).stride() == (60, 1, 15, 3)  # preserve_format keeps it
    assert y.to(memory_format=gt.contiguous_format).stride() == (60, 20, 5, 1)
    assert y.to(memory_format=gt.channels_last) is y


def test_sparse_coo_tensor_is_a_tensor():
    s = gt.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    assert isinstance(s, gt.Tensor) and s.is_sparse and s.layout is gt.sparse_coo
    assert s.to_dense().tolist() == [[0.0, 1.0], [2.0, 0.0]]


def test_variable_is_a_class():
    assert isinstance(gt.autograd.Variable, type)
    assert isinstance(gt.ones(2), gt.autograd.Variable)
    v = gt.autograd.Variable(gt.ones(2), requires_grad=True)
    assert v.requires_grad and isinstance(v, gt.Tensor)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        gt.autograd.Variable([1.0])


def test_long_repr_moves_requires_grad_to_its_own_line():
    # recorded from torch 2.13: repr(torch.arange(0, 30.).reshape(3, 10).mul(1e5 / 3)
    #   .requires_grad_()) ends with the suffix on a new line at the indent
    x = (gt.arange(0, 30.0).reshape(3, 10) * (1e5 / 3)).detach().requires_grad_()
    lines = repr(x).splitlines()
    assert lines[-1] == "       requires_grad=True)"
    assert lines[-2].endswith("]],")
    short = repr(gt.ones(2, 3, requires_grad=True)).splitlines()
    assert short[-1] == "        [1., 1., 1.]], requires_grad=True)"


def test_storage_call_raises_attribute_error():
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute '_storage'"):
        gt.ones(2)._storage()


def test_torch_keywords_on_fixed_arity_ops():
    a = gt.ones(2, 2)
    assert gt.matmul(input=a, other=a).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert gt.mm(input=a, mat2=a).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert gt.exp(input=gt.zeros(1)).tolist() == [1.0]
    w = gt.ones(2, 2, requires_grad=True)
    assert gt.matmul(input=w, other=a).grad_fn is not None


def test_functional_module_and_backends():
    assert gt.functional.einsum is gt.einsum and gt.functional.split is gt.split
    assert gt.functional.meshgrid is gt.meshgrid
    cudnn = gt.backends.cudnn
    assert (
        cudnn.is_available(),
        cudnn.version(),
        cudnn.enabled,
        cudnn.benchmark,
        cudnn.deterministic,
    ) == (False, None, True, False, False)  # torch 2.13 cpu build
    cudnn.benchmark = True
    try:
        assert gt.backends.cudnn.benchmark is True
        with cudnn.flags(enabled=False, deterministic=True):
            assert cudnn.deterministic and not cudnn.enabled
        assert not cudnn.deterministic and cudnn.enabled
    finally:
        cudnn.benchmark = False
    assert gt.backends.mps.is_available() is False


def test_inplace_module_functions():
    x = gt.zeros(3)
    assert gt.sin_(x) is x and x.tolist() == [0.0, 0.0, 0.0]
    y = gt.tensor([-1.0, 4.0])
    gt.relu_(y)
    gt.sqrt_(y)
    assert y.tolist() == [0.0, 2.0]
    assert gt.zero_(gt.ones(2)).tolist() == [0.0, 0.0]
    assert gt.clamp_(gt.tensor([-3.0, 3.0]), -1, 1).tolist() == [-1.0, 1.0]
    assert {"sin_", "exp_", "tanh_", "fill_", "zero_"} <= set(gt.__all__)


def test_torch_functional_helpers_match_numpy():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    for indexing in ("ij", "xy"):
        got = gt.meshgrid(gt.tensor(a), gt.tensor(b), indexing=indexing)
        want = np.meshgrid(a, b, indexing=indexing)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(
        gt.cartesian_prod(gt.tensor(a), gt.tensor(b)).numpy(), [[x, y] for x in a for y in b]
    )
    m = np.arange(6.0).reshape(2, 3)
    bd = gt.block_diag(gt.tensor(m), gt.tensor(b)).numpy()
    want = np.zeros((3, 5))
    want[:2, :3], want[2, 3:] = m, b
    np.testing.assert_array_equal(bd, want)
    d = np.sqrt(((m[:, None] - (m + 1)[None]) ** 2).sum(-1))
    np.testing.assert_allclose(gt.cdist(gt.tensor(m), gt.tensor(m + 1)).numpy(), d)
    x, y = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(
        gt.tensordot(gt.tensor(x), gt.tensor(y), ([1, 2], [1, 0])).numpy(),
        np.tensordot(x, y, ([1, 2], [1, 0])),
    )
    rows, cols = gt.unravel_index(gt.tensor([4, 1, -1]), (2, 3))
    assert rows.tolist() == [1, 0, 1] and cols.tolist() == [1, 1, 2]
    assert gt.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    assert gt.atleast_3d(gt.tensor(a)).shape == (1, 3, 1)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        gt.broadcast_shapes((2,), (3,))


def test_to_refuses_a_dtype_where_its_flags_go():
    """torch's to() takes (device, dtype, non_blocking, copy) or (tensor, non_blocking, copy):
    a dtype string after the device, or a dtype after a tensor, is a TypeError there, where we
    took it as non_blocking and ignored it. Bool flags (numpy's too) still pass."""
    x = gt.ones(2)
    with pytest.raises(TypeError, match="non_blocking"):
        x.to("cpu", "float16")
    with pytest.raises(TypeError, match="non_blocking"):
        x.to(x.double(), gt.float16)
    with pytest.raises(TypeError, match="copy"):
        x.to(gt.float16, False, "yes")
    assert x.to("cpu", gt.float16, True).dtype is gt.float16
    assert x.to(x.double(), np.bool_(False), True).dtype is gt.float64
    y = x.to(gt.float32, False, True)
    assert y is not x and y.dtype is gt.float32


def test_type_takes_legacy_type_names_and_classes(device):
    """x.type(name): torch's legacy names ('torch.cuda.HalfTensor') and ours (what x.type()
    gives, so x.type(x.type()) is x) convert dtype and device kind; a legacy class too; any
    other string is torch's ValueError 'invalid type'."""
    x = gt.ones(2, device=device)
    assert x.type(x.type()) is x
    h = x.type("torch.HalfTensor")
    assert h.dtype is gt.float16 and h.device.type == "cpu"
    assert x.type("gpu_tensor.LongTensor").dtype is gt.int64
    assert x.type(gt.DoubleTensor).dtype is gt.float64
    assert x.type(gt.float16).device == x.device
    if x.device.type == "cuda":
        c = gt.ones(2).type("torch.cuda.BFloat16Tensor")
        assert c.dtype is gt.bfloat16 and c.device.type == "cuda"
        assert gt.ones(2).type(gt.cuda.HalfTensor).device.type == "cuda"
    for bad in ("torch.FooTensor", "foo", "torch.float16", "numpy.FloatTensor"):
        with pytest.raises(ValueError, match="invalid type"):
            x.type(bad)
