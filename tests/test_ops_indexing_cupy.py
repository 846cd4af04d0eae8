"""Indexing paths that reach cupy's departures from numpy, on every device (on cuda over
the simulated CuPy in the sim tier, where each failed before its fix): open index grids
(cupy.indices has no `sparse`), scatter with reduce="multiply" (no cupy.multiply.at),
accumulation in dtypes cupy.add.at rejects (bfloat16 by value, not by its bits), and
out-of-range integer-array indices, which cupy wraps but gpu_tensor must reject."""

import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr


def test_gather_and_scatter_multiply(device):
    x = cr.arange(6.0, device=device).reshape(2, 3)
    idx = cr.tensor([[0, 0], [1, 0]], device=device)
    assert x.gather(1, idx).tolist() == [[0.0, 0.0], [4.0, 3.0]]
    y = cr.ones(2, 3, device=device)
    y.scatter_(1, idx, cr.full((2, 2), 2.0, device=device), reduce="multiply")
    assert y.tolist() == [[4.0, 1.0, 1.0], [2.0, 2.0, 1.0]]  # repeated index: multiplied twice
    z = cr.zeros(2, 3, device=device).scatter_add(1, idx, cr.ones(2, 2, device=device))
    assert z.tolist() == [[2.0, 0.0, 0.0], [1.0, 1.0, 0.0]]


@pytest.mark.parametrize(
    "dtype",
    [
        dt.bool,
        dt.int8,
        dt.uint8,
        dt.int16,
        dt.int32,
        dt.int64,
        dt.float16,
        dt.bfloat16,
        dt.float32,
        dt.float64,
        dt.complex64,
    ],
    ids=lambda d: d.name,
)
def test_accumulate_in_every_dtype(device, dtype):
    idx = cr.tensor([1, 1, 3], device=device)
    x = cr.zeros(4, dtype=dtype, device=device)
    v = cr.ones(3, dtype=dtype, device=device)
    if dtype is dt.bool:
        want = [False, True, False, True]
    elif dtype in (dt.bfloat16, dt.float16, dt.float32, dt.float64):
        v = v * 1.5
        want = [0.0, 3.0, 0.0, 1.5]  # bfloat16 added as values, not as uint16 bits
    else:
        want = [0, 2, 0, 1]
    got = x.index_put((idx,), v, accumulate=True)
    assert got.dtype is dtype
    assert got.tolist() == want


def test_out_of_range_advanced_indices_raise(device):
    x = cr.arange(3.0, device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        x[cr.tensor([5], device=device)]
    with pytest.raises(IndexError, match="out of bounds"):
        x[cr.tensor([-4], device=device)] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_put(
            (cr.tensor([3], device=device),), cr.tensor([1.0], device=device), accumulate=True
        )
    assert x.tolist() == [0.0, 1.0, 2.0]  # nothing was written anywhere
    assert x[cr.tensor([-1, 0], device=device)].tolist() == [2.0, 0.0]  # negatives in range
