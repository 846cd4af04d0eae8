"""The real-cuda backend's glue, run over a numpy-backed fake cupy (no GPU needed): storage
and pointers from cupy memory, views from storages, bfloat16 kept as uint16 bits, casts.
The real-GPU versions of these checks are in tests/test_interop.py (marked cuda)."""

import sys

import ml_dtypes
import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor import device as dv
from gpu_tensor._layout_ids import layout_id
from gpu_tensor.backends import _cupy, cuda_memory
from gpu_tensor.backends import cuda as cuda_backend
from gpu_tensor.fusion import eager
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.kernel import copy as kcopy
from gpu_tensor.memory import registry
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource

from .fake_cupy import make

pytestmark = pytest.mark.skipif(
    dv.real_cuda_available(), reason="a real GPU is present: the real tests cover this"
)

_BITS, _BF16 = np.dtype(np.uint16), np.dtype(ml_dtypes.bfloat16)


def _logical(a, dtype):
    """The values of cupy-side array `a` whose logical dtype is `dtype` (bf16 bits)."""
    return a.view(_BF16) if dtype is not None else a


def fake_strided_copy(dst, src, dst_dtype=None, src_dtype=None):
    """The copy kernels' contract in numpy: logical dtypes convert values."""
    for a, d in ((dst, dst_dtype), (src, src_dtype)):
        assert d is None or a.dtype.itemsize == np.dtype(d).itemsize
    np.copyto(_logical(dst, dst_dtype), _logical(src, src_dtype), casting="unsafe")


def fake_eager_run(key, inputs, out_dtype, alloc=None, plans=None, **params):
    """eager.run's contract in numpy: a new array from `alloc` (the backend) of `out_dtype`;
    operands in their own dtypes (uint16: bfloat16 bits), cast as a kernel casts them."""
    inputs = [
        x.view(_BF16).astype(np.float32) if getattr(x, "dtype", None) == _BITS else x
        for x in inputs
    ]
    r = np.asarray(OPS[key].np_fn(*inputs, **params))
    out = (alloc or eager.empty_like_result)(r.shape, out_dtype)
    bf16 = np.dtype(out_dtype) == _BF16
    fake_strided_copy(out, r.astype(np.float32) if bf16 else r, _BF16 if bf16 else None)
    return out


class _Event:
    def query(self):
        return True

    def synchronize(self):
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    """cuda:0 served by CudaBackend over the fake cupy, for the test's duration, with our
    caching allocator (over host memory) installed under it as on a GPU; copy kernels and
    eager kernels replaced by their numpy contracts."""
    monkeypatch.setattr(sys.modules[make.__module__], "_allocator", None)  # reset after
    monkeypatch.setattr(_cupy, "_module", make())
    allocator = CachingAllocator(
        HostRawSource(64 << 20),
        0,
        event_factory=lambda s: _Event(),
        config=parse_alloc_conf(""),
        kind="cuda",
    )
    monkeypatch.setitem(registry._allocators, ("cuda", 0), allocator)
    monkeypatch.setattr(cuda_memory, "_installed", False)
    monkeypatch.setattr(kcopy, "strided_copy", fake_strided_copy)
    monkeypatch.setattr(
        kcopy, "copy_to_fresh", lambda dst, src, dd, sd, plans: fake_strided_copy(dst, src, dd, sd)
    )
    monkeypatch.setattr(eager, "run", fake_eager_run)
    monkeypatch.setattr(  # the backend's kernel path (positional, params a dict or None)
        eager,
        "run_planned",
        lambda plans, alloc, key, inputs, out, params, via=None: fake_eager_run(
            key, inputs, out, alloc=alloc, **(params or {})
        ),
    )

    def fake_warm_entry(self, sig, key, operands, out_np, out, swap=False, via=None):
        """CudaBackend.warm_entry's contract over fake_eager_run: an entry taking the
        operator's operands (swapped back into the kernel's order), kept under `sig`."""
        from gpu_tensor.fusion.eager import keep  # as the backend imports it: on a miss

        entry = False
        if key is not None:

            def entry(a, b=None):
                ins = (a,) if b is None else (b, a) if swap else (a, b)
                return fake_eager_run(key, ins, out_np, alloc=self._result)

            entry.out = out
            entry.scalar_to = None  # numbers go to fake_eager_run as they are
            shapes = [np.shape(a) for a in operands if hasattr(a, "shape")]
            entry.key = layout_id(out, np.broadcast_shapes(*shapes), True, 0)  # C order
        keep(self._plans, sig, entry)
        return entry

    monkeypatch.setattr(cuda_backend.CudaBackend, "warm_entry", fake_warm_entry)

    def fake_copy_entry(self, sig, src, out, key, callers=1):
        """CudaBackend.copy_entry's contract over fake_strided_copy: an entry copying arrays
        like `src` into fresh arrays laid out as `out`, kept under `sig`."""
        from gpu_tensor.fusion.eager import keep

        def entry(a, b=None):
            r = self.xp.empty_like(out)
            fake_strided_copy(r, a, _BF16 if r.dtype == _BITS else None, _BF16 if a.dtype == _BITS else None)  # fmt: skip
            return r

        entry.key = key
        keep(self._plans, sig, entry)

    monkeypatch.setattr(cuda_backend.CudaBackend, "copy_entry", fake_copy_entry)
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


