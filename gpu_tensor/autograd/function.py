"""Graph nodes: `Node` (one backward step, torch's `grad_fn`), `AccumulateGrad` (writes a
leaf's `.grad`), and `Function` (user-defined ops with `ctx.save_for_backward`).

Most nodes have one output (the tensor whose `grad_fn` it is): the engine feeds them one
gradient and gets back one gradient per entry of `next_functions`. A node with several
outputs (split, chunk, unbind, a custom Function returning a tuple) is the `grad_fn` of
each; tensor i is its output `i` (`output_nr`), an edge to it is (node, i), and the engine
feeds it a tuple with one gradient per output (None for an output that got none).

Lifetime rule (the memory trap): a node holds its saved tensors until its backward has
run, then drops them unless `retain_graph=True`. Saved tensors are stored as history-free
aliases of the same storage, never as the tensor itself, so an op that saves its own output
(exp, tanh, sigmoid) makes no reference cycle: the graph is freed by reference counting the
moment the last output is dropped.
"""

from __future__ import annotations

import threading
import weakref

from .._tensor import Tensor, contiguous_format
from . import grad_mode

__all__ = [
    "Node",
    "AccumulateGrad",
    "Function",
    "FunctionCtx",
    "node_class",
    "register_hook",
    "RemovableHandle",
    "output_nr",
    "set_outputs",
    "same_output",
    "connect",
]

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def _alias(t: Tensor) -> Tensor:
    """A tensor over t's memory with no history: same storage object, so the same version
    counter (an in-place change to t is seen), and no reference back to t or its grad_fn."""
    return Tensor._make(t._data, t.device, t.dtype, t._storage)


def modified_in_place(v, node: str, version: int) -> RuntimeError:
    """torch's error for a tensor a node saved, changed in place before its backward."""
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified "
        f"by an inplace operation: [{v.dtype.name} {list(v.shape)}] saved by "
        f"{node}, is at version {v._storage._version}; expected version "
        f"{version} instead. Hint: clone() the tensor before the in-place change, "
        "or make the change after backward()."
    )


