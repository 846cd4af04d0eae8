"""Backward formulas of reductions (sum, mean, prod, amax/amin/max/min, var/std, norm,
logsumexp, cumsum) and matrix products (matmul, mm, bmm, mv, dot, outer)."""

from __future__ import annotations

from .._dims import wrap_dim
from .._tensor import Tensor
from ..ops import elementwise as ew
from ..ops import linalg, reduction
from .engine import sum_to
from .record import first, formula

__all__: list = []


def _dims(ndim, dim):
    """Normalised reduced dims (all dims for None or ())."""
    if dim is None:
        return tuple(range(ndim))
    ds = (dim,) if isinstance(dim, int) else tuple(dim)
    if not ds:
        return tuple(range(ndim))
    return tuple(sorted(wrap_dim(d, ndim) for d in ds)) if ndim else ()


def _unreduce(g, shape, dims, keepdim):
    """g (the reduced result's gradient) broadcast back over the input `shape`."""
    if not keepdim:
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(shape)


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _dim_kw(args, kwargs, pos=1, name="dim", default=None):
    return args[pos] if len(args) > pos else kwargs.get(name, default)


@formula("SumBackward1", (reduction, "sum"), inputs=first)
def _sum(ctx, out, x, dim=None, keepdim=False, *, dtype=None):
    ctx.shape = x.shape
    ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim
    return "SumBackward0" if dim is None else None  # torch's full-reduction overload


@_sum.backward
def _(ctx, g):
    return _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim)


@formula("MeanBackward1", (reduction, "mean"), inputs=first)
def _mean(ctx, out, x, dim=None, keepdim=False, *, dtype=None):
    ctx.shape = x.shape
    ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim
    return "MeanBackward0" if dim is None else None


@_mean.backward
def _(ctx, g):
    return _unreduce(g, ctx.shape, ctx.dims, ctx.keepdim) / max(_count(ctx.shape, ctx.dims), 1)


@formula("ProdBackward1", (reduction, "prod"), inputs=first)
def _prod(ctx, out, x, dim=None, keepdim=False, *, dtype=None):
    ctx.save_for_backward(x)
    ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim
    return "ProdBackward0" if dim is None else None


@_prod.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    return _unreduce(g, x.shape, ctx.dims, ctx.keepdim) * _prod_of_others(x, ctx.dims)


def _prod_of_others(x, dims):
    """Each element's d(prod)/dx: the product of the other elements of its group, from
    exclusive cumulative products from both ends. Exact with zeros, where out / x is
    nan (torch gives the product of the others there too)."""
    from ..ops import join

    if x.ndim == 0:
        return x * 0 + 1
    one_dim = len(dims) == 1
    y = x.movedim(dims[0], -1) if one_dim else x.reshape(-1)  # prod reduces one dim or all
    n = y.shape[-1]
    if n == 0:
        return x
    ones = y.narrow(-1, 0, 1) * 0 + 1
    left = join.cat([ones, y.cumprod(-1).narrow(-1, 0, n - 1)], -1)
    right = join.cat([ones, y.flip(-1).cumprod(-1).narrow(-1, 0, n - 1)], -1).flip(-1)
    others = left * right
    return others.movedim(-1, dims[0]) if one_dim else others.reshape(x.shape)


def _even(ctx, g):
    """amax/amin and full max/min: the gradient is shared evenly by the tied extremes."""
    x, out = ctx.saved_tensors
    o = _unreduce(out, x.shape, ctx.dims, ctx.keepdim)
    mask = (x == o).to(g.dtype)
    count = mask.sum(dim=list(ctx.dims), keepdim=True)
    return _unreduce(g, x.shape, ctx.dims, ctx.keepdim) * mask / count


def _extreme(name, key, full_default):
    @formula(name, (reduction, key), inputs=first)
    def fwd(ctx, out, x, dim=full_default, keepdim=False):
        ctx.save_for_backward(x, out)
        ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim

    fwd.backward(_even)


_extreme("AmaxBackward0", "amax", ())
_extreme("AminBackward0", "amin", ())


def _maxmin_inputs(args, kwargs):
    dim = _dim_kw(args, kwargs)
    x = args[0] if isinstance(args[0], Tensor) else None
    return [x, dim] if isinstance(dim, Tensor) else [x]  # max(a, b) has two edges


def _values(out):
    return out if isinstance(out, Tensor) else out.values


