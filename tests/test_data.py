"""Python data -> tensors (gpu_tensor/_data.py): the fast path for nested lists of
Python numbers keeps torch's dtype rules and the general path's errors."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt


def test_fast_path_keeps_torchs_rules(device):
    """The np.fromiter path (_data._from_python_numbers) infers torch's dtypes and still
    hands ragged or mixed input to the general path's errors."""
    assert gt.tensor([[1, 2], [3, 4]], device=device).dtype is gt.int64
    assert gt.tensor([True, 2]).dtype is gt.int64 and gt.tensor([True]).dtype is gt.bool
    assert gt.tensor(((1.5, 2), (3, 4))).dtype is gt.float32
    assert gt.tensor([1j, 2]).dtype is gt.complex64
    assert gt.tensor([1.7, -1.7], dtype=gt.int64).tolist() == [1, -1]
    assert gt.tensor([np.float64(1.0), 2.0]).dtype is gt.float64  # a numpy leaf: general path
    big = [[float(i * 100 + j) for j in range(100)] for i in range(50)]
    assert gt.tensor(big, device=device).tolist() == big
    with pytest.raises(ValueError, match="rectangular"):
        gt.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="rectangular"):
        gt.tensor([[1, 2], "ab"])
    with pytest.raises(TypeError, match="rectangular"):
        gt.tensor([[1, 2], {1: 0, 2: 0}])
    with pytest.raises(ValueError, match="overflow"):
        gt.tensor([2 ** 70])