class Node:
    """One backward step. `next_functions`: ((node or None, output_nr), ...) per
    differentiable input; `apply(grad)` returns one gradient (or None) per entry. `grad` is
    a tensor, or a tuple of tensors-or-None when the node has several outputs."""

    _backward = None  # formula nodes: f(ctx, grad) -> tuple; set on the generated subclass
    _n_outputs = 1  # a class default: set on the instance by set_outputs() when several

    # Class defaults, set on the instance only when they change: recording a node (once per
    # op) then costs no __init__ stores.
    needs_input_grad = ()
    # The edges (see `connect`): when exactly one input requires grad, the next node sits
    # in `_n1`, beside its input position, output_nr and the (shape, dtype name, device
    # string) that input's gradient is reduced and cast to; otherwise `_next` is a flat
    # tuple of those six per input that requires grad.
    _n1 = None
    _k1 = _nr1 = 0
    _shape1 = _dtype1 = _dev1 = None
    _next = ()
    _saved = None
    _versions = ()  # per saved value: its storage version (None for a non-tensor); () if none is
    _saved_outputs = 0  # bit i set: saved value i is this node's own output
    _had_saved = False
    _released = False
    _retained = None  # {output_nr: weakref to the tensor} after retain_grad()
    _hooks = None  # {output_nr: [the tensor's register_hook functions]}
    _out_id = None  # id() of the output while the forward saves (set by the recorder)
    # The gradients apply() returns are new tensors, or views of the gradient it was given,
    # never memory something else keeps: the engine may then let a leaf keep one as its
    # .grad without a copy (engine._ownable). False for a user's Function.backward.
    _fresh_grads = True

    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        """((node or None, output_nr), ...), one per input, as torch's."""
        out = [(None, 0)] * len(self.needs_input_grad)
        for k, nx, nr, *_ in self._edges():
            out[k] = (nx, nr)
        return tuple(out)

    def _edges(self):
        """(input position, next node, its output_nr, shape, dtype name, device string) per
        input that requires grad."""
        n = self._n1
        if n is not None:
            return ((self._k1, n, self._nr1, self._shape1, self._dtype1, self._dev1),)
        e = self._next
        if not e:
            return ()
        return zip(e[0::6], e[1::6], e[2::6], e[3::6], e[4::6], e[5::6], strict=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    # -- saved tensors ------------------------------------------------------------------
    def save_for_backward(self, *values) -> None:
        """Keep tensors (and pass-through non-tensors) for backward, with their versions.
        A tensor that requires grad (an input with history) is kept as itself, so a
        backward with create_graph=True differentiates through it; any other tensor (this
        op's own output, a grad-free input) as a history-free alias (see the lifetime
        rule above)."""
        # Flat records, not a tuple per value, and no copy without a tensor: a long graph
        # then holds fewer objects for Python's cyclic GC to walk (see `connect`)
        saved, versions, outputs = values, None, 0
        for i, v in enumerate(values):
            if isinstance(v, Tensor):
                if versions is None:
                    saved, versions = list(values), [None] * len(values)
                if not v._requires_grad:
                    if id(v) == self._out_id:
                        outputs |= 1 << i
                    saved[i] = v = _alias(v)
                versions[i] = v._storage._version
        if versions is not None:
            saved = tuple(saved)
            self._versions = tuple(versions)
        elif self._versions:  # saved a second time, now without tensors
            self._versions = ()
        self._saved = saved
        if outputs or self._saved_outputs:
            self._saved_outputs = outputs
        self._had_saved = True

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError(FREED)
        if self._saved is None:
            return ()
        out = []
        with_history = grad_mode.STATE.enabled  # inside a create_graph=True backward
        outputs = self._saved_outputs
        saved = self._saved
        versions = self._versions or (None,) * len(saved)  # () when nothing is a tensor
        for i, (v, version) in enumerate(zip(saved, versions, strict=True)):
            if version is not None and v._storage._version != version:
                raise modified_in_place(v, self.name(), version)
            if outputs >> i & 1 and with_history:  # the output, with this node as history
                v = _alias(v)
                v._requires_grad = True
                v.grad_fn = self
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

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # torch's name() for this node

    def apply(self, grad):
        accumulate(self.variable, grad)
        return ()


_ACCUMULATE_LOCK = threading.RLock()


def accumulate(t: Tensor, grad: Tensor, steal: bool = False) -> None:
    """t.grad += grad (in place). The first gradient is stored as a dense copy (it may be shared by
    several edges or be an expanded view), unless the engine says nothing else holds it
    (`steal`): then it is kept as is, saving a copy of the parameter's size.
    A gradient with history (a create_graph=True backward) is kept with it, as torch does:
    stored as is, then summed out of place. Serialised by a lock, as torch does: concurrent
    backward passes into one leaf lose no update."""
    if grad_mode.STATE.enabled:
        if grad._requires_grad:
            with _ACCUMULATE_LOCK:
                t.grad = grad if t.grad is None else t.grad + grad
            return
        with grad_mode.no_grad(), _ACCUMULATE_LOCK:
            _accumulate(t, grad, steal)
        return
    with _ACCUMULATE_LOCK:  # (the engine's case: grad mode is off already)
        _accumulate(t, grad, steal)


def _accumulate(t: Tensor, grad: Tensor, steal: bool) -> None:
    """accumulate()'s work, with grad mode off."""
    old = t._grad
    if old is None:
        data = t._data  # t.is_contiguous(), read in place
        strides = None if data.flags.c_contiguous or data.size == 0 else _dense_strides(t)
        if strides is None:  # row-major, like its (row-major or overlapping) parameter
            # stolen with the parameter's strides exactly, size-1 dims included (a (1, n)
            # product's transpose is row-major with other strides there)
            keep = steal and grad._data.strides == data.strides
            _set_grad(t, grad if keep else grad.clone(memory_format=contiguous_format))
        elif steal and grad.stride() == strides:
            t.grad = grad
        else:  # torch's layout contract: a dense parameter's strides (w.t() -> grad.t())
            from ..creation import empty_strided

            g = empty_strided(tuple(t.shape), strides, dtype=grad.dtype, device=grad.device)
            g.copy_(grad)
            t.grad = g
        return
    if tuple(old.shape) == tuple(grad.shape) and old.dtype is grad.dtype:
        try:
            old.add_(grad)  # in place, like torch: references to .grad stay valid
            return
        except RuntimeError:
            pass  # an expanded or read-only .grad set by the user: replace it
    t.grad = old + grad


def _set_grad(t: Tensor, g: Tensor) -> None:
    """t.grad = g, storing the slot directly when g is plainly t's kind (the engine's
    gradients are fitted to it); anything else meets the setter's checks and errors."""
    if g.dtype is t.dtype and g.device is t.device and g._data.shape == t._data.shape:
        t._grad = g
    else:
        t.grad = g


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


def connect(node: Node, ins) -> None:
    """Set the node's edges and needs_input_grad from `ins` (one Tensor or None per input,
    in the order its backward returns gradients).

    Recording is per op, so this is laid out for Python's cyclic GC: over a long graph its
    full collections walk every tracked object, and torch's C++ nodes add none. A node with
    one edge is the only tracked object it adds: the edge lives in its attributes, the
    meta as names (not DType/Device objects), and needs_input_grad is a shared tuple of
    bools; a node with several edges adds one flat tuple."""
    first = rest = None
    mask = k = 0
    for t in ins:
        if t is not None and t._requires_grad:
            fn = t.grad_fn
            if fn is None:
                fn, nr = accumulator(t), 0
            else:
                nr = 0 if fn._n_outputs == 1 else output_nr(t)
            e = (k, fn, nr, t._data.shape, t.dtype.name, t.device._str)
            if first is None:
                first = e
            elif rest is None:
                rest = [*first, *e]
            else:
                rest += e
            mask |= 1 << k
        k += 1
    if rest is not None:
        node._next = tuple(rest)
    elif first is not None:
        node._k1, node._n1, node._nr1, node._shape1, node._dtype1, node._dev1 = first
    node.needs_input_grad = (
        _NEEDS[k][mask] if k < len(_NEEDS) else tuple(bool(mask >> i & 1) for i in range(k))
    )


# needs_input_grad by (number of inputs, bit mask of those that require grad): shared
_NEEDS = [[tuple(bool(m >> i & 1) for i in range(n)) for m in range(1 << n)] for n in range(6)]


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


# id(tensor) -> (weakref to it, weakref to its node, its output_nr), for the outputs of
# multi-output nodes only (Tensor has no slot for it; single-output nodes, the common case,
# pay nothing). The weakrefs and the node check make a reused id or a replaced grad_fn read
# as "not here", and keep no node alive once its tensor has moved on to another grad_fn.
_OUTPUT_NR: dict = {}


def output_nr(t) -> int:
    """Which output of `t.grad_fn` the tensor t is (0 for a leaf or a one-output node)."""
    fn = t.grad_fn
    if fn is None or fn._n_outputs == 1:
        return 0
    entry = _OUTPUT_NR.get(id(t))
    if entry is not None and entry[0]() is t and entry[1]() is fn:
        return entry[2]
    return 0


def set_outputs(node: Node, outputs) -> None:
    """Make `node` the grad_fn of every Tensor in `outputs` (a sequence; output i is
    outputs[i]; other entries, None or non-tensors, get no gradient)."""
    n = len(outputs)
    if n != 1:
        node._n_outputs = n
    for i, t in enumerate(outputs):
        if t is None:
            continue
        t._requires_grad = True
        t.grad_fn = node
        if n != 1:
            key = id(t)
            _OUTPUT_NR[key] = (
                weakref.ref(t, lambda r, k=key: _drop_nr(k, r)),
                weakref.ref(node),
                i,
            )


def same_output(dst, src) -> None:
    """dst takes src's place in the graph (same grad_fn and output_nr)."""
    dst.grad_fn, dst._requires_grad = src.grad_fn, src._requires_grad
    fn = src.grad_fn
    if fn is not None and fn._n_outputs != 1:
        key, nr = id(dst), output_nr(src)
        _OUTPUT_NR[key] = (weakref.ref(dst, lambda r, k=key: _drop_nr(k, r)), weakref.ref(fn), nr)


def _drop_nr(key, ref) -> None:
    entry = _OUTPUT_NR.get(key)
    if entry is not None and entry[0] is ref:
        del _OUTPUT_NR[key]


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
    fn = t.grad_fn
    if fn is not None:
        if fn._hooks is None:
            fn._hooks = {}
        hooks = fn._hooks.setdefault(output_nr(t), [])
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
    return bool(node._hooks) and any(node._hooks.values())


def _check_hook_result(hook, grad, r) -> None:
    """torch: a hook may replace the gradient, but not change its type, size or device."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(r, Tensor):
        raise TypeError(
            f"hook '{name}' returned {type(r).__name__}; a tensor hook returns a Tensor or None"
        )
    for what, was, got in (
        ("type", grad.dtype, r.dtype),
        ("size", tuple(grad.shape), tuple(r.shape)),
        ("device", grad.device, r.device),
    ):
        if was != got:
            raise RuntimeError(
                f"hook '{name}' has changed the {what} of value (was {was} got "
                f"{got}); return a gradient like the one it received"
            )


def run_hooks(node, grad, nr=0):
    """The gradient after the hooks registered on the tensor that output `nr` of `node`
    is."""
    if isinstance(node, AccumulateGrad):
        entry = _LEAF_HOOKS.get(id(node.variable))
        hooks = entry[1] if entry is not None and entry[0]() is node.variable else None
    else:
        hooks = node._hooks.get(nr) if node._hooks else None
    if hooks:
        for hook in list(hooks):
            r = hook(grad)
            if r is not None:
                _check_hook_result(hook, grad, r)
                grad = r
    return grad


# -- user-defined functions -------------------------------------------------------------
class FunctionCtx(Node):
    """The `ctx` of a custom Function: a Node that calls the class's `backward`."""

    _fn_cls = None
    _fresh_grads = False  # a user's backward may return a tensor it keeps elsewhere
    _materialize = True
    _out_meta = ()  # per output: (shape, dtype, device) of a tensor output, else None

    def _backward(self, grad):
        if self._n_outputs == 1:
            grads = self._fn_cls.backward(self, grad)
        else:  # one argument per output; torch passes zeros for an unused tensor output
            if self._materialize:
                grad = tuple(
                    _zeros(m) if g is None and m is not None else g
                    for g, m in zip(grad, self._out_meta, strict=True)
                )
            grads = self._fn_cls.backward(self, *grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        return grads

    def set_materialize_grads(self, value: bool) -> None:
        """False: backward gets None (not zeros) for an output that got no gradient."""
        self._materialize = bool(value)

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = {id(t) for t in tensors}

    def mark_dirty(self, *tensors) -> None:
        pass  # accepted for torch compatibility; in-place custom functions are not tracked


def _zeros(meta):
    from ..creation import zeros

    shape, dtype, device = meta
    return zeros(tuple(shape), dtype=dtype, device=device)


class Function:
    """torch.autograd.Function: subclass with static `forward(ctx, *args)` and
    `backward(ctx, *grads)` (one gradient per forward output) returning one gradient per
    forward argument (None for non-tensors); call `MyFn.apply(*args)`. forward returns a
    Tensor or a tuple of them (non-tensor entries pass through and get None)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("subclasses of Function must implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("subclasses of Function must implement backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx_cls = cls.__dict__.get("_ctx_cls")
        if ctx_cls is None:
            ctx_cls = type(cls.__name__ + "Backward", (FunctionCtx,), {"_fn_cls": cls})
            cls._ctx_cls = ctx_cls
        ctx = ctx_cls()
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        record = grad_mode.STATE.enabled and any(
            t is not None and t._requires_grad for t in tensors
        )
        ctx.needs_input_grad = tuple(t is not None and t._requires_grad for t in tensors)
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        single = isinstance(out, Tensor)
        outs = (out,) if single else out
        if not isinstance(outs, tuple) or not any(isinstance(o, Tensor) for o in outs):
            raise TypeError(
                f"{cls.__name__}.forward must return a Tensor or a tuple with "
                f"Tensors in it (got {type(out).__name__})"
            )
        if not record:
            return out
        non_diff = getattr(ctx, "_non_diff", ())
        # never rewrite an input's own history: an input returned as is becomes a view
        outs = tuple(
            o._view_of(o._data) if isinstance(o, Tensor) and any(o is t for t in tensors) else o
            for o in outs
        )
        diff = [
            o
            if isinstance(o, Tensor) and o.dtype.is_floating_point and id(o) not in non_diff
            else None
            for o in outs
        ]
        if any(d is not None for d in diff):
            connect(ctx, tensors)
            ctx._out_meta = tuple(
                (o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs
            )
            set_outputs(ctx, diff)
        return outs[0] if single else outs
