"""The Tensor contract: storage, metadata, repr, host values, moves, lifetime."""

import gc

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor import device as dv
from gpu_tensor._tensor import Size, Tensor, channels_last


def test_metadata(device):
    x = cr.arange(24, device=device, dtype=dt.float32).reshape(2, 3, 4)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, Size) and x.size() == (2, 3, 4)
    assert x.size(1) == 3 and x.size(-1) == 4 and x.shape.numel() == 24
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12 and x.stride(-1) == 1
    assert x.ndim == x.dim() == 3 and x.numel() == 24 and x.nelement() == 24
    assert x.element_size() == 4 and x.itemsize == 4 and x.nbytes == 96
    assert x.is_contiguous() and x.storage_offset() == 0
    assert x.is_floating_point() and not x.is_complex()
    assert x.get_device() == (-1 if device == "cpu" else 0)


def test_views_share_storage_clone_does_not(device):
    x = cr.arange(6, device=device)
    v = x.view(3, 2)
    assert v.data_ptr() == x.data_ptr()
    assert v.untyped_storage() is x.untyped_storage()
    assert x.untyped_storage().nbytes() == 48
    c = x.clone()
    assert c.data_ptr() != x.data_ptr()
    assert c.untyped_storage() is not x.untyped_storage()
    s = x[2:]
    assert s.storage_offset() == 2
    assert s.data_ptr() == x.data_ptr() + 2 * 8
    assert s.untyped_storage().data_ptr() == x.data_ptr()


def test_view_of_fresh_op_result_shares_storage(device):
    y = cr.arange(8, device=device) + 1
    v = y.view(2, 4)[1]
    assert v.untyped_storage() is y.untyped_storage()
    assert v.storage_offset() == 4


def test_repr_like_torch(device):
    suffix = "" if device == "cpu" else ", device='cuda:0'"
    assert repr(cr.tensor([1.0, 2.0], device=device)) == f"tensor([1., 2.]{suffix})"
    assert repr(cr.tensor([1, 2], device=device)) == f"tensor([1, 2]{suffix})"
    assert repr(cr.tensor([0.5, 1.25], device="cpu")) == "tensor([0.5000, 1.2500])"
    assert repr(cr.tensor([1.0], dtype=dt.float64, device="cpu")) == (
        "tensor([1.], dtype=gpu_tensor.float64)"
    )
    assert repr(cr.tensor([[True, False]], device="cpu")) == "tensor([[ True, False]])"
    assert repr(cr.tensor(3, device="cpu")) == "tensor(3)"
    assert (
        repr(cr.zeros(2, requires_grad=True, device="cpu"))
        == "tensor([0., 0.], requires_grad=True)"
    )
    assert "dtype=gpu_tensor.int32" in repr(cr.zeros(0, 2, dtype=dt.int32))


def test_item_tolist_numpy(device):
    x = cr.tensor([[1.5, 2.0]], device=device)
    assert x.tolist() == [[1.5, 2.0]]
    assert x[0, 0].item() == 1.5 and isinstance(x[0, 1].item(), float)
    assert float(x[0, 0]) == 1.5 and int(cr.tensor(3, device=device)) == 3
    assert cr.tensor([7], dtype=dt.bfloat16, device=device).item() == 7.0
    with pytest.raises(RuntimeError, match="2 elements"):
        x.item()
    if device == "cpu":
        assert x.numpy() is x._data
    else:
        with pytest.raises(TypeError, match=r"\.cpu\(\)"):
            x.numpy()
        np.testing.assert_array_equal(x.cpu().numpy(), [[1.5, 2.0]])


def test_bool_len_iter(device):
    x = cr.tensor([1, 2, 3], device=device)
    assert len(x) == 3 and [t.item() for t in x] == [1, 2, 3]
    assert bool(cr.tensor([1], device=device))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError, match="0-d"):
        len(cr.tensor(1))


def test_to_moves_and_casts(device):
    x = cr.tensor([1.5, 2.5], device="cpu")
    y = x.to(device)
    assert y.device.type == device and y.tolist() == [1.5, 2.5]
    assert (y is x) == (device == "cpu")
    z = y.to(dt.int32)
    assert z.dtype is dt.int32 and z.device == y.device and z.tolist() == [1, 2]
    w = x.to(device, dt.float64)
    assert w.dtype is dt.float64 and w.device.type == device
    assert x.to(y).device == y.device
    assert x.to(dtype=dt.float16, device=device).dtype is dt.float16
    c = x.to("cpu", copy=True)
    assert c.data_ptr() != x.data_ptr()
    back = y.cpu()
    assert back.device == "cpu" and back.tolist() == [1.5, 2.5]
    assert x.cuda().device == "cuda:0"
    assert x.double().dtype is dt.float64 and x.half().dtype is dt.float16
    assert x.long().dtype is dt.int64 and x.bool().dtype is dt.bool
    assert x.bfloat16().float().tolist() == [1.5, 2.5]


