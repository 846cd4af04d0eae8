"""Backward formulas of views and layout (view/reshape, transpose/permute, narrow/select,
expand, squeeze/unsqueeze, diagonal, clone/contiguous), joins (cat, stack), splits (split,
chunk, unbind: one multi-output node), copies (flip, roll, repeat) and casts/moves (.to). Indexing is in
formulas_index.py."""

from __future__ import annotations

from .. import _layout, _views
from .._tensor import Tensor
from ..backends import get_backend
from ..ops import join, shape
from ..transfer import move as _move
from .record import first, formula

__all__: list = []


def _zeros(like, shp):
    from ..creation import zeros

    return zeros(tuple(shp), dtype=like.dtype, device=like.device)


def _keep_shape(ctx, out, x, *args, **kwargs):
    ctx.shape = x.shape
    ctx.bitcast = out.dtype is not x.dtype  # view(dtype): a reinterpretation of the bits


def _reshape_back(ctx, g):
    if ctx.bitcast:
        raise RuntimeError(
            "the derivative of view(dtype) with a different dtype is not "
            "implemented in gpu_tensor autograd; use .to(dtype) to convert"
        )
    return g.reshape(ctx.shape)


for _name, _key in (("ViewBackward0", "view"), ("UnsqueezeBackward0", "unsqueeze")):
    formula(_name, (_views, _key), inputs=first)(_keep_shape).backward(_reshape_back)


@formula("ViewBackward0", (_views, "reshape"), inputs=first)
def _reshape(ctx, out, x, *shape):
    _keep_shape(ctx, out, x)
    root = x if x._base is None else x._base
    # torch: a reshape that can view is a view; one that must copy ends in _unsafe_view
    return None if out._base is root else "UnsafeViewBackward0"


_reshape.backward(_reshape_back)


@formula("SqueezeBackward0", (_views, "squeeze"), inputs=first)
def _squeeze(ctx, out, x, dim=None):
    _keep_shape(ctx, out, x)
    if dim is None:
        return None
    return "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"


_squeeze.backward(_reshape_back)


@formula("TransposeBackward0", (_views, "transpose"), inputs=first)
def _transpose(ctx, out, x, d0, d1):
    ctx.d = (d0, d1) if x.ndim else None


@_transpose.backward
def _(ctx, g):
    return g if ctx.d is None else g.transpose(*ctx.d)


def _reverse_dims(ctx, g):
    return g.permute(*reversed(range(g.ndim))) if g.ndim else g


formula("TBackward0", (_views, "t"), inputs=first)(lambda ctx, out, x: None).backward(_reverse_dims)
# torch's .T is a permute (numpy_T), not t()
formula("PermuteBackward0", (_views, "_T"), inputs=first)(lambda ctx, out, x: None).backward(
    _reverse_dims
)


@formula("PermuteBackward0", (_views, "permute"), inputs=first)
def _permute(ctx, out, x, *dims):
    from .._dims import shape_args

    nd = x.ndim
    axes = [d % nd if nd else 0 for d in shape_args(dims)]
    inverse = [0] * nd
    for i, a in enumerate(axes):
        inverse[a] = i
    ctx.inverse = inverse


@_permute.backward
def _(ctx, g):
    return g.permute(*ctx.inverse) if ctx.inverse else g


@formula("ExpandBackward0", (_views, "expand"), inputs=first)
def _expand(ctx, out, x, *sizes):
    pass  # the engine sums the gradient back to the input's shape


@_expand.backward
def _(ctx, g):
    return g


def _into_zeros(name, attr):
    """The formula of view `attr` (narrow, select): its gradient is zeros of the input's
    shape with g written through the same view of them."""

    @formula(name, (_views, attr), inputs=first)
    def fwd(ctx, out, x, *args):
        ctx.shape, ctx.args = x.shape, args

    @fwd.backward
    def _(ctx, g):
        z = _zeros(g, ctx.shape)
        getattr(z, attr)(*ctx.args).copy_(g)
        return z


