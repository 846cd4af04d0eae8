"""Running generated elementwise kernels on real CUDA: eager single ops and fused graphs.

`run(key, inputs, out_dtype)` is the cuda backend's eager elementwise op: a one-node graph
through the same codegen as `@gt.fuse`, so one place emits elementwise CUDA. `launch_graph`
plans, generates, compiles (cached) and launches; fuse.py calls it for fused functions.
Both take cupy arrays (bfloat16 stored as uint16 bits: pass its dtype explicitly).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .._result_strides import dim_order, result_strides
from .codegen import generate, plan_args, scalar_ctype
from .dtypes import as_np_dtype
from .expr import Graph, Input, Scalar
from .layout import Operand, broadcast_shapes, launch_config, plan
from .optable import OPS
from .trace import Proxy, apply

__all__ = [
    "run",
    "run_planned",
    "launch_for",
    "keep",
    "prepare",
    "launch_graph",
    "empty_like_result",
]

_BITS = np.dtype(np.uint16)
_BF16 = as_np_dtype("bfloat16")
_graphs: dict = {}  # eager op signature -> Graph (one node)
_sources: dict = {}  # (graph id, plan key, out dtypes, roots) -> (KernelSource, graph)


def _ptr(a) -> int:
    if isinstance(a, np.ndarray):
        return int(a.ctypes.data)
    return int(a.data.ptr)


def _strides(a) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def _overlap(a: Operand, b: Operand) -> bool:
    """Whether two operands' byte ranges intersect (an out= written in place over an input)."""

    def span(o):
        if 0 in o.shape:
            return o.ptr, o.ptr
        lo = hi = o.ptr
        for n, s in zip(o.shape, o.strides, strict=True):
            step = (n - 1) * s * o.itemsize
            lo, hi = (lo + step, hi) if step < 0 else (lo, hi + step)
        return lo, hi + o.itemsize

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _scalar_arg(value, dtype: np.dtype):
    kind = scalar_ctype(dtype)
    return _SCALAR_TYPES[kind](value)


def prepare(graph: Graph, roots, arrays, scalars, outs, out_dtypes=None):
    """Plan and generate the kernel computing `roots` into `outs` (arrays of the roots'
    broadcast shape). Returns (KernelSource, Plan, args): args are the kernel arguments in
    order (the arrays themselves for pointers, numpy scalars by value), for cupy arrays on a
    GPU or numpy arrays under host emulation alike."""
    roots = tuple(roots)
    used = graph.used_inputs(roots)
    out_dtypes = tuple(np.dtype(d) for d in (out_dtypes or (o.dtype for o in outs)))
    shape = tuple(outs[0].shape)
    # the kernel runs over the dims in the first output's order (a result in torch's layout
    # of transposed or channels_last inputs is written C-contiguously there: _plan's way)
    out_strides = _strides(outs[0])
    order = None if out_strides == _c_order(shape) else dim_order(shape, out_strides)
    if order is None:
        operands = [Operand(tuple(a.shape), _strides(a), a.itemsize, _ptr(a))
                    for a in (arrays[n.index] for n in used)]  # fmt: skip
        operands += [Operand(tuple(o.shape), _strides(o), o.itemsize, _ptr(o)) for o in outs]
        p = plan(shape, operands, n_outputs=len(outs))
    else:
        operands = [_permuted(a, shape, order) for a in [arrays[n.index] for n in used] + list(outs)]  # fmt: skip
        p = plan(tuple(shape[d] for d in order), operands, n_outputs=len(outs))
    n_in = len(operands) - len(outs)
    restrict = not any(_overlap(i, o) for i in operands[:n_in] for o in operands[n_in:])
    key = (id(graph), p.key, out_dtypes, tuple(id(r) for r in roots), restrict)
    hit = _sources.get(key)
    if hit is None:
        # The graph is kept alive with its source so its id() is never reused by another.
        hit = _sources[key] = (generate(graph, p, out_dtypes, roots, restrict), graph)
    ksrc = hit[0]
    idx = np.int32 if p.index == "int" else np.int64
    args = [arrays[i] for i in ksrc.inputs] + list(outs)
    args += [_scalar_arg(scalars[s], graph.scalars[s].dtype) for s in ksrc.scalars]
    args += [idx(p.numel)] + [idx(v) for v in plan_args(p)]
    return ksrc, p, args


