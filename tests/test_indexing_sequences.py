"""Indexing with Python sequences as torch reads them: a range is its list of ints
(x[range(n), y], the nn tutorial's nll), and a list holding tensors, sequences, slices,
None or Ellipsis indexes several dims (torch's legacy rule, with its deprecation warning).
Expected values from numpy's own indexing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpu_tensor as gt

A = np.arange(24.0).reshape(4, 6)


@pytest.mark.parametrize(
    "index,np_index",
    [
        ((range(4), [1, 0, 5, 2]), (np.arange(4), [1, 0, 5, 2])),
        (range(2), [0, 1]),
        ((slice(None), range(0, 6, 2)), (slice(None), [0, 2, 4])),
        ((range(1, 3), range(2)), ([1, 2], [0, 1])),
        (range(0), np.array([], dtype=np.int64)),
    ],
)
def test_range_indices(device, index, np_index):
    x = gt.tensor(A, device=device)
    if isinstance(index, tuple) and isinstance(index[1], list):
        index = (index[0], gt.tensor(index[1], device=device))
    np.testing.assert_array_equal(x[index].cpu().numpy(), A[np_index])


def test_nll_from_the_nn_tutorial(device):
    logp = gt.tensor(A, device=device).log_softmax(-1)
    y = gt.tensor([1, 0, 5, 2], device=device)
    got = -logp[range(y.shape[0]), y].mean()
    ref = A - A.max(1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(1, keepdims=True))
    np.testing.assert_allclose(float(got), -ref[np.arange(4), [1, 0, 5, 2]].mean(), rtol=1e-6)


@pytest.mark.parametrize(
    "index,np_index",
    [
        ([range(2), range(1, 3)], ([0, 1], [1, 2])),
        ([[0, 1], [2, 3]], ([0, 1], [2, 3])),
        ([slice(1, 3), 0], (slice(1, 3), 0)),
        ([None, 1], (None, 1)),
    ],
)
def test_list_read_as_several_dims(index, np_index):
    x = gt.tensor(A)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        got = x[index]
    np.testing.assert_array_equal(got.numpy(), A[np_index])


def test_list_of_tensors_and_plain_int_lists():
    x = gt.tensor(A)
    with pytest.warns(UserWarning):
        assert float(x[[gt.tensor(0), gt.tensor(1)]]) == A[0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a plain list of ints is one advanced index
        np.testing.assert_array_equal(x[[2, 0]].numpy(), A[[2, 0]])
        np.testing.assert_array_equal(x[[True, False, True, False]].numpy(), A[[0, 2]])


def test_range_setitem_and_grad():
    x = gt.tensor(A.copy())
    x[range(4), gt.tensor([1, 0, 5, 2])] = -1.0
    want = A.copy()
    want[np.arange(4), [1, 0, 5, 2]] = -1.0
    np.testing.assert_array_equal(x.numpy(), want)
    w = gt.tensor(A, requires_grad=True)
    w[range(2), range(2)].sum().backward()
    g = np.zeros_like(A)
    g[[0, 1], [0, 1]] = 1
    np.testing.assert_array_equal(w.grad.numpy(), g)
