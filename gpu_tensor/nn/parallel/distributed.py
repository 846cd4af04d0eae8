"""DistributedDataParallel: torch.nn.parallel's data parallelism on gpu_tensor.distributed.

Each rank runs the same model on its share of the batch; after backward() every `.grad`
holds the average over ranks, so one optimizer step on each rank keeps the replicas equal
and N ranks with batch B/N train as one process with batch B. Construction broadcasts rank
0's parameters and buffers (the replicas start equal).

It wraps any object with `parameters()` and `__call__` (duck typed); where gt.nn.Module
exists it is a Module subclass, so it nests, registers and saves like one.
"""

from __future__ import annotations

import contextlib

from ... import nn as _nn
from ...autograd import is_grad_enabled
from ...distributed.collectives import broadcast
from ...distributed.group import get_global_rank, resolve
from .reducer import Reducer

__all__ = ["DistributedDataParallel"]

_Base = getattr(_nn, "Module", object)  # gt.nn.Module once it exists; else a plain object


class DistributedDataParallel(_Base):
    """torch.nn.parallel.DistributedDataParallel's arguments; device_ids, output_device and
    dim are accepted for compatibility (one device per rank: the module's)."""

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=25,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
    ):
        if _Base is not object:
            super().__init__()
        if not callable(module) or not hasattr(module, "parameters"):
            raise TypeError(
                "DistributedDataParallel needs a module: an object with "
                f"parameters() and __call__, not {type(module).__name__}"
            )
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        pg = resolve(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this rank is not in process_group")
        self._src = get_global_rank(process_group, 0)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module has no "
                "parameter that requires a gradient"
            )
        for t in [*module.parameters(), *self._buffers_of(module)]:
            broadcast(t.detach(), src=self._src, group=process_group)
        self.reducer = Reducer(params, process_group, bucket_cap_mb)
        self._started = False

    @staticmethod
    def _buffers_of(module):
        buffers = getattr(module, "buffers", None)
        return list(buffers()) if callable(buffers) else []

    def forward(self, *inputs, **kwargs):
        reducer = self.reducer
        if self._started and reducer.pending:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one: some parameters received no gradient in the last backward. Pass "
                "find_unused_parameters=True to DistributedDataParallel, or make every "
                "parameter take part in the loss"
            )
        if self.broadcast_buffers:
            for b in self._buffers_of(self.module):
                broadcast(b.detach(), src=self._src, group=self.process_group)
        out = self.module(*inputs, **kwargs)
        used = _reached_parameters(out) if self.find_unused_parameters else None
        reducer.reset(used)
        self._started = reducer.enabled and is_grad_enabled()
        return out

    if _Base is object:  # no gt.nn.Module: calling runs forward (Module's __call__ does)
        __call__ = forward

    def parameters(self, recurse=True):
        """The wrapped module's parameters (through Module's registry when it is a Module;
        a duck-typed module is not registered as a submodule, so ask it)."""
        if _Base is not object and isinstance(self.module, _Base):
            return super().parameters(recurse)
        return iter(self.module.parameters())

    @contextlib.contextmanager
    def no_sync(self):
        """Inside: backward() accumulates local gradients without communicating; the first
        synchronised backward after it averages the accumulated sums."""
        before = self.reducer.enabled
        self.reducer.enabled = False
        try:
            yield
        finally:
            self.reducer.enabled = before


def _reached_parameters(out) -> set[int]:
    """ids of the leaf tensors the autograd graph of `out` (tensors, nested in lists, tuples
    and dicts) reaches: the parameters this forward used."""
    stack, seen, leaves = [], set(), set()

    def collect(o):
        if isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)
        elif getattr(o, "grad_fn", None) is not None:
            stack.append(o.grad_fn)

    collect(out)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        for nx, _ in getattr(node, "next_functions", ()):
            if nx is not None:
                stack.append(nx)
    return leaves
