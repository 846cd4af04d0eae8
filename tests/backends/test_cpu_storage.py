"""The cpu backend's storage of an array: a flat uint8 view over the bytes it spans and
their start address. A writable contiguous array's address is read through ctypes (cheaper
than numpy's __array_interface__); every kind of array gets the same address either way."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends.cpu import flat_bytes, host_ptr


def _readonly(a):
    a.flags.writeable = False
    return a


_ARRAYS = {
    "contiguous": lambda: np.arange(24, dtype=np.float32).reshape(4, 6),
    "offset view": lambda: np.arange(10.0)[3:],
    "transposed": lambda: np.arange(12.0).reshape(3, 4).T,
    "strided": lambda: np.arange(20, dtype=np.int16).reshape(4, 5)[:, ::2],
    "read-only": lambda: _readonly(np.arange(6.0)),
    "read-only strided": lambda: _readonly(np.arange(6.0)[::2]),
    "0-d": lambda: np.array(3.5),
    "empty": lambda: np.zeros((0, 3), np.float32),
}


@pytest.mark.parametrize("kind", sorted(_ARRAYS))
def test_flat_bytes_spans_the_array_from_its_address(kind):
    a = _ARRAYS[kind]()
    buf, ptr = flat_bytes(a)
    assert buf.dtype == np.uint8 and buf.ndim == 1
    assert ptr == host_ptr(a)
    if a.size:
        lo, hi = np.lib.array_utils.byte_bounds(a)
        assert (ptr, ptr + buf.size) == (lo, hi) and host_ptr(buf) == lo


def test_views_share_a_storage_and_its_address():
    t = gt.arange(12.0).reshape(3, 4)
    v = t[1:, 2:]
    assert v.untyped_storage() is t.untyped_storage()
    assert t.untyped_storage().data_ptr() == host_ptr(t.numpy())
    assert v.storage_offset() == 6
