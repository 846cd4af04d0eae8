"""The backward engine: `backward(tensors, grad_tensors, retain_graph)` and
`grad(outputs, inputs, grad_outputs, retain_graph, allow_unused)`.

Order: each node runs once, after every node that feeds it a gradient has run (Kahn's
algorithm over the dependency counts of the reachable graph), so a node sees the sum of all
its incoming gradients (a node with several outputs gets them per output, as a tuple with
None for an output that got none). Gradients are reduced to each input's shape (broadcasting), dtype
and device here, once, instead of in every formula. Formulas run under no_grad, unless
`create_graph=True`: then they run with grad mode on, so the gradients they compute are
recorded like any other op (from the saved inputs, which keep their history) and can be
differentiated again (hessian-vector products, gradient penalties).
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._modes import ACTIVE
from .._tensor import Tensor
from ..device import CPU
from ..dtype import to_dtype
from . import grad_mode
from .function import (
    _LEAF_HOOKS,
    AccumulateGrad,
    accumulate,
    accumulator,
    has_hooks,
    output_nr,
    run_hooks,
)

__all__ = ["backward", "grad", "sum_to"]


def sum_to(g: Tensor, shape) -> Tensor:
    """g summed over the dimensions that broadcasting added or expanded to reach g.shape."""
    shape = tuple(shape)
    gshape = tuple(g._data.shape)  # (g.shape's, without building a Size)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    dims = list(range(lead)) + [
        lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1
    ]
    if dims:
        dev = g.device
        if (
            type(g) is Tensor
            and g.dtype in _WIDE_FLOATS
            and not grad_mode.STATE.enabled
            and not ACTIVE[0]
            and (dev is CPU or getattr(dev._backend, "is_emulated", False))
        ):
            # g.sum(dims, keepdim=True)'s own numpy call, without its dispatch (a bias's
            # gradient: once per Linear layer and step); emulated cuda sums into its allocator
            if dev is CPU:
                r, st = np.add.reduce(g._data, axis=tuple(dims), keepdims=True), None
            else:
                r, st = dev._backend.sum_keepdims(g._data, tuple(dims))
            if r.shape != shape and 1 not in shape and 0 not in shape:
                # and the reshape, numpy's: with no size-1 dim a contiguous view has one
                # set of strides (for a size-1 dim, reshape keeps torch's choice)
                return Tensor._make(r.reshape(shape), dev, g.dtype, st)
            g = Tensor._make(r, dev, g.dtype, st)
        else:
            g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape) if tuple(g.shape) != shape else g


_WIDE_FLOATS = (_dt.float32, _dt.float64)


def _fit(g: Tensor, shape, dtype: str, device: str) -> Tensor:
    """g reduced to `shape`, on the device and of the dtype named (function.connect says
    why names)."""
    if g.device._str != device:
        from ..transfer.move import move

        g = move(g, device)
    if g._data.shape != shape:
        g = sum_to(g, shape)
    if g.dtype.name != dtype:
        if g.dtype.is_complex and not to_dtype(dtype).is_complex:
            g = g.real  # a real input of a complex op: the real part (torch's handle_r_to_c)
        g = g.to(to_dtype(dtype))
    return g


def _roots(tensors, grads, what="tensors"):
    """[(node, output_nr, grad)] for the output tensors, with torch's checks and implicit
    ones."""
    from .. import creation

    roots = []
    for i, (t, g) in enumerate(zip(tensors, grads, strict=True)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be Tensors, got {type(t).__name__} at position {i}")
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of {what} does not require grad and does not have a grad_fn"
            )
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = creation.ones_like(t)
        elif not isinstance(g, Tensor):
            g = creation.full_like(t, g)
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                f"output[{i}] has a shape of {list(t.shape)}."
            )
        if g.dtype is not t.dtype:  # torch's validate_outputs: the output's dtype
            if g.is_complex() != t.is_complex():
                raise RuntimeError(
                    "For complex Tensors, both grad_output and output are required to have "
                    f"the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                    f"{g.dtype} and output[{i}] has a dtype of {t.dtype}."
                )
            g = g.to(t.dtype)
        node = t.grad_fn if t.grad_fn is not None else accumulator(t)
        roots.append((node, output_nr(t), g))
    return roots


def _as_list(x):
    if x is None:
        return None
    return [x] if isinstance(x, Tensor) else list(x)


def _add_to(buffers, node, nr, g) -> None:
    """Buffer g for output `nr` of a node with several outputs: a list per node."""
    slot = buffers.get(node)
    if slot is None:
        slot = buffers[node] = [None] * node._n_outputs
    prev = slot[nr]
    slot[nr] = g if prev is None else prev + g


def _run(roots, retain_graph: bool, capture=None, accumulate_leaves=True, create_graph=False):
    """Run the graph from `roots`. `capture`: {(node, output_nr): slot} whose incoming
    gradient is wanted (autograd.grad); returns {slot: grad}. `create_graph`: record the
    backward's own ops (grad mode on while formulas run)."""
    deps: dict = {}
    stack = [n for n, _, _ in roots]
    seen = set(stack)
    while stack:
        node = stack.pop()
        n1 = node._n1  # (Node._edges, read in place: once per node and pass)
        for nx in (n1,) if n1 is not None else node._next[1::6]:
            deps[nx] = deps.get(nx, 0) + 1
            if nx not in seen:
                seen.add(nx)
                stack.append(nx)
    buffers: dict = {}
    # ids of buffered gradients that nothing else references (a fresh, dense result of a
    # built-in formula): a leaf may keep such a gradient as its .grad without a copy
    owned: set = set()
    for node, nr, g in roots:
        if node._n_outputs != 1:
            _add_to(buffers, node, nr, g)
        else:
            buffers[node] = buffers[node] + g if node in buffers else g
    ready = [n for n in dict.fromkeys(n for n, _, _ in roots) if deps.get(n, 0) == 0]
    captured = {}
    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            g = buffers.pop(node, None)
            grads = ()
            stealable = False
            if node._n_outputs != 1:
                if g is not None:
                    g = _outputs_in(node, g, capture, captured)
                    grads = node.apply(g)
                    if not retain_graph:
                        node._release()
            elif g is not None:
                leaf = isinstance(node, AccumulateGrad)
                # hooks only where some are registered: a leaf's live in _LEAF_HOOKS, a
                # node's in its _hooks (has_hooks/run_hooks read the same places)
                hooked = (_LEAF_HOOKS if leaf else node._hooks) and has_hooks(node)
                # a hook may keep it; a gradient with history is never stolen
                stealable = not hooked and not create_graph and id(g) in owned
                owned.discard(id(g))
                if hooked:
                    g = run_hooks(node, g)
                if capture is not None and (node, 0) in capture:
                    captured[capture[node, 0]] = g
                if leaf:
                    if accumulate_leaves:
                        accumulate(node.variable, g, steal=stealable)
                    continue  # a leaf's node has no edges
                if node._retained:
                    _retain(node, 0, g)
                grads = node.apply(g)
                if not retain_graph:
                    node._release()
            builtin = node._fresh_grads
            n1 = node._n1
            if n1 is not None:  # Node._edges, built in place
                edges = ((node._k1, n1, node._nr1, node._shape1, node._dtype1, node._dev1),)
            else:
                edges = node._edges()
            for k, nx, nr, shape, dtype, dev in edges:
                raw = grads[k] if k < len(grads) else None
                if raw is not None:
                    gi = raw
                    if (
                        raw._data.shape != shape
                        or raw.dtype.name != dtype
                        or raw.device._str != dev
                    ):
                        gi = _fit(raw, shape, dtype, dev)
                    if nx._n_outputs != 1:  # per output; never a leaf's .grad: no ownership
                        _add_to(buffers, nx, nr, gi)
                        deps[nx] -= 1
                        if deps[nx] == 0:
                            ready.append(nx)
                        continue
                    prev = buffers.get(nx)
                    if prev is None:
                        buffers[nx] = gi
                        if builtin and _ownable(gi, raw, g, stealable, grads):
                            owned.add(id(gi))
                    else:
                        owned.discard(id(prev))
                        buffers[nx] = total = prev + gi
                        owned.add(id(total))
                deps[nx] -= 1
                if deps[nx] == 0:
                    ready.append(nx)
    return captured


