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
        gt.tensor([2**70])


# torch 2.13's answers for tensor(data, dtype=...) from Python numbers (recorded with
# torch.tensor in /work/torchenv; tests/test_torch_parity.py-style parity below re-checks
# them where torch is installed): a list of values, or (exception class, message start).
_OVERFLOW = "value cannot be converted to type {} without overflow"
_EDGES = [
    ([300], "uint8", (RuntimeError, _OVERFLOW)),
    (300, "uint8", (RuntimeError, _OVERFLOW)),
    ([-1], "uint8", [255]),
    ([-129], "uint8", [127]),
    ([-255], "uint8", [1]),  # wrap
    ([-256], "uint8", (RuntimeError, _OVERFLOW)),
    (-1, "uint8", 255),
    ([255], "uint8", [255]),
    ([256], "uint8", (RuntimeError, _OVERFLOW)),
    ([127, -128], "int8", [127, -128]),
    ([128], "int8", (RuntimeError, _OVERFLOW)),
    ([-129], "int8", (RuntimeError, _OVERFLOW)),
    ([255], "int8", (RuntimeError, _OVERFLOW)),
    ([32768], "int16", (RuntimeError, _OVERFLOW)),
    ([65535], "int16", (RuntimeError, _OVERFLOW)),
    ([2**31], "int32", (RuntimeError, _OVERFLOW)),
    ([-(2**31) - 1], "int32", (RuntimeError, _OVERFLOW)),
    (2**40, "int32", (RuntimeError, _OVERFLOW)),
    ([2**63 - 1], "int64", [2**63 - 1]),
    ([2**63], "int64", (ValueError, "Overflow when unpacking long long")),
    ([2**63], None, (ValueError, "Overflow when unpacking long long")),
    ([2**64], "uint8", (ValueError, "Overflow when unpacking long long")),
    ([300.5], "uint8", (RuntimeError, _OVERFLOW)),
    ([255.5], "uint8", (RuntimeError, _OVERFLOW)),
    ([255.0], "uint8", [255]),
    ([-0.5], "uint8", (RuntimeError, _OVERFLOW)),
    ([-1.0], "uint8", (RuntimeError, _OVERFLOW)),
    ([127.9], "int8", (RuntimeError, _OVERFLOW)),
    ([-128.9], "int8", (RuntimeError, _OVERFLOW)),
    ([2.7, -2.7], "int64", [2, -2]),
    ([1e10], "int32", (RuntimeError, _OVERFLOW)),
    ([9.3e18], "int64", (RuntimeError, _OVERFLOW)),
    ([float("nan")], "uint8", (RuntimeError, _OVERFLOW)),
    ([float("inf")], "int8", (RuntimeError, _OVERFLOW)),
    ([True, 300], "uint8", (RuntimeError, _OVERFLOW)),
    ([[1], [300]], "uint8", (RuntimeError, _OVERFLOW)),
    ((1, 300), "uint8", (RuntimeError, _OVERFLOW)),
    ([1, 2.5, 300], "uint8", (RuntimeError, _OVERFLOW)),
    ([1, 2**40], "int16", (RuntimeError, _OVERFLOW)),
    (True, "uint8", 1),
    ([300, -1, 2**70, float("nan"), 0.5], "bool", [True, True, True, True, True]),
    ([True, 2], "float32", [1.0, 2.0]),
    ([1e300], "float32", [float("inf")]),
    ([70000], "float16", [float("inf")]),
    ([2**200], "float32", [float("inf")]),
    ([2**1100], "float64", (OverflowError, "int too large to convert to float")),
    ([1 + 2j], "float32", (TypeError, "must be real number, not complex")),
    ([1 + 2j], "int64", (TypeError, "'complex' object cannot be interpreted as an integer")),
    ([300 + 0j], "uint8", (TypeError, "'complex' object cannot be interpreted as an integer")),
    ([-1], "uint32", [2**32 - 1]),
    ([2**64 - 1], "uint64", [2**64 - 1]),
    ([-1], "uint64", (OverflowError, "can't convert negative int to unsigned")),
]


def _edge_ids():
    return [f"{str(d)[:16]}-{t}" for d, t, _ in _EDGES]


def _check_edge(m, fn, data, dtype, want):
    make = getattr(m, fn)
    dt = None if dtype is None else getattr(m, dtype)
    if isinstance(want, tuple):
        cls, start = want
        with pytest.raises(cls) as info:
            make(data, dtype=dt)
        assert type(info.value) is cls
        assert str(info.value).startswith(start.format(dtype)), str(info.value)
    else:
        assert make(data, dtype=dt).tolist() == want


@pytest.mark.parametrize("fn", ["tensor", "as_tensor"])
@pytest.mark.parametrize("data, dtype, want", _EDGES, ids=_edge_ids())
def test_python_numbers_into_a_dtype_overflow_as_torch(fn, data, dtype, want):
    """issue 24, item 9: tensor([300], dtype=uint8) was 44; torch refuses it, wraps
    negatives into unsigned types, refuses floats beyond the range before truncating."""
    _check_edge(gt, fn, data, dtype, want)


@pytest.mark.parametrize("data, dtype, want", _EDGES, ids=_edge_ids())
def test_python_numbers_overflow_table_is_torchs(data, dtype, want):
    torch = pytest.importorskip("torch")
    _check_edge(torch, "tensor", data, dtype, want)
