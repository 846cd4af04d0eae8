"""How differentiable ops are wired in: nothing changes until the first tensor that
requires grad is made; then every registered op is replaced, wherever it is bound (the
`gpu_tensor` namespace, the ops modules, Tensor methods and properties), by a wrapper that
records a graph node when grad mode is on and an input requires grad.

Why lazily: code that never uses autograd keeps the plain functions, so its dispatch cost
is exactly what it was (no flag to read per op). After activation the cost per op on
tensors that do not require grad is one wrapper call and a requires_grad read per input.

Activation happens wherever a tensor is marked as requiring grad by the user: the
`requires_grad` property's setter (`t.requires_grad = True`), `requires_grad_()` and every
factory's `requires_grad=True` (both go through the setter), and `Function.apply`. Internal
code writes the `_requires_grad` slot behind the property directly (construction stays a
slot store) and reads it directly (the wrappers below test it once per input).
"""

from __future__ import annotations

import inspect
import sys
import threading

from ..tensor import Tensor
from . import grad_mode
from .function import Node, edge, same_output, set_outputs

__all__ = ["activate", "formula", "inplace", "ACTIVE", "positional", "first", "make_wrapper"]

ACTIVE = False
_STATE = grad_mode.STATE
_REGISTRY: list = []  # (namespace, attr, spec, reflected)
_INPLACE: list = []  # (Tensor attribute, out-of-place getter)


class Spec:
    """One differentiable op: `fwd(ctx, out, *args, **kw)` saves what `bwd(ctx, grad)`
    needs; `inputs(args, kw)` lists the differentiable inputs (Tensor or None) in the
    order `bwd` returns their gradients; `output(out)` picks the differentiable result.
    `fwd` may return a node name: torch names an op's overloads apart (sum() is
    SumBackward0, sum(dim) SumBackward1), so the node then gets that name (`variant`).
    `multi`: the op returns a tuple of tensors, all outputs of one node (split, unbind);
    its backward gets a tuple with one gradient (or None) per output.
    `decompose(args, kwargs, reflected)`: where torch records a call as several nodes
    (`2.0 / x` is x.reciprocal() * 2.0), the result of those differentiable ops, or None
    to record one node as usual. Consulted only when a node would be recorded."""

    def __init__(self, name, fwd, inputs, output, multi=False, decompose=None):
        self.name = name
        self.fwd = fwd
        self.inputs = inputs
        self.output = output
        self.multi = multi
        self.decompose = decompose
        self.cls = None
        self._variants = {}

    def backward(self, bwd):
        self.cls = type(self.name, (Node,), {"_backward": _tuple_result(bwd)})
        return bwd

    def variant(self, name):
        """The node class `name`: a subclass of this op's node with the same backward."""
        cls = self._variants.get(name)
        if cls is None:
            cls = self._variants[name] = type(name, (self.cls,), {})
        return cls


def _tuple_result(bwd):
    def run(ctx, grad):
        r = bwd(ctx, grad)
        return r if isinstance(r, tuple) else (r,)

    return run


def positional(args, kwargs):
    return [a if isinstance(a, Tensor) else None for a in args]


def first(args, kwargs):
    """The inputs of ops differentiable in their first argument only (views, reductions)."""
    a = args[0] if args else kwargs.get("input")
    return [a if isinstance(a, Tensor) else None]


first.first_only = True  # lets make_wrapper check args[0] alone


def formula(name, *targets, inputs=positional, output=None, multi=False, decompose=None):
    """Register `fwd` for the plain functions named by `targets` ((namespace, attr) or
    (namespace, attr, 'reflected')); attach the backward with `@fwd_spec.backward`.
    `multi` and `decompose`: see Spec."""

    def deco(fwd):
        spec = Spec(name, fwd, inputs, output, multi, decompose)
        for tgt in targets:
            _REGISTRY.append((tgt[0], tgt[1], spec, len(tgt) > 2))
        return spec

    return deco


def inplace(attr, oop_getter):
    """Tensor.<attr> is an in-place op whose out-of-place form is `oop_getter()`."""
    _INPLACE.append((attr, oop_getter))


# -- the wrappers ------------------------------------------------------------------------
def _fixed_arity(plain):
    """1 or 2 when `plain` takes exactly that many positional arguments and nothing else
    (the Tensor operators, unary ops, __getitem__): those get a wrapper without *args."""
    code = getattr(plain, "__code__", None)
    if code is None or code.co_kwonlyargcount or plain.__defaults__:
        return None
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    return code.co_argcount if code.co_argcount in (1, 2) else None


def make_wrapper(plain, spec, reflected=False):
    n = _fixed_arity(plain)
    if n is not None:
        wrapper = (_wrapper1 if n == 1 else _wrapper2)(plain, spec, reflected)
    elif getattr(spec.inputs, "first_only", False) and not reflected:
        wrapper = _wrapper_first(plain, spec)
    else:
        wrapper = _wrapper_any(plain, spec, reflected)
    wrapper.__name__ = getattr(plain, "__name__", spec.name)
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__doc__ = getattr(plain, "__doc__", None)
    wrapper.__wrapped__ = plain
    return wrapper


