"""Backward formulas of the elementwise ops (torch's derivatives.yaml, same node names).

The derivative of an op-table op is its row's `grad` rule (fusion/derivatives.py), which the
fused backward runs too; what is eager-only stays here: torch's node name, which operands
get an edge, what is saved, and eager-only arguments (add's alpha, div's rounding_mode).
Gradients are returned in the broadcast shape of the output; the engine sums them back to
each input's shape and casts them to its dtype. Formulas run under no_grad.
"""

from __future__ import annotations

import numpy as np

from .. import dtype as _dt
from .._modes import ACTIVE
from .._tensor import Tensor
from ..device import CPU
from ..fusion.derivatives import conj_factor
from ..fusion.optable import OPS
from ..ops import _dispatch
from ..ops import elementwise as ew
from .grad_mode import STATE as _STATE
from .record import formula, inplace

__all__: list = []

_B, _R = _dispatch._BINARY, _dispatch._RBINARY


def _t(x):
    return x if isinstance(x, Tensor) else None


def _need(ctx, i):
    return ctx.needs_input_grad[i]


def _bin(key, *more, commutative=False):
    """targets for a binary op: the module function, its aliases, the Tensor operators.
    A commutative op's reflected operator (`2.0 * x`) is recorded as `x * 2.0`, so its
    edges come in torch's order (tensor, scalar)."""
    reflected = (_R, key) if commutative else (_R, key, "reflected")
    return ((ew, key), (_B, key), reflected) + tuple((ew, m) for m in more)


# -- arithmetic ---------------------------------------------------------------------------
def _two(args, kwargs):
    a = args[0]
    b = args[1] if len(args) > 1 else kwargs.get("other")
    # isinstance inline, not _t: this runs once per recorded binary op
    return (a if isinstance(a, Tensor) else None, b if isinstance(b, Tensor) else None)


@formula("AddBackward0", *_bin("add", commutative=True), inputs=_two)
def _add(ctx, out, a, b, *, alpha=1):
    ctx.alpha = alpha


def _alpha(gb, alpha):
    return gb if alpha == 1 or gb is None else gb * alpha


@_add.backward
def _(ctx, g):
    # the rule reads only whether an operand is a tensor: g stands in, nothing is saved
    ga, gb = OPS["add"].grad(g, None, g, g if _need(ctx, 1) else None)
    return ga, _alpha(gb, ctx.alpha)


def _tensors_only(args, kwargs):
    """Edges for the tensor operands only when one is a Python scalar (torch's
    RsubBackward1 and PowBackward0/2 have no edge for the scalar)."""
    ins = _two(args, kwargs)
    return ins if None not in ins else [t for t in ins if t is not None]


def _sub_inputs(args, kwargs):
    return _two(args, kwargs) if _t(args[0]) is not None else _tensors_only(args, kwargs)


@formula("SubBackward0", *_bin("sub"), inputs=_sub_inputs)
def _sub(ctx, out, a, b, *, alpha=1):
    ctx.alpha = alpha
    ctx.rsub = not isinstance(a, Tensor)
    return "RsubBackward1" if ctx.rsub else None  # `1 - x`: one edge, to x


@_sub.backward
def _(ctx, g):
    # the rule reads only whether an operand is a tensor: g stands in, nothing is saved
    b = g if ctx.rsub or _need(ctx, 1) else None
    ga, gb = OPS["sub"].grad(g, None, None if ctx.rsub else g, b)
    gb = _alpha(gb, ctx.alpha)
    return gb if ctx.rsub else (ga, gb)


def binary_rule(name, key, *targets, save_out=False, overloads=None):
    """A binary table op whose backward is its row's rule over the saved operands (a
    Python scalar operand is kept as it is: it gets no gradient). `targets`: the op
    functions (default: the module function and both operators); `save_out`: the rule
    reads the result. `overloads`: torch's node names for (number second, number first),
    whose nodes have one edge, to the tensor."""

    @formula(name, *(targets or _bin(key)), inputs=_two if overloads is None else _tensors_only)
    def fwd(ctx, out, a, b):
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
        ctx.save_for_backward(a if ta else None, b if tb else None, out if save_out else None)
        ctx.scalars = (None if ta else a, None if tb else b)
        if overloads is not None and not (ta and tb):
            ctx.edge = 0 if ta else 1  # the one edge: to the tensor
            return overloads[ctx.edge]
        ctx.edge = None
        return None

    @fwd.backward
    def _(ctx, g):
        a, b, out = ctx.saved_tensors
        sa, sb = ctx.scalars
        grads = OPS[key].grad(g, out, sa if a is None else a, sb if b is None else b)
        return grads if ctx.edge is None else grads[ctx.edge]

    return fwd


binary_rule("MulBackward0", "mul", *_bin("mul", commutative=True))


_NUMBERS = (bool, int, float, complex)


def _scalar_over_tensor(args, kwargs, reflected):
    """torch computes `scalar / x` as x.reciprocal() * scalar and records those two nodes
    (MulBackward0 over ReciprocalBackward0): so does this, forward included."""
    if reflected:
        x, s = args
    elif len(args) == 2 and not kwargs and not isinstance(args[0], Tensor):
        s, x = args
    else:
        return None
    if type(s) not in _NUMBERS or not isinstance(x, Tensor):
        return None
    return ew.mul(ew.reciprocal(x), s)


