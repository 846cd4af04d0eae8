"""Sparse COO tensors on every device: creation, coalesce, conversions, arithmetic,
sparse @ dense, sum, and torch's repr (gradients: tests/autograd/test_formulas_more.py)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


def _coo(device, dtype=gt.float32):
    i = gt.tensor([[0, 1, 1, 0], [2, 0, 2, 2]], device=device)
    v = gt.tensor([3.0, 4.0, 5.0, 1.0], dtype=dtype, device=device)
    return gt.sparse_coo_tensor(i, v, (2, 3))


DENSE = np.array([[0, 0, 4], [4, 0, 5]], np.float32)  # _coo's duplicates (0, 2) summed


def test_creation_and_conversion(device):
    s = _coo(device)
    assert s.is_sparse and s.layout is gt.sparse_coo and gt.is_tensor(s)
    assert s.shape == (2, 3) and s._nnz() == 4 and not s.is_coalesced()
    assert s.device.type == device and s.dtype is gt.float32
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), DENSE)
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3
    assert c.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert c.values().tolist() == [4.0, 4.0, 5.0]
    with pytest.raises(RuntimeError, match="coalesce"):
        s.indices()
    back = gt.tensor(DENSE, device=device).to_sparse()
    assert back.is_coalesced() and back.indices().tolist() == c.indices().tolist()
    assert not gt.ones(2).is_sparse


def test_size_inferred_and_checked(device):
    s = gt.sparse_coo_tensor([[0, 4]], [1.0, 2.0], device=device)
    assert s.shape == (5,)
    with pytest.raises(RuntimeError, match="inconsistent"):
        gt.sparse_coo_tensor([[0, 4]], [1.0, 2.0], (3,), device=device)
    with pytest.raises(RuntimeError, match="nnz"):
        gt.sparse_coo_tensor([[0, 1]], [1.0], (3,), device=device)


def test_hybrid_values(device):
    s = gt.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], (3, 2), device=device)
    assert s.sparse_dim() == 1 and s.dense_dim() == 1
    assert s.to_dense().tolist() == [[1, 2], [0, 0], [3, 4]]
    x = gt.tensor([[0.0, 1.0], [0.0, 0.0]], device=device).to_sparse(1)
    assert x._nnz() == 1 and x.values().tolist() == [[0.0, 1.0]]


def test_arithmetic(device):
    s = _coo(device)
    np.testing.assert_array_equal((s + s).to_dense().cpu().numpy(), 2 * DENSE)
    assert (s + s).is_sparse
    np.testing.assert_array_equal((s * 2.5).to_dense().cpu().numpy(), 2.5 * DENSE)
    np.testing.assert_array_equal((3 * s).to_dense().cpu().numpy(), 3 * DENSE)
    dense = gt.ones(2, 3, device=device)
    np.testing.assert_array_equal((s + dense).cpu().numpy(), DENSE + 1)
    assert s.sum().item() == DENSE.sum()
    assert gt.sparse.sum(s, 1).tolist() == DENSE.sum(1).tolist()
    with pytest.raises(TypeError, match="scalar"):
        s * dense


def test_sparse_times_dense(device):
    s = _coo(device)
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    dt = gt.tensor(d, device=device)
    np.testing.assert_allclose((s @ dt).cpu().numpy(), DENSE @ d)
    np.testing.assert_allclose(gt.sparse.mm(s, dt).cpu().numpy(), DENSE @ d)
    np.testing.assert_allclose(gt.sparse.mm(dt.t(), s.t()).cpu().numpy(), (DENSE @ d).T)
    np.testing.assert_allclose((s @ dt[:, 0]).cpu().numpy(), DENSE @ d[:, 0])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        s @ gt.ones(2, 2, device=device)


def test_repr_follows_torch():
    s = _coo("cpu").coalesce()
    assert repr(s) == (
        "tensor(indices=tensor([[0, 1, 1],\n"
        "                       [2, 0, 2]]),\n"
        "       values=tensor([4., 4., 5.]),\n"
        "       size=(2, 3), nnz=3, layout=gpu_tensor.sparse_coo)"
    )
    d = gt.sparse_coo_tensor([[0]], [1.0], (2,), dtype=gt.float64, requires_grad=True)
    assert repr(d).endswith(
        "nnz=1, dtype=gpu_tensor.float64, layout=gpu_tensor.sparse_coo,\n       requires_grad=True)"
    )


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse invariant checks"
def test_repr_matches_torch_text():
    torch = pytest.importorskip("torch")
    i, v = [[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0]
    ours = repr(gt.sparse_coo_tensor(i, v, (2, 3)))
    theirs = repr(torch.sparse_coo_tensor(torch.tensor(i), torch.tensor(v), (2, 3)))
    assert ours.replace("gpu_tensor.", "torch.") == theirs
