"""Backward formulas of the primitives in ops/special.py and ops/matrix.py (torch's
derivatives.yaml, same node names). The composites of those modules need none: they are
written with differentiable ops. Registering here also wires the in-place forms bound by
_tensor_methods.py (the names in ops/_inplace.py).
"""

from __future__ import annotations

from ..fusion.optable import OPS
from ..ops import _inplace, index_write, matrix, pointwise
from ..ops import special as sp
from .formulas_elementwise import binary_rule, unary_rule
from .record import formula, inplace, positional

__all__: list = []


def _unary(name, key, deriv, save_out=False):
    """A unary op of ops/special.py whose gradient is deriv(g, x, out)."""
    return unary_rule(name, (sp, key), deriv, save_out)


# The op-table rows of issue 23: their derivative is the row's rule (fusion/optable.py,
# fusion/derivatives_special.py), read at backward time, so eager and fused agree.
def _rule(key):
    return lambda g, x, out: OPS[key].grad(g, out, x)[0]


for _name, _key, _save_out in (
    ("AsinBackward0", "asin", False),
    ("AcosBackward0", "acos", False),
    ("AtanBackward0", "atan", False),
    ("SinhBackward0", "sinh", False),
    ("CoshBackward0", "cosh", False),
    ("TanBackward0", "tan", True),
    ("AsinhBackward0", "asinh", False),
    ("AcoshBackward0", "acosh", False),
    ("AtanhBackward0", "atanh", False),
    ("Log2Backward0", "log2", False),
    ("Log10Backward0", "log10", False),
    ("Expm1Backward0", "expm1", True),
    ("Exp2Backward0", "exp2", True),
    ("ErfBackward0", "erf", False),
    ("ErfcBackward0", "erfc", False),
    ("ErfinvBackward0", "erfinv", True),
    ("LgammaBackward0", "lgamma", False),
    ("DigammaBackward0", "digamma", False),
    ("SincBackward0", "sinc", False),
    ("SpecialErfcxBackward0", "erfcx", True),
    ("SpecialNdtrBackward0", "ndtr", False),
    ("SpecialNdtriBackward0", "ndtri", True),
    ("SpecialLogNdtrBackward0", "log_ndtr", True),
    ("SpecialEntrBackward0", "entr", False),
):
    _unary(_name, _key, _rule(_key if _key in OPS else "special_" + _key), _save_out)


# The last rows of issue 23: the row's rule, with the row's parameter (mvlgamma's p).
def _row(name, key, fn=None, param=None):
    @formula(name, (sp, fn or key))
    def fwd(ctx, out, x, *args, **kwargs):
        ctx.save_for_backward(x, out)
        ctx.params = {param: args[0] if args else kwargs[param]} if param else {}

    @fwd.backward
    def _(ctx, g):
        x, out = ctx.saved_tensors
        return OPS[key].grad(g, out, x, **ctx.params)[0]


for _name, _key in (
    ("TruncBackward0", "trunc"),
    ("FracBackward0", "frac"),
    ("Deg2RadBackward0", "deg2rad"),
    ("Rad2DegBackward0", "rad2deg"),
    ("SgnBackward0", "sgn"),
    ("NanToNumBackward0", "nan_to_num"),
):
    _row(_name, _key)
_row("AngleBackward0", "angle", "_angle")
_row("MvlgammaBackward0", "mvlgamma", param="p")


@formula("LogitBackward0", (sp, "logit"), inputs=lambda args, kwargs: [args[0]])
def _logit(ctx, out, x, eps=None):
    ctx.eps = eps
    ctx.save_for_backward(x)


@_logit.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return OPS["logit"].grad(g, None, x, eps=ctx.eps)[0]


# --- binary special functions (issue 23): rows of the op table, their rules in the rows ----
binary_rule("Atan2Backward0", "atan2")
binary_rule("HypotBackward0", "hypot", save_out=True)
binary_rule("LogaddexpBackward0", "logaddexp")
binary_rule("Logaddexp2Backward0", "logaddexp2")
binary_rule("XlogyBackward0", "xlogy", overloads=("XlogyBackward2", "XlogyBackward1"))
binary_rule(
    "SpecialXlog1PyBackward0",
    "xlog1py",
    overloads=("SpecialXlog1PyBackward2", "SpecialXlog1PyBackward1"),
)
binary_rule(
    "CopysignBackward0",
    "copysign",
    save_out=True,
    overloads=("CopysignBackward1", "CopysignBackward1"),
)
binary_rule("NextafterBackward0", "nextafter")
binary_rule("FmodBackward1", "fmod", overloads=("FmodBackward0", "FmodBackward0"))
binary_rule("LdexpBackward0", "ldexp", save_out=True)
binary_rule("FmaxBackward0", "fmax")
binary_rule("FminBackward0", "fmin")
binary_rule(
    "PowBackward1", "float_power", save_out=True, overloads=("PowBackward0", "PowBackward2")
)


