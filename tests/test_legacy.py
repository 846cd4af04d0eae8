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