def test_arrays_come_from_our_allocator_tagged_with_shape_and_dtype(fake_cuda):
    alloc = fake_cuda._alloc
    x = cr.zeros((3, 4), device="cuda")
    assert alloc.lookup(x.data_ptr()).tag == {"shape": (3, 4), "dtype": "float32"}
    y = x * 2  # an eager kernel's result (the device fast path: no adopt)
    assert alloc.lookup(y.data_ptr()).tag == {"shape": (3, 4), "dtype": "float32"}
    b = cr.tensor([1.0, 2.0], dtype=dt.bfloat16, device="cuda")  # from_host
    assert alloc.lookup(b.data_ptr()).tag == {"shape": (2,), "dtype": "bfloat16"}
    c = x.t().contiguous()
    assert alloc.lookup(c.data_ptr()).tag == {"shape": (4, 3), "dtype": "float32"}
    h = x.to(dt.float16)
    assert alloc.lookup(h.data_ptr()).tag == {"shape": (3, 4), "dtype": "float16"}
    assert alloc.lookup(x[1:].data_ptr()) is None  # a view: no block of its own
    assert {"shape": (3, 4), "dtype": "float32"} in [blk.tag for blk in alloc.allocated_blocks()]
    nbytes = alloc.stats()["allocated_bytes.all.current"]
    del y
    assert alloc.stats()["allocated_bytes.all.current"] < nbytes  # freed with its tensor


def test_empty_tensors_ask_the_allocator_for_zero_bytes(fake_cuda):
    """CuPy calls the installed allocator even for 0 bytes; that must neither fail nor leak."""
    alloc = fake_cuda._alloc
    before = alloc.stats()["allocated_bytes.all.current"]
    e = cr.empty((0, 3), device="cuda")
    assert e.shape == (0, 3) and e.numel() == 0
    assert (e + 1).shape == (0, 3) and e.sum().item() == 0
    del e
    assert alloc.stats()["allocated_bytes.all.current"] == before


def test_bfloat16_casts_convert_values_not_bits(fake_cuda, monkeypatch):
    seen = []
    real = kcopy.strided_copy

    def spy(dst, src, dst_dtype=None, src_dtype=None):
        seen.append((dst_dtype, src_dtype))
        real(dst, src, dst_dtype, src_dtype)

    monkeypatch.setattr(kcopy, "strided_copy", spy)
    vals = [1.5, -2.0, 300.0, 0.0078125]
    b = cr.tensor(vals, dtype=dt.bfloat16, device="cuda")
    assert b.float().tolist() == vals and b.long().tolist() == [1, -2, 300, 0]
    assert (None, _BF16) in seen  # the kernels were told the source is bfloat16
    seen.clear()
    back = cr.tensor(vals, device="cuda").to(dt.bfloat16)
    assert back._data.dtype == np.uint16 and back.tolist() == vals
    assert (_BF16, None) in seen
    m = cr.tensor([[1.5, 2.0], [3.0, -4.0]], dtype=dt.bfloat16, device="cuda")
    assert m.t().contiguous().tolist() == [[1.5, 3.0], [2.0, -4.0]]
    z = cr.zeros(2, dtype=dt.bfloat16, device="cuda")
    z.copy_(cr.tensor([2.5, -1.0], device="cuda"))  # float32 -> bfloat16 storage
    assert z.tolist() == [2.5, -1.0]
    fake_cuda.copy_(z._data, 3.5)  # a host scalar into bfloat16 bits: its value, not int(3.5)
    assert z.tolist() == [3.5, 3.5]