# -- linear algebra -------------------------------------------------------------------------
@formula("LinalgDetBackward0", (matrix, "det"))
def _det(ctx, out, a):
    ctx.save_for_backward(a, out)


@_det.backward
def _(ctx, g):
    a, d = ctx.saved_tensors  # d(det A) = det(A) * inv(A)^T (A invertible)
    return (g * d).unsqueeze(-1).unsqueeze(-1) * matrix.inverse(a).mT


@formula("LinalgInvExBackward0", (matrix, "inverse"))
def _inverse(ctx, out, a):
    ctx.save_for_backward(out)


@_inverse.backward
def _(ctx, g):
    (inv,) = ctx.saved_tensors
    return -(inv.mH @ g @ inv.mH)


@formula("LinalgSolveExBackward0", (matrix, "solve"), inputs=positional)
def _solve(ctx, out, a, b, *, left=True):
    ctx.vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    ctx.save_for_backward(a, out)


@_solve.backward
def _(ctx, g):
    a, x = ctx.saved_tensors
    gb = matrix.solve(a.mH, g)
    if ctx.vector:
        ga = -(gb.unsqueeze(-1) @ x.unsqueeze(-1).mH)
    else:
        ga = -(gb @ x.mH)
    return (ga if ctx.needs_input_grad[0] else None), gb


@formula("LinalgSlogdetBackward0", (matrix, "slogdet"), output=lambda r: r[1])
def _slogdet(ctx, out, a):
    ctx.save_for_backward(a)


@_slogdet.backward
def _(ctx, g):
    (a,) = ctx.saved_tensors
    return g.unsqueeze(-1).unsqueeze(-1) * matrix.inverse(a).mH


def _register_inplace() -> None:
    """The op modules' in-place forms with a gradient: recorded as the out-of-place op on a
    copy of self (fill_diagonal_ through its function, the others through Tensor.<name>)."""
    for name in _inplace.INPLACE_GRAD:
        inplace(
            name + "_",
            lambda n=name: (
                _inplace.late_method(n) if n != "fill_diagonal" else index_write.fill_diagonal
            ),
        )


_register_inplace()


# -- Bessel functions, polygamma, nextafter, frexp (issue 24: no silent gradient loss) -----
def _bessel():
    """i0, i0e, i1, i1e: their rows' rules (fusion/derivatives_special.py)."""
    from ..ops import bessel

    for name, ns, key, row in (
        ("I0Backward0", sp, "i0", "i0"),
        ("SpecialI0EBackward0", bessel, "i0e", "special_i0e"),
        ("SpecialI1Backward0", bessel, "i1", "special_i1"),
        ("SpecialI1EBackward0", bessel, "i1e", "special_i1e"),
    ):

        @formula(name, (ns, key))
        def fwd(ctx, out, x):
            ctx.save_for_backward(x, out)

        fwd.backward(lambda ctx, g, row=row: OPS[row].grad(g, *reversed(ctx.saved_tensors))[0])


_bessel()


def _second(args, kwargs):
    x = args[1] if len(args) > 1 else kwargs.get("input")
    return [None, x]


@formula("PolygammaBackward0", (sp, "polygamma"), inputs=_second)
def _polygamma(ctx, out, n, x):
    ctx.n = n
    ctx.save_for_backward(x)


@_polygamma.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors  # the row's rule: psi^(n+1)(x), for every order
    return None, OPS["special_polygamma"].grad(g, None, x, n=ctx.n)[0]


@formula("FrexpBackward0", (pointwise, "frexp"), output=lambda r: r[0])
def _frexp(ctx, out, x):
    ctx.save_for_backward(x)


@_frexp.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors  # mantissa = x / 2**exponent, the exponent held constant
    return g / (2.0 ** pointwise.frexp(x)[1].to(g.dtype))
