"""The real-cuda backend's glue, run over a numpy-backed fake cupy (no GPU needed): storage
and pointers from cupy memory, views from storages, bfloat16 kept as uint16 bits, casts.
The real-GPU versions of these checks are in tests/test_interop.py (marked cuda)."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor import device as dv
from gpu_tensor.backends import _cupy
from gpu_tensor.backends import cuda as cuda_backend

from .fake_cupy import make

pytestmark = pytest.mark.skipif(dv.real_cuda_available(),
                                reason="a real GPU is present: the real tests cover this")


@pytest.fixture
def fake_cuda(monkeypatch):
    """cuda:0 served by CudaBackend over the fake cupy, for the test's duration."""
    monkeypatch.setattr(_cupy, "_module", make())
    monkeypatch.setattr(cuda_backend, "_eager", lambda: None)  # no fusion kernels here
    monkeypatch.setattr(cuda_backend, "_installed", {0})  # no allocator install here
    monkeypatch.setattr(cuda_backend, "_strided_copy",
                        lambda dst, src: np.copyto(dst, src, casting="unsafe"))
    dev = dv._make("cuda", 0)
    backend = cuda_backend.CudaBackend(0)
    monkeypatch.setattr(dev, "_backend", backend)
    return backend


def test_creation_views_and_storage(fake_cuda):
    x = cr.arange(12.0, device="cuda").reshape(3, 4)
    assert isinstance(x._data, fake_cuda.xp.ndarray)
    v = x.t()[1:]
    assert v.untyped_storage() is x.untyped_storage()
    assert v.storage_offset() == 1 and v.stride() == (1, 4)
    assert v.data_ptr() == x.data_ptr() + 1 * 4
    s = x.as_strided((2, 2), (1, 4), 1)
    np.testing.assert_array_equal(s._host(), [[1, 5], [2, 6]])
    with pytest.raises(RuntimeError, match="storage"):
        x.as_strided((100,), (1,))
    assert x.clone().data_ptr() != x.data_ptr()
    assert x.t().contiguous().is_contiguous()


def test_ops_and_reductions(fake_cuda):
    x = cr.tensor([[1.0, -2.0], [3.0, 4.0]], device="cuda")
    assert (x * 2 + 1).tolist() == [[3.0, -3.0], [7.0, 9.0]]
    assert (x > 0).dtype is dt.bool
    assert (2 - x).tolist() == [[1.0, 4.0], [-1.0, -2.0]]  # reflected, device fast path
    assert (x / x).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert x.relu().tolist() == [[1.0, 0.0], [3.0, 4.0]] and x.exp().dtype is dt.float32
    i = cr.tensor([3, 4], device="cuda")
    assert (i / 2).tolist() == [1.5, 2.0] and (i // 2).tolist() == [1, 2]  # generic path
    assert x.sum().item() == 6.0 and x.max(1).indices.tolist() == [0, 1]
    assert (x @ x).tolist() == [[-5.0, -10.0], [15.0, 10.0]]
    y = x.clone()
    y[0] = 7
    y.add_(1)
    assert y.tolist() == [[8.0, 8.0], [4.0, 5.0]]


def test_bfloat16_is_stored_as_bits(fake_cuda):
    x = cr.tensor([1.0, 2.5, -3.0], dtype=dt.bfloat16, device="cuda")
    assert x._data.dtype == np.uint16 and x.dtype is dt.bfloat16
    assert x.tolist() == [1.0, 2.5, -3.0]
    r = x * 2
    assert r.dtype is dt.bfloat16 and r._data.dtype == np.uint16
    assert r.tolist() == [2.0, 5.0, -6.0]
    assert x.sum().item() == 0.5 and x.float().tolist() == [1.0, 2.5, -3.0]
    z = cr.zeros(2, dtype=dt.bfloat16, device="cuda")
    z.fill_(1.5)
    z[1] = 4.0
    assert z.tolist() == [1.5, 4.0]
    assert cr.ones(2, dtype=dt.bfloat16, device="cuda").tolist() == [1.0, 1.0]
    assert "dtype=gpu_tensor.bfloat16" in repr(x)
    with pytest.raises(BufferError, match="bfloat16"):
        x.__dlpack__()
    assert x.view(dt.int16).dtype is dt.int16