_into_zeros("SliceBackward0", "narrow")  # torch: narrow is a slice
_into_zeros("SelectBackward0", "select")


@formula("DiagonalBackward0", (_views, "diagonal"), inputs=first)
def _diagonal(ctx, out, x, offset=0, dim1=0, dim2=1):
    ctx.shape, ctx.args = x.shape, (offset, dim1, dim2)


@_diagonal.backward
def _(ctx, g):
    # numpy's diagonal views are read-only: write through an (i, j) index instead
    offset, d1, d2 = ctx.args
    z = _zeros(g, ctx.shape)
    zm = z.movedim([d1 % z.ndim, d2 % z.ndim], [-2, -1])
    xp = get_backend(z.device).xp
    n = g.shape[-1]
    i = xp.arange(n) + max(-offset, 0)
    zm._data[..., i, i + offset] = g._data
    return z


def _identity(ctx, g):
    return g


formula("CloneBackward0", (_layout, "clone"), inputs=first)(
    lambda ctx, out, x, *a, **k: None
).backward(_identity)
formula("CloneBackward0", (_layout, "contiguous"), inputs=first)(  # torch: a clone
    lambda ctx, out, x, *a, **k: None
).backward(_identity)


def _not_implemented(name):
    def bwd(ctx, g):
        raise RuntimeError(f"the derivative for '{name}' is not implemented in gpu_tensor autograd")

    return bwd


for _key in ("unfold", "as_strided"):
    formula(_key.capitalize() + "Backward0", (_views, _key), inputs=first)(
        lambda ctx, out, x, *a, **k: None
    ).backward(_not_implemented(_key))


# -- joins -------------------------------------------------------------------------------------
def _seq_inputs(args, kwargs):
    seq = args[0] if args else kwargs.get("tensors")
    return [t if isinstance(t, Tensor) else None for t in seq]


@formula("CatBackward0", (join, "cat"), inputs=_seq_inputs)
def _cat(ctx, out, tensors, dim=0):
    tensors = list(tensors)
    kept = [not (t.ndim == 1 and t.shape[0] == 0) for t in tensors]
    if not any(kept):
        kept[0] = True
    ref = next(t for t, k in zip(tensors, kept, strict=True) if k)
    ctx.dim = dim % ref.ndim
    ctx.sizes = [t.shape[ctx.dim] if k else None for t, k in zip(tensors, kept, strict=True)]


@_cat.backward
def _(ctx, g):
    out, start = [], 0
    for s in ctx.sizes:
        if s is None:
            out.append(None)
            continue
        out.append(g.narrow(ctx.dim, start, s))
        start += s
    return tuple(out)


@formula("StackBackward0", (join, "stack"), inputs=_seq_inputs)
def _stack(ctx, out, tensors, dim=0):
    ctx.dim = dim % out.ndim
    ctx.n = len(list(tensors))


@_stack.backward
def _(ctx, g):
    return tuple(g.select(ctx.dim, i) for i in range(ctx.n))


# -- splits: one node with an output per piece, as torch records them -----------------------
def _pieces(g) -> tuple:
    """The per-output gradients (a split into one piece has one output: a lone tensor)."""
    return g if isinstance(g, tuple) else (g,)


def _split_fwd(ctx, out, x, dim):
    ctx.shape, ctx.dim = x.shape, dim % max(x.ndim, 1)
    ctx.sizes = [o.shape[ctx.dim] for o in out]


@formula("SplitBackward0", (join, "split"), inputs=first, multi=True)
def _split(ctx, out, x, split_size_or_sections, dim=0):
    _split_fwd(ctx, out, x, dim)
    return None if isinstance(split_size_or_sections, int) else "SplitWithSizesBackward0"