def _wrapper1(plain, spec, reflected):
    state, T = _STATE, Tensor

    def wrapper(a):
        if state.enabled and (a.__class__ is T or isinstance(a, T)) and a._requires_grad:
            return _record(spec, plain, spec.inputs((a,), {}), (a,), {}, False)
        return plain(a)

    return wrapper


def _wrapper2(plain, spec, reflected):
    state, T, scalars = _STATE, Tensor, _SCALARS

    def wrapper(a, b):
        if state.enabled:
            if (a.__class__ is T or isinstance(a, T)) and a._requires_grad:
                pass
            elif b.__class__ is T:
                if not b._requires_grad:
                    return plain(a, b)
            elif b.__class__ in scalars or not isinstance(b, (T, list, tuple)):
                return plain(a, b)
            elif not (b._requires_grad if isinstance(b, T) else _any_in(b)):
                return plain(a, b)
            args = (a, b)
            ins = spec.inputs((b, a) if reflected else args, {})
            for t in ins:
                if t is not None and t._requires_grad:
                    return _record(spec, plain, ins, args, {}, reflected)
        return plain(a, b)

    return wrapper


def _wrapper_first(plain, spec):
    state, T = _STATE, Tensor

    def wrapper(*args, **kwargs):
        if state.enabled:
            if args:
                a = args[0]
                if not ((a.__class__ is T or isinstance(a, T)) and a._requires_grad):
                    return plain(*args, **kwargs)
            ins = first(args, kwargs)
            if ins[0] is not None and ins[0]._requires_grad:
                return _record(spec, plain, ins, args, kwargs, False)
        return plain(*args, **kwargs)

    return wrapper


def _wrapper_any(plain, spec, reflected):
    inputs = spec.inputs
    state = _STATE
    T = Tensor
    seq = (list, tuple)

    def wrapper(*args, **kwargs):
        # Cheap filter first (no allocation): does any argument, or element of a list
        # argument (cat/stack), require grad? Only then ask the spec for its inputs.
        if state.enabled:
            for a in args:
                c = a.__class__
                if c is T or (c not in _SCALARS and isinstance(a, T)):
                    if a._requires_grad:
                        break
                elif c in seq and _any_in(a):
                    break
            else:
                if not kwargs or not _any_requires_grad((), kwargs):
                    return plain(*args, **kwargs)
            ins = inputs((args[1], args[0]) if reflected else args, kwargs)
            for t in ins:
                if t is not None and t._requires_grad:
                    return _record(spec, plain, ins, args, kwargs, reflected)
        return plain(*args, **kwargs)

    return wrapper


_SCALARS = frozenset({int, float, bool, slice, type(None), type(Ellipsis), str, complex})


def _any_in(seq) -> bool:
    for t in seq:
        if isinstance(t, Tensor) and t._requires_grad:
            return True
    return False


def _record(spec, plain, ins, args, kwargs, reflected):
    if spec.decompose is not None:
        out = spec.decompose(args, kwargs, reflected)
        if out is not None:
            return out
    _STATE.enabled = False
    try:
        out = plain(*args, **kwargs)
    finally:
        _STATE.enabled = True
    if out is NotImplemented:
        return out
    if spec.multi:
        return _record_multi(spec, ins, args, kwargs, out)
    target = spec.output(out) if spec.output is not None else out
    if not isinstance(target, Tensor) or target.dtype.category < _FLOAT:
        return out  # integer/bool results never require grad
    for t in ins:
        if t is target:
            return out  # the op returned its input (e.g. contiguous()): history unchanged
    node = spec.cls()
    node.next_functions = tuple(edge(t) for t in ins)
    node.needs_input_grad = tuple(t is not None and t._requires_grad for t in ins)
    node._meta = tuple((t.shape, t.dtype, t.device) if t is not None and t._requires_grad
                       else None for t in ins)
    name = spec.fwd(node, target, *((args[1], args[0]) if reflected else args), **kwargs)
    if name is not None and name != spec.name:
        node.__class__ = spec.variant(name)
    target._requires_grad = True
    target.grad_fn = node
    return out


def _record_multi(spec, ins, args, kwargs, out):
    """One node, the grad_fn of every tensor in the tuple `out` (output i is out[i])."""
    if not out or out[0].dtype.category < _FLOAT:
        return out
    node = spec.cls()
    node.next_functions = tuple(edge(t) for t in ins)
    node.needs_input_grad = tuple(t is not None and t._requires_grad for t in ins)
    node._meta = tuple((t.shape, t.dtype, t.device) if t is not None and t._requires_grad
                       else None for t in ins)
    name = spec.fwd(node, out, *args, **kwargs)
    if name is not None and name != spec.name:
        node.__class__ = spec.variant(name)
    set_outputs(node, out)
    return out


def _any_requires_grad(args, kwargs) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            return True
    for a in kwargs.values():
        if isinstance(a, Tensor) and a._requires_grad:
            return True
    return False