def _retain(node, nr, g) -> None:
    """retain_grad(): accumulate g into the .grad of output `nr` of node, if still alive."""
    ref = node._retained.get(nr)
    t = ref() if ref is not None else None
    if t is not None:
        accumulate(t, g)


def _outputs_in(node, slot, capture, captured) -> tuple:
    """The per-output gradients of a multi-output node, after each output's hooks,
    captures and retain_grad."""
    out = []
    for nr, g in enumerate(slot):
        if g is not None:
            g = run_hooks(node, g, nr)
            if capture is not None and (node, nr) in capture:
                captured[capture[node, nr]] = g
            if node._retained:
                _retain(node, nr, g)
        out.append(g)
    return tuple(out)


def _ownable(gi, raw, g, g_owned: bool, grads) -> bool:
    """Whether the gradient `gi` (a built-in formula's output `raw`, fitted to its input)
    may become a leaf's .grad without a copy: nothing else may reference its memory. A new
    tensor made by the fitting (a broadcast sum, a cast) is free; the formula's own output
    must go to one edge only, and share memory with the incoming gradient `g` (a transpose,
    reshape or narrow of it) only if `g` was free too."""
    root = raw if raw._base is None else raw._base  # (_root, written out: once per edge)
    if (gi if gi._base is None else gi._base) is not root:
        return True
    if not isinstance(g, Tensor):
        return False  # the per-output gradients of a multi-output node: do not track them
    if len(grads) != 1:
        n = 0
        for x in grads:
            if x is raw:
                n += 1
        if n != 1:
            return False
    return g_owned or root is not (g if g._base is None else g._base)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Sum the gradients of `tensors` (weighted by `grad_tensors`) into the `.grad` of the
    leaves that require grad. The graph's saved tensors are freed as it runs unless
    `retain_graph=True`."""
    if retain_graph is None:
        retain_graph = create_graph  # torch: a graph built for higher order is kept
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad_tensors should have {len(tensors)} entries, got {len(grads)}")
    roots = _roots(tensors, grads)
    if inputs is not None:
        found = grad(
            tensors,
            _as_list(inputs),
            grads,
            retain_graph=retain_graph,
            create_graph=create_graph,
            allow_unused=True,
            _roots=roots,
        )
        for t, g in zip(_as_list(inputs), found, strict=True):
            if g is not None:
                accumulate(t, g)
        return
    _run(roots, bool(retain_graph), create_graph=create_graph)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    materialize_grads=False,
    _roots=None,
):
    """The gradients of `outputs` with respect to `inputs` (a tuple), without touching any
    `.grad`. allow_unused=False: an input the outputs do not depend on is an error.
    create_graph=True: the gradients carry their own graph (differentiate them again)."""
    if retain_graph is None:
        retain_graph = create_graph
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if _roots is None:
        gouts = _as_list(grad_outputs) or [None] * len(outputs)
        if len(gouts) != len(outputs):
            raise RuntimeError(f"grad_outputs should have {len(outputs)} entries, got {len(gouts)}")
        _roots = _roots_for(outputs, gouts)
    capture = {}
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault(_key(t), i)
    found = _run(
        _roots, bool(retain_graph), capture, accumulate_leaves=False, create_graph=create_graph
    )
    result = []
    for t in inputs:
        g = found.get(capture[_key(t)])
        if g is None:
            if materialize_grads:
                from ..creation import zeros_like

                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
        result.append(g)
    return tuple(result)


def _key(t) -> tuple:
    """(node, output_nr) whose incoming gradient is t's."""
    return (t.grad_fn, output_nr(t)) if t.grad_fn is not None else (accumulator(t), 0)


def _roots_for(outputs, gouts):
    return _roots(outputs, gouts, what="outputs")
