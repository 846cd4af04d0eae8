"""Backward of `@gt.fuse` functions, itself fused.

The forward stays the one fused kernel. Its traced expression graph is differentiated
symbolically (reverse mode over the graph, one rule per op-table key below), and the
gradients of all inputs that need one become a second fused function of (inputs, scalars,
grad): one kernel on a GPU, one numpy evaluation elsewhere; forward values it needs are
recomputed inside that kernel instead of being stored. Each input's gradient comes out in
the broadcast shape and the engine sums it back to the input's shape.

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

__all__ = ["call_with_grad", "DERIVATIVES"]


def _gelu_cdf(a):
    """Phi(a) from gelu itself (there is no erf op): gelu(a) + gelu(-a) = a*(2*Phi(a) - 1)."""
    zero = A("eq", a, 0)
    safe = A("where", zero, 1.0, a)
    s = A("add", A("gelu", a), A("gelu", A("neg", a)))
    return A("where", zero, 0.5, A("mul", A("add", A("div", s, safe), 1.0), 0.5))


_INV_SQRT_2PI = 0.3989422804014327  # 1/sqrt(2*pi): the standard normal density's constant
_K = 0.7978845608028654  # sqrt(2/pi): tanh-gelu's constant


def _gelu(g, a, o, param):
    if param == "tanh":
        t = A("tanh", A("mul", A("add", a, A("mul", 0.044715, A("mul", a, A("mul", a, a)))), _K))
        d = A("mul", A("add", 1.0, A("mul", 3 * 0.044715, A("mul", a, a))), _K)
        inner = A("add", A("mul", 0.5, A("add", 1.0, t)),
                  A("mul", A("mul", 0.5, a), A("mul", A("sub", 1.0, A("mul", t, t)), d)))
        return (A("mul", g, inner),)
    pdf = A("mul", A("exp", A("mul", A("mul", a, a), -0.5)), _INV_SQRT_2PI)
    return (A("mul", g, A("add", _gelu_cdf(a), A("mul", a, pdf))),)


def _pow(g, a, b, o):
    ga = A("mul", g, A("mul", b, A("pow", a, A("sub", b, 1) if isinstance(b, Proxy) else b - 1)))
    gb = None
    if isinstance(b, Proxy):
        gb = A("mul", g, A("mul", o, A("log", a))) if isinstance(a, Proxy) else None
    return ga, gb


def _pair(win_key):
    def rule(g, a, b, o, p):
        win, tie = A(win_key, a, b), A("eq", a, b)
        half = A("mul", g, 0.5)
        return (A("where", win, g, A("where", tie, half, 0.0)),
                A("where", win, 0.0, A("where", tie, half, g)))

    return rule


def _clamp(g, x, lo, hi, o, p):
    keep = None
    if lo is not None:
        keep = A("ge", x, lo)
    if hi is not None:
        le = A("le", x, hi)
        keep = le if keep is None else A("logical_and", keep, le)
    return (A("where", keep, g, 0.0),
            A("where", A("lt", x, lo), g, 0.0) if isinstance(lo, Proxy) else None,
            A("where", A("gt", x, hi), g, 0.0) if isinstance(hi, Proxy) else None)


# key -> rule(g, *operand values, out, param) -> one gradient (or None) per operand
DERIVATIVES = {
    "add": lambda g, a, b, o, p: (g, g),
    "sub": lambda g, a, b, o, p: (g, A("neg", g)),
    "mul": lambda g, a, b, o, p: (A("mul", g, b), A("mul", g, a)),
    "div": lambda g, a, b, o, p: (A("div", g, b), A("neg", A("div", A("mul", g, o), b))),
    "pow": lambda g, a, b, o, p: _pow(g, a, b, o),
    "maximum": _pair("gt"),
    "minimum": _pair("lt"),
    "neg": lambda g, a, o, p: (A("neg", g),),
    "abs": lambda g, a, o, p: (A("mul", g, A("sign", a)),),
    "exp": lambda g, a, o, p: (A("mul", g, o),),
    "log": lambda g, a, o, p: (A("div", g, a),),
    "log1p": lambda g, a, o, p: (A("div", g, A("add", a, 1.0)),),
    "sqrt": lambda g, a, o, p: (A("div", g, A("mul", o, 2.0)),),
    "rsqrt": lambda g, a, o, p: (A("mul", g, A("mul", A("mul", o, A("mul", o, o)), -0.5)),),
    "sin": lambda g, a, o, p: (A("mul", g, A("cos", a)),),
    "cos": lambda g, a, o, p: (A("neg", A("mul", g, A("sin", a))),),
    "tanh": lambda g, a, o, p: (A("mul", g, A("sub", 1.0, A("mul", o, o))),),
    "sigmoid": lambda g, a, o, p: (A("mul", g, A("mul", o, A("sub", 1.0, o))),),
    "relu": lambda g, a, o, p: (A("where", A("gt", a, 0), g, 0.0),),
    "silu": lambda g, a, o, p: (A("mul", g, A("mul", A("sigmoid", a), A(
        "add", 1.0, A("mul", a, A("sub", 1.0, A("sigmoid", a)))))),),
    "gelu": lambda g, a, o, p: _gelu(g, a, o, p),
    "floor": lambda g, a, o, p: (A("mul", g, 0.0),),
    "ceil": lambda g, a, o, p: (A("mul", g, 0.0),),
    "round": lambda g, a, o, p: (A("mul", g, 0.0),),
    "sign": lambda g, a, o, p: (A("mul", g, 0.0),),
    "where": lambda g, c, a, b, o, p: (None, A("where", c, g, 0.0), A("where", c, 0.0, g)),
    "clamp": _clamp,
}


def _differentiable(graph) -> bool:
    for node in graph.topo():
        if isinstance(node, Op) and node.key not in DERIVATIVES and node.dtype.kind == "f":
            return False
    return True


def _backward_body(graph, n_tensors, n_scalars, need):
    """The Python body of the backward fused function: (*inputs, *scalars, grad) ->
    the gradient of each input with need[i] (a tuple when several)."""
    order = graph.topo()
    wanted = [i for i, n in enumerate(need) if n]

    def body(*vals):
        ins, scs, g = vals[:n_tensors], vals[n_tensors:n_tensors + n_scalars], vals[-1]
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
            elif isinstance(node, Op) and node.key in DERIVATIVES:
                args = [None if a is None else env[id(a)] for a in node.args]
                parts = DERIVATIVES[node.key](gn, *args, env[id(node)], node.param)
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
    args = tuple(a.item() if hasattr(a, "item") and not isinstance(a, Tensor) and
                 type(a).__module__ == "numpy" else a for a in args)
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