def test_to_keeps_strides_values(device):
    x = cr.arange(6.0, device="cpu").reshape(2, 3).t()
    y = x.to(device)
    np.testing.assert_array_equal(y.cpu().numpy(), x.numpy())


def test_copy_across_devices(device):
    dst = cr.zeros(2, 3, device=device)
    src = cr.arange(3.0)
    dst.copy_(src)  # broadcasts across rows, crosses devices
    assert dst.tolist() == [[0, 1, 2], [0, 1, 2]]
    dst.copy_(cr.tensor([[1, 2, 3], [4, 5, 6]], device=device))  # int -> float
    assert dst.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_version_counter_shared_by_views(device):
    x = cr.zeros(4, device=device)
    v = x[1:]
    before = x._version
    v.add_(1)
    assert x._version == v._version == before + 1
    x.fill_(2)
    assert v._version == before + 2


def test_detach_shares_storage(device):
    x = cr.ones(3, requires_grad=True, device=device)
    d = x.detach()
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    with pytest.raises(RuntimeError, match="detach"):
        cr.ones(3, requires_grad=True, device="cpu").numpy()


def test_channels_last(device):
    x = cr.arange(2 * 3 * 4 * 5.0, device=device).reshape(2, 3, 4, 5)
    y = x.contiguous(memory_format=channels_last)
    assert y.is_contiguous(memory_format=channels_last) and not y.is_contiguous()
    assert y.stride() == (60, 1, 15, 3)
    np.testing.assert_array_equal(y.cpu().numpy(), x.cpu().numpy())


def test_tensor_constructor_is_torchs_legacy_one():
    assert Tensor([1, 2]).dtype is dt.float32 and Tensor([1, 2]).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="gt.tensor"):  # a number is not data: the fix named
        Tensor(3.5)


def test_wrap_existing_array():
    a = np.arange(4, dtype=np.int16)
    t = Tensor._wrap(a)
    assert t.dtype is dt.int16 and t.device == "cpu" and t.data_ptr() == a.ctypes.data


@pytest.mark.skipif(dv.real_cuda_available(), reason="emulated-device accounting")
def test_emulated_memory_comes_from_the_allocator():
    from gpu_tensor.memory import registry

    alloc = registry.get_allocator(0, "emulated")
    gc.collect()
    base = alloc.stats()["allocated_bytes.all.current"]
    t = cr.zeros(1000, device="cuda")  # 4000 bytes
    grown = alloc.stats()["allocated_bytes.all.current"]
    assert grown >= base + 4000
    v = t[10:].view(-1, 10)  # views keep it alive
    del t
    assert alloc.stats()["allocated_bytes.all.current"] == grown
    arr = v._data  # even a raw numpy view keeps the block alive
    del v
    assert alloc.stats()["allocated_bytes.all.current"] == grown
    del arr
    assert alloc.stats()["allocated_bytes.all.current"] == base
    # op results and moves land in the allocator too
    y = cr.ones(256, device="cuda") * 2
    assert alloc.stats()["allocated_bytes.all.current"] >= base + 1024
    del y
    assert alloc.stats()["allocated_bytes.all.current"] == base


@pytest.mark.skipif(dv.real_cuda_available(), reason="emulated-device accounting")
def test_emulated_block_is_tagged():
    from gpu_tensor.memory import registry

    t = cr.zeros(3, 5, device="cuda", dtype=dt.int16)
    block = t.untyped_storage()._block
    assert block.tag["shape"] == (3, 5) and block.tag["dtype"] == "int16"
    assert registry.get_allocator(0, "emulated") is not None


def test_pickle_deepcopy_contains_format(device):
    import copy
    import pickle

    x = cr.tensor([[1.5, 2.0]], device=device, dtype=dt.float64)
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert y.tolist() == x.tolist() and y.dtype is dt.float64 and y.device == x.device
        assert y.data_ptr() != x.data_ptr()
    assert 2.0 in x and 3.0 not in x
    assert f"{x[0, 0]:.2f}" == "1.50"


@pytest.mark.skipif(dv.real_cuda_available(), reason="emulated-device accounting")
def test_cuda_memory_allocated_follows_tensor_lifetime():
    from gpu_tensor.cuda import memory

    gc.collect()
    base = memory.memory_allocated()
    t = cr.empty(4096, device="cuda")  # 16 KiB
    assert memory.memory_allocated() >= base + 16384
    mine = [r for r in memory.live_tensors() if r["address"] == t.data_ptr()]
    assert mine and tuple(mine[0]["shape"]) == (4096,) and mine[0]["dtype"] == "float32"
    assert "test_tensor.py" in mine[0]["site"]  # the creation site is the user's line
    del t
    assert memory.memory_allocated() == base