def _maxmin(name, key):
    @formula(name, (reduction, key), inputs=_maxmin_inputs, output=_values)
    def fwd(ctx, out, x, dim=None, keepdim=False):
        ctx.mode = "pair" if isinstance(dim, Tensor) else "full" if dim is None else "dim"
        if ctx.mode == "pair":  # max(a, b) is maximum(a, b)
            ctx.save_for_backward(x, dim)
        elif ctx.mode == "full":
            ctx.save_for_backward(x, out)
            ctx.dims, ctx.keepdim = _dims(x.ndim, None), False
        else:
            d = wrap_dim(dim, max(x.ndim, 1))
            idx = getattr(reduction, "argmax" if key == "max" else "argmin")(x, d, True)
            ctx.save_for_backward(idx)
            ctx.shape, ctx.dim, ctx.keepdim = x.shape, d, keepdim
        # torch: max(dim) MaxBackward0, max() MaxBackward1, max(a, b) MaximumBackward0
        if ctx.mode == "full":
            return name[:-1] + "1"
        return (
            ("MaximumBackward0" if key == "max" else "MinimumBackward0")
            if ctx.mode == "pair"
            else None
        )

    @fwd.backward
    def _(ctx, g):
        if ctx.mode == "full":
            return _even(ctx, g)
        if ctx.mode == "pair":
            a, b = ctx.saved_tensors
            win = (a > b) if key == "max" else (a < b)
            tie = a == b
            return (
                ew.where(win, g, ew.where(tie, g * 0.5, 0.0)),
                ew.where(win, 0.0, ew.where(tie, g * 0.5, g)),
            )
        (idx,) = ctx.saved_tensors
        if not len(ctx.shape):
            return g.reshape(())
        gk = g if ctx.keepdim else g.unsqueeze(ctx.dim)
        z = _zeros(g, ctx.shape)
        z.scatter_(ctx.dim, idx, gk)
        return z


_maxmin("MaxBackward0", "max")
_maxmin("MinBackward0", "min")


def _zeros(like, shape):
    from ..creation import zeros

    return zeros(tuple(shape), dtype=like.dtype, device=like.device)


def _correction(unbiased, correction):
    if correction is None:
        return 1 if unbiased is None or unbiased else 0
    return correction


