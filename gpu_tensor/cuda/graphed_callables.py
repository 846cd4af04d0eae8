"""`make_graphed_callables` (torch.cuda.make_graphed_callables): functions and nn.Modules
whose forward and backward each replay a captured CUDA graph.

For each callable: a few warm-up iterations on a side stream (kernels compiled, the
allocator filled), then a forward graph over the sample arguments and a backward graph of
`autograd.grad` from static output gradients to the inputs and parameters that require
grad, all in one shared memory pool. The result is an autograd Function: its forward copies
new inputs into the static ones (skipped when they are the static ones) and replays the
forward graph; its backward copies the incoming gradients and replays the backward graph.
Outputs and gradients are the graphs' static tensors, detached: read or clone them before
the next call, as in torch.

On the emulated device (nothing to capture) the callables come back unchanged: running them
is what a replay does, so results are the same and code runs unchanged in CI.
"""

from __future__ import annotations

import gpu_tensor as gt
from gpu_tensor.backends import cuda_kind

from . import streams as _streams
from .graphs import CUDAGraph, graph, graph_pool_handle

__all__ = ["make_graphed_callables"]


def _flat(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def make_graphed_callables(
    callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False, pool=None
):
    """Graphed versions of `callables` (one callable, or a tuple) for `sample_args` (a
    tuple of tensors per callable). Modules are returned with a graphed forward."""
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"{len(callables)} callables but {len(sample_args)} sample_args")
    for args in sample_args:
        for a in args:
            if not isinstance(a, gt.Tensor):
                raise TypeError(
                    "make_graphed_callables: sample_args must hold only Tensors "
                    f"(got {type(a).__name__})"
                )
    if cuda_kind().synchronous:  # the emulated device: nothing to capture
        return callables[0] if just_one else callables
    mempool = graph_pool_handle() if pool is None else pool
    made = [
        _graph_one(fn, tuple(args), num_warmup_iters, allow_unused_input, mempool)
        for fn, args in zip(callables, sample_args, strict=True)
    ]
    return made[0] if just_one else tuple(made)


def _grad(outputs, inputs, grad_outputs, allow_unused):
    outs = [(o, g) for o, g in zip(outputs, grad_outputs, strict=True) if o.requires_grad]
    wanted = [i for i in inputs if i.requires_grad]
    if not outs or not wanted:
        return [None] * len(inputs)
    grads = iter(
        gt.autograd.grad(
            [o for o, _ in outs], wanted, [g for _, g in outs], allow_unused=allow_unused
        )
    )
    return [next(grads) if i.requires_grad else None for i in inputs]


def _graph_one(fn, args, warmup: int, allow_unused: bool, mempool):
    module = fn if isinstance(fn, gt.nn.Module) else None
    params = tuple(module.parameters()) if module is not None else ()
    static_inputs = args + params
    side = _streams.Stream()
    side.wait_stream(_streams.current_stream())
    with _streams.stream(side):
        for _ in range(warmup):
            outs = _flat(fn(*args))
            _grad(outs, static_inputs, [gt.ones_like(o) for o in outs], allow_unused)
        del outs
    _streams.current_stream().wait_stream(side)

    forward = CUDAGraph()
    with graph(forward, pool=mempool):
        static_outputs = _flat(fn(*args))
    single = not isinstance(static_outputs, tuple) or len(static_outputs) == 1
    static_grad_outputs = [gt.empty_like(o) if o.requires_grad else None for o in static_outputs]
    backward = CUDAGraph()
    with graph(backward, pool=mempool):
        static_grads = _grad(
            static_outputs,
            static_inputs,
            [
                g if g is not None else gt.zeros_like(o)
                for o, g in zip(static_outputs, static_grad_outputs, strict=True)
            ],
            allow_unused,
        )
    n_args = len(args)

    class Graphed(gt.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, new in zip(static_inputs[:n_args], inputs[:n_args], strict=True):
                if static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            forward.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            for static, g in zip(static_grad_outputs, grads, strict=True):
                if static is not None and g is not None and static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            backward.replay()
            return tuple(g.detach() if g is not None else None for g in static_grads)

    def graphed(*user_args):
        if len(user_args) != n_args:
            raise TypeError(
                f"the graphed callable takes {n_args} tensors (its sample_args), "
                f"got {len(user_args)}"
            )
        out = Graphed.apply(*(tuple(user_args) + params))
        return out[0] if single else out

    if module is None:
        return graphed
    eager_forward = module.forward

    def forward_dispatch(*user_args):
        # as torch: the graphs replay in training mode; eval() runs the eager forward
        return graphed(*user_args) if module.training else eager_forward(*user_args)

    module.forward = forward_dispatch
    return module
