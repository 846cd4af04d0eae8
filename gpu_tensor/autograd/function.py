"""Graph nodes: `Node` (one backward step, torch's `grad_fn`), `AccumulateGrad` (writes a
leaf's `.grad`), and `Function` (user-defined ops with `ctx.save_for_backward`).

Every node here has exactly one output (the tensor whose `grad_fn` it is), so the engine
feeds it one gradient and gets back one gradient per entry of `next_functions`.

Lifetime rule (the memory trap): a node holds its saved tensors until its backward has
run, then drops them unless `retain_graph=True`. Saved tensors are stored as history-free
aliases of the same storage, never as the tensor itself, so an op that saves its own output
(exp, tanh, sigmoid) makes no reference cycle: the graph is freed by reference counting the
moment the last output is dropped.
"""

from __future__ import annotations

import weakref

from ..tensor import Tensor, contiguous_format
from . import grad_mode

__all__ = ["Node", "AccumulateGrad", "Function", "FunctionCtx", "node_class", "register_hook",
           "RemovableHandle"]

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def _alias(t: Tensor) -> Tensor:
    """A tensor over t's memory with no history: same storage object, so the same version
    counter (an in-place change to t is seen), and no reference back to t or its grad_fn."""
    return Tensor._make(t._data, t.device, t.dtype, t._storage)


class Node:
    """One backward step. `next_functions`: ((node or None, 0), ...) per differentiable
    input; `apply(grad)` returns one gradient (or None) per entry."""

    _backward = None  # formula nodes: f(ctx, grad) -> tuple; set on the generated subclass

    def __init__(self):
        self.next_functions = ()
        self.needs_input_grad = ()
        self._meta = ()  # per input: (shape, dtype, device) to reduce/cast the grad to, or None
        self._saved = None
        self._had_saved = False
        self._released = False
        self._retained = None  # weakref to the output tensor when retain_grad() was called
        self._hooks = None  # the output tensor's register_hook functions

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    # -- saved tensors ------------------------------------------------------------------
    def save_for_backward(self, *values) -> None:
        """Keep tensors (and pass-through non-tensors) for backward, with their versions."""
        saved = []
        for v in values:
            if isinstance(v, Tensor):
                a = _alias(v)
                saved.append((a, a._storage._version))
            else:
                saved.append((v, None))
        self._saved = tuple(saved)
        self._had_saved = True

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError(FREED)
        if self._saved is None:
            return ()
        out = []
        for v, version in self._saved:
            if version is not None and v._storage._version != version:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: [{v.dtype.name} {list(v.shape)}] saved by "
                    f"{self.name()}, is at version {v._storage._version}; expected version "
                    f"{version} instead. Hint: clone() the tensor before the in-place change, "
                    "or make the change after backward().")
            out.append(v)
        return tuple(out)

    def _release(self) -> None:
        self._saved = None
        self._released = True

    # -- running ------------------------------------------------------------------------
    def apply(self, grad):
        if self._released and self._had_saved:
            raise RuntimeError(FREED)
        return self._backward(grad)

    def __call__(self, grad):
        return self.apply(grad)


def node_class(name: str):
    """The Node subclass named `name` (torch's names: 'MulBackward0', ...), made once."""
    cls = _CLASSES.get(name)
    if cls is None:
        cls = type(name, (Node,), {})
        _CLASSES[name] = cls
    return cls


_CLASSES: dict = {}


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: adds the incoming gradient to `variable.grad`."""

    def __init__(self, variable: Tensor):
        super().__init__()
        self.variable = variable

    def apply(self, grad):
        accumulate(self.variable, grad)
        return ()


def accumulate(t: Tensor, grad: Tensor, steal: bool = False) -> None:
    """t.grad += grad (in place). The first gradient is stored as a dense copy (it may be shared by
    several edges or be an expanded view), unless the engine says nothing else holds it
    (`steal`): then it is kept as is, saving a copy of the parameter's size."""
    with grad_mode.no_grad():
        if t.grad is None:
            strides = None if t.is_contiguous() else _dense_strides(t)
            if strides is None:  # row-major, like its (row-major or overlapping) parameter
                keep = steal and grad.is_contiguous()
                t.grad = grad if keep else grad.clone(memory_format=contiguous_format)
            elif steal and grad.stride() == strides:
                t.grad = grad
            else:  # torch's layout contract: a dense parameter's strides (w.t() -> grad.t())
                from ..creation import empty_strided

                g = empty_strided(tuple(t.shape), strides, dtype=grad.dtype, device=grad.device)
                g.copy_(grad)
                t.grad = g
        else:
            old = t.grad
            if tuple(old.shape) == tuple(grad.shape) and old.dtype is grad.dtype:
                try:
                    old.add_(grad)  # in place, like torch: references to .grad stay valid
                    return
                except RuntimeError:
                    pass  # an expanded or read-only .grad set by the user: replace it
            t.grad = old + grad


