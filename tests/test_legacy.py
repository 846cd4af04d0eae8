"""Legacy constructors with torch's semantics: gt.FloatTensor & co, gt.cuda.*Tensor,
autograd.Variable, and nn.init.orthogonal_."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


def test_float_tensor_by_sizes_and_by_data():
    t = gt.FloatTensor(2, 3)
    assert t.shape == (2, 3) and t.dtype is gt.float32 and t.device.type == "cpu"
    d = gt.LongTensor([1, 2])
    assert d.dtype is gt.int64 and d.tolist() == [1, 2]
    assert gt.DoubleTensor([[1.5]]).dtype is gt.float64
    assert gt.BoolTensor([True]).dtype is gt.bool


def test_tensor_itself_is_the_legacy_constructor(device):
    """gt.Tensor(...) as torch 2.13's torch.Tensor(...) (its answers recorded here): by data
    (float32, a tuple is data), by sizes (uninitialised float32; gt.Size is sizes), no
    argument (empty), a tensor (a new Tensor viewing it, its own dtype)."""
    t = gt.Tensor([1, 2], device=device)
    assert t.dtype is gt.float32 and t.tolist() == [1.0, 2.0] and t.device.type == device
    assert gt.Tensor([[1, 2], [3, 4]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert gt.Tensor((2, 3)).tolist() == [2.0, 3.0]
    assert gt.Tensor([True, False]).tolist() == [1.0, 0.0]
    assert gt.Tensor(np.array([1.5, 2])).tolist() == [1.5, 2.0]
    for sized in (gt.Tensor(2, 3, device=device), gt.Tensor(gt.Size([2, 3]), device=device)):
        assert sized.shape == (2, 3) and sized.dtype is gt.float32
        assert sized.device.type == device
    assert gt.Tensor(3).shape == (3,)
    assert gt.Tensor().shape == (0,) and gt.Tensor().dtype is gt.float32
    x = gt.arange(4, device=device)
    a = gt.Tensor(x)
    assert a is not x and a.dtype is gt.int64 and a.data_ptr() == x.data_ptr()
    a[0] = 7
    assert x[0].item() == 7
    assert type(gt.nn.Parameter(gt.ones(2))) is gt.nn.Parameter  # subclasses: their own

    class Bare(gt.Tensor):  # a subclass with no constructor of its own: refused, as before
        pass

    with pytest.raises(TypeError, match="factory function to make a Bare"):
        Bare([1.0])


@pytest.mark.parametrize(
    "args, kwargs, error",
    [((3.5,), {}, TypeError), (("a",), {}, TypeError), ((2, 3.0), {}, TypeError),
     ((-1,), {}, RuntimeError), (([1],), {"dtype": gt.float64}, TypeError)],
)  # fmt: skip
def test_tensor_constructor_refuses_as_torch(args, kwargs, error):
    with pytest.raises(error):
        gt.Tensor(*args, **kwargs)


def test_isinstance_checks_dtype_and_device():
    x = gt.ones(2)
    assert isinstance(x, gt.FloatTensor)
    assert not isinstance(x, gt.DoubleTensor)
    assert not isinstance(x, gt.cuda.FloatTensor)
    c = gt.cuda.FloatTensor([1.0, 2.0])
    assert c.device.type == "cuda" and isinstance(c, gt.cuda.FloatTensor)
    assert repr(gt.cuda.FloatTensor) == "<class 'gpu_tensor.cuda.FloatTensor'>"
    with pytest.raises(AttributeError):
        gt.cuda.NoSuchTensor  # noqa: B018


def test_variable_is_the_tensor():
    from gpu_tensor.autograd import Variable

    x = gt.ones(2)
    v = Variable(x, requires_grad=True)
    assert v is x and v.requires_grad
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="tensor"):
        Variable([1.0])


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (6, 2), (2, 3, 2)])
def test_orthogonal_init(device, shape):
    w = gt.empty(*shape, device=device)
    gt.manual_seed(0)
    assert gt.nn.init.orthogonal_(w, gain=2.0) is w
    flat = w.cpu().numpy().reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(gram, 4 * np.eye(gram.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more"):
        gt.nn.init.orthogonal_(gt.empty(3))
