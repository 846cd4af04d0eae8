"""GradScaler's check-and-unscale on cuda: one launch of kernels/amp_unscale.cu per (device,
dtype) group of gradients, whatever their number (torch's fast path of
`_amp_foreach_non_finite_check_and_unscale_`).

The kernel reads a device table of the group's (address, numel) entries. `GradTables` keeps
the tables it made, keyed by those addresses and sizes (and the stream), so a training loop
whose gradients stay where they are uploads nothing after its first step; a new layout is
uploaded once, from pinned host memory, asynchronously on the current stream. Nothing here
waits for the device.

Which gradients take the kernel: a dense, non-overlapping layout of float32, float64, float16
or bfloat16 (contiguous, or permuted like a transpose: the kernel walks the memory the
elements fill, in any order). Others (a strided view with gaps, an expanded grad, another
dtype) keep the per-gradient path of scaler_ops.py, as torch falls back to its slow path for
them; so do host devices (cpu, emulated cuda), where nothing is launched.

Under CUDA graph capture a capture must not pin host memory nor record a copy from a host
buffer that is later reused: a table made before the capture (the warm-up's) is used as it
is, otherwise the table is written on the device by small kernels whose arguments carry its
values (the graph keeps kernel arguments). Either way it is kept for the scaler's life,
since the graph's kernels use it at every replay.

Per-gradient flags for `GradScaler.found_inf_report()`: the kernel stamps a flag slot of the
table for each gradient holding an inf or NaN; `TableFlag` reads it back on demand.
"""

from __future__ import annotations

import collections

import numpy as np

import gpu_tensor as gt
from gpu_tensor.backends import cuda_amp, get_backend
from gpu_tensor.memory import graph_pool

__all__ = ["GradTables", "TableFlag", "uses_kernel", "dense_span"]

MAX_TABLES = 8  # layouts kept per scaler (one per optimizer x dtype in a usual loop)


def uses_kernel(device) -> bool:
    """True where the group check runs as the multi-tensor kernel: cuda with device memory
    of its own (a GPU or the simulated CuPy), not host memory."""
    return device.type == "cuda" and get_backend(device).xp is not np


def dense_span(g):
    """(lowest address, numel) when g's elements fill one gap-free range of memory exactly
    once, else None (a strided view with gaps, an expanded or overlapping layout)."""
    if g.layout is not gt.strided:  # sparse grads: torch unscales their values, per grad
        return None
    n = g.numel()
    if g.is_contiguous():
        return g.data_ptr(), n
    dims = sorted((abs(s), k) for k, s in zip(g.shape, g.stride(), strict=True) if k != 1)
    expect = 1
    for s, k in dims:
        if s != expect:
            return None
        expect *= k
    low = sum((k - 1) * s for k, s in zip(g.shape, g.stride(), strict=True) if s < 0)
    return g.data_ptr() + low * g.element_size(), n


class _Table:
    __slots__ = ("device_table", "n", "chunks", "launches")

    def __init__(self, device_table, n, chunks):
        self.device_table, self.n, self.chunks = device_table, n, chunks
        self.launches = 0

    def next_stamp(self) -> int:
        """This table's launches count 1, 2, 3...: consecutive ones stamp alternate banks."""
        self.launches += 1
        return self.launches


class TableFlag:
    """Did gradient `index` of a table hold an inf or NaN in the launch stamped `stamp`?
    Reads the table's flag bank (a device read: it waits for the kernel). Valid until the
    launch after next on the same table (the kernel alternates two banks)."""

    __slots__ = ("table", "index", "stamp")

    def __init__(self, table, index, stamp):
        self.table, self.index, self.stamp = table, index, stamp

    def overflowed(self) -> bool:
        off = cuda_amp.flags_offset(self.table.n, self.stamp) + self.index
        return int(self.table.device_table[off].item()) == self.stamp


class _Finite:
    """The flag of an empty gradient: nothing to overflow."""

    @staticmethod
    def overflowed() -> bool:
        return False


class GradTables:
    """One scaler's device tables, most recently used last."""

    def __init__(self):
        self._tables: collections.OrderedDict = collections.OrderedDict()
        self._captured: list = []  # tables a captured graph reads: never evicted

    def check_and_unscale_(self, grads, spans, found_inf, factor, mode: str):
        """Run the kernel over `grads` (one device, one dtype; `spans`: their dense_span):
        found_inf (float32, 0-dim, same device) becomes 1 on any inf/NaN; mode 'reciprocal'
        multiplies every grad by float32(1 / float64(factor)) in place (factor: the scale),
        'check' only checks. Returns one flag per grad (see TableFlag)."""
        live = [i for i, (_, n) in enumerate(spans) if n > 0]
        flags = [_Finite()] * len(grads)
        if not live:
            return flags
        addresses = [spans[i][0] for i in live]
        numels = [spans[i][1] for i in live]
        device = grads[live[0]].device
        table = self._table(device, addresses, numels)
        stamp = table.next_stamp()
        cuda_amp.launch(
            table.device_table._data,
            table.n,
            table.chunks,
            grads[live[0]].dtype.name,
            found_inf._data,
            factor._data,
            mode,
            stamp,
        )
        for k, i in enumerate(live):
            flags[i] = TableFlag(table, k, stamp)
        return flags

    def _table(self, device, addresses, numels) -> _Table:
        layout = (device, tuple(addresses), tuple(numels))
        key = (layout, gt.cuda.current_stream(device).cuda_stream)
        table = self._tables.get(key)
        if graph_pool.active_captures:
            return self._captured_table(device, layout, key, numels)
        if table is not None:
            self._tables.move_to_end(key)
            return table
        host = cuda_amp.table(addresses, numels)
        # pinned, then one async copy on the current stream: the host does not wait
        pinned = gt.from_numpy(host).pin_memory()
        table = _Table(
            pinned.to(device, non_blocking=True),
            len(numels),
            cuda_amp.total_chunks(host, len(numels)),
        )
        self._tables[key] = table
        if len(self._tables) > MAX_TABLES:
            self._tables.popitem(last=False)
        return table

    def _captured_table(self, device, layout, key, numels) -> _Table:
        # a warm-up on another stream (torch's recipe) was ordered before the capture
        table = next((t for k, t in self._tables.items() if k[0] == layout), None)
        if table is None:
            host = cuda_amp.table(layout[1], numels)
            dev = gt.empty(host.shape, dtype=gt.int64, device=device)  # the graph's pool
            cuda_amp.write_table(dev._data, host)
            table = self._tables[key] = _Table(
                dev, len(numels), cuda_amp.total_chunks(host, len(numels))
            )
        if all(t is not table for t in self._captured):
            self._captured.append(table)
        return table