@formula("DivBackward0", *_bin("div"), inputs=_two, decompose=_scalar_over_tensor)
def _div(ctx, out, a, b, *, rounding_mode=None):
    ctx.rounding = rounding_mode
    ctx.save_for_backward(b, out if isinstance(b, Tensor) and rounding_mode is None else None)
    ctx.a = a if isinstance(a, Tensor) else None  # only tested for being a tensor


@_div.backward
def _(ctx, g):
    b, out = ctx.saved_tensors
    if ctx.rounding is not None:  # floor/trunc division: piecewise constant
        return g * 0, (g * 0 if _need(ctx, 1) else None)
    # the rule reads a only for being a tensor (its gradient is g / b): g stands in
    return OPS["div"].grad(g, out, g if ctx.a is not None else None, b)


@formula("PowBackward0", *_bin("pow"), inputs=_tensors_only)
def _pow(ctx, out, a, b):
    # needs: (base, exponent) whichever are tensors; a scalar operand has no edge
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    need = ctx.needs_input_grad
    ctx.needs = need if ta and tb else (need[0], False) if ta else (False, need[0])
    ctx.edges = 2 if ta and tb else 0 if ta else 1  # both, or which one
    ctx.save_for_backward(a, b, out if ctx.needs[1] else None)
    if not ta:
        return "PowBackward2"  # scalar ** tensor
    return "PowBackward1" if tb else None  # tensor ** tensor


@_pow.backward
def _(ctx, g):
    a, b, out = ctx.saved_tensors
    ga, gb = OPS["pow"].grad(g, out, a, b)
    return (ga, gb) if ctx.edges == 2 else (ga, gb)[ctx.edges]


binary_rule("RemainderBackward0", "remainder")
binary_rule("FloorDivideBackward0", "floor_divide")
for _key in ("maximum", "minimum"):
    binary_rule(_key.capitalize() + "Backward0", _key, (ew, _key), (_B, _key))


# -- unary --------------------------------------------------------------------------------
def _unary(name, key, save_out=False, *aliases):
    """A unary table op: its row's rule over the saved input (and output)."""
    op = OPS[key]
    param = op.param

    @formula(name, (ew, key), *((ew, a) for a in aliases))
    def fwd(ctx, out, x, *args, **kwargs):
        ctx.save_for_backward(x, out if save_out else None)
        # the row's one parameter (gelu's approximate); round's decimals is not one
        ctx.params = (
            {param: args[0] if args else kwargs.get(param, op.param_default)} if param else {}
        )

    @fwd.backward
    def _(ctx, g):
        x, out = ctx.saved_tensors
        return OPS[key].grad(g, out, x, **ctx.params)[0]  # read now: the row is the one place

    return fwd


_unary("NegBackward0", "neg", False, "negative")
_unary("AbsBackward0", "abs")
_unary("ExpBackward0", "exp", True)
_unary("LogBackward0", "log")
_unary("Log1PBackward0", "log1p")
_unary("SqrtBackward0", "sqrt", True)
_unary("RsqrtBackward0", "rsqrt", True)
_unary("SinBackward0", "sin")
_unary("CosBackward0", "cos")
_unary("TanhBackward0", "tanh", True)
_unary("SigmoidBackward0", "sigmoid", True)
_relu = _unary("ReluBackward0", "relu", True)
_unary("SiluBackward0", "silu")
_unary("GeluBackward0", "gelu")


# apply()'s value for where's scalar 0.0 (np.asarray(0.0).astype(dtype)[()]), by dtype
_ZERO = {d: d.np.type(0.0) for d in (_dt.float32, _dt.float64)}
_LESS_EQUAL, _WHERE = OPS["le"].np_fn, OPS["where"].np_fn


@_relu.backward
def _(ctx, g):
    """The row's rule, torch's threshold_backward: `0 where out <= 0 else g` (g where out
    is NaN). On cpu, when nothing records (no
    create_graph) or watches (no mode: the profiler sees the ops) the two ops, it makes
    the two numpy calls the dispatcher would make for them, without the dispatch: once per
    ReLU and step, on gradients often too small for numpy's work to hide it."""
    x, out = ctx.saved_tensors
    d = out._data
    if (
        g.device is CPU
        and out.device is CPU
        and type(g) is Tensor
        and g.dtype is out.dtype
        and g.dtype in _ZERO
        and g._data.shape == d.shape
        and not _STATE.enabled
        and not ACTIVE[0]
    ):
        keep = _LESS_EQUAL(d, 0)
        np.logical_not(keep, out=keep)  # (where's select from g and a +0.0 stays its fast one)
        return Tensor._make(_WHERE(keep, g._data, _ZERO[g.dtype]), CPU, g.dtype)
    if _dispatch.host_relu_grad_fits(g, out):  # emulated cuda: the same, into allocator memory
        return _dispatch.host_relu_grad(g, out)
    if _STATE.enabled:  # create_graph: torch's threshold_backward, one node over (g, out)
        return _threshold_backward(g, out, x)
    return OPS["relu"].grad(g, out, x)[0]


