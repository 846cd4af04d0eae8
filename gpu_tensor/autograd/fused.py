"""Backward of `@gt.fuse` functions, itself fused.

The forward stays the one fused kernel. Its traced expression graph is differentiated
symbolically (reverse mode over the graph, with the `grad` rule of each op-table row: the
same rule eager autograd runs, fusion/derivatives.py), and the gradients of all inputs that
need one become a second fused function of (inputs, scalars, grad): one kernel on a GPU, one
numpy evaluation elsewhere; forward values it needs are recomputed inside that kernel
instead of being stored. Each input's gradient comes out in the broadcast shape and the
engine sums it back to the input's shape.

Falls back to running the function's body op by op (each op recorded as usual) when the
function returns several tensors or uses an op with no rule here.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..fusion.expr import Cast, Const, Input, Op, Scalar
from ..fusion.fuse import Fused
from ..fusion.optable import OPS
from ..fusion.trace import Proxy, _cast
from ..fusion.trace import apply as A
from . import grad_mode
from .function import Node, connect

__all__ = ["call_with_grad"]


def _differentiable(graph) -> bool:
    for node in graph.topo():
        if node.dtype.kind == "c":  # complex: the body op by op (the rows' complex rules)
            return False
        if isinstance(node, Op) and OPS[node.key].grad is None and node.dtype.kind == "f":
            return False
    return True


def _backward_body(graph, n_tensors, n_scalars, need):
    """The Python body of the backward fused function: (*inputs, *scalars, grad) ->
    the gradient of each input with need[i] (a tuple when several)."""
    order = graph.topo()
    wanted = [i for i, n in enumerate(need) if n]

    def body(*vals):
        ins, scs, g = vals[:n_tensors], vals[n_tensors : n_tensors + n_scalars], vals[-1]
        env = {}
        for node in order:  # recompute the forward values inside the kernel
            if isinstance(node, Input):
                v = ins[node.index]
            elif isinstance(node, Scalar):
                v = scs[node.index]
            elif isinstance(node, Const):
                v = node.value
            elif isinstance(node, Cast):
                v = env[id(node.arg)]
                v = _cast(v, node.dtype) if isinstance(v, Proxy) else v
            else:
                op = OPS[node.key]
                kw = {op.param: node.param} if op.param and node.param is not None else {}
                v = A(node.key, *(None if a is None else env[id(a)] for a in node.args), **kw)
            env[id(node)] = v
        grads = {id(graph.outputs[0]): g}
        by_input = {}
        for node in reversed(order):
            gn = grads.pop(id(node), None)
            if gn is None:
                continue
            if isinstance(node, Input):
                by_input[node.index] = gn
                continue
            if isinstance(node, Cast):
                targets = ((node.arg, gn),)
            elif isinstance(node, Op) and OPS[node.key].grad is not None:
                op = OPS[node.key]
                args = [None if a is None else env[id(a)] for a in node.args]
                kw = {op.param: node.param} if op.param and node.param is not None else {}
                parts = op.grad(gn, env[id(node)], *args, **kw)
                targets = zip(node.args, parts, strict=True)
            else:
                continue  # integer/bool ops: no gradient flows through them
            for arg, part in targets:
                if part is None or arg is None or isinstance(arg, (Const, Scalar)):
                    continue
                prev = grads.get(id(arg))
                grads[id(arg)] = part if prev is None else A("add", prev, part)
        out = tuple(by_input.get(i, A("mul", g, 0.0)) for i in wanted)
        return out[0] if len(out) == 1 else out

    return body


class FusedBackward(Node):
    """Backward of one call of a fused function: runs its fused gradient function."""

    def _backward(self, grad):
        saved = self.saved_tensors
        grads = self.bwd(*saved, *self.scalars, grad)
        grads = (grads,) if isinstance(grads, Tensor) else tuple(grads)
        it = iter(grads)
        return tuple(next(it) if n else None for n in self.needs_input_grad)


def call_with_grad(fused: Fused, plain_call, args):
    """fused(*args) for arguments that require grad: the fused forward plus a fused-backward
    node, or the function's body op by op when it cannot be differentiated here."""
    args = tuple(
        a.item()
        if hasattr(a, "item") and not isinstance(a, Tensor) and type(a).__module__ == "numpy"
        else a
        for a in args
    )
    graph, single = fused._trace(args)
    if not single or not _differentiable(graph):
        return fused.fn(*args)
    tensors = [a for a in args if isinstance(a, Tensor)]
    scalars = [a for a in args if isinstance(a, (bool, int, float))]
    with grad_mode.no_grad():
        out = plain_call(fused, *args)
    if not out.dtype.is_floating_point:
        return out
    need = tuple(t._requires_grad and t.dtype.is_floating_point for t in tensors)
    cache = fused.__dict__.setdefault("_autograd_backward", {})
    bwd = cache.get((graph, need))
    if bwd is None:
        body = _backward_body(graph, len(tensors), len(scalars), need)
        bwd = Fused(body, kernel_name=fused.kernel_name + "_backward")
        cache[(graph, need)] = bwd
    node = FusedBackward()
    connect(node, [t if n else None for t, n in zip(tensors, need, strict=True)])
    node.save_for_backward(*tensors)
    node.scalars, node.bwd = scalars, bwd
    out._requires_grad = True
    out.grad_fn = node
    return out