def launch_graph(graph: Graph, roots, arrays, scalars, outs, out_dtypes=None, options=()):
    """Compute `roots` into the cupy arrays `outs` on the current device (real CUDA).
    `out_dtypes` are the stored dtypes (default: the arrays' own; bfloat16 bits need it).
    `options` go to NVRTC (e.g. ("--ftz=true",) to flush denormals; none by default)."""
    from ..kernel.compile import get_kernel, sm_count

    ksrc, p, args = prepare(graph, roots, arrays, scalars, outs, out_dtypes)
    if p.numel == 0:
        return outs
    fn = get_kernel(ksrc.name, ksrc.source, tuple(options))
    grid, block = launch_config(p, sm_count())
    fn((grid,), (block,), tuple(args))
    return outs


def _signature(key, inputs, params, via=None):
    sig = []
    for x in inputs:
        if x is None:
            sig.append(None)
        elif isinstance(x, (bool, int, float, complex)):
            sig.append(type(x))
        else:
            dt = np.dtype(x.dtype)  # uint16 arrays are bfloat16 bits (backends/cuda.py)
            sig.append((_BF16 if dt == _BITS else dt, x.ndim))
    return (key, tuple(sig), tuple(sorted(params.items())), via and via[0])


def _graph_for(key, inputs, params, via=None) -> Graph:
    """The one-node graph of `key` over operands like `inputs` (cached); with `via`, array
    operands of another dtype are first cast to via's half dtype (rounded, as apply()
    rounds them), then the op widens them as it computes."""
    sig = _signature(key, inputs, params, via)
    graph = _graphs.get(sig)
    if graph is None:
        proxies, ins, scs = [], [], []
        for s in sig[1]:
            if s is None:
                proxies.append(None)
            elif isinstance(s, type):
                node = Scalar(dtype=_scalar_np(s), tier=2, index=len(scs))
                scs.append(node)
                proxies.append(Proxy(node, 0))
            else:
                node = Input(
                    dtype=as_np_dtype(s[0], True), tier=1 if s[1] == 0 else 0, index=len(ins)
                )
                ins.append(node)
                proxy = Proxy(node, s[1])
                if via is not None and node.dtype != via[0]:
                    proxy = proxy.to(via[0])
                proxies.append(proxy)
        out = apply(key, *proxies, **params)
        graph = Graph(inputs=tuple(ins), scalars=tuple(scs), outputs=(out.node,))
        _graphs[sig] = graph
    return graph


def _scalar_np(t: type) -> np.dtype:
    from .dtypes import default_float

    if t is complex:  # passed as both parts in double (codegen.scalar_ctype)
        return np.dtype(np.complex128)
    return (
        np.dtype(np.bool_) if t is bool else (np.dtype(np.int64) if t is int else default_float())
    )


def empty_like_result(shape, out_dtype, launch=None):
    """A new cupy array for a result of numpy dtype `out_dtype` (bfloat16 as uint16 bits);
    `launch` (run_planned's plan) is not used."""
    from ..backends._cupy import cupy

    dt = np.dtype(np.uint16) if np.dtype(out_dtype).name == "bfloat16" else np.dtype(out_dtype)
    return cupy().empty(shape, dtype=dt)


def run(key: str, inputs, out_dtype, *, alloc=None, plans=None, **params):
    """Eager elementwise `key` on real CUDA. `inputs` are cupy arrays in their own dtypes (the
    kernel casts each to the op's compute dtype as it loads it), Python scalars, or None
    (clamp's missing bound); returns a new cupy array of numpy dtype `out_dtype` (bfloat16
    results are uint16 bits). Broadcasts like torch. `alloc(shape, dtype)` makes the result
    (the cuda backend passes its own; default empty_like_result).

    `plans` (a dict the caller keeps, one per device) turns on the launch-plan cache: the
    first call with given (op, params, out dtype, operand dtypes, shapes, strides and
    alignment) plans, compiles and records (function, grid, block, argument layout); later
    calls pack arguments and launch. Then None is returned, without launching, for operands
    the codegen has no types for (complex): the caller runs its own fallback."""
    if plans is None:
        return _run_unplanned(key, inputs, out_dtype, alloc, params)
    return run_planned(plans, alloc or empty_like_result, key, inputs, out_dtype, params)


