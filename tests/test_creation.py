"""Factory functions against numpy, on every device."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.testing import assert_close


@pytest.mark.parametrize(
    "data, want_dtype",
    [
        ([1, 2, 3], dt.int64),
        ([1.0, 2], dt.float32),
        ([True, False], dt.bool),
        ([1j, 2], dt.complex64),
        ([[1, 2], [3, 4]], dt.int64),
        (3.5, dt.float32),
        ([True, 2], dt.int64),
        ([], dt.float32),
        (np.float64(2.0), dt.float64),
        ([np.int32(1), np.int32(2)], dt.int32),
        ([np.float16(1), 2.0], dt.float32),
        ([np.int8(1), 300], dt.int64),
    ],
)
def test_tensor_infers_dtype(device, data, want_dtype):
    t = cr.tensor(data, device=device)
    assert t.dtype is want_dtype
    assert t.device.type == device
    np.testing.assert_array_equal(t.cpu().numpy(), np.array(data, dtype=want_dtype.np))


def test_tensor_copies(device):
    a = np.arange(4.0)
    t = cr.tensor(a, device=device)
    a[0] = 100
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.dtype is dt.float64  # numpy's dtype is kept
    u = cr.tensor(t)
    assert u.data_ptr() != t.data_ptr() and u.device == t.device


def test_tensor_with_dtype_truncates_floats():
    assert cr.tensor([1.7, -1.7], dtype=dt.int64).tolist() == [1, -1]
    assert cr.tensor([1, 2], dtype="bfloat16").dtype is dt.bfloat16


def test_tensor_of_zero_dim_tensors(device):
    t = cr.tensor([cr.tensor(1.5), cr.tensor(2.5)], device=device)
    assert t.tolist() == [1.5, 2.5]


def test_from_numpy_shares_both_ways():
    a = np.zeros((2, 3))
    t = cr.from_numpy(a)
    assert t.dtype is dt.float64
    t[0, 1] = 5
    assert a[0, 1] == 5
    a[1, 2] = 7
    assert t[1, 2].item() == 7
    assert t.data_ptr() == a.__array_interface__["data"][0]


def test_from_numpy_keeps_array_alive():
    t = cr.from_numpy(np.arange(5, dtype=np.int32))
    import gc

    gc.collect()
    assert t.tolist() == [0, 1, 2, 3, 4]


def test_from_numpy_noncontiguous_positive_strides():
    a = np.arange(12).reshape(3, 4)[:, ::2]
    t = cr.from_numpy(a)
    assert t.stride() == (4, 2)
    np.testing.assert_array_equal(t.numpy(), a)


def test_as_tensor_no_copy_when_possible(device):
    a = np.arange(6, dtype=np.float32)
    t = cr.as_tensor(a)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    assert cr.as_tensor(t) is t
    u = cr.as_tensor(a, device=device)
    if device == "cuda":
        assert u.data_ptr() != t.data_ptr()
    v = cr.as_tensor(a, dtype=dt.float64)
    assert v.dtype is dt.float64 and v.data_ptr() != t.data_ptr()


def test_asarray_copy_flags():
    a = np.arange(3.0)
    assert cr.asarray(a).data_ptr() == a.__array_interface__["data"][0]
    assert cr.asarray(a, copy=True).data_ptr() != a.__array_interface__["data"][0]
    with pytest.raises(ValueError, match="copy"):
        cr.asarray(a, dtype=dt.float32, copy=False)
    assert cr.asarray([1, 2]).dtype is dt.int64


@pytest.mark.parametrize("name, np_fn", [("zeros", np.zeros), ("ones", np.ones)])
def test_zeros_ones(device, name, np_fn):
    for d in (dt.float32, dt.int32, dt.bool, dt.bfloat16, dt.complex64):
        t = getattr(cr, name)(2, 3, dtype=d, device=device)
        assert t.shape == (2, 3) and t.dtype is d
        assert_close(t, np_fn((2, 3), d.np))
    assert getattr(cr, name)((4,), device=device).shape == (4,)


def test_full_infers_dtype(device):
    assert cr.full((2,), 3, device=device).dtype is dt.int64
    assert cr.full((2,), 3.0, device=device).dtype is dt.float32
    assert cr.full((2,), True, device=device).dtype is dt.bool
    assert cr.full((2, 2), 7.5, device=device).tolist() == [[7.5, 7.5], [7.5, 7.5]]


def test_empty_and_likes(device):
    e = cr.empty(3, 4, device=device, dtype=dt.float16)
    assert e.shape == (3, 4) and e.dtype is dt.float16
    z = cr.zeros_like(e)
    assert z.dtype is dt.float16 and z.device == e.device and z.sum().item() == 0
    assert cr.ones_like(e, dtype=dt.int8).dtype is dt.int8
    assert cr.full_like(e, 2).tolist()[0][0] == 2
    assert cr.empty_like(e).shape == e.shape
    r = cr.rand_like(e)
    assert r.dtype is dt.float16 and 0 <= r.min().item() and r.max().item() <= 1
    assert cr.randn_like(e).shape == e.shape
    ri = cr.randint_like(cr.zeros(5, dtype=dt.int64), 3)
    assert ri.dtype is dt.int64 and ri.max().item() < 3


def test_eye_arange_linspace(device):
    assert_close(cr.eye(3, device=device), np.eye(3, dtype=np.float32))
    assert_close(cr.eye(2, 3, device=device, dtype=dt.int32), np.eye(2, 3, dtype=np.int32))
    a = cr.arange(5, device=device)
    assert a.dtype is dt.int64 and a.tolist() == [0, 1, 2, 3, 4]
    assert cr.arange(1, 2, 0.25, device=device).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert cr.arange(1, 2, 0.25).dtype is dt.float32
    assert cr.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert_close(cr.linspace(0, 1, 5, device=device), np.linspace(0, 1, 5, dtype=np.float32))


def test_random_is_seeded(device):
    cr.manual_seed(0)
    a = cr.rand(3, device=device)
    cr.manual_seed(0)
    b = cr.rand(3, device=device)
    assert a.tolist() == b.tolist()
    n = cr.randn(1000, device=device)
    assert abs(n.mean().item()) < 0.2 and 0.8 < n.std().item() < 1.2
    i = cr.randint(2, 5, (100,), device=device)
    assert i.dtype is dt.int64 and i.min().item() >= 2 and i.max().item() <= 4
    p = cr.randperm(6, device=device)
    assert sorted(p.tolist()) == list(range(6))


def test_requires_grad_flag(device):
    t = cr.zeros(2, requires_grad=True, device=device)
    assert t.requires_grad and t.is_leaf and t.grad is None and t.grad_fn is None
    with pytest.raises(RuntimeError, match="floating point"):
        cr.zeros(2, dtype=dt.int64, requires_grad=True)


def test_empty_strided(device):
    t = cr.empty_strided((2, 3), (1, 2), device=device)
    assert t.stride() == (1, 2)


def test_pin_memory_factory():
    t = cr.empty(16, pin_memory=True)
    assert t.device == "cpu" and t.shape == (16,)
    with pytest.raises(RuntimeError, match="cpu"):
        cr.empty(2, device="cuda", pin_memory=True)