def _threshold_backward(g, out, x):
    """relu's gradient as torch records it under create_graph: ThresholdBackwardBackward0
    over g and the output (which has relu's node as history here), so the gradient has
    history even when g has none; its gradient for g is the same rule, for out zeros."""
    from .composite import with_formula  # (composite imports the formulas' package)

    rule = OPS["relu"].grad
    return with_formula(
        "ThresholdBackwardBackward0",
        lambda g, out: rule(g, out, x)[0],
        lambda gg, need, g, out: (
            rule(gg, out, x)[0] if need[0] else None,
            out.new_zeros(out.shape) if need[1] else None,
        ),
        g,
        out,
    )


for _n, _k in (
    ("FloorBackward0", "floor"),
    ("CeilBackward0", "ceil"),
    ("RoundBackward0", "round"),
    ("SignBackward0", "sign"),
):
    _unary(_n, _k)


def unary_rule(name, target, deriv, save_out=False):
    """The formula of a unary op (`target`: (module, name)) whose gradient is
    deriv(g, x, out); the op's other arguments, if any, play no part in it."""

    @formula(name, target)
    def fwd(ctx, out, x, *args):
        ctx.save_for_backward(x, out if save_out else None)

    @fwd.backward
    def _(ctx, g):
        x, out = ctx.saved_tensors
        return deriv(g, x, out)

    return fwd


def _eager_only(name, key, deriv, save_out=False):
    """An elementwise op that is not a table row (a composite of rows, or not fusable)."""
    return unary_rule(name, (ew, key), deriv, save_out)


_cf = conj_factor  # complex: g * conj(f'(z)), torch's convention; real: the factor itself
_eager_only("ReciprocalBackward0", "reciprocal", lambda g, x, out: -g * _cf(out) * _cf(out), True)
_eager_only("PowBackward0", "square", lambda g, x, out: g * _cf(x) * 2)
_eager_only("TruncBackward0", "trunc", lambda g, x, out: g * 0)


# -- where, clamp ---------------------------------------------------------------------------
def _where_inputs(args, kwargs):
    inp = args[1] if len(args) > 1 else kwargs.get("input")
    other = args[2] if len(args) > 2 else kwargs.get("other")
    return [_t(inp), _t(other)]  # torch's node has no edge for the condition


@formula("WhereBackward0", (ew, "where"), inputs=_where_inputs)
def _where(ctx, out, condition, input=None, other=None):  # noqa: A002
    ctx.save_for_backward(condition)


@_where.backward
def _(ctx, g):
    (cond,) = ctx.saved_tensors
    # both value operands get an edge here; g stands in for them (the rule reads only
    # whether each is a tensor), and the condition's None is dropped
    return OPS["where"].grad(g, None, cond, g, g)[1:]


def _clamp_inputs(args, kwargs):
    lo = args[1] if len(args) > 1 else kwargs.get("min")
    hi = args[2] if len(args) > 2 else kwargs.get("max")
    if not isinstance(lo, Tensor) and not isinstance(hi, Tensor):
        return [_t(args[0])]  # torch's ClampBackward1: one edge
    return [_t(args[0]), _t(lo), _t(hi)]


@formula("ClampBackward1", (ew, "clamp"), (ew, "clip"), inputs=_clamp_inputs)
def _clamp(ctx, out, x, min=None, max=None):  # noqa: A002
    ctx.save_for_backward(x, min, max)
    return "ClampBackward0" if len(ctx.needs_input_grad) == 3 else None  # tensor bounds


@_clamp.backward
def _(ctx, g):
    x, lo, hi = ctx.saved_tensors
    gx, glo, ghi = OPS["clamp"].grad(g, None, x, lo, hi)
    return gx if len(ctx.needs_input_grad) == 1 else (gx, glo, ghi)


def _lerp_inputs(args, kwargs):
    w = args[2] if len(args) > 2 else kwargs.get("weight")
    ins = [_t(args[0]), _t(args[1]) if len(args) > 1 else _t(kwargs.get("end"))]
    return ins + [w] if isinstance(w, Tensor) else ins


@formula("LerpBackward0", (ew, "lerp"), inputs=_lerp_inputs)
def _lerp(ctx, out, a, b, weight):
    ctx.save_for_backward(
        a if isinstance(weight, Tensor) else None, b if isinstance(weight, Tensor) else None, weight
    )
    return "LerpBackward1" if isinstance(weight, Tensor) else None  # tensor weight


@_lerp.backward
def _(ctx, g):
    a, b, w = ctx.saved_tensors
    ga = g * (1 - w) if _need(ctx, 0) else None
    gb = g * w if _need(ctx, 1) else None
    if len(ctx.needs_input_grad) == 2:
        return ga, gb
    return ga, gb, (g * (b - a) if _need(ctx, 2) else None)


# -- in-place forms: recorded as their out-of-place op on a copy ------------------------------
for _name in ew.INPLACE_GRAD:
    inplace(_name + "_", lambda n=_name: getattr(ew, n))