def run_planned(plans: dict, alloc, key: str, inputs, out_dtype, params, via=None):
    """`run` with its launch-plan cache `plans` and allocator `alloc` (both required),
    positional, and `params` a dict or None: the cuda backend's `elementwise` (apply()'s
    kernel path; the operators take the warm entries bound to these plans). `alloc(shape,
    dtype, launch)` may keep what it works out per result layout in `launch.result`. No
    calls of ours here beyond `alloc` (see tests/fusion/test_hot_path.py): the signature,
    one dict lookup, the result, the packed launch. `via`: None, or (half numpy dtype,
    _): array operands of another dtype are rounded through it before the op (a cast in
    the kernel), as ops/_dispatch.apply() rounds them with a copy first."""
    # The key: op, out dtype, then per operand its type (a Python scalar, or None: clamp's
    # missing bound) or the array's dtype (hashing it costs less than reading its `num`),
    # shape, layout and alignment; then params and via where given. The layout of a
    # C-contiguous array is True, not its strides: cupy reads `_c_contiguous` from a field
    # but builds `strides` as a new tuple on each read (~40 ns more per operand on cupy
    # 14's objects), and C-contiguous operands of one shape plan alike (their strides
    # differ at most on size-1 dims, which layout.plan drops or zeroes).
    # Shortcuts, no loop (~0.3 us): an array, then an array or a scalar (x + y, x * 2.0),
    # or one array (x.exp()); the same tuples as _key's.
    n = len(inputs)
    if n == 2 and via is None and not params:
        a, b = inputs
        if type(a) in _BY_VALUE:
            sig = _key(key, inputs, out_dtype, params, via)
        elif type(b) in _BY_VALUE:
            sig = (key, out_dtype, a.dtype, a.shape, a._c_contiguous or a.strides,
                   a.data.ptr & 15, type(b))  # fmt: skip
        else:
            sig = (key, out_dtype, a.dtype, a.shape, a._c_contiguous or a.strides,
                   a.data.ptr & 15, b.dtype, b.shape, b._c_contiguous or b.strides,
                   b.data.ptr & 15)  # fmt: skip
    elif n == 1 and via is None and not params and type(a := inputs[0]) not in _BY_VALUE:
        sig = (key, out_dtype, a.dtype, a.shape, a._c_contiguous or a.strides,
               a.data.ptr & 15)  # fmt: skip
    else:
        sig = _key(key, inputs, out_dtype, params, via)
    launch = plans.get(sig)
    if launch is None:
        launch = _planned(plans, sig, key, inputs, out_dtype, params, via)
    call = launch.call
    if call is None:  # no kernel for these dtypes, or nothing to compute (an empty result)
        return None if launch is _NO_KERNEL else alloc(launch.shape, out_dtype, launch)
    # the plan goes along: the allocator may keep the result's layout in it (launch.result)
    out = alloc(launch.shape, out_dtype, launch)
    if out.data.ptr & 15:  # the plan assumed a 16-byte aligned result (allocator blocks are)
        return _run_into(out, key, inputs, out_dtype, params or {}, via)
    if launch.direct:  # the operands are the kernel's arrays, in order, and no scalars
        call((*inputs, out, *launch.tail))
        return out
    to = launch.scalar
    if to is not None:  # an array, then a scalar (x * 2.0): packed without the loops
        call((inputs[0], out, to(inputs[1]), *launch.tail))
        return out
    args = []
    for i in launch.arrays:
        args.append(inputs[i])
    args.append(out)
    for i, to in launch.scalars:
        args.append(to(inputs[i]))
    call((*args, *launch.tail))
    return out


def launch_for(plans: dict, key: str, inputs, out_dtype, params=None, via=None):
    """The cached _Launch of `key` over operands like `inputs` (planned, generated and
    compiled on first sight): what a backend binds its own warm entry to (backends/cuda.py
    `warm_entry`); None where the codegen has no kernel for these dtypes (complex). Raises
    ValueError where the shapes do not broadcast."""
    sig = _key(key, inputs, out_dtype, params, via)
    launch = plans.get(sig)
    if launch is None:
        launch = _planned(plans, sig, key, inputs, out_dtype, params, via)
    return None if launch is _NO_KERNEL else launch