def _dense_strides(t: Tensor):
    """t's strides if its elements tile a block of memory without gaps or overlaps (a
    permuted contiguous tensor), else None."""
    strides = t.stride()
    expected = 1
    for st, n in sorted((st, n) for st, n in zip(strides, t.shape, strict=True) if n != 1):
        if st != expected:
            return None
        expected *= n
    return strides


# leaf id -> weakref to its AccumulateGrad. The node holds the leaf strongly, so while the
# weakref is alive the id cannot have been reused by another tensor.
_ACCUMULATORS: dict = {}


def accumulator(t: Tensor) -> AccumulateGrad:
    key = id(t)
    ref = _ACCUMULATORS.get(key)
    node = ref() if ref is not None else None
    if node is None or node.variable is not t:
        node = AccumulateGrad(t)
        _ACCUMULATORS[key] = weakref.ref(node, lambda r, k=key: _drop(k, r))
    return node


def _drop(key, ref) -> None:
    if _ACCUMULATORS.get(key) is ref:
        del _ACCUMULATORS[key]


def edge(t) -> tuple:
    """(node, 0) feeding t's gradient: its grad_fn, its AccumulateGrad, or (None, 0)."""
    if t is None or not t._requires_grad:
        return (None, 0)
    fn = t.grad_fn
    return (fn if fn is not None else accumulator(t), 0)


# leaf id -> (weakref to the leaf, [hooks]): a leaf's hooks outlive any one graph
_LEAF_HOOKS: dict = {}


class RemovableHandle:
    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def register_hook(t: Tensor, hook) -> RemovableHandle:
    """hook(grad) -> None or a replacement grad, called when t's gradient is computed."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is not None:
        if t.grad_fn._hooks is None:
            t.grad_fn._hooks = []
        hooks = t.grad_fn._hooks
    else:
        key = id(t)
        entry = _LEAF_HOOKS.get(key)
        if entry is None or entry[0]() is not t:
            entry = (weakref.ref(t, lambda r, k=key: _drop_hooks(k, r)), [])
            _LEAF_HOOKS[key] = entry
        hooks = entry[1]
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


def _drop_hooks(key, ref) -> None:
    entry = _LEAF_HOOKS.get(key)
    if entry is not None and entry[0] is ref:
        del _LEAF_HOOKS[key]


def has_hooks(node) -> bool:
    if isinstance(node, AccumulateGrad):
        entry = _LEAF_HOOKS.get(id(node.variable))
        return bool(entry is not None and entry[0]() is node.variable and entry[1])
    return bool(node._hooks)


def run_hooks(node, grad):
    """The gradient after the hooks registered on the tensor `node` produces."""
    if isinstance(node, AccumulateGrad):
        entry = _LEAF_HOOKS.get(id(node.variable))
        hooks = entry[1] if entry is not None and entry[0]() is node.variable else None
    else:
        hooks = node._hooks
    if hooks:
        for hook in list(hooks):
            r = hook(grad)
            if r is not None:
                grad = r
    return grad


# -- user-defined functions -------------------------------------------------------------
class FunctionCtx(Node):
    """The `ctx` of a custom Function: a Node that calls the class's `backward`."""

    _fn_cls = None

    def _backward(self, grad):
        grads = self._fn_cls.backward(self, grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        return grads

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = {id(t) for t in tensors}

    def mark_dirty(self, *tensors) -> None:
        pass  # accepted for torch compatibility; in-place custom functions are not tracked


class Function:
    """torch.autograd.Function: subclass with static `forward(ctx, *args)` and
    `backward(ctx, grad)` returning one gradient per forward argument (None for
    non-tensors); call `MyFn.apply(*args)`. One output tensor per function."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("subclasses of Function must implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function must implement backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        from . import install

        install.activate()
        ctx_cls = cls.__dict__.get("_ctx_cls")
        if ctx_cls is None:
            ctx_cls = type(cls.__name__ + "Backward", (FunctionCtx,), {"_fn_cls": cls})
            cls._ctx_cls = ctx_cls
        ctx = ctx_cls()
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        record = grad_mode.STATE.enabled and any(t is not None and t._requires_grad
                                                 for t in tensors)
        ctx.needs_input_grad = tuple(t is not None and t._requires_grad for t in tensors)
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError(f"{cls.__name__}.forward must return a single Tensor (got "
                            f"{type(out).__name__}); return several values from separate "
                            "Functions")
        if record and out.dtype.is_floating_point and id(out) not in getattr(
                ctx, "_non_diff", ()):
            if any(out is t for t in tensors):
                out = out._view_of(out._data)  # never rewrite an input's own history
            ctx.next_functions = tuple(edge(t) for t in tensors)
            ctx._meta = tuple((t.shape, t.dtype, t.device)
                              if t is not None and t._requires_grad else None for t in tensors)
            out._requires_grad = True
            out.grad_fn = ctx
        return out
