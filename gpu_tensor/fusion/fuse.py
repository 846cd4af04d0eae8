"""`@gt.fuse`: trace an elementwise function once, run it as one kernel.

    @gt.fuse
    def bias_gelu(x, a, b):
        return (a * x + b).gelu()

    y = bias_gelu(x, 2.0, bias)           # x, bias: Tensors; 2.0 a kernel parameter
    bias_gelu(x, 2.0, bias, out=y)        # into an existing tensor (any strides)

Traced once per (argument dtypes, ndims, scalar kinds, layout class). On real CUDA the graph
becomes one generated kernel (see codegen.py); on cpu and the emulated device the same graph
is evaluated with numpy, with the same rule for intermediates (half/bfloat16 computed in
float32, rounded only on output), so both agree within the tolerance table. Anything that is
not elementwise raises FusionError naming it at trace time; nothing falls back silently.
"""

from __future__ import annotations

import contextlib
import functools
import math

import numpy as np

from .. import _grad, _modes
from .. import dtype as core_dtype
from .._modes import watch
from .._result_strides import c_strides, is_dense, result_strides
from ..backends import PIECE
from .expr import evaluate
from .layout import broadcast_shapes
from .trace import FusionError, trace

__all__ = ["fuse", "Fused", "FusionError"]

MODES_ON = watch(globals())  # the modes word, read first by every op here (_modes.py)


def _tensor_type():
    from .._tensor import Tensor  # the user-facing layer; imported when a call happens

    return Tensor


def _is_contiguous(t) -> bool:
    return bool(t._data.flags.c_contiguous)


