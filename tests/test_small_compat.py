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


@pytest.mark.parametrize("bad", ["x", 1, gt.strided])
def test_memory_format_must_be_a_memory_format(bad, device):
    # torch 2.13: "<fn>(): argument 'memory_format' must be torch.memory_format, not str"
    x = gt.ones(2, 3, 4, 5, device=device)
    calls = {
        "clone": lambda: x.clone(memory_format=bad),
        "contiguous": lambda: x.contiguous(memory_format=bad),
        "is_contiguous": lambda: x.is_contiguous(memory_format=bad),
        "to": lambda: x.to(gt.float64, memory_format=bad),
        "empty": lambda: gt.empty(2, 3, device=device, memory_format=bad),
        "clone ": lambda: gt.clone(x, memory_format=bad),
    }
    for f in (gt.empty_like, gt.zeros_like, gt.ones_like, gt.rand_like, gt.randn_like):
        calls[f.__name__] = lambda f=f: f(x, memory_format=bad)
    calls["full_like"] = lambda: gt.full_like(x, 2.0, memory_format=bad)
    calls["randint_like"] = lambda: gt.randint_like(x, 3, memory_format=bad)
    for fn, call in calls.items():
        with pytest.raises(TypeError, match=rf"{fn.strip()}\(\): argument 'memory_format' must"):
            call()


def test_memory_format_none_and_formats_accepted():
    x = gt.ones(2, 3, 4, 5)
    assert isinstance(gt.channels_last, gt.memory_format)
    assert type(gt.preserve_format) is gt.memory_format and repr(gt.channels_last)
    for t in (x.clone(memory_format=None), x.to(memory_format=None), gt.empty_like(x)):
        assert t.stride() == (60, 20, 5, 1)
    assert gt.empty(2, 3, 4, 5, memory_format=gt.channels_last).stride() == (60, 1, 15, 3)
    assert x.contiguous(memory_format=gt.preserve_format) is x
    assert x.is_contiguous(memory_format=gt.preserve_format)  # torch 2.13: True
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        gt.empty(2, 3, memory_format=gt.preserve_format)
    import pickle

    assert pickle.loads(pickle.dumps(gt.channels_last)) is gt.channels_last


@pytest.mark.parametrize(
    "op",
    [
        lambda y: y.flip(2),
        lambda y: y.flip(0, 2),
        lambda y: y.t().flip(0) if y.ndim == 2 else y.transpose(0, 2).flip(1),
        lambda y: y[:, :, 1:].flip(2),
        lambda y: y.fliplr(),
        lambda y: y.rot90(1, [1, 2]),
        lambda y: y.roll(1, 2),
        lambda y: y.roll(-2),
        lambda y: y.repeat(1, 2, 1),
        lambda y: y.tile((1, 2)),
        lambda y: y[:, :, [3, 0]],
        lambda y: y[:, :1].expand(2, 3, 4).flip(1),  # torch: dense, C order (12, 4, 1)
        lambda y: y[:, :, :1].expand(2, 3, 4).transpose(0, 2).flip(0),
    ],
)
def test_bfloat16_copying_shape_ops(op, device):
    # cuda keeps bfloat16 as uint16 bits: the copies must be made in the logical dtype
    # (flip, roll, repeat raised "uint16 tensors are not supported" on the simulated cuda)
    x = (gt.arange(24.0, device="cpu") - 7.5).reshape(2, 3, 4).to(gt.bfloat16)
    want = op(x)
    got = op(x.to(device))
    assert got.dtype is gt.bfloat16 and got.device.type == gt.device(device).type
    assert got.shape == want.shape and got.stride() == want.stride()
    assert got.cpu().float().tolist() == want.float().tolist()


# (shape, the strides torch 2.13 gives a new channels_last tensor of it)
_CL_NEW = [
    ((0, 3, 4, 5), (60, 1, 15, 3)),
    ((2, 0, 4, 5), (0, 1, 0, 0)),
    ((2, 3, 0, 5), (0, 1, 15, 3)),
    ((2, 3, 4, 0), (0, 1, 0, 3)),
    ((0, 1, 0, 1), (0, 1, 1, 1)),
    ((2, 1, 4, 5), (20, 1, 5, 1)),
    ((2, 3, 1, 1), (3, 1, 3, 3)),
    ((2, 3, 4, 5), (60, 1, 15, 3)),
]


