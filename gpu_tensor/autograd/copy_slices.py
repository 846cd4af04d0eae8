"""In-place ops on views under autograd (torch's CopySlices): `a[0:2].mul_(2)` changes
`a`'s values, so `a`'s history is rebased onto a node that takes the gradient of the
written region from the new view value and the rest from `a`'s old history.

The view's geometry relative to its base (sizes, strides, offset) is all the node keeps;
the backward pass splits the base's gradient with as_strided on a dense copy of it.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import grad_mode
from .function import Function

__all__ = ["inplace_on_view"]


class _CopySlices(Function):
    """forward(base, value): base with `value` written over the region (size, stride,
    offset) of it; the write itself has already happened in memory."""

    @staticmethod
    def forward(ctx, base, value, size, stride, offset):
        ctx.geometry = (size, stride, offset)
        return base.detach()

    @staticmethod
    def backward(ctx, grad):
        size, stride, offset = ctx.geometry
        g = grad.contiguous().clone()  # base's own (C-contiguous) layout for as_strided
        region = g.as_strided(size, stride, offset)
        g_value = region.clone()
        region.zero_()  # the old values there were overwritten: they get no gradient
        return g, g_value, None, None, None


class _ViewOfBase(Function):
    """forward(base): the region (size, stride, offset) of base, as a view; its gradient
    lands in that region of a zero gradient of base's shape."""

    @staticmethod
    def forward(ctx, base, size, stride, offset):
        ctx.geometry = (tuple(base.shape), size, stride, offset)
        return base.detach().as_strided(size, stride, offset + base.storage_offset())

    @staticmethod
    def backward(ctx, grad):
        shape, size, stride, offset = ctx.geometry
        from ..creation import zeros

        g = zeros(shape, dtype=grad.dtype, device=grad.device)
        g.as_strided(size, stride, offset).copy_(grad)
        return g, None, None, None


def _geometry(view: Tensor, base: Tensor):
    if not base.is_contiguous():
        raise RuntimeError(
            "in-place operation on a view of a non-contiguous tensor under "
            "autograd: make the base contiguous first (.contiguous())"
        )
    return tuple(view.shape), view.stride(), view.storage_offset() - base.storage_offset()


def inplace_on_view(view: Tensor, res: Tensor, plain_copy, same_output) -> Tensor:
    """Write `res` (the op's out-of-place result, with history) into `view` and rebase the
    history of its base, then of the view itself (a view of the new base)."""
    base = view._base
    if base._requires_grad and base.grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation. Do it under `with gt.no_grad():`, or on a clone of the leaf"
        )
    size, stride, offset = _geometry(view, base)
    with grad_mode.no_grad():
        plain_copy(view, res)  # writes through to base and bumps the version counter
    if not (isinstance(res, Tensor) and res._requires_grad):
        return view
    new_base = _CopySlices.apply(base, res, size, stride, offset)
    same_output(base, new_base)
    same_output(view, _ViewOfBase.apply(base, size, stride, offset))
    return view
