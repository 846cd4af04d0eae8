"""The catalogue of bad inputs: each gives a clear error of the right type, and state stays
consistent afterwards."""

import numpy as np
import pytest

import gpu_tensor.dtype as dt
from gpu_tensor import creation as cr
from gpu_tensor._tensor import Tensor
from gpu_tensor.ops import elementwise as ew
from gpu_tensor.ops import join
from gpu_tensor.ops import reduction as rd


def _x(device="cpu"):
    return cr.arange(6.0, device=device).reshape(2, 3)


CASES = [
    # (description, callable, exception type, message pattern)
    (
        "ragged list",
        lambda d: cr.tensor([[1, 2], [3]], device=d),
        ValueError,
        r"expected sequence of length 2 at dim 1 \(got 1\)",
    ),
    (
        "ragged deeper",
        lambda d: cr.tensor([[[1], [2]], [[3], [4, 5]]], device=d),
        ValueError,
        r"length 1 at dim 2 \(got 2\)",
    ),
    # torch's classes: TypeError for a scalar among lists, ValueError for a list of str,
    # RuntimeError for objects it cannot infer a dtype of
    (
        "scalar where list expected",
        lambda d: cr.tensor([[1, 2], 3], device=d),
        TypeError,
        r"at dim 1",
    ),
    (
        "string data",
        lambda d: cr.tensor(["a", "b"], device=d),
        ValueError,
        "invalid data type 'str'",
    ),
    ("object data", lambda d: cr.tensor([object()], device=d), RuntimeError, "invalid data type"),
    (
        "object ndarray",
        lambda d: cr.tensor(np.array([1, "a"], dtype=object)),
        TypeError,
        "dtype object",
    ),
    (
        "unsupported dtype",
        lambda d: cr.zeros(2, dtype=np.str_, device=d),
        TypeError,
        "unsupported dtype",
    ),
    (
        "unsupported numpy dtype",
        lambda d: cr.from_numpy(np.zeros(2, np.longdouble)),
        TypeError,
        "unsupported dtype",
    ),
    (
        "negative strides",
        lambda d: cr.from_numpy(np.arange(3)[::-1]),
        ValueError,
        r"negative.*copy",
    ),
    ("from_numpy of a list", lambda d: cr.from_numpy([1, 2]), TypeError, "expected np.ndarray"),
    ("negative size", lambda d: cr.zeros(-1, device=d), RuntimeError, "negative dimension"),
    (
        "device mismatch",
        lambda d: cr.zeros(2, device="cpu") + cr.zeros(2, device="cuda"),
        RuntimeError,
        "cpu and cuda:0",
    ),
    (
        "device mismatch reversed",
        lambda d: cr.zeros(2, device="cuda") * cr.zeros(2, device="cpu"),
        RuntimeError,
        "cuda:0 and cpu",
    ),
    (
        "matmul device mismatch",
        lambda d: cr.zeros(2, 2, device="cpu") @ cr.zeros(2, 2, device="cuda"),
        RuntimeError,
        "two devices",
    ),
    (
        "cat device mismatch",
        lambda d: join.cat([cr.zeros(1, device="cpu"), cr.zeros(1, device="cuda")]),
        RuntimeError,
        "cpu and cuda:0",
    ),
    ("numpy of cuda", lambda d: cr.zeros(2, device="cuda").numpy(), TypeError, r"\.cpu\(\)"),
    ("view incompatible", lambda d: _x(d).t().view(6), RuntimeError, r"\.reshape"),
    ("view wrong numel", lambda d: _x(d).view(4), RuntimeError, "invalid for input of size 6"),
    ("two -1", lambda d: _x(d).reshape(-1, -1), RuntimeError, "only one dimension"),
    ("dim out of range", lambda d: _x(d).sum(5), IndexError, r"Dimension out of range"),
    ("transpose dim", lambda d: _x(d).transpose(0, 2), IndexError, "Dimension out of range"),
    ("permute length", lambda d: _x(d).permute(0), RuntimeError, "len\\(dims\\) = 1"),
    ("permute duplicate", lambda d: _x(d).permute(0, 0), RuntimeError, "duplicate"),
    (
        "expand non-singleton",
        lambda d: _x(d).expand(4, 3),
        RuntimeError,
        r"expanded size of the tensor \(4\) must match the existing size \(2\)",
    ),
    ("narrow past end", lambda d: _x(d).narrow(1, 2, 2), RuntimeError, "exceeds dimension size"),
    ("select out of range", lambda d: _x(d).select(0, 5), IndexError, "out of range"),
    ("index out of range", lambda d: _x(d)[2], IndexError, "out of bounds for dimension 0"),
    ("negative step", lambda d: _x(d)[:, ::-1], ValueError, "step must be greater than zero"),
    (
        "broadcast failure",
        lambda d: _x(d) + cr.zeros(4, device=d),
        RuntimeError,
        r"cannot be broadcast",
    ),
    (
        "bool subtraction",
        lambda d: cr.tensor([True], device=d) - cr.tensor([True], device=d),
        RuntimeError,
        r"Subtraction.*bool",
    ),
    ("bool negation", lambda d: -cr.tensor([True], device=d), RuntimeError, r"Negation"),
    ("bitwise on float", lambda d: _x(d) & 1, RuntimeError, "integer and bool"),
    (
        "inplace float into int",
        lambda d: cr.tensor([1], device=d).add_(0.5),
        RuntimeError,
        "can't be cast to the desired output type int64",
    ),
    (
        "inplace into expanded",
        lambda d: cr.zeros(1, device=d).expand(3).add_(1),
        RuntimeError,
        "single memory location",
    ),
    ("item of many", lambda d: _x(d).item(), RuntimeError, "6 elements"),
    ("bool of many", lambda d: bool(_x(d)), RuntimeError, "ambiguous"),
    ("mean of ints", lambda d: cr.tensor([1, 2], device=d).mean(), RuntimeError, "mean"),
    (
        "requires_grad on int",
        lambda d: cr.zeros(2, dtype=dt.int64, requires_grad=True),
        RuntimeError,
        "floating point",
    ),
    ("bad device string", lambda d: cr.zeros(2, device="gpu"), RuntimeError, "unsupported device"),
    (
        "bad rounding mode",
        lambda d: ew.div(_x(d), 2, rounding_mode="up"),
        ValueError,
        "rounding_mode",
    ),
    ("clamp without bounds", lambda d: ew.clamp(_x(d)), RuntimeError, "At least one"),
    ("arange zero step", lambda d: cr.arange(0, 5, 0), RuntimeError, "step must be nonzero"),
    ("max of empty", lambda d: rd.amax(cr.zeros(0, device=d)), RuntimeError, "numel"),  # torch
    (
        "as_strided past storage",
        lambda d: cr.zeros(4, device=d).as_strided((10,), (1,)),
        RuntimeError,
        "storage",
    ),
    ("tensor constructor", lambda d: Tensor(3.5, device=d), TypeError, "gt.tensor"),
]