@_split.backward
def _split_back(ctx, g):
    grads = _pieces(g)
    z = _zeros(next(t for t in grads if t is not None), ctx.shape)
    start = 0
    for size, gi in zip(ctx.sizes, grads, strict=True):
        if gi is not None:  # an unused piece's gradient is zero: left as is
            z.narrow(ctx.dim, start, size).copy_(gi)
        start += size
    return z


@formula("SplitBackward0", (join, "chunk"), inputs=first, multi=True)  # torch: a split
def _chunk(ctx, out, x, chunks, dim=0):
    _split_fwd(ctx, out, x, dim)


_chunk.backward(_split_back)


@formula("UnbindBackward0", (_views, "unbind"), inputs=first, multi=True)
def _unbind(ctx, out, x, dim=0):
    ctx.shape, ctx.dim = x.shape, dim % max(x.ndim, 1)


@_unbind.backward
def _(ctx, g):
    grads = _pieces(g)
    z = _zeros(next(t for t in grads if t is not None), ctx.shape)
    for i, gi in enumerate(grads):
        if gi is not None:
            z.select(ctx.dim, i).copy_(gi)
    return z


def _tensor_split_as_slices(args, kwargs, reflected):
    """torch's tensor_split records a SliceBackward0 per piece (not one split node): its
    index form narrows already; the sections form would reach the split node, so it
    narrows here, piece by piece, at the bounds the plain function picks."""
    plain = join.tensor_split.__wrapped__
    x = args[0]
    sections = args[1] if len(args) > 1 else kwargs.get("indices_or_sections")
    if not isinstance(sections, int):
        return plain(*args, **kwargs)  # records its narrows itself
    from .grad_mode import no_grad

    with no_grad():
        pieces = plain(*args, **kwargs)  # checks the arguments, gives the sizes
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    d = dim % max(x.ndim, 1)
    out, start = [], 0
    for p in pieces:
        out.append(x.narrow(d, start, p.shape[d]))
        start += p.shape[d]
    return tuple(out)


formula(
    "SliceBackward0",
    (join, "tensor_split"),
    inputs=first,
    multi=True,
    decompose=_tensor_split_as_slices,
)(lambda ctx, out, *a, **k: None).backward(
    _not_implemented("tensor_split")
)  # never recorded: decompose always answers


# -- copying rearrangements --------------------------------------------------------------------
@formula("FlipBackward0", (shape, "flip"), inputs=first)
def _flip(ctx, out, x, *dims):  # (a list, or several ints: see ops/shape.flip)
    ctx.dims = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims


@_flip.backward
def _(ctx, g):
    return g.flip(ctx.dims) if g.ndim else g


@formula("RollBackward0", (shape, "roll"), inputs=first)
def _roll(ctx, out, x, shifts, dims=None):
    ctx.shifts = -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)
    ctx.dims = dims


@_roll.backward
def _(ctx, g):
    return g.roll(ctx.shifts, ctx.dims)


@formula("RepeatBackward0", (shape, "repeat"), inputs=first)
def _repeat(ctx, out, x, *sizes):
    from .._dims import shape_args

    ctx.reps = shape_args(sizes)
    ctx.shape = x.shape


@_repeat.backward
def _(ctx, g):
    reps = ctx.reps
    shp = (1,) * (len(reps) - len(ctx.shape)) + tuple(ctx.shape)
    split = []
    for r, s in zip(reps, shp, strict=True):
        split += [r, s]
    g = g.reshape(split).sum(dim=list(range(0, 2 * len(reps), 2)))
    return g.reshape(ctx.shape)


# -- casts and moves ---------------------------------------------------------------------------
@formula("ToCopyBackward0", (_move, "astype"), inputs=first)
def _astype(ctx, out, x, dt):
    pass


@_astype.backward
def _(ctx, g):
    return g  # the engine casts it back to the input's dtype


@formula("ToCopyBackward0", (_move, "move"), inputs=first)
def _movef(ctx, out, x, device, non_blocking=False):
    pass


@_movef.backward
def _(ctx, g):
    return g  # the engine moves it back to the input's device