def keep(plans: dict, sig, entry) -> None:
    """Keep `entry` (what a caller derives from a plan) in the plan cache under `sig`, a key
    no plan has (its first item is no op key): it goes with the plans when they start over."""
    if len(plans) >= MAX_PLANS:  # shapes that never repeat must not grow it forever
        plans.clear()
    plans[sig] = entry


def _planned(plans, sig, key, inputs, out_dtype, params, via):
    """The miss of the plan cache: plan, keep and return the _Launch."""
    launch = _plan(key, inputs, out_dtype, params or {}, via)
    keep(plans, sig, launch)
    return launch


def _key(key, inputs, out_dtype, params, via) -> tuple:
    """run_planned's plan key for any operands (its shortcuts give the same tuples)."""
    sig = (key, out_dtype)
    for x in inputs:
        t = type(x)
        if t in _BY_VALUE:
            sig += (t,)
        else:
            sig += (x.dtype, x.shape, x._c_contiguous or x.strides, x.data.ptr & 15)
    if params:
        sig += (tuple(sorted(params.items())),)
    if via is not None:
        sig += (via,)
    return sig


# types an eager operand passes by value (the rest are arrays): one set lookup on the warm path
_BY_VALUE = frozenset((bool, int, float, complex, type(None)))
MAX_PLANS = 4096  # launch plans kept per device before the cache starts over
_SCALAR_TYPES = {
    "double": np.float64, "long long": np.int64, "int": np.int32, "gt_c128": np.complex128,
}  # fmt: skip


class _Launch:
    """A planned eager launch: what the warm path needs and nothing else. `arrays`: the
    positions in `inputs` of the kernel's array arguments, in order; `scalars`: (position,
    numpy type) of its by-value scalars; `tail`: the index arguments (numel, sizes,
    strides), fixed by the shapes and strides in the cache key."""

    __slots__ = (
        "fn", "grid", "block", "shape", "arrays", "scalars", "tail", "source", "plan", "direct",
        "call", "scalar", "result", "strides",
    )  # fmt: skip

    def __init__(self, fn, grid, block, shape, arrays, scalars, tail, source, plan, n_inputs,
                 strides=None):  # fmt: skip
        self.fn, self.grid, self.block, self.shape = fn, grid, block, shape
        # the result's strides in bytes (torch's layout, _result_strides.py), where they are
        # not C order's (None): the kernel writes it C-contiguously over the permuted dims
        self.strides = strides
        self.arrays, self.scalars, self.tail = arrays, scalars, tail
        self.source, self.plan = source, plan
        # `direct`: the inputs are the kernel's array arguments as they stand (x + y, x.exp())
        self.direct = not scalars and arrays == tuple(range(n_inputs))
        # `scalar`: the operands are one array then one by-value scalar, which the kernel
        # takes in that order: the scalar's numpy type (x * 2.0), else None
        one = arrays == (0,) and len(scalars) == 1 and scalars[0][0] == 1 and n_inputs == 2
        self.scalar = scalars[0][1] if one else None
        # the launch with its grid and block bound (C, no frame): call(args); None: no launch
        self.call = None if fn is None else partial(fn, grid, block)
        self.result = None  # the allocator's own note on this plan's result (run_planned)


class _NoKernel:
    """The plan-cache entry of an op the codegen cannot run (complex dtypes)."""

    __slots__ = ()
    call = None


_NO_KERNEL = _NoKernel()


