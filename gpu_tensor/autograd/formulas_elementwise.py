"""Backward formulas of the elementwise ops (torch's derivatives.yaml, same node names).

Gradients are returned in the broadcast shape of the output; the engine sums them back to
each input's shape and casts them to its dtype. Formulas run under no_grad.
"""

from __future__ import annotations

import math

from .._tensor import Tensor
from ..ops import _dispatch
from ..ops import elementwise as ew
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


@_add.backward
def _(ctx, g):
    return g, (g if ctx.alpha == 1 else g * ctx.alpha) if _need(ctx, 1) else None


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
    gb = -g if ctx.alpha == 1 else g * -ctx.alpha
    if ctx.rsub:
        return gb
    return g, gb if _need(ctx, 1) else None


@formula("MulBackward0", *_bin("mul", commutative=True), inputs=_two)
def _mul(ctx, out, a, b):
    need_a, need_b = ctx.needs_input_grad
    ctx.save_for_backward(a if need_b else None, b if need_a else None)


@_mul.backward
def _(ctx, g):
    a, b = ctx.saved_tensors
    return (g * b if _need(ctx, 0) else None), (g * a if _need(ctx, 1) else None)


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
    ctx.save_for_backward(a if _need(ctx, 1) else None, b)


@_div.backward
def _(ctx, g):
    a, b = ctx.saved_tensors
    if ctx.rounding is not None:  # floor/trunc division: piecewise constant
        return g * 0, (g * 0 if _need(ctx, 1) else None)
    ga = g / b if _need(ctx, 0) else None
    gb = -g * a / (b * b) if _need(ctx, 1) else None
    return ga, gb


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
    ga = gb = None
    if ctx.needs[0]:
        if not isinstance(b, Tensor) and b == 0:
            ga = g * 0
        else:
            ga = g * b * ew.pow(a, b - 1)
    if ctx.needs[1]:
        # d(a**b)/db = a**b * log(a); torch masks a == 0 (and b >= 0) to 0 instead of nan
        if isinstance(a, Tensor):
            masked = (a == 0) & (b >= 0)
            # log(1) where the mask zeroes the result anyway: no 0 * -inf (nan, a warning)
            gb = ew.where(masked, 0.0, g * out * ew.log(ew.where(masked, 1.0, a)))
        elif a == 0:  # 0 ** b: torch's mask again (b >= 0 gives 0)
            keep = b >= 0
            gb = ew.where(keep, 0.0, g * ew.where(keep, 1.0, out) * float("-inf"))
        else:
            gb = g * out * (math.log(a) if a > 0 else float("nan"))
    return (ga, gb) if ctx.edges == 2 else (ga, gb)[ctx.edges]


@formula("RemainderBackward0", *_bin("remainder"), inputs=_two)
def _remainder(ctx, out, a, b):
    ctx.save_for_backward(a if _need(ctx, 1) else None, b if _need(ctx, 1) else None)


@_remainder.backward
def _(ctx, g):
    a, b = ctx.saved_tensors
    return g, (-g * ew.floor_divide(a, b) if _need(ctx, 1) else None)


@formula("FloorDivideBackward0", *_bin("floor_divide"), inputs=_two)
def _floordiv(ctx, out, a, b):
    pass


@_floordiv.backward
def _(ctx, g):
    return g * 0, g * 0


def _pair(key):
    """maximum/minimum: the gradient goes to the larger (smaller) input, halved on ties."""

    @formula(key.capitalize() + "Backward0", (ew, key), (_B, key), inputs=_two)
    def fwd(ctx, out, a, b):
        ctx.save_for_backward(a, b)

    @fwd.backward
    def _(ctx, g):
        a, b = ctx.saved_tensors
        win = (a > b) if key == "maximum" else (a < b)
        tie = a == b
        half = g * 0.5
        ga = ew.where(win, g, ew.where(tie, half, 0.0))
        gb = ew.where(win, 0.0, ew.where(tie, half, g))
        return ga, gb


_pair("maximum")
_pair("minimum")


# -- unary --------------------------------------------------------------------------------
def _unary(name, key, deriv, save_out=False, *aliases):
    """A unary op whose gradient is g * deriv(x, out)."""

    @formula(name, (ew, key), *((ew, a) for a in aliases))
    def fwd(ctx, out, x, *args, **kwargs):
        ctx.save_for_backward(x, out if save_out else None)
        ctx.args, ctx.kwargs = args, kwargs

    @fwd.backward
    def _(ctx, g):
        x, out = ctx.saved_tensors
        return deriv(g, x, out, *ctx.args, **ctx.kwargs)

    return fwd


