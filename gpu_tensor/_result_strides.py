"""The strides of an elementwise op's new result, by torch's rule (pure: shapes and strides in,
strides out; no arrays).

torch's TensorIterator (aten/src/ATen/TensorIterator.cpp) lays a result out in two ways:

- the fast setup (`compute_fast_setup_type`, `fast_set_up`), when every operand has the
  result's shape (a 0-dim operand, a wrapped Python number included, rules it out): all
  C-contiguous gives a C-contiguous result; all channels_last (4-d only: torch asks
  is_contiguous(ChannelsLast)) gives channels_last strides; all non-overlapping and dense
  with the very same strides (channels_last_3d among them) gives those strides, copied as
  they are (size-1 dims included);
- otherwise (`compute_strides`, `reorder_dimensions`, `allocate_or_resize_outputs`): the
  dims are sorted by the operands' strides, innermost first, with an insertion sort whose
  comparison asks the operands in order and takes the first one that decides: a 0 stride
  (a broadcast, or a size-1 dim that broadcasts) does not decide; a smaller stride goes
  inside; of equal strides, the dim of the larger size goes outside, and if it is not larger
  the next operand is asked. The result is C-contiguous in that order.

Strides here are in elements (torch compares bytes, but always two strides of one operand).
"""

from __future__ import annotations

from .layouts import dense_in_order

__all__ = ["result_strides", "c_strides", "dim_order", "is_dense"]


def c_strides(shape, itemsize: int = 1) -> tuple:
    """torch's contiguous strides of `shape`, in elements (or in bytes, given the item's
    size): C order with a size-0 dim counted as 1 (zeros(6, 0) is (1, 1), zeros(2, 3, 0)
    is (3, 1, 1)). backends/cpu.py's `contiguous_strides` is this function, and
    backends/meta_array.py's fresh arrays take their strides from it."""
    out, acc = [], itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def result_strides(shape, operands) -> tuple:
    """torch's strides of a new result of `shape` (the operands' broadcast shape) for
    `operands`, a sequence of (shape, strides) in torch's operand order (a Python number that
    torch wraps as an operand, as in `x * 2.0`, is ((), ()))."""
    shape = tuple(shape)
    ndim = len(shape)
    fast = _fast_setup(shape, operands)
    if fast is not None:
        return fast
    if ndim <= 1:
        return c_strides(shape)
    # compute_strides: per operand, strides over the broadcast shape (0 where it broadcasts)
    expanded = []
    for op_shape, op_strides in operands:
        pad = ndim - len(op_shape)
        st = [0] * pad
        for i, (n, s) in enumerate(zip(op_shape, op_strides, strict=True)):
            st.append(0 if n == 1 and shape[pad + i] != 1 else s)
        expanded.append(st)

    def should_swap(d0, d1):  # 1: d0 goes outside d1; -1: inside; 0: undecided
        for st in expanded:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # innermost first: C order is n-1, ..., 0
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):
        return c_strides(shape)
    # allocate_or_resize_outputs: contiguous in the permuted order (a size-0 dim multiplies)
    out, acc = [0] * ndim, 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def dim_order(shape, strides) -> tuple | None:
    """The dims of a dense, non-overlapping layout of `shape` from outermost to innermost
    (`strides` are C-contiguous in that order; a size-1 dim, which carries no address, keeps
    its place), or None where that is C order already or the layout is empty."""
    if 0 in shape:
        return None
    moving = [d for d in range(len(shape)) if shape[d] != 1]
    ranked = sorted(moving, key=lambda d: -strides[d])
    if ranked == moving:
        return None
    order = iter(ranked)
    return tuple(d if shape[d] == 1 else next(order) for d in range(len(shape)))


def is_dense(shape, strides) -> bool:
    """torch's is_non_overlapping_and_dense: the elements fill a block with no gaps and no
    overlaps, in some order of the dims."""
    return _non_overlapping_and_dense(tuple(shape), tuple(strides))


def _fast_setup(shape, operands):
    """compute_fast_setup_type and fast_set_up: the result's strides, or None (no fast setup)."""
    if not operands or any(tuple(s) != shape for s, _ in operands):
        return None
    strides = [tuple(st) for _, st in operands]
    if all(_is_contiguous(shape, st, _C) for st in strides):
        return c_strides(shape)
    if len(shape) == 4 and all(_is_contiguous(shape, st, _CL4) for st in strides):
        return _format_strides(shape, _CL4)
    if all(st == strides[-1] for st in strides) and _non_overlapping_and_dense(shape, strides[-1]):
        return strides[-1]
    return None


_C = None  # C order (dims from last to first)
_CL4 = (1, 3, 2, 0)  # channels_last: dims from innermost to outermost


def _is_contiguous(shape, strides, fmt) -> bool:
    """torch's is_contiguous(memory_format): size-1 dims do not count; an empty tensor is
    C-contiguous (not channels_last unless its strides say so)."""
    if fmt is _C and 0 in shape:
        return True
    return dense_in_order(shape, strides, range(len(shape) - 1, -1, -1) if fmt is _C else fmt)


def _format_strides(shape, fmt) -> tuple:
    out, acc = [0] * len(shape), 1
    for d in fmt:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def _non_overlapping_and_dense(shape, strides) -> bool:
    """torch's is_non_overlapping_and_dense: sorted by stride (size-1 dims ignored), the dims
    are contiguous (a size-0 or size-1 dim ends the check)."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    dims = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d]))
    expected = 1
    for d in dims:
        if shape[d] < 2:
            return True
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True
