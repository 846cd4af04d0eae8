"""Zero-copy interop: __array__, DLPack both ways, __cuda_array_interface__ (real GPU)."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.testing import requires_real_cuda


def _ptr(a):
    return a.__array_interface__["data"][0]


def test_array_protocol_shares_memory():
    x = cr.arange(6.0).reshape(2, 3)
    a = np.asarray(x)
    assert _ptr(a) == x.data_ptr()
    a[0, 0] = 42
    assert x[0, 0].item() == 42
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.asarray(cr.zeros(2, device="cuda"))


def test_dlpack_cpu_both_ways():
    x = cr.arange(5, dtype=dt.int32)
    a = np.from_dlpack(x)
    assert _ptr(a) == x.data_ptr() and a.dtype == np.int32
    b = np.arange(4.0)[::2]
    t = cr.from_dlpack(b)
    assert t.data_ptr() == _ptr(b) and t.stride() == (2,) and t.dtype is dt.float64
    assert x.__dlpack_device__() == (1, 0)


def test_dlpack_emulated_cuda_exports_host_memory():
    x = cr.arange(4.0, device="cuda")
    if x._backend.is_emulated:
        assert x.__dlpack_device__() == (1, 0)
        a = np.from_dlpack(x)
        assert _ptr(a) == x.data_ptr()
        assert not hasattr(x, "__cuda_array_interface__")


def test_as_tensor_from_dlpack_producer():
    class Producer:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kw):
            return self.arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    base = np.ones(3, np.float32)
    t = cr.as_tensor(Producer(base))
    assert t.data_ptr() == _ptr(base)


def test_cuda_array_interface_absent_on_cpu():
    assert not hasattr(cr.zeros(2), "__cuda_array_interface__")


@requires_real_cuda
def test_cuda_array_interface_v3():
    x = cr.arange(6.0, device="cuda").reshape(2, 3).t()
    cai = x.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 2)
    assert cai["data"][0] == x.data_ptr() and cai["strides"] == (4, 12)
    assert "stream" in cai


@requires_real_cuda
def test_cupy_zero_copy_both_ways():
    from gpu_tensor.testing import cupy_module

    cupy = cupy_module()

    x = cr.arange(6.0, device="cuda")
    c = cupy.from_dlpack(x)
    assert c.data.ptr == x.data_ptr()
    c2 = cupy.asarray(x)  # through __cuda_array_interface__
    assert c2.data.ptr == x.data_ptr()
    y = cr.as_tensor(c)
    assert y.data_ptr() == c.data.ptr and y.device == "cuda:0"
    z = cr.from_dlpack(cupy.arange(3))
    assert z.device == "cuda:0" and z.tolist() == [0, 1, 2]


@requires_real_cuda
def test_real_cuda_bfloat16_is_stored_as_bits():
    x = cr.tensor([1.0, 2.5, -3.0], dtype=dt.bfloat16, device="cuda")
    assert x._data.dtype == np.uint16
    assert x.tolist() == [1.0, 2.5, -3.0]
    assert (x * 2).tolist() == [2.0, 5.0, -6.0]
    assert x.sum().item() == 0.5
    with pytest.raises(BufferError, match="bfloat16"):
        x.__dlpack__()