class Fused:
    """A fused elementwise function (what `@gt.fuse` returns)."""

    def __init__(self, fn, kernel_name: str | None = None, compile_options=()):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.kernel_name = kernel_name or getattr(fn, "__name__", "fused")
        self.compile_options = tuple(compile_options)
        self._traces: dict = {}

    def clear_cache(self) -> None:
        """Forget the traced graphs (compiled kernels stay in the compile cache)."""
        self._traces.clear()

    def graph(self, *args):
        """The traced Graph for these arguments (for inspection and tests)."""
        return self._trace(args)[0]

    def _trace(self, args):
        Tensor = _tensor_type()
        specs, layout = [], []
        for a in args:
            if isinstance(a, Tensor):
                specs.append(("tensor", a.dtype.np, a.ndim))
                layout.append(_is_contiguous(a))
            elif isinstance(a, (bool, int, float, complex)):
                specs.append(("scalar", type(a)))
            else:
                try:
                    hash(a)
                except TypeError:
                    raise FusionError(
                        f"{self.kernel_name}: argument {a!r} is neither a tensor, a Python "
                        "scalar, nor a hashable constant"
                    ) from None
                specs.append(("static", a))
        key = (tuple((s[0], s[1], s[2] if len(s) > 2 else None) for s in specs),
               "contiguous" if all(layout) else "strided")  # fmt: skip
        hit = self._traces.get(key)
        if hit is None:
            hit = trace(self.fn, specs)
            self._traces[key] = hit
        return hit

    def __call__(self, *args, out=None):
        if MODES_ON:  # a mode is on somewhere: the op is "fused" (gpu_tensor/_modes.py)
            r = _modes.intercept("fused", self, args, None if out is None else {"out": out})
            if r is not _modes.PASS:
                return r
        Tensor = _tensor_type()
        args = tuple(a.item() if isinstance(a, np.generic) else a for a in args)  # numpy scalars
        if any(hasattr(a, "__array_interface__") or hasattr(a, "__cuda_array_interface__")
               for a in args if not isinstance(a, Tensor)):  # fmt: skip
            raise FusionError(
                f"{self.kernel_name}: numpy arrays cannot be passed to a fused function; "
                "wrap them with gt.from_numpy(...) (or gt.asarray) first"
            )
        tensors = [a for a in args if isinstance(a, Tensor)]
        if not tensors:
            raise FusionError(f"{self.kernel_name}: a fused function needs a Tensor argument")
        if _grad.STATE.enabled and any(t._requires_grad for t in tensors):
            return _grad.record_fused(self, args, out)  # autograd, decided at call time
        device = tensors[0].device
        for t in tensors[1:]:
            if t.device != device:
                raise RuntimeError(
                    f"{self.kernel_name}: expected all tensors on the same device, got "
                    f"{device} and {t.device}; move them with .to(device) first"
                )
        graph, single = self._trace(args)
        scalars = [a for a in args if isinstance(a, (bool, int, float, complex))]
        outs = _check_out(out, len(graph.outputs), device, self.kernel_name)
        shapes = []
        for root in graph.outputs:
            used = graph.used_inputs((root,))
            shapes.append(broadcast_shapes(*(tuple(tensors[n.index].shape) for n in used)))
        from ..backends import get_backend

        backend = get_backend(device)
        if backend.host_arrays:
            results = self._numpy(graph, tensors, scalars, shapes, outs, device, backend)
        else:
            results = self._cuda(graph, tensors, scalars, shapes, outs, device, backend)
        return results[0] if single else tuple(results)

    def _numpy(self, graph, tensors, scalars, shapes, outs, device, backend):
        Tensor = _tensor_type()
        arrays = [t._data for t in tensors]
        if (
            backend.fills_by_pieces
            and not outs
            and (len(graph.outputs) == 1 or max(math.prod(s) for s in shapes) > PIECE)
        ):
            # each output through backend.elementwise (shared parts computed once per
            # output: the price of results that never exist whole in host memory)
            values = [_one_result(graph, arrays, scalars, backend, root) for root in graph.outputs]
        else:
            values = evaluate(graph, arrays, scalars)
        results, adopted = [], set()
        for k, (root, value, shape) in enumerate(zip(graph.outputs, values, shapes, strict=True)):
            target = outs[k] if outs else None
            dt = root.dtype if target is None else target.dtype.np
            if target is None and _fresh(value, shape, dt, tensors) and id(value) not in adopted:
                adopted.add(id(value))  # (`return y, y` must still give two tensors)
                array, storage = backend.adopt(value)  # cpu: no copy; emulated: one copy
                results.append(Tensor._wrap(array, device, storage))
                continue
            if target is None:
                array, storage = backend.empty(shape, dt)
                target = Tensor._wrap(array, device, storage)
            else:
                _check_out_shape(target, shape, root.dtype, self.kernel_name)
            with np.errstate(all="ignore"):
                np.copyto(target._data, value, casting="unsafe")  # broadcasts, casts, no temp
            results.append(target)
        return results

    def _cuda(self, graph, tensors, scalars, shapes, outs, device, backend):
        from .eager import launch_graph

        Tensor = _tensor_type()
        arrays = [t._data for t in tensors]
        results, finals = [], []
        # Outputs of one shape go out of one kernel: one launch, and every input element is
        # read before its outputs are written, so out= may alias the inputs in their own
        # layout (an optimizer step writing param and state in place). Mixed shapes: one
        # launch each, in order.
        n = len(graph.outputs)
        groups = [list(range(n))] if len(set(map(tuple, shapes))) == 1 else [[k] for k in range(n)]
        group_of = {k: g for g, ks in enumerate(groups) for k in ks}
        with getattr(backend, "_dev", None) or contextlib.nullcontext():
            for k, (root, shape) in enumerate(zip(graph.outputs, shapes, strict=True)):
                target = outs[k] if outs else None
                if target is not None:
                    _check_out_shape(target, shape, root.dtype, self.kernel_name)
                dt = core_dtype.to_dtype(root.dtype) if target is None else target.dtype
                # An out= that overlaps an input in another layout would be read after it is
                # written (the kernel runs in place), and so would one that overlaps an input
                # a later launch reads: compute into fresh memory, then copy after all
                # launches.
                direct = (
                    target is not None
                    and not _aliases_differently(target, tensors)
                    and not _overlaps_any(target, _read_after(graph, groups, group_of[k], tensors))
                )
                layout = None  # C order; else torch's layout of the inputs the root reads
                if target is None:  # (laid out as eager ops lay it out)
                    used = [tensors[n.index] for n in graph.used_inputs((root,))]
                    layout = result_strides(shape, [(t.shape, t.stride()) for t in used])
                    layout = None if layout == c_strides(shape) else layout
                if direct:
                    dest = target
                elif layout is None:  # C order (an out= is computed apart, then copied in)
                    dest = Tensor._wrap(backend.empty(shape, dt.np)[0], device, dtype=dt)
                else:
                    dest = Tensor._wrap(backend.empty_laid_out(shape, dt.np, layout), device, dtype=dt)  # fmt: skip
                results.append(dest)
                finals.append(target)
            for ks in groups:
                launch_graph(graph, tuple(graph.outputs[k] for k in ks), arrays, scalars,
                             [results[k]._data for k in ks],
                             out_dtypes=tuple(results[k].dtype.np for k in ks),
                             options=self.compile_options)  # fmt: skip
            for k, target in enumerate(finals):
                if target is not None and results[k] is not target:
                    backend.copy_(target._data, results[k]._data)
                    results[k] = target
        return results