_unary("NegBackward0", "neg", lambda g, x, out: -g, False, "negative")
_unary("AbsBackward0", "abs", lambda g, x, out: g * ew.sign(x))
_unary("ExpBackward0", "exp", lambda g, x, out: g * out, True)
_unary("LogBackward0", "log", lambda g, x, out: g / x)
_unary("Log1PBackward0", "log1p", lambda g, x, out: g / (x + 1))
_unary("SqrtBackward0", "sqrt", lambda g, x, out: g / (out * 2), True)
_unary("RsqrtBackward0", "rsqrt", lambda g, x, out: g * (out * out * out) * -0.5, True)
_unary("SinBackward0", "sin", lambda g, x, out: g * ew.cos(x))
_unary("CosBackward0", "cos", lambda g, x, out: -g * ew.sin(x))
_unary("TanhBackward0", "tanh", lambda g, x, out: g * (1 - out * out), True)
_unary("SigmoidBackward0", "sigmoid", lambda g, x, out: g * out * (1 - out), True)
_unary("ReluBackward0", "relu", lambda g, x, out: g * (out > 0), True)
_unary("ReciprocalBackward0", "reciprocal", lambda g, x, out: -g * out * out, True)
_unary("PowBackward0", "square", lambda g, x, out: g * x * 2)


def _silu(g, x, out):
    s = ew.sigmoid(x)
    return g * s * (1 + x * (1 - s))


_unary("SiluBackward0", "silu", _silu)

_SQRT1_2 = 1 / math.sqrt(2)  # erf argument scale of the exact gelu
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)  # the standard normal density's constant
_K = math.sqrt(2 / math.pi)  # tanh-gelu's constant


def _gelu(g, x, out, approximate="none"):
    if approximate == "tanh":
        inner = (x + 0.044715 * x * x * x) * _K
        t = ew.tanh(inner)
        d_inner = (1 + 3 * 0.044715 * x * x) * _K
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    # d/dx x*Phi(x) = Phi(x) + x*phi(x) (numpy has no erf: Phi comes from gelu itself)
    pdf = ew.exp(x * x * -0.5) * _INV_SQRT_2PI
    return g * (_phi(x) + x * pdf)


def _phi(x):
    """The standard normal CDF from the forward op, without an erf of our own:
    gelu(x) + gelu(-x) = x*Phi(x) - x*(1 - Phi(x)) = x*(2*Phi(x) - 1)."""
    zero = x == 0
    safe = ew.where(zero, 1.0, x)
    phi = ((ew.gelu(x) + ew.gelu(-x)) / safe + 1) * 0.5
    return ew.where(zero, 0.5, phi)


@formula("GeluBackward0", (ew, "gelu"))
def _gelu_fwd(ctx, out, x, approximate="none"):
    ctx.save_for_backward(x)
    ctx.approximate = approximate


@_gelu_fwd.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return _gelu(g, x, None, ctx.approximate)


def _zero_grad(name, key):
    @formula(name, (ew, key))
    def fwd(ctx, out, *args, **kwargs):
        pass

    @fwd.backward
    def _(ctx, g):
        return g * 0

    return fwd


for _n, _k in (("FloorBackward0", "floor"), ("CeilBackward0", "ceil"),
               ("RoundBackward0", "round"), ("TruncBackward0", "trunc"),
               ("SignBackward0", "sign")):
    _zero_grad(_n, _k)


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
    return ew.where(cond, g, 0.0), ew.where(cond, 0.0, g)


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
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        keep = (x <= hi) if keep is None else keep & (x <= hi)
    gx = ew.where(keep, g, 0.0)
    if len(ctx.needs_input_grad) == 1:
        return gx
    glo = ew.where(x < lo, g, 0.0) if isinstance(lo, Tensor) else None
    ghi = ew.where(x > hi, g, 0.0) if isinstance(hi, Tensor) else None
    if glo is not None and hi is not None:
        glo = ew.where(x < lo, glo, 0.0)
    return gx, glo, ghi


def _lerp_inputs(args, kwargs):
    w = args[2] if len(args) > 2 else kwargs.get("weight")
    ins = [_t(args[0]), _t(args[1]) if len(args) > 1 else _t(kwargs.get("end"))]
    return ins + [w] if isinstance(w, Tensor) else ins


@formula("LerpBackward0", (ew, "lerp"), inputs=_lerp_inputs)
def _lerp(ctx, out, a, b, weight):
    ctx.save_for_backward(a if isinstance(weight, Tensor) else None,
                          b if isinstance(weight, Tensor) else None, weight)
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
for _name in ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "neg", "abs",
              "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
              "floor", "ceil", "round", "trunc", "sign", "clamp", "clip", "square",
              "reciprocal", "maximum", "minimum", "lerp", "fmod"):
    inplace(_name + "_", lambda n=_name: getattr(ew, n))
