"""Tensor layouts (torch.layout): `strided` for dense tensors, `sparse_coo` for the COO
tensors of gpu_tensor.sparse. The others exist so code naming them reads, and compares,
as in torch; no tensor has them. Also torch.memory_format, the order of a dense tensor's
strides (`contiguous_format`, `channels_last`, `preserve_format`), and the one check of a
`memory_format=` argument that every entry taking one makes."""

from __future__ import annotations

from ._args import _describe
from ._constant import Constant

__all__ = [
    "layout",
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "jagged",
    "memory_format",
    "contiguous_format",
    "channels_last",
    "preserve_format",
    "channels_last_3d",
    "memory_format_arg",
    "format_strides",
    "is_contiguous_as",
    "strides_like",
]


class layout(Constant):  # noqa: N801  (torch's class name)
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")


class memory_format(Constant):  # noqa: N801  (torch's class name)
    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")  # NHWC strides for 4-d (N, C, H, W) tensors
preserve_format = memory_format("preserve_format")
channels_last_3d = memory_format("channels_last_3d")  # NDHWC strides for 5-d tensors

# each channels-last format: its rank, and its dims from the innermost stride to the outermost
_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def memory_format_arg(value, fn: str) -> None:
    """torch's TypeError unless `value` is a memory format (None is the caller's to allow)."""
    if value.__class__ is not memory_format:
        raise TypeError(
            f"{fn}(): argument 'memory_format' must be torch.memory_format, not {_describe(value)}"
        )


def format_strides(fmt, shape) -> tuple:
    """The strides a new tensor of `shape` gets in channels-last format `fmt` (c10's
    get_channels_last_strides_2d/_3d: sizes as they are, so a 0 makes the outer strides 0
    and a size-1 dim gets its neighbour's stride); torch's RuntimeError for another rank."""
    rank, order = _ORDER[fmt]
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    strides = [0] * rank
    step = 1
    for d in order:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def is_contiguous_as(fmt, shape, strides, fn: str = "is_contiguous") -> bool:
    """`is_contiguous(memory_format=fmt)` for a format other than contiguous_format (c10's
    compute_channels_last_contiguous_2d/_3d: size-1 dims may have any stride; another rank
    is False). preserve_format is answered as contiguous_format: None, for the caller."""
    entry = _ORDER.get(fmt)
    if entry is None:
        memory_format_arg(fmt, fn)  # not a memory format: torch's TypeError
        return None
    rank, order = entry
    if len(shape) != rank:
        return False
    return dense_in_order(shape, strides, order)


def dense_in_order(shape, strides, order, unit: int = 1) -> bool:
    """Whether `strides` lay `shape` out densely, the dims of `order` from the innermost
    out (c10's contiguity tests: a size-1 dim's stride does not count); `unit`: the
    innermost stride (1 for element strides, the item's size for byte strides)."""
    expected = unit
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def strides_like(fmt, shape, strides) -> bool:
    """Whether strides in any (not only dense) layout follow channels-last format `fmt`:
    c10's is_channels_last_strides_2d/_3d, by which `to(memory_format=fmt)` keeps a tensor
    (its suggest_memory_format)."""
    rank, order = _ORDER[fmt]
    if len(shape) != rank or strides[1] == 0:
        return False
    least = 0
    for d in order:
        if shape[d] == 0 or strides[d] < least:
            return False
        if d == 0 and least == strides[1]:
            return False
        least = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True