def _span(t) -> tuple[int, int]:
    """[lo, hi) of the bytes a tensor's view can touch."""
    lo = hi = t.data_ptr()
    if t.numel() == 0:
        return lo, lo
    es = t.element_size()
    for n, s in zip(t.shape, t.stride(), strict=True):
        lo, hi = (lo + (n - 1) * s * es, hi) if s < 0 else (lo, hi + (n - 1) * s * es)
    return lo, hi + es


def _aliases_differently(target, tensors) -> bool:
    """True when `target` shares memory with an input that is not laid out exactly as it
    (same address and strides: an elementwise kernel then reads each element before writing
    it, in the same thread)."""
    t0, t1 = _span(target)
    for t in tensors:
        lo, hi = _span(t)
        if (
            lo < t1
            and t0 < hi
            and not (
                t.data_ptr() == target.data_ptr()
                and t.stride() == target.stride()
                and t.shape == target.shape
            )
        ):
            return True
    return False


def _read_after(graph, groups, g: int, tensors) -> list:
    """The input tensors that the launches after group `g` read."""
    roots = tuple(graph.outputs[k] for ks in groups[g + 1 :] for k in ks)
    return [tensors[n.index] for n in graph.used_inputs(roots)] if roots else []


def _overlaps_any(target, tensors) -> bool:
    t0, t1 = _span(target)
    return any(lo < t1 and t0 < hi for lo, hi in map(_span, tensors))


def _one_result(graph, arrays, scalars, backend, root):
    """The graph's output `root` through `backend.elementwise`, over the inputs it reads:
    the emulated device computes a large result piece by piece into allocator memory, so
    numpy's temporaries stay piece-sized."""
    used = [n.index for n in graph.used_inputs([root])]

    def run(*parts):
        full = list(arrays)
        for k, part in zip(used, parts, strict=True):
            full[k] = part
        return evaluate(graph, full, scalars, [root])[0]

    return backend.elementwise(None, run, [arrays[k] for k in used], None)


def _fresh(value, shape, dtype, tensors) -> bool:
    """True when `value` is a new dense array of the result's shape and dtype (not an
    input's memory, not a broadcast), so it can become the result without another copy, in
    the layout numpy's ops gave it (the eager ops' on this device: a transposed or
    channels_last input's)."""
    return (
        value.dtype == dtype
        and value.shape == tuple(shape)
        and (value.flags.c_contiguous or is_dense(value.shape, _elements(value)))
        and not any(np.may_share_memory(value, t._data) for t in tensors)
    )


def _elements(value) -> tuple:
    """A numpy array's strides in elements."""
    return tuple(s // value.itemsize for s in value.strides)


def _check_out(out, n, device, name):
    if out is None:
        return None
    outs = (out,) if not isinstance(out, (tuple, list)) else tuple(out)
    if len(outs) != n:
        raise ValueError(f"{name}: out= needs {n} tensor(s), one per output, got {len(outs)}")
    for t in outs:
        if t.device != device:
            raise RuntimeError(
                f"{name}: out= tensor is on {t.device} but the inputs are on {device}"
            )
    return outs


def _check_out_shape(target, shape, dtype, name):
    if tuple(target.shape) != tuple(shape):
        raise ValueError(
            f"{name}: out= tensor has shape {tuple(target.shape)} but the result has shape "
            f"{tuple(shape)}; pass an out tensor of the result's shape"
        )
    res = core_dtype.to_dtype(dtype)
    if not core_dtype.can_cast(res, target.dtype):
        raise TypeError(
            f"{name}: result type {res.name} can't be cast to the desired output type "
            f"{target.dtype.name} (out=); use an out tensor of a higher category"
        )


def fuse(fn=None, *, kernel_name: str | None = None, compile_options=()):
    """Decorator: `@gt.fuse` or `@gt.fuse(kernel_name="...", compile_options=(...))`.

    `compile_options` go to NVRTC on real CUDA; none by default, so denormals are kept and
    results follow numpy (pass ("--ftz=true",) or ("--use_fast_math",) to trade that away).
    See the module docstring."""
    if fn is None:
        return lambda f: Fused(f, kernel_name, compile_options)
    return Fused(fn, kernel_name, compile_options)