@formula("VarBackward0", (reduction, "var"), inputs=first)
def _var(ctx, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    ctx.save_for_backward(x)
    ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim
    ctx.c = _correction(unbiased, correction)


@_var.backward
def _(ctx, g):
    (x,) = ctx.saved_tensors
    n = _count(x.shape, ctx.dims)
    centred = x - x.mean(dim=list(ctx.dims), keepdim=True)
    return _unreduce(g, x.shape, ctx.dims, ctx.keepdim) * centred * (2.0 / (n - ctx.c))


@formula("StdBackward0", (reduction, "std"), inputs=first)
def _std(ctx, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    ctx.save_for_backward(x, out)
    ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim
    ctx.c = _correction(unbiased, correction)


@_std.backward
def _(ctx, g):
    x, out = ctx.saved_tensors
    n = _count(x.shape, ctx.dims)
    centred = x - x.mean(dim=list(ctx.dims), keepdim=True)
    o = _unreduce(out, x.shape, ctx.dims, ctx.keepdim)
    zero = o == 0  # a constant group: torch's gradient is 0 there, not 0/0
    gx = (
        _unreduce(g, x.shape, ctx.dims, ctx.keepdim)
        * centred
        / (ew.where(zero, 1.0, o) * (n - ctx.c))
    )
    return ew.where(zero, 0.0, gx)


@formula("LinalgVectorNormBackward0", (reduction, "norm"), inputs=first)
def _norm(ctx, out, x, p="fro", dim=None, keepdim=False, dtype=None):
    ctx.save_for_backward(x, out)
    ctx.p, ctx.dims, ctx.keepdim = p, _dims(x.ndim, dim), keepdim


@_norm.backward
def _(ctx, g):
    x, out = ctx.saved_tensors
    p = ctx.p
    gu = _unreduce(g, x.shape, ctx.dims, ctx.keepdim)
    o = _unreduce(out, x.shape, ctx.dims, ctx.keepdim)
    if p in ("fro", 2, 2.0, None):
        return gu * x / ew.where(o == 0, 1.0, o)
    if p == 1:
        return gu * ew.sign(x)
    if p in (float("inf"), float("-inf")):
        a = ew.abs(x)
        mask = (a == o).to(g.dtype)
        return gu * ew.sign(x) * mask / mask.sum(dim=list(ctx.dims), keepdim=True)
    if p == 0:
        return None  # torch: no gradient at all (the leaf's .grad stays None)
    a = ew.abs(x)
    return gu * ew.sign(x) * ew.pow(a, p - 1) / ew.pow(ew.where(o == 0, 1.0, o), p - 1)


@formula("LogsumexpBackward0", (reduction, "logsumexp"), inputs=first)
def _lse(ctx, out, x, dim, keepdim=False):
    ctx.save_for_backward(x, out)
    ctx.dims, ctx.keepdim = _dims(x.ndim, dim), keepdim


@_lse.backward
def _(ctx, g):
    x, out = ctx.saved_tensors
    o = _unreduce(out, x.shape, ctx.dims, ctx.keepdim)
    return _unreduce(g, x.shape, ctx.dims, ctx.keepdim) * ew.exp(x - o)


@formula("CumsumBackward0", (reduction, "cumsum"), inputs=first)
def _cumsum(ctx, out, x, dim, *, dtype=None):
    ctx.dim = wrap_dim(dim, max(x.ndim, 1)) if x.ndim else None


@_cumsum.backward
def _(ctx, g):
    if ctx.dim is None:
        return g
    return g.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim)


@formula("CumprodBackward0", (reduction, "cumprod"), inputs=first)
def _cumprod(ctx, out, x, dim, *, dtype=None):
    pass


@_cumprod.backward
def _(ctx, g):
    raise RuntimeError(
        "the derivative for 'cumprod' is not implemented in gpu_tensor "
        "autograd; write it as exp(cumsum(log(x))) for positive inputs"
    )


# -- matrix products ------------------------------------------------------------------------
def _matmul_grads(ctx, g, a, b):
    """Gradients of a @ b with numpy's 1-D promotion rules and batch broadcasting."""
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    if a.ndim == 1 and b.ndim == 1:
        g2 = g.reshape(1, 1)
    elif a.ndim == 1:
        g2 = g.unsqueeze(-2)
    elif b.ndim == 1:
        g2 = g.unsqueeze(-1)
    else:
        g2 = g
    ga = gb = None
    # An operand that is a transposed view (x @ w.T) gets its gradient computed transposed,
    # (g.mT @ a).mT instead of a.mT @ g: same flops, and after the transpose's own backward
    # the parameter's gradient is dense, so it becomes .grad without a copy.
    if ctx.needs_input_grad[0]:
        ga = (b2 @ g2.mT).mT if ctx.transposed[0] else g2 @ b2.mT
        ga = sum_to(ga, a2.shape).reshape(a.shape)
    if ctx.needs_input_grad[1]:
        gb = (g2.mT @ a2).mT if ctx.transposed[1] else a2.mT @ g2
        gb = sum_to(gb, b2.shape).reshape(b.shape)
    return ga, gb


def _transposed(t) -> bool:
    return t.ndim == 2 and not t.is_contiguous() and t.mT.is_contiguous()


def _mm_spec(name, key):
    @formula(name, (linalg, key))
    def fwd(ctx, out, a, b):
        ctx.save_for_backward(
            a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None
        )
        ctx.a_shape, ctx.b_shape = a.shape, b.shape
        ctx.transposed = (_transposed(a), _transposed(b))
        if key == "matmul":
            return _MATMUL_NAMES.get((a.ndim, b.ndim), "UnsafeViewBackward0")

    @fwd.backward
    def _(ctx, g):
        a, b = ctx.saved_tensors
        a = a if a is not None else _Shape(ctx.a_shape)
        b = b if b is not None else _Shape(ctx.b_shape)
        return _matmul_grads(ctx, g, a, b)


# the node torch's matmul ends in, by operand ranks; batched products end in a view of
# a bmm/mm result (UnsafeViewBackward0)
_MATMUL_NAMES = {
    (2, 2): "MmBackward0",
    (2, 1): "MvBackward0",
    (1, 1): "DotBackward0",
    (1, 2): "SqueezeBackward4",
}


class _Shape:
    """Stands in for an operand that was not saved (its own gradient is not needed): only
    its shape is read, so it supports the shape-only steps of _matmul_grads."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.ndim = len(self.shape)

    def unsqueeze(self, d):
        s = list(self.shape)
        s.insert(d % (self.ndim + 1), 1)
        return _Shape(s)

    @property
    def mT(self):  # noqa: N802
        return _Shape(self.shape[:-2] + (self.shape[-1], self.shape[-2]))


for _name, _key in (
    ("MmBackward0", "mm"),
    ("BmmBackward0", "bmm"),
    ("MvBackward0", "mv"),
    ("DotBackward0", "dot"),
    ("MatmulBackward0", "matmul"),
):
    _mm_spec(_name, _key)


@formula("MulBackward0", (linalg, "outer"))  # torch: a view times b
def _outer(ctx, out, a, b):
    ctx.save_for_backward(a, b)


@_outer.backward
def _(ctx, g):
    a, b = ctx.saved_tensors
    return (
        g @ b if ctx.needs_input_grad[0] else None,
        g.mT @ a if ctx.needs_input_grad[1] else None,
    )