@pytest.mark.parametrize("desc, fn, exc, pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_error(device, desc, fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn(device)


def test_state_is_consistent_after_errors(device):
    x = _x(device)
    before = x.tolist()
    with pytest.raises(RuntimeError):
        x.add_(cr.zeros(4, device=device))
    with pytest.raises(RuntimeError):
        cr.tensor([1], device=device).add_(0.5)
    assert x.tolist() == before
    assert (x + 1).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_unsupported_operands(device):
    x = _x(device)
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "a"
    with pytest.raises(TypeError, match="unsupported operand"):
        ew.add(x, "a")
    assert (x == None) is False  # noqa: E711  (Python's fallback, as torch)
    assert (x != None) is True  # noqa: E711


def test_integer_division_by_zero(device):
    i = cr.tensor([4, 5], device=device)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i % cr.tensor([1, 0], device=device)
    assert (i / 0).tolist() == [float("inf"), float("inf")]  # true division: inf, as torch


def test_tensor_only_functions_refuse_numbers(device):
    x = _x(device)
    for fn in (ew.maximum, ew.minimum, ew.logical_and, ew.logical_or, ew.logical_xor):
        with pytest.raises(TypeError, match=r"argument 'other' \(position 2\) must be Tensor"):
            fn(x, 1)
    assert ew.maximum(x, x * 0).shape == (2, 3)