def make_inplace(name, plain, oop, plain_copy):
    state = _STATE

    def method(self, *args, **kwargs):
        if state.enabled and (self._requires_grad or _any_requires_grad(args, kwargs)):
            if self._requires_grad and self.grad_fn is None:
                raise RuntimeError(
                    f"a leaf Variable that requires grad is being used in an in-place "
                    f"operation ({name}). Do it under `with gt.no_grad():` (e.g. a parameter "
                    "update), or use the out-of-place form.")
            # the old values (a copy: self is overwritten below) carrying self's history
            # directly, as torch's graph does (no clone node in between)
            state.enabled = False
            try:
                old = self.clone()
            finally:
                state.enabled = True
            same_output(old, self)
            res = oop(old, *args, **kwargs)
            if self._base is not None:  # the base's history is rebased (torch's CopySlices)
                from .copy_slices import inplace_on_view

                return inplace_on_view(self, res, plain_copy, same_output)
            state.enabled = False
            try:
                plain_copy(self, res)  # writes and bumps the version counter
            finally:
                state.enabled = True
            if isinstance(res, Tensor) and res._requires_grad:
                self.grad_fn = res.grad_fn
                self._requires_grad = True
            return self
        return plain(self, *args, **kwargs)

    method.__name__ = name
    method.__wrapped__ = plain
    return method


# -- activation ------------------------------------------------------------------------
def _namespaces():
    names = ["gpu_tensor", "gpu_tensor.ops.elementwise", "gpu_tensor.ops.reduction",
             "gpu_tensor.ops.linalg", "gpu_tensor.ops.indexing", "gpu_tensor.ops.join",
             "gpu_tensor.ops.shape", "gpu_tensor._views", "gpu_tensor._layout",
             "gpu_tensor._move", "gpu_tensor.ops._methods", "gpu_tensor.ops._inplace",
             "gpu_tensor.autograd.formulas_index"]
    return [vars(sys.modules[n]) for n in names if n in sys.modules]


def _lookup(ns, attr):
    return ns[attr] if isinstance(ns, dict) else getattr(ns, attr)


_LOCK = threading.Lock()


def activate() -> None:
    """Install the differentiable wrappers (idempotent, thread-safe)."""
    if ACTIVE:
        return
    with _LOCK:
        if not ACTIVE:
            _install()


def _install() -> None:
    global ACTIVE
    # the formula modules register their specs on import
    from . import (  # noqa: F401
        formulas_elementwise,
        formulas_index,
        formulas_reduce,
        formulas_shape,
    )

    replace = {}  # id(plain) -> (plain, wrapper)
    for ns, attr, spec, reflected in _REGISTRY:
        plain = _lookup(ns, attr)
        if id(plain) not in replace:
            replace[id(plain)] = (plain, make_wrapper(plain, spec, reflected))
    tdict = Tensor.__dict__  # a fresh mappingproxy per access: keep this one to compare
    spaces = _namespaces() + [tdict]
    plain_copy = sys.modules["gpu_tensor._move"].copy_
    inplace_methods = {}
    for attr, getter in _INPLACE:
        plain = Tensor.__dict__[attr]
        inplace_methods[id(plain)] = (plain, attr, getter)
    for space in spaces:
        for key, value in list(space.items()):
            hit = replace.get(id(value))
            target = Tensor if space is tdict else None
            if hit is not None and hit[0] is value:
                _set(space, target, key, hit[1])
            elif isinstance(value, property) and value.fget is not None:
                hit = replace.get(id(value.fget))
                if hit is not None and hit[0] is value.fget:
                    _set(space, target, key, property(hit[1], value.fset, None, value.__doc__))
    for plain, attr, getter in inplace_methods.values():
        wrapped = make_inplace(attr, plain, getter(), plain_copy)
        for key, value in list(Tensor.__dict__.items()):
            if value is plain:
                setattr(Tensor, key, wrapped)
    _wrap_fused()
    ACTIVE = True


def _set(space, cls, key, value):
    if cls is not None:
        setattr(cls, key, value)
    else:
        space[key] = value


def _wrap_fused():
    """A fused function called on tensors that require grad keeps its fused forward and
    gets a fused backward (autograd/fused.py); without grad nothing changes."""
    from ..fusion.fuse import Fused
    from .fused import call_with_grad

    plain = Fused.__call__
    state = _STATE

    def call(self, *args, out=None):
        if state.enabled and _any_requires_grad(args, {}):
            if out is not None:
                raise RuntimeError(
                    f"{self.kernel_name}(): out= arguments don't support automatic "
                    "differentiation, but one of the arguments requires grad")
            return call_with_grad(self, plain, args)
        return plain(self, *args, out=out)

    call.__wrapped__ = plain
    Fused.__call__ = call


_FLOAT = None  # set below: the dtype category at and above which results are differentiable


def _init_float():
    global _FLOAT
    from .. import dtype as _dt

    _FLOAT = _dt.FLOAT


_init_float()
