"""The real-GPU versions of the cuda backend's glue checks in test_cuda_backend_glue.py
(which run everywhere over a fake cupy): allocator tags, bfloat16 casts through the copy
kernels, the CAI stream, record_stream on cupy-made storages, layouts kept by moves."""

import numpy as np

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.testing import requires_real_cuda


@requires_real_cuda
def test_real_blocks_are_tagged_with_shape_and_dtype():
    from gpu_tensor.memory import registry

    x = cr.zeros((3, 4), device="cuda")
    alloc = registry.find(0)  # made with the first cuda tensor, not before
    assert alloc is not None and alloc.kind == "cuda"
    assert alloc.lookup(x.data_ptr()).tag == {"shape": (3, 4), "dtype": "float32"}
    y = x + 1
    assert alloc.lookup(y.data_ptr()).tag == {"shape": (3, 4), "dtype": "float32"}
    b = cr.ones(5, dtype=dt.bfloat16, device="cuda")
    assert alloc.lookup(b.data_ptr()).tag == {"shape": (5,), "dtype": "bfloat16"}


@requires_real_cuda
def test_real_bfloat16_casts_convert_values():
    vals = [1.5, -2.0, 300.0, 0.0078125]
    b = cr.tensor(vals, dtype=dt.bfloat16, device="cuda")
    assert b.float().tolist() == vals and b.long().tolist() == [1, -2, 300, 0]
    assert b.double().tolist() == vals and b.half().tolist() == vals
    back = cr.tensor(vals, device="cuda").to(dt.bfloat16)
    assert back._data.dtype == np.uint16 and back.tolist() == vals
    m = cr.tensor([[1.5, 2.0], [3.0, -4.0]], dtype=dt.bfloat16, device="cuda")
    assert m.t().contiguous().tolist() == [[1.5, 3.0], [2.0, -4.0]]


@requires_real_cuda
def test_real_cuda_array_interface_stream():
    import gpu_tensor.cuda as gcuda

    x = cr.arange(6.0, device="cuda")
    assert x.__cuda_array_interface__["stream"] == 1  # legacy default stream
    s = gcuda.Stream()
    with gcuda.stream(s):
        assert x.__cuda_array_interface__["stream"] == s.cuda_stream


@requires_real_cuda
def test_real_record_stream_finds_the_block():
    import gpu_tensor.cuda as gcuda
    from gpu_tensor.memory import registry

    x = cr.zeros(1 << 20, device="cuda")
    s = gcuda.Stream()
    x[10:].record_stream(s)
    assert s.ptr in registry.find(0).lookup(x.data_ptr()).stream_uses


@requires_real_cuda
def test_real_moves_keep_dense_strides():
    x = cr.arange(24.0, device="cpu").reshape(2, 3, 4)  # host sources, whatever the default
    for src in (x.permute(2, 0, 1), x.transpose(0, 1), x[1].t()):
        for nb in (False, True):
            d = src.to("cuda", non_blocking=nb)
            assert d.stride() == src.stride()
            h = d.to("cpu", non_blocking=nb)
            assert h.stride() == src.stride() and h.tolist() == src.tolist()
            assert src.to("cuda", dt.float64).stride() == src.stride()
    g = x[:, :, ::2].cuda()
    assert g.is_contiguous() and g.tolist() == x[:, :, ::2].tolist()
