"""Dimension and shape arguments, parsed the way torch parses them (pure Python)."""

from __future__ import annotations

__all__ = ["wrap_dim", "shape_args", "infer_size"]


def wrap_dim(dim, ndim: int) -> int:
    """Normalise a possibly negative dim; IndexError naming the valid range."""
    n = max(ndim, 1)  # torch lets 0-d tensors use dim 0 / -1
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim


def shape_args(args) -> tuple:
    """view(2, 3), view((2, 3)), view([2, 3]) and view(Size) all mean (2, 3)."""
    given = args
    if len(args) == 1:
        a = args[0]
        if type(a) is int:
            return (a,)
        if isinstance(a, (tuple, list)):
            args = a
    for a in args:  # a plain loop: this runs on every factory call
        if type(a) is not int:
            break
    else:
        return tuple(args)
    from ._args import sizes  # the checks torch's argument parser makes: off the fast path

    return sizes(given)  # (the original: a list is unwrapped once, never twice)


def infer_size(shape: tuple, numel: int) -> tuple:
    """Resolve one -1 entry; RuntimeError when the sizes cannot hold `numel` elements."""
    infer = -1
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer >= 0:
                raise RuntimeError("only one dimension can be inferred (more than one -1 given)")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} in {list(shape)}")
        else:
            known *= s
    if infer >= 0:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:infer] + (numel // known,) + shape[infer + 1 :]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape
