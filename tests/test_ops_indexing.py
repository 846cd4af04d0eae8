"""Indexing (basic views, advanced copies), assignment, gather/scatter, masks vs numpy."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor.ops import indexing as ix
from gpu_tensor.testing import assert_close

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.fixture
def x(device):
    return cr.tensor(A, device=device)


@pytest.mark.parametrize(
    "idx",
    [
        1,
        -1,
        (1, 2),
        (slice(None), 1),
        (Ellipsis, 0),
        (None, 0),
        (0, slice(1, None, 2), None),
        (1, 2, 3),
        slice(0, 5),
    ],
)
def test_basic_indexing_is_a_view(x, idx):
    v = x[idx]
    assert_close(v, A[idx])
    assert v.untyped_storage() is x.untyped_storage()


@pytest.mark.parametrize(
    "make_idx, np_idx",
    [
        (lambda d: cr.tensor([1, 0, 1], device=d), np.array([1, 0, 1])),
        (lambda d: [0, 1], [0, 1]),
        (lambda d: (slice(None), cr.tensor([2, 0])), (slice(None), np.array([2, 0]))),
        (lambda d: (cr.tensor([0, 1]), cr.tensor([1, 2])), (np.array([0, 1]), np.array([1, 2]))),
        (
            lambda d: (cr.tensor([0, 1]), slice(None), cr.tensor([1, 2])),
            (np.array([0, 1]), slice(None), np.array([1, 2])),
        ),
        (lambda d: cr.tensor(A > 10, device=d), A > 10),
        (
            lambda d: (0, cr.tensor([True, False, True], device=d)),
            (0, np.array([True, False, True])),
        ),
    ],
)
def test_advanced_indexing_copies(x, make_idx, np_idx):
    r = x[make_idx(x.device)]
    assert_close(r, A[np_idx])
    assert r.untyped_storage() is not x.untyped_storage()


def test_setitem(device):
    a = A.copy()
    x = cr.tensor(A, device=device)
    x[0, 1] = 100.0
    a[0, 1] = 100.0
    x[1, :, 2] = cr.tensor([7.0, 8.0, 9.0], device=device)
    a[1, :, 2] = [7.0, 8.0, 9.0]
    x[x > 20] = -1
    a[a > 20] = -1
    x[cr.tensor([0, 1]), 0, 0] = cr.tensor([5.0, 6.0])
    a[[0, 1], 0, 0] = [5.0, 6.0]
    x[..., 3] = 2  # int into float
    a[..., 3] = 2
    assert_close(x, a)
    i = cr.zeros(3, dtype=dt.int64, device=device)
    i[1] = 2.7  # torch truncates
    assert i.tolist() == [0, 2, 0]


def test_gather_scatter(device):
    src = cr.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    idx = cr.tensor([[2, 0], [1, 1]], device=device)
    assert ix.gather(src, 1, idx).tolist() == [[3, 1], [5, 5]]
    assert src.gather(0, cr.tensor([[1, 0, 1]], device=device)).tolist() == [[4, 2, 6]]
    z = cr.zeros(2, 3, dtype=dt.int64, device=device)
    out = z.scatter(1, idx, src)
    assert out.tolist() == [[2, 0, 1], [0, 5, 0]]
    assert z.sum().item() == 0  # out-of-place
    added = z.scatter_add(1, cr.tensor([[0, 0], [2, 2]], device=device), src)
    assert added.tolist() == [[3, 0, 0], [0, 0, 9]]
    z.scatter_(0, cr.tensor([[1, 0, 1]], device=device), 7)
    assert z.tolist() == [[0, 7, 0], [7, 0, 7]]


def test_index_select_masked(device):
    x = cr.tensor(A, device=device)
    assert_close(x.index_select(2, cr.tensor([3, 0], device=device)), A[:, :, [3, 0]])
    m = cr.tensor(A > 12, device=device)
    assert_close(x.masked_select(m), A[A > 12])
    assert_close(x.masked_fill(m, 0.5), np.where(A > 12, 0.5, A).astype(np.float32))
    y = x.clone()
    y.masked_fill_(cr.tensor([True, False, False, True], device=device), -1)
    assert_close(y, np.where(np.array([True, False, False, True]), -1, A).astype(np.float32))
    nz = cr.tensor([[0, 1], [2, 0]], device=device).nonzero()
    assert nz.tolist() == [[0, 1], [1, 0]] and nz.dtype is dt.int64
    assert ix.take(x, cr.tensor([0, 23], device=device)).tolist() == [0.0, 23.0]


def test_indexing_errors(device):
    x = cr.tensor(A, device=device)
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="out of bounds"):
        x[cr.tensor([5])]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[cr.tensor([0.5])]
    with pytest.raises(RuntimeError, match="boolean"):
        x.masked_fill(cr.tensor([1, 0, 0, 1], device=device), 0)
    with pytest.raises(RuntimeError, match="int64"):
        x.gather(0, cr.tensor([[0]], dtype=dt.int32, device=device))


def test_plain_slices_of_a_tensor_with_an_empty_dim(device):
    """The direct slicing path once gave zeros(2, 0, 3)[:] the shape (0, 0, 3)."""
    t = cr.zeros(2, 0, 3, device=device)
    assert t[:].shape == (2, 0, 3) and t[1:].shape == (1, 0, 3)
    assert t[::2].shape == (1, 0, 3) and t[::2].storage_offset() == 0


def test_empty_results_keep_torchs_strides_and_offset(device):
    """torch keeps an empty slice's clamped start (in the offset) and its step (in the
    stride), where numpy resets both; the offset may lie past the storage's end."""
    x = cr.tensor(A, device=device)
    s0, s1, s2 = x.stride()
    r = x[5:9, 1]  # start 5 clamps to 2, the end of dim 0: 2 * 12 + 4 = 28 of 24 elements
    assert r.shape == (0, 4) and r.stride() == (s0, s2)
    assert r.storage_offset() == 2 * s0 + 1 * s1 > x.numel()
    assert r.data_ptr() - x.data_ptr() == r.storage_offset() * x.element_size()
    r2 = r[None, :, 1:]  # views of it start from its offset; None: size * stride of dim 0
    assert r2.stride() == (0 * s0, s0, s2) and r2.storage_offset() == r.storage_offset() + s2
    assert r.cpu().numpy().shape == (0, 4) and (r + 1).shape == (0, 4) and r.sum().item() == 0
    e = x[:, :, 4::3]  # empty on a non-empty base, with a step
    assert e.stride() == (s0, s1, 3 * s2) and e.storage_offset() == 4 * s2
    t = x.transpose(0, 2)[1:1]  # on a view: its own strides
    assert t.stride() == (s2, s1, s0) and t.storage_offset() == s2
    assert x.narrow(2, 4, 0).storage_offset() == 4 * s2
    z = cr.zeros(3, 0, 2, device=device)  # an empty base: same rules
    assert z[::2, :, 1:].stride() == (2 * z.stride(0), 2, 1)
    assert z[2:, :, 1:].storage_offset() == 2 * z.stride(0) + 1