@pytest.mark.parametrize(("shape", "want"), _CL_NEW)
def test_channels_last_strides_of_empty_and_size_one_dims(shape, want, device):
    cl = gt.channels_last
    x = gt.zeros(*shape, device=device)
    assert gt.empty(*shape, device=device, memory_format=cl).stride() == want
    assert x.clone(memory_format=cl).stride() == want
    assert gt.empty_like(x, memory_format=cl).stride() == want
    assert gt.ones_like(x, memory_format=cl).stride() == want
    assert x.to(memory_format=cl).stride() == want
    a = x.contiguous(memory_format=cl)
    # contiguous() keeps a tensor that already passes the check (size-1 dims: any stride)
    assert a.stride() == (x.stride() if x.is_contiguous(memory_format=cl) else want)
    assert a.is_contiguous(memory_format=cl)
    assert a.is_contiguous() == (shape != (2, 3, 4, 5))  # torch: True for all but the full one
    assert x.is_contiguous(memory_format=cl) == (1 in shape[1:] and 0 not in shape)
    # preserve_format (empty_like, clone) keeps the channels_last strides, empty or not
    assert gt.empty_like(a).stride() == a.stride() and a.clone().stride() == a.stride()


def test_channels_last_3d():
    c3 = gt.channels_last_3d
    assert isinstance(c3, gt.memory_format) and repr(c3) == "gpu_tensor.channels_last_3d"
    x = gt.arange(720.0).reshape(2, 3, 4, 5, 6)
    y = x.contiguous(memory_format=c3)
    assert y.stride() == (360, 1, 90, 18, 3) and y.is_contiguous(memory_format=c3)
    assert y.tolist() == x.tolist() and not x.is_contiguous(memory_format=c3)
    assert gt.empty(2, 3, 1, 1, 1, memory_format=c3).stride() == (3, 1, 3, 3, 3)
    assert gt.empty(2, 0, 4, 1, 6, memory_format=c3).stride() == (0, 1, 0, 0, 0)
    assert gt.zeros(2, 1, 4, 5, 6).clone(memory_format=c3).stride() == (120, 1, 30, 6, 1)
    assert not gt.zeros(2, 3, 4, 5).is_contiguous(memory_format=c3)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        gt.zeros(2, 3, 4).contiguous(memory_format=c3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x.to(memory_format=gt.channels_last)


def test_to_channels_last_keeps_or_copies_as_torch():
    cl = gt.channels_last
    y = gt.zeros(2, 3, 4, 5).contiguous(memory_format=cl)
    assert y.to(memory_format=cl) is y
    assert y.to(gt.float64, memory_format=cl).stride() == (60, 1, 15, 3)
    assert y.to(memory_format=gt.contiguous_format).stride() == (60, 20, 5, 1)
    x = gt.zeros(2, 1, 4, 5)  # passes is_contiguous(channels_last), but torch copies it
    assert x.to(memory_format=cl) is not x
    assert x.to(gt.float64, memory_format=cl).stride() == (20, 1, 5, 1)
    assert gt.zeros(2, 3, 4, 5).permute(0, 2, 3, 1).to(memory_format=cl).stride() == (60, 1, 12, 4)


@pytest.mark.parametrize(
    ("view", "stride", "offset"),
    [  # torch 2.13's strides and storage_offset()
        (lambda x: x[:0].permute(2, 0, 1), (1, 12, 4), 0),
        (lambda x: x[1:1].transpose(0, 1), (4, 12, 1), 12),
        (lambda x: x[:, 3:].permute(1, 0, 2), (4, 12, 1), 12),
        (lambda x: x[:0].reshape(0, 12), (12, 1), 0),
        (lambda x: x[:0].view(0, 4, 3), (12, 3, 1), 0),
        (lambda x: x[:0].mT, (12, 1, 4), 0),
        (lambda x: x[2:].flatten(), (1,), 24),
        (lambda x: x[:, :, 4:].permute(2, 1, 0), (1, 4, 12), 4),
        (lambda x: x[:, 3:].movedim(0, 2), (4, 1, 12), 12),
    ],
)
def test_views_of_empty_tensors(view, stride, offset, device):
    # the simulated cuda made a view of an empty array a new array at pointer 0, so
    # storage_offset() read minus the base's address
    x = gt.arange(24.0, device=device).reshape(2, 3, 4)
    v = view(x)
    assert v.numel() == 0 and v.stride() == stride and v.storage_offset() == offset
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_isinstance_of_gt_dtype():
    # torch code checks `isinstance(x, torch.dtype)`; gt.dtype (a module) raised TypeError
    assert isinstance(gt.float32, gt.dtype) and isinstance(gt.bfloat16, gt.dtype)
    assert not isinstance("float32", gt.dtype) and not isinstance(gt.ones(1), gt.dtype)
    assert isinstance(gt.int64, (gt.dtype, str)) and issubclass(gt.DType, gt.dtype)
    assert not issubclass(int, gt.dtype) and gt.dtype.to_dtype("float64") is gt.float64


def test_finfo_iinfo():
    # values and reprs recorded from torch 2.13
    f = gt.finfo(gt.float32)
    assert (f.bits, f.eps, f.max, f.min) == (32, 2.0**-23, 3.4028234663852886e38, -f.max)
    assert f.tiny == f.smallest_normal == 2.0**-126 and f.resolution == 1e-06
    assert f.dtype == "float32" and gt.finfo() == f and gt.finfo(gt.complex64) == f
    assert repr(f) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)"
    )
    b = gt.finfo(gt.bfloat16)
    assert (b.bits, b.eps, b.resolution, b.dtype) == (16, 0.0078125, 0.01, "bfloat16")
    assert gt.finfo(gt.float16).tiny == 6.103515625e-05 and gt.finfo(gt.float64).bits == 64
    i = gt.iinfo(gt.int8)
    assert (i.bits, i.min, i.max, i.dtype) == (8, -128, 127, "int8")
    assert repr(i) == "iinfo(min=-128, max=127, dtype=int8)" and gt.iinfo(gt.uint8).min == 0
    assert gt.iinfo(gt.int64).max == 2**63 - 1
    with pytest.raises(TypeError, match=r"finfo\(\) requires a floating point input type"):
        gt.finfo(gt.int32)
    with pytest.raises(TypeError, match=r"iinfo\(\) requires an integer input type"):
        gt.iinfo(gt.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        gt.iinfo(gt.bool)
    with pytest.raises(TypeError, match="must be torch.dtype, not str"):
        gt.finfo("float32")


def test_format_of_a_0_dim_tensor_is_its_value(device):
    # torch 2.13: f"{loss}" prints the number; other tensors print their repr
    assert f"{gt.tensor(3, device=device)}" == "3"
    assert f"{gt.tensor(2.5, device=device)}" == "2.5" and f"{gt.tensor(True)}" == "True"
    assert f"{gt.tensor(7, device=device):>6}" == "     7"
    assert f"{gt.tensor(2.5, device=device):.2f}" == "2.50"
    assert f"{gt.tensor([1, 2], device='cpu')}" == "tensor([1, 2])"
    p = gt.nn.Parameter(gt.tensor(2.5))
    assert f"{p}" == repr(p) and f"{p}".startswith("Parameter containing:")


def test_logspace(device):
    # values recorded from torch 2.13 (exact for these integer bases)
    assert gt.logspace(0, 2, 3, device=device).tolist() == [1.0, 10.0, 100.0]
    t = gt.logspace(-3, 3, 7, device=device)
    assert t.dtype is gt.float32 and t.cpu().numpy().tolist() == [
        0.0010000000474974513, 0.009999999776482582, 0.10000000149011612, 1.0, 10.0, 100.0,
        1000.0,
    ]  # fmt: skip
    assert gt.logspace(0, 1, 3, base=2, dtype=gt.float64).tolist() == [1.0, 2**0.5, 2.0]
    # an integer dtype takes the end points as integers: 2 ** (0, .6, 1.2, 1.8, 2.4, 3)
    assert gt.logspace(0.5, 3.7, 6, base=2, dtype=gt.int64).tolist() == [1, 1, 2, 3, 5, 8]
    e = gt.logspace(0.5, 3.7, 6, base=2.718281828, dtype=gt.int64)
    assert e.tolist() == [1, 1, 3, 6, 11, 20]
    assert gt.logspace(2, 2, 1).tolist() == [100.0] and gt.logspace(0, 1, 0).shape == (0,)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        gt.logspace(0, 1, -1)


def test_flip_result_strides_are_torchs(device):
    # torch 2.13: flip's result is empty_like(input): an expanded input's is dense in the
    # input's stride order (numpy's copy order gave (1, 2) for the first)
    x = gt.tensor([1.5, 2.5], device=device)
    assert x.expand(2, 2).flip(0).stride() == (2, 1)
    y = gt.zeros(2, 3, 4, device=device)
    assert y[:, :1].expand(2, 3, 4).flip(1).stride() == (12, 4, 1)
    assert y[:, :, :1].expand(2, 3, 4).transpose(0, 2).flip(0).stride() == (6, 1, 3)
    assert y.transpose(0, 2).flip(1).stride() == (1, 4, 12)
    # size-1 dims keep the input's strides (torch 2.13)
    cl = gt.empty(1, 3, 1, 1, device=device, memory_format=gt.channels_last)
    assert cl.stride() == (3, 1, 3, 3) and cl.flip(0, 3).stride() == (3, 1, 3, 3)
    assert gt.zeros(1, 3, device=device)[:, None].flip(2).stride() == (3, 3, 1)
    assert gt.zeros(3, 2, device=device).t()[:1].flip(1).stride() == (1, 1)
    assert x.expand(2, 2).flip(0).tolist() == [[1.5, 2.5], [1.5, 2.5]]


def test_method_errors_name_the_method():
    # Python's own TypeErrors print the function's qualname: "_cpu() got ..." named a
    # private function of gpu_tensor
    x = gt.ones(2)
    with pytest.raises(TypeError, match=r"^cpu\(\) got an unexpected keyword argument 'bad'"):
        x.cpu(bad=1)
    with pytest.raises(TypeError, match=r"^type_as\(\) missing 1 required positional"):
        x.type_as()