def test_cuda_array_interface_names_our_current_stream(fake_cuda):
    import gpu_tensor.cuda as gcuda

    x = cr.arange(6.0, device="cuda")
    cai = x.__cuda_array_interface__
    assert cai["stream"] == 1  # the legacy default stream, spelled 1 (0 is forbidden)
    assert cai["data"][0] == x.data_ptr() and cai["shape"] == (6,) and cai["version"] == 3
    s = gcuda.Stream()
    with gcuda.stream(s):
        assert x.__cuda_array_interface__["stream"] == s.cuda_stream != 1


def test_record_stream_finds_cupy_made_storages_by_address(fake_cuda):
    import gpu_tensor.cuda as gcuda

    alloc = registry.find(0)  # the one transfer.record_stream consults
    x = cr.zeros(1000, device="cuda")
    assert x.untyped_storage()._block is None  # real cuda storages carry no block object
    s = gcuda.Stream()
    x[10:].record_stream(s)  # a view: its storage's base address is the block's
    assert alloc.lookup(x.data_ptr()).stream_uses == {s.ptr}


def test_moves_keep_dense_strides_on_cuda(fake_cuda):
    x = cr.arange(24.0).reshape(2, 3, 4)
    for src in (x.permute(2, 0, 1), x.transpose(0, 1), x[1].t()):
        d = src.cuda()
        assert d.stride() == src.stride() and d.tolist() == src.tolist()
        h = d.cpu()
        assert h.stride() == src.stride() and h.tolist() == src.tolist()
        w = src.to("cuda", dt.float64)  # then a cast on the device: still the same layout
        assert w.stride() == src.stride() and w.tolist() == src.tolist()
    g = x[:, :, ::2].cuda()  # gaps: arrives C-contiguous
    assert g.is_contiguous() and g.tolist() == x[:, :, ::2].tolist()


@pytest.mark.parametrize(
    "module,attr", [("gpu_tensor.kernel.copy", "copy"), ("gpu_tensor.fusion.eager", "eager")]
)
def test_missing_kernel_modules_are_errors_not_silent_fallbacks(
    fake_cuda, monkeypatch, module, attr
):
    import importlib

    x = cr.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    parent = importlib.import_module(module.rpartition(".")[0])
    monkeypatch.delattr(parent, attr)
    monkeypatch.setitem(sys.modules, module, None)  # a broken install
    with pytest.raises(ImportError):
        x.t().contiguous() if attr == "copy" else x * 2


def test_missing_allocator_module_is_an_error(monkeypatch):
    import gpu_tensor.backends as backends

    monkeypatch.setattr(_cupy, "_module", make())
    monkeypatch.delattr(backends, "cuda_memory")
    monkeypatch.setitem(sys.modules, "gpu_tensor.backends.cuda_memory", None)
    with pytest.raises(ImportError):
        cuda_backend.CudaBackend(0)


@pytest.mark.parametrize("shape", [(6, 0), (0, 3, 2), (2, 3, 0), (0,), (1, 0, 4)])
def test_empty_tensors_get_torch_contiguous_strides(fake_cuda, monkeypatch, shape):
    # torch gives empty tensors C strides with 0-size dims counted as 1 (the cpu backend
    # fixes numpy's all-zero strides at allocation); the cuda backend must not rely on how
    # cupy strides an empty array, so the fake here hands out numpy's zero strides
    xp = fake_cuda.xp
    plain_empty = xp.empty

    def zero_strided_empty(shape, dtype=float):
        a = plain_empty(shape, dtype)
        return a if a.size else xp.ndarray(a.shape, a.dtype, memptr=a.data, strides=(0,) * a.ndim)

    monkeypatch.setattr(xp, "empty", zero_strided_empty)
    want = cr.empty(*shape, device="cpu").stride()
    assert want == tuple(
        int(np.prod([max(n, 1) for n in shape[i + 1 :]])) for i in range(len(shape))
    )
    for t in (
        cr.empty(*shape, device="cuda"),
        cr.zeros(*shape, device="cuda"),
        cr.empty(shape, dtype=dt.bfloat16, device="cuda"),
    ):
        assert isinstance(t._data, xp.ndarray)
        assert t.shape == shape and t.stride() == want and t.is_contiguous()