def test_empty_as_strided_takes_any_offset(device):
    x = cr.tensor(A, device=device)
    r = x.as_strided((0, 3), (1, 1), 100)  # torch checks no bounds for 0 elements
    assert r.stride() == (1, 1) and r.storage_offset() == 100
    with pytest.raises(RuntimeError, match="storage offset"):
        x.as_strided((0,), (1,), -1)


_T = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


_I = np.array([0, 1, 1])


@pytest.mark.parametrize(
    "index, want, strides",
    [  # torch 2.13's strides for these results
        (lambda d: cr.tensor([0, -1, 1], device=d), _T[[0, -1, 1]], (20, 5, 1)),
        (lambda d: (slice(None), cr.tensor(_I, device=d)), _T[:, _I], (15, 5, 1)),
        (
            lambda d: (slice(None), cr.tensor([[0, 2], [1, 1]], device=d)),
            _T[:, np.array([[0, 2], [1, 1]])],
            (20, 10, 5, 1),
        ),
        (lambda d: (Ellipsis, cr.tensor([0, 1], device=d)), _T[..., [0, 1]], (8, 2, 1)),
        (lambda d: (slice(1, None), cr.tensor([1, 0], device=d)), _T[1:, [1, 0]], (10, 5, 1)),
        (lambda d: (0, slice(None), cr.tensor([1, 0], device=d)), _T[0][:, [1, 0]], (2, 1)),
        (lambda d: (slice(None), cr.tensor([-1, -2], device=d)), _T[:, [-1, -2]], (10, 5, 1)),
        (lambda d: cr.tensor(_T[:, 0, 0] > 10, device=d), _T[_T[:, 0, 0] > 10], (20, 5, 1)),
    ],
)
def test_one_array_index_gives_torchs_c_contiguous_result(device, index, want, strides):
    """numpy lays x[:, i] out with the index dims outermost; torch (and now we) in C order."""
    r = cr.tensor(_T, device=device)[index(device)]
    assert_close(r, want)
    assert r.stride() == strides


def test_a_transposed_source_keeps_numpys_order_and_out_of_range_raises(device):
    t = cr.tensor(_T, device=device).transpose(0, 2)  # (5, 4, 3), strides (1, 5, 20)
    r = t[cr.tensor([[0, 1], [1, 2]], device=device)]
    assert r.stride() == (24, 12, 1, 4)  # torch 2.13's too
    assert_close(r, _T.transpose(2, 1, 0)[np.array([[0, 1], [1, 2]])])
    for bad in ([5], [-6]):
        with pytest.raises(IndexError, match=f"index {bad[0]} is out of bounds for dimension 0"):
            t[cr.tensor(bad, device=device)]


def test_nonzero_has_torchs_column_major_layout(device):
    m = cr.tensor(_T % 3 == 0, device=device)
    r = ix.nonzero(m)
    n = int((_T % 3 == 0).sum())
    assert tuple(r.shape) == (n, 3) and r.stride() == (1, n)
    assert_close(r, np.argwhere(_T % 3 == 0))
    rows = ix.nonzero(m, as_tuple=True)
    for got, want in zip(rows, np.nonzero(_T % 3 == 0), strict=True):
        assert_close(got, want)
    assert tuple(ix.nonzero(cr.tensor(2.0, device=device)).shape) == (1, 0)


def test_several_leading_index_arrays_broadcast_and_check_bounds(device):
    i, j, k = np.array([[1], [-3]]), np.array([[0, 3, 2]]), np.array([4, 0, 1])
    t = cr.tensor(_T, device=device)
    for got, want in [
        (t[cr.tensor(i, device=device), cr.tensor(j, device=device)], _T[i, j]),
        (t[cr.tensor(i, device=device), cr.tensor(j, device=device), :], _T[i, j, :]),
        (
            t[
                cr.tensor(i, device=device),
                cr.tensor(j, device=device),
                cr.tensor(k, device=device),
            ],
            _T[i, j, k],
        ),
    ]:
        assert_close(got, want)
        assert got.is_contiguous()
    with pytest.raises(IndexError, match="out of bounds"):
        t[cr.tensor([3], device=device), cr.tensor([0], device=device)]
    with pytest.raises(IndexError, match="shape mismatch"):
        t[cr.tensor([0, 1], device=device), cr.tensor([0, 1, 2], device=device)]
