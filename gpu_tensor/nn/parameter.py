"""`nn.Parameter`: a Tensor that a Module registers as one of its parameters.

It is a Tensor subclass, so `isinstance(p, gt.Tensor)` holds and every op accepts it; the
results of ops on it are plain Tensors, as in torch.
"""

from __future__ import annotations

from gpu_tensor._tensor import Tensor

__all__ = ["Parameter", "adopt_payload", "zero_grads"]


def _slots():
    names = []
    for klass in type.mro(Tensor):
        names += [n for n in getattr(klass, "__slots__", ()) if n != "__weakref__"]
    return names


def _copy_slots(dst, src, values_only):
    for name in _slots():
        if values_only and "grad" in name:
            continue  # requires_grad, grad, grad_fn: dst keeps its own autograd state
        try:
            object.__setattr__(dst, name, object.__getattribute__(src, name))
        except AttributeError:  # a slot src never set
            try:
                object.__delattr__(dst, name)
            except AttributeError:
                pass


def adopt_payload(dst: Tensor, src: Tensor) -> Tensor:
    """Make `dst` view src's values (storage, shape, device, dtype) while keeping dst's
    identity and autograd state, so optimizers and hooks holding dst see the change
    (Module.to, load_state_dict(assign=True)). src must have no history."""
    _copy_slots(dst, src, values_only=True)
    return dst


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): `data`'s values, as a leaf."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        from gpu_tensor.creation import empty

        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): expected a Tensor as data, got {type(data).__name__}")
        self = object.__new__(cls)
        _copy_slots(self, data.detach(), values_only=False)
        self.grad = None
        self.grad_fn = None
        self.requires_grad_(requires_grad)
        return self

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__ (Tensor.__init__ refuses direct construction)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (Parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


def zero_grads(params, set_to_none: bool = True) -> None:
    """Module.zero_grad and Optimizer.zero_grad: drop each gradient (torch's default), or
    zero it in place, detached from any graph a create_graph backward left on it."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            p.grad = p.grad.detach().zero_()