def _plan(key, inputs, out_dtype, params, via=None):
    """The _Launch for these operands (the cold path: trace, plan, generate, compile)."""
    from ..kernel.compile import get_kernel, sm_count

    if not OPS[key].complex_kernel and (
        np.dtype(out_dtype).kind == "c"
        or any(
            getattr(x, "dtype", None) is not None and np.dtype(x.dtype).kind == "c" for x in inputs
        )  # fmt: skip
    ):
        return _NO_KERNEL  # complex C types serve only the rows with complex overloads
    graph = _graph_for(key, inputs, params, via)
    where = [i for i, x in enumerate(inputs) if x is not None and not _is_scalar(x)]
    scalar_at = [i for i, x in enumerate(inputs) if _is_scalar(x)]
    arrays = [inputs[i] for i in where]
    shape = broadcast_shapes(*(tuple(a.shape) for a in arrays))
    roots = graph.outputs
    used = graph.used_inputs(roots)
    out_np = as_np_dtype(out_dtype, complex_ok=True)
    stored = np.dtype(np.uint16) if out_np.name == "bfloat16" else out_np
    # The result is laid out as torch's TensorIterator lays it out (_result_strides.py: an
    # input's order, channels_last, ...). The kernel runs over the dims in the result's order
    # (outermost first), where the result is C-contiguous: each operand is described by its
    # strides in that order (the arrays themselves go to the kernel as pointers, unchanged)
    out_strides = result_strides(
        shape, [((), ()) if _is_scalar(x) else (x.shape, _strides(x)) for x in inputs if x is not None]
    )  # fmt: skip
    order = dim_order(shape, out_strides)
    if order is None:
        operands = [Operand(tuple(a.shape), _strides(a), a.itemsize, _ptr(a))
                    for a in (arrays[n.index] for n in used)]  # fmt: skip
        space = shape
    else:
        space = tuple(shape[d] for d in order)
        operands = [_permuted(arrays[n.index], shape, order) for n in used]
    # the result: fresh (aligned, and overlapping no input), C-contiguous over `space`
    operands.append(Operand(space, _c_order(space), stored.itemsize, 0))
    p = plan(space, operands, n_outputs=1)
    strides = None  # cupy's (bytes) where they are not C order's
    if out_strides != _c_order(shape) and 0 not in shape:
        strides = tuple(s * stored.itemsize for s in out_strides)
    skey = (id(graph), p.key, (out_np,), tuple(id(r) for r in roots), True)
    hit = _sources.get(skey)
    if hit is None:
        hit = _sources[skey] = (generate(graph, p, (out_np,), roots, True), graph)
    ksrc = hit[0]
    idx = np.int32 if p.index == "int" else np.int64
    tail = (idx(p.numel), *(idx(v) for v in plan_args(p)))
    scalars = tuple(
        (scalar_at[s], _SCALAR_TYPES[scalar_ctype(graph.scalars[s].dtype)]) for s in ksrc.scalars
    )
    fn = grid = block = None
    if p.numel:
        fn = get_kernel(ksrc.name, ksrc.source, ())
        g, b = launch_config(p, sm_count())
        grid, block = (g,), (b,)
    return _Launch(
        fn,
        grid,
        block,
        shape,
        tuple(where[i] for i in ksrc.inputs),
        scalars,
        tail,
        ksrc,
        p,
        len(inputs),
        strides,
    )


def _permuted(a, shape, order) -> Operand:
    """The Operand of array `a` broadcast to `shape`, its dims taken in `order`."""
    pad = len(shape) - a.ndim
    strides = [0] * pad + [0 if n == 1 else s for n, s in zip(a.shape, _strides(a), strict=True)]
    return Operand(tuple(shape[d] for d in order), tuple(strides[d] for d in order), a.itemsize, _ptr(a))  # fmt: skip


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex))


def _c_order(shape) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.insert(0, acc)
        acc *= max(n, 1)
    return tuple(out)


def _run_into(out, key, inputs, out_dtype, params, via):
    """_run_unplanned into the array `out` (a result the plan cannot take: unaligned)."""
    return _run_unplanned(key, inputs, out_dtype, lambda shape, dtype: out, params, via)


def _run_unplanned(key, inputs, out_dtype, alloc, params, via=None):
    """Plan, generate and launch for this call alone (callers that keep no plan cache)."""
    graph = _graph_for(key, inputs, params, via)
    arrays = [x for x in inputs if x is not None and not _is_scalar(x)]
    scalars = [x for x in inputs if _is_scalar(x)]
    shape = broadcast_shapes(*(tuple(a.shape) for a in arrays))
    out = (alloc or empty_like_result)(shape, out_dtype)
    out_np = as_np_dtype(out_dtype, complex_ok=True)
    launch_graph(graph, graph.outputs, arrays, scalars, [out], out_dtypes=(out_np,))
    return out
