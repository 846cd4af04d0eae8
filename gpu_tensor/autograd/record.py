"""Recording autograd nodes: the formula registry and the recorder the ops call.

An op decides at call time whether to record (gpu_tensor/_grad.py: an input's
`_requires_grad` slot and grad mode); when it does, `record` here runs it with grad mode off
and records one node from the formula registered for it. Formulas are registered with
`@formula(torch_node_name, *targets)` (targets name the decorated op functions, as
(namespace, attr)), in `formulas_*.py`, which are imported on the first recording op.
Nothing is replaced anywhere: registration is a dict entry keyed by the op function.
"""

from __future__ import annotations

from .._grad import any_requires_grad
from .._tensor import Tensor
from ..dtype import FLOAT as _FLOAT  # results of this category and above are differentiable
from ..transfer.move import copy_ as _plain_copy  # the write itself; Tensor.copy_ is what records
from . import grad_mode
from .function import Node, connect, same_output, set_outputs

__all__ = [
    "formula",
    "inplace",
    "positional",
    "first",
    "record",
    "record_inplace",
    "record_fused",
    "load_formulas",
]

_STATE = grad_mode.STATE
_SPECS: dict = {}  # differentiable op function -> (Spec, reflected)
_INPLACE: dict = {}  # Tensor attribute of an in-place method -> out-of-place getter


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


def formula(name, *targets, inputs=positional, output=None, multi=False, decompose=None):
    """Register `fwd` for the differentiable functions named by `targets` ((namespace,
    attr) or (namespace, attr, 'reflected'); a dict works as a namespace); attach the
    backward with `@fwd_spec.backward`. `multi` and `decompose`: see Spec."""

    def deco(fwd):
        spec = Spec(name, fwd, inputs, output, multi, decompose)
        for tgt in targets:
            _register(tgt[0], tgt[1], spec, len(tgt) > 2)
        return spec

    return deco


def inplace(attr, oop_getter):
    """Tensor.<attr> is an in-place op whose out-of-place form is `oop_getter()`."""
    _INPLACE.setdefault(attr, oop_getter)


# -- recording (called by the ops through gpu_tensor._grad) --------------------------------
def _lookup(ns, attr):
    return ns[attr] if isinstance(ns, dict) else getattr(ns, attr)


def _register(ns, attr, spec, reflected) -> None:
    fn = _lookup(ns, attr)
    if isinstance(fn, property):
        fn = fn.fget
    if not getattr(fn, "__gt_differentiable__", False):
        where = getattr(ns, "__name__", "the op table")
        raise TypeError(
            f"formula {spec.name}: {where}.{attr} is not a differentiable entry point; "
            "decorate it with @gpu_tensor._grad.differentiable where it is defined"
        )
    _SPECS.setdefault(fn, (spec, reflected))


_NO_KWARGS: dict = {}


def record(fn, plain, args, kwargs):
    """See gpu_tensor._grad.record: record `fn`'s node if its formula's inputs require
    grad; otherwise just run it. (One function, not a check and a recorder: it runs once
    per recorded op, and a frame is a measurable part of that.)"""
    if kwargs is None:
        kwargs = _NO_KWARGS  # read only here: callees get their own copy through **
    entry = _SPECS.get(fn)
    if entry is None:
        return _no_formula(fn, plain, args, kwargs)
    spec, reflected = entry
    ins = spec.inputs((args[1], args[0]) if reflected else args, kwargs)
    for t in ins:
        if t is not None and t._requires_grad:
            break
    else:
        entry = None
    if entry is None:
        if plain is not None:
            return plain(*args, **kwargs)
        _STATE.enabled = False  # fn checks inline: run it once more with nothing to record
        try:
            return fn(*args, **kwargs)
        finally:
            _STATE.enabled = True
    if spec.decompose is not None:
        out = spec.decompose(args, kwargs, reflected)
        if out is not None:
            return out
    _STATE.enabled = False
    try:
        out = (fn if plain is None else plain)(*args, **kwargs)
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
    connect(node, ins)
    node._out_id = id(target)  # lets save_for_backward tell the output from the inputs
    name = spec.fwd(node, target, *((args[1], args[0]) if reflected else args), **kwargs)
    if name is not None and name != spec.name:
        node.__class__ = spec.variant(name)
    target._requires_grad = True
    target.grad_fn = node
    return out


def _no_formula(fn, plain, args, kwargs):
    """A differentiable op with no registered formula, called on an input that requires
    grad: torch's error when the result is floating (it would silently have no history),
    the plain result otherwise (comparisons and other integer/bool results)."""
    _STATE.enabled = False
    try:
        out = (fn if plain is None else plain)(*args, **kwargs)
    finally:
        _STATE.enabled = True
    if not any_requires_grad(args, kwargs):
        return out
    results = out if isinstance(out, (tuple, list)) else (out,)
    for r in results:
        if isinstance(r, Tensor) and r.dtype.category >= _FLOAT:
            name = getattr(fn, "__name__", "this op").lstrip("_")
            raise RuntimeError(
                f"the derivative for '{name}' is not implemented. Call it under "
                "gt.no_grad() or on a detached input (x.detach()) if no gradient is needed"
            )
    return out


def _record_multi(spec, ins, args, kwargs, out):
    """One node, the grad_fn of every tensor in the tuple `out` (output i is out[i])."""
    if not out or out[0].dtype.category < _FLOAT:
        return out
    node = spec.cls()
    connect(node, ins)
    name = spec.fwd(node, out, *args, **kwargs)
    if name is not None and name != spec.name:
        node.__class__ = spec.variant(name)
    set_outputs(node, out)
    return out


def record_inplace(name, plain, self, args, kwargs):
    """The in-place method `name` on tensors that require grad: recorded as its
    out-of-place op on a copy of self's old values (see gpu_tensor._grad.inplace)."""
    state = _STATE
    getter = _INPLACE.get(name)
    if getter is None:  # no gradient formula: the write itself, recording nothing
        state.enabled = False
        try:
            return plain(self, *args, **kwargs)
        finally:
            state.enabled = True
    oop = getter()
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError(
            f"a leaf Variable that requires grad is being used in an in-place "
            f"operation ({name}). Do it under `with gt.no_grad():` (e.g. a parameter "
            "update), or use the out-of-place form."
        )
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

        return inplace_on_view(self, res, _plain_copy, same_output)
    state.enabled = False
    try:
        _plain_copy(self, res)  # writes and bumps the version counter
    finally:
        state.enabled = True
    if isinstance(res, Tensor) and res._requires_grad:
        self.grad_fn = res.grad_fn
        self._requires_grad = True
    return self


def record_fused(fused, args, out):
    """A fused function called on tensors that require grad keeps its fused forward and
    gets a fused backward (autograd/fused.py)."""
    from .fused import call_with_grad

    if out is not None:
        raise RuntimeError(
            f"{fused.kernel_name}(): out= arguments don't support automatic "
            "differentiation, but one of the arguments requires grad"
        )
    return call_with_grad(fused, type(fused).__call__, args)


# -- formulas ------------------------------------------------------------------------------
_LOADED = False


def load_formulas() -> None:
    """Import every `formulas_*` module of this package (each registers its formulas on
    import). Called once, by the first op that records, so `import gpu_tensor` stays light;
    a new formulas file needs no line here."""
    global _LOADED
    if _LOADED:
        return
    import importlib
    import pkgutil

    from . import __path__ as here

    for info in sorted(pkgutil.iter_modules(here), key=lambda m: m.name):
        if info.name.startswith("formulas_"):
            importlib.import_module(f"{__package__}.{info.name}")
    _LOADED = True
